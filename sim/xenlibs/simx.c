/*
 * The simulated Xen toolstack's state directory, lock, ids and mailboxes
 * (a simulation for tests, not Xen; see simx.h and README).
 */
#include "simx.h"
#include "simx_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SIMX_LAYOUT_VERSION "xflowtop simulated Xen state 1\n"

/* Each library says once per process what is wrong with its environment. */
static atomic_bool complained;

__attribute__((format(printf, 2, 3)))
static void complain(const char *lib, const char *fmt, ...)
{
	va_list ap;

	if (atomic_exchange(&complained, true))
		return;
	fprintf(stderr, "%s (xflowtop's simulated Xen, not Xen): ", lib);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see sim/xenlibs/README)\n", stderr);
}

static int parse_domid(const char *s, unsigned int *domid)
{
	char *end;
	unsigned long v;

	if (!s || !*s) {
		*domid = 0;
		return 0;
	}
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || end == s || v >= SIMX_DOMID_LIMIT || s[0] == '-')
		return -EINVAL;
	*domid = (unsigned int)v;
	return 0;
}

int simx_env_open(struct simx_env *env, const char *lib)
{
	const char *dir = getenv("XFLOW_SIMXEN_DIR");
	const char *dom = getenv("XFLOW_SIMXEN_DOMID");
	unsigned int domid;
	int rc;

	if (!dir || !*dir) {
		complain(lib, "%s is not set; it must name the simulated host's "
			 "state directory", "XFLOW_SIMXEN_DIR");
		return -ENOENT;
	}
	if (parse_domid(dom, &domid)) {
		complain(lib, "XFLOW_SIMXEN_DOMID=%s is not a domain id (0..32751)", dom);
		return -EINVAL;
	}
	rc = simx_env_open_dir(env, dir, domid);
	if (rc == -ESRCH)
		complain(lib, "domain XFLOW_SIMXEN_DOMID=%s does not exist; create it "
			 "with simxen DIR domain-create ID NAME", dom ? dom : "0");
	else if (rc < 0)
		complain(lib, "cannot open the state directory %s", dir);
	return rc;
}

static int init_layout(struct simx_env *env)
{
	static const char *const dirs[] = {
		"tmp", "watchers", "evtchn", "evtchn/h", "grants", "domains",
	};
	int rc = 0;

	if (faccessat(env->dirfd, "version", F_OK, 0) == 0)
		return 0;
	simx_lock(env, true);
	if (faccessat(env->dirfd, "version", F_OK, 0) == 0)
		goto out;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]) && !rc; i++)
		rc = simx_mkdir(env->dirfd, dirs[i]);
	if (!rc)
		rc = simx_write_file(env->dirfd, "domains/0", "Domain-0\n", 9);
	if (!rc)
		rc = simx_store_init_locked(env);
	if (!rc)
		rc = simx_write_file(env->dirfd, "version", SIMX_LAYOUT_VERSION,
				     strlen(SIMX_LAYOUT_VERSION));
out:
	simx_unlock(env);
	return rc;
}

int simx_env_open_dir(struct simx_env *env, const char *dir, unsigned int domid)
{
	int rc;

	env->dirfd = -1;
	env->lockfd = -1;
	env->domid = domid;
	env->pid = getpid();
	if (domid >= SIMX_DOMID_LIMIT)
		return -EINVAL;
	env->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (env->dirfd < 0 && errno == ENOENT) {
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return -errno;
		env->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (env->dirfd < 0)
		return -errno;
	env->lockfd = openat(env->dirfd, "lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (env->lockfd < 0) {
		rc = -errno;
		goto fail;
	}
	rc = init_layout(env);
	if (rc)
		goto fail;
	if (!simx_domain_exists(env, domid)) {
		rc = -ESRCH;
		goto fail;
	}
	return 0;
fail:
	simx_env_close(env);
	return rc;
}

void simx_env_close(struct simx_env *env)
{
	if (env->lockfd >= 0)
		close(env->lockfd);
	if (env->dirfd >= 0)
		close(env->dirfd);
	env->lockfd = env->dirfd = -1;
}

bool simx_env_owned(const struct simx_env *env)
{
	return env->pid == getpid();
}

void simx_lock(const struct simx_env *env, bool exclusive)
{
	while (flock(env->lockfd, exclusive ? LOCK_EX : LOCK_SH) < 0 && errno == EINTR)
		;
}

void simx_unlock(const struct simx_env *env)
{
	flock(env->lockfd, LOCK_UN);
}

uint64_t simx_new_id(void)
{
	static atomic_uint_fast64_t counter;
	uint64_t id = 0;

	if (getrandom(&id, sizeof(id), GRND_NONBLOCK) != (ssize_t)sizeof(id)) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		id = ((uint64_t)getpid() << 40) ^ (uint64_t)ts.tv_nsec ^
		     ((uint64_t)ts.tv_sec << 20) ^ atomic_fetch_add(&counter, 1);
	}
	return id ? id : 1;
}

