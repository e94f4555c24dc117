/*
 * Helpers of the tests of the simulated Xen toolstack (sim/xenlibs).
 *
 * The test runner links Debian's libxenstore, libxenevtchn, libxengnttab
 * and libxenvchan like any program; a constructor re-executes it with
 * LD_LIBRARY_PATH pointing at the simulated libraries of the same build
 * tree (build/sim/xenlibs or build-san/sim/xenlibs), so that the real
 * libxenvchan runs on the simulation.  Each test gets a fresh state
 * directory in XFLOW_SIMXEN_DIR and acts as dom0 unless it says otherwise;
 * the libraries read XFLOW_SIMXEN_DOMID when a handle is opened, so one
 * process may hold handles of several domains.
 */
#ifndef SIMXEN_TEST_H
#define SIMXEN_TEST_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* build/tests/sim.test -> build/sim/xenlibs (resolved), or "" */
static inline const char *simxen_libdir(void)
{
	static char dir[PATH_MAX];
	char exe[PATH_MAX - 32], *slash;
	ssize_t n;

	if (dir[0])
		return dir;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return "";
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return "";
	*slash = '\0';
	strcat(exe, "/../sim/xenlibs");
	if (!realpath(exe, dir))
		dir[0] = '\0';
	return dir;
}

__attribute__((constructor)) static void simxen_test_reexec(int argc, char **argv)
{
	const char *dir = simxen_libdir();
	const char *cur = getenv("LD_LIBRARY_PATH");
	size_t len = strlen(dir);
	char *path;

	(void)argc;
	if (!len || (cur && !strncmp(cur, dir, len) && (cur[len] == ':' || !cur[len])))
		return;
	if (getenv("SIMXEN_TEST_REEXEC"))
		return;   /* once only, whatever happened */
	if (asprintf(&path, "%s%s%s", dir, cur && *cur ? ":" : "", cur ? cur : "") < 0)
		return;
	setenv("LD_LIBRARY_PATH", path, 1);
	setenv("SIMXEN_TEST_REEXEC", "1", 1);
	free(path);
	execv("/proc/self/exe", argv);
}

static char simxen_state[PATH_MAX];

static inline void simxen_use_domid(unsigned int domid)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u", domid);
	setenv("XFLOW_SIMXEN_DOMID", buf, 1);
}

/* Suite .init: a fresh state directory, dom0. */
static inline void simxen_setup(void)
{
	const char *tmp = getenv("TMPDIR");
	char base[PATH_MAX - 16];

	snprintf(base, sizeof(base), "%s/simxen.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	cr_assert_not_null(mkdtemp(base));
	snprintf(simxen_state, sizeof(simxen_state), "%s/st", base);
	setenv("XFLOW_SIMXEN_DIR", simxen_state, 1);
	simxen_use_domid(0);
}

static inline int simxen_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

/* Suite .fini: removes the state directory. */
static inline void simxen_teardown(void)
{
	char *slash;

	if (!simxen_state[0])
		return;
	slash = strrchr(simxen_state, '/');
	*slash = '\0';
	nftw(simxen_state, simxen_rm_one, 16, FTW_DEPTH | FTW_PHYS);
	simxen_state[0] = '\0';
}

/* Runs build/sim/xenlibs/simxen on the test's state; returns its exit status. */
static inline int simxen_tool(const char *cmd, const char *a1, const char *a2)
{
	char tool[PATH_MAX + 16];
	int status;
	pid_t pid;

	snprintf(tool, sizeof(tool), "%s/simxen", simxen_libdir());
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0)
			dup2(null, STDOUT_FILENO);
		execl(tool, "simxen", simxen_state, cmd, a1, a2, (char *)NULL);
		_exit(127);
	}
	cr_assert_gt(pid, 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static inline void simxen_domain_create(unsigned int id, const char *name)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u", id);
	cr_assert_eq(simxen_tool("domain-create", buf, name), 0, "simxen domain-create %u", id);
}

/* Whether @fd becomes readable within @ms milliseconds. */
static inline bool simxen_readable(int fd, int ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1 && (pfd.revents & POLLIN);
}

/*
 * Runs @fn(@arg) in a child process of domain @domid; the child exits with
 * what @fn returns (0 for success).  Children must not use cr_assert.
 */
static inline pid_t simxen_spawn(unsigned int domid, int (*fn)(void *), void *arg)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		simxen_use_domid(domid);
		_exit(fn(arg));
	}
	return pid;
}

static inline int simxen_wait(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* In children: fail with the line number as exit status. */
#define CHILD_CHECK(cond)                                                              \
	do {                                                                           \
		if (!(cond)) {                                                         \
			fprintf(stderr, "%s:%d: child check failed: %s (errno %d)\n", \
				__FILE__, __LINE__, #cond, errno);                     \
			return 1;                                                      \
		}                                                                      \
	} while (0)

#endif
