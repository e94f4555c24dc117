/*
 * Helpers for the hook engine tests: fixtures compiled from C during the
 * run, processes with a pipe on stdin and stdout, symbols, text checks.
 */
#ifndef XFLOW_TESTS_GUESTRT_GT_H
#define XFLOW_TESTS_GUESTRT_GT_H

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "guestrt/hook/hook.h"

/* Skip (with the reason) where this process may not trace a child. */
static inline void gt_need_ptrace(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int scope = 0;
	if (f) {
		if (fscanf(f, "%d", &scope) != 1)
			scope = 0;
		fclose(f);
	}
	pid_t c = fork();
	if (c == 0) {
		pause();
		_exit(0);
	}
	/* Never on with -1: kill(-1, SIGKILL) is every process we may signal.
	 * (Not before the branch: the child must not report an assertion.) */
	cr_assert(c > 0, "fork: %s", strerror(errno));
	int ok = ptrace(PTRACE_SEIZE, c, 0, 0) == 0, err = errno;
	kill(c, SIGKILL);
	waitpid(c, NULL, __WALL);
	if (!ok)
		cr_skip_test("ptrace not permitted here (%s; yama ptrace_scope %d)", strerror(err), scope);
}

static char gt_dir[64];

static inline void gt_cleanup(void)
{
	char cmd[128];
	if (gt_dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", gt_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", gt_dir);
	}
}

/* Compile tests/guestrt/fixtures/NAME.c with OPT; the binary's path. */
static inline const char *gt_build(const char *name, const char *opt)
{
	static char path[128];
	char cmd[512];
	if (!gt_dir[0]) {
		strcpy(gt_dir, "/tmp/xflow-gt-XXXXXX");
		cr_assert_not_null(mkdtemp(gt_dir));
		atexit(gt_cleanup);
	}
	snprintf(path, sizeof(path), "%s/%s%s", gt_dir, name, opt);
	for (char *c = path + strlen(gt_dir); *c; c++)
		if (*c == ' ')
			*c = '_';
	snprintf(cmd, sizeof(cmd), "cc -g %s -pthread -o %s tests/guestrt/fixtures/%s.c", opt, path, name);
	cr_assert_eq(system(cmd), 0, "cannot build the fixture: %s", cmd);
	return path;
}

/*
 * The packet fixture (agent_pkt, -O1) and the plainest flow on it — a
 * packet starts in pkt_alloc and quits in pkt_free — written to @flows in
 * the test's directory.  The fixture's path.  For the tests that need an
 * agent with some flow to serve rather than particular records.
 */
static inline const char *gt_pkt_flow_setup(char *flows, size_t flen)
{
	static const char xml[] =
		"<flows><xflow name=\"pktflow\">"
		"<start><pointcut>access(pkt.data) AND within_function(pkt_alloc)</pointcut></start>"
		"<quit><pointcut>access(pkt.%) AND within_function(pkt_free)</pointcut></quit>"
		"</xflow></flows>\n";
	const char *bin = gt_build("agent_pkt", "-O1");
	snprintf(flows, flen, "%s/pkt.xml", gt_dir);
	FILE *f = fopen(flows, "w");
	cr_assert_not_null(f, "%s: %s", flows, strerror(errno));
	fputs(xml, f);
	fclose(f);
	return bin;
}

/* Link-time address of sym in bin (nm). */
static inline uint64_t gt_sym(const char *bin, const char *sym)
{
	char cmd[256], line[256];
	uint64_t v = 0;
	snprintf(cmd, sizeof(cmd), "nm -P %s", bin);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	while (fgets(line, sizeof(line), p)) {
		char name[128], type[8];
		uint64_t a;
		if (sscanf(line, "%127s %7s %" SCNx64, name, type, &a) == 3 && strcmp(name, sym) == 0)
			v = a;
	}
	pclose(p);
	cr_assert_neq(v, 0, "no symbol %s in %s", sym, bin);
	return v;
}

/* Runtime address of sym in the running pid. */
static inline uint64_t gt_addr(pid_t pid, const char *bin, const char *sym)
{
	uint64_t a = 0;
	int rc = xflow_hook_resolve(pid, bin, XFLOW_HOOK_LOC_VADDR, gt_sym(bin, sym), &a);
	cr_assert_eq(rc, 0, "resolve %s: %s", sym, strerror(-rc));
	return a;
}

struct gt_proc {
	pid_t pid;
	FILE *in;  /* its stdin */
	FILE *out; /* its stdout */
};

/*
 * Start bin with pipes on its stdin and stdout; @input (NULL: none) is in
 * its stdin before it runs.  A line written later may find the fixture gone
 * already (one that never reads exits whenever it is done), and a write
 * into a pipe nobody reads raises SIGPIPE in this process; input known in
 * advance is therefore written while this process still holds the read
 * end, so no write can race the fixture's exit.
 */
static inline void gt_start_fed(struct gt_proc *p, const char *bin, const char *threads, const char *calls,
				const char *flags, const char *input)
{
	int in[2], out[2];
	cr_assert_eq(pipe(in), 0);
	cr_assert_eq(pipe(out), 0);
	if (input) {
		/* A few bytes: far below the pipe's capacity, never blocks. */
		size_t n = strlen(input);
		cr_assert_eq(write(in[1], input, n), (ssize_t)n);
	}
	p->pid = fork();
	if (p->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]), close(in[1]), close(out[0]), close(out[1]);
		execl(bin, bin, threads, calls, flags, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	p->in = fdopen(in[1], "w");
	p->out = fdopen(out[0], "r");
	setvbuf(p->in, NULL, _IONBF, 0);
}