bool simx_domain_exists(const struct simx_env *env, unsigned int domid)
{
	char path[32];

	if (domid == 0)
		return true;
	snprintf(path, sizeof(path), "domains/%u", domid);
	return faccessat(env->dirfd, path, F_OK, 0) == 0;
}

void simx_tmp_name(char *buf, size_t size, const char *kind)
{
	snprintf(buf, size, "tmp/%s.%016" PRIx64, kind, simx_new_id());
}

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int simx_write_file(int dirfd, const char *path, const void *data, size_t len)
{
	char tmp[48];
	int fd, rc;

	simx_tmp_name(tmp, sizeof(tmp), "w");
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	rc = write_all(fd, data, len);
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && renameat(dirfd, tmp, dirfd, path) < 0)
		rc = -errno;
	if (rc)
		unlinkat(dirfd, tmp, 0);
	return rc;
}

int simx_read_file(int dirfd, const char *path, size_t max, char **data, size_t *len)
{
	size_t got = 0;
	char *buf;
	int fd, rc = 0;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	buf = malloc(max + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < max) {
		ssize_t n = read(fd, buf + got, max - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	if (rc) {
		free(buf);
		return rc;
	}
	buf[got] = '\0';
	*data = buf;
	if (len)
		*len = got;
	return 0;
}

int simx_mkdir(int dirfd, const char *path)
{
	if (mkdirat(dirfd, path, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* Deletes the contents of directory @fd (which it closes). */
static void empty_dir(int fd)
{
	DIR *d = fdopendir(fd);
	struct dirent *e;

	if (!d) {
		close(fd);
		return;
	}
	while ((e = readdir(d))) {
		int sub;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (unlinkat(dirfd(d), e->d_name, 0) == 0)
			continue;
		sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		empty_dir(sub);
		unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

int simx_rm_tree(int dirfd, const char *path)
{
	char tmp[48];
	int fd;

	/* Out of sight first, so that nobody sees a half-removed tree. */
	simx_tmp_name(tmp, sizeof(tmp), "rm");
	if (renameat(dirfd, path, dirfd, tmp) < 0)
		return -errno;
	if (unlinkat(dirfd, tmp, 0) == 0)
		return 0;
	fd = openat(dirfd, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	empty_dir(fd);
	if (unlinkat(dirfd, tmp, AT_REMOVEDIR) < 0)
		return -errno;
	return 0;
}

int simx_mailbox_make(int dirfd, const char *tmp)
{
	int fd;

	if (mkfifoat(dirfd, tmp, 0600) < 0)
		return -errno;
	/* Read-write: opening does not wait for a writer, and we count as one. */
	fd = openat(dirfd, tmp, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int rc = -errno;

		unlinkat(dirfd, tmp, 0);
		return rc;
	}
	return fd;
}

int simx_mailbox_post(int dirfd, const char *path, const void *rec, size_t len)
{
	int fd, rc = 0;
	ssize_t n;
	struct stat st;

	if (len > PIPE_BUF)
		return -EMSGSIZE;
	fd = openat(dirfd, path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISFIFO(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	do
		n = write(fd, rec, len);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		rc = -errno;
	else if ((size_t)n != len)
		rc = -EIO;   /* cannot happen for len <= PIPE_BUF */
	close(fd);
	return rc;
}

bool simx_mailbox_alive(int dirfd, const char *path)
{
	/* Write-only and non-blocking: ENXIO says that nobody reads it. */
	int fd = openat(dirfd, path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}