static inline void gt_start(struct gt_proc *p, const char *bin, const char *threads, const char *calls,
			    const char *flags)
{
	gt_start_fed(p, bin, threads, calls, flags, NULL);
}

static inline void gt_line(struct gt_proc *p, char *buf, size_t len)
{
	cr_assert_not_null(fgets(buf, (int)len, p->out), "the fixture said nothing");
}

/*
 * Write @s to the fixture's stdin: 0, or -errno (-EPIPE: the fixture is
 * gone, nobody reads the pipe).  SIGPIPE is blocked around the write and
 * the one it raised is taken back, so that a fixture that died fails the
 * test with a message instead of ending it with a signal Criterion reports
 * as a bare CRASH.
 */
static inline int gt_write_in(struct gt_proc *p, const char *s)
{
	sigset_t pipe_sig, old;
	size_t n = strlen(s);
	int rc = 0;
	sigemptyset(&pipe_sig);
	sigaddset(&pipe_sig, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_sig, &old);
	ssize_t w = write(fileno(p->in), s, n);
	if (w < 0)
		rc = -errno;
	else if ((size_t)w != n)
		rc = -EIO;
	if (rc == -EPIPE && !sigismember(&old, SIGPIPE)) {
		/* Thread-directed, so it is pending here: take it. */
		struct timespec now = {0, 0};
		while (sigtimedwait(&pipe_sig, NULL, &now) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static inline void gt_send(struct gt_proc *p)
{
	int rc = gt_write_in(p, "go\n");
	siginfo_t si = {0};
	char how[64] = "";
	/* WNOWAIT: whoever reaps it (gt_finish, an engine) still can. */
	if (rc == -EPIPE && waitid(P_PID, (id_t)p->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid)
		snprintf(how, sizeof(how), " (it %s %d)",
			 si.si_code == CLD_EXITED ? "exited with status" : "died of signal", si.si_status);
	cr_assert_eq(rc, 0, "cannot send the fixture, pid %d, its line: %s%s", (int)p->pid, strerror(-rc), how);
}

/* The "out:" lines still to come, and the exit status. */
static inline int gt_finish(struct gt_proc *p, char *buf, size_t len)
{
	char line[256];
	int st = -1;
	buf[0] = 0;
	while (fgets(line, sizeof(line), p->out))
		if (strncmp(line, "out:", 4) == 0)
			strncat(buf, line, len - strlen(buf) - 1);
	fclose(p->out);
	fclose(p->in);
	while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR)
		;
	return st;
}

/* The "out:" lines of an untraced run with the same arguments. */
static inline void gt_reference(const char *bin, const char *threads, const char *calls, const char *flags, char *buf,
				size_t len)
{
	struct gt_proc p;
	char line[256];
	/* Both lines a fixture may wait for (w, e, j); most read none. */
	gt_start_fed(&p, bin, threads, calls, flags, "go\ngo\n");
	if (strchr(flags, 'w') || strchr(flags, 'j'))
		gt_line(&p, line, sizeof(line));
	int st = gt_finish(&p, buf, len);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "untraced run failed: %d", st);
}

/* Whether every executable mapping of bin in pid holds the file's bytes. */
static inline int gt_text_intact(pid_t pid, const char *bin)
{
	char path[64], line[512], real[256];
	int checked = 0, bad = 0;
	cr_assert_not_null(realpath(bin, real));
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	FILE *m = fopen(path, "r");
	cr_assert_not_null(m);
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int mem = open(path, O_RDONLY), file = open(real, O_RDONLY);
	cr_assert(mem >= 0 && file >= 0);
	while (fgets(line, sizeof(line), m)) {
		uint64_t s, e, off;
		char perms[8], name[256] = "";
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %*s %*s %255s", &s, &e, perms, &off, name) <
			    4 ||
		    perms[2] != 'x' || strcmp(name, real) != 0)
			continue;
		size_t n = (size_t)(e - s);
		char *a = malloc(n), *b = calloc(1, n);
		cr_assert_eq(pread(mem, a, n, (off_t)s), (ssize_t)n);
		ssize_t got = pread(file, b, n, (off_t)off);
		cr_assert(got > 0);
		if (memcmp(a, b, (size_t)got) != 0)
			bad++;
		checked++;
		free(a);
		free(b);
	}
	fclose(m);
	close(mem);
	close(file);
	cr_assert(checked > 0, "no text of %s in %d", real, (int)pid);
	return bad == 0;
}

static inline void gt_count(const struct xflow_hook_hit *hit, void *data)
{
	(void)hit;
	__atomic_add_fetch((uint64_t *)data, 1, __ATOMIC_RELAXED);
}

/* Serve until every target is gone (bounded by ms). */
static inline void gt_run_all(struct xflow_hook *h, int ms)
{
	int rc = xflow_hook_run(h, ms);
	cr_assert(rc >= 0, "run: %s (%s)", strerror(-rc), xflow_hook_last_error(h));
}

/* Serve hits until the fixture prints a line, then read it. */
static inline void gt_run_line(struct xflow_hook *h, struct gt_proc *p, char *buf, size_t len)
{
	struct pollfd pf = {.fd = fileno(p->out), .events = POLLIN};
	for (int i = 0; i < 1000 && poll(&pf, 1, 0) == 0; i++)
		cr_assert(xflow_hook_run(h, 20) >= 0);
	gt_line(p, buf, len);
}

#endif
