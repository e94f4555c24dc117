/*
 * The simulated grant tables' files (a simulation for tests, not Xen; see
 * simx_grant.h).
 */
#include "simx_grant.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void page_path(unsigned int domid, uint32_t ref, const char *suffix, char *buf, size_t size)
{
	snprintf(buf, size, "grants/%u/%u%s", domid, ref, suffix);
}

static void forget(const struct simx_env *env, unsigned int domid, uint32_t ref)
{
	char path[48];

	page_path(domid, ref, "", path, sizeof(path));
	unlinkat(env->dirfd, path, 0);
	page_path(domid, ref, ".meta", path, sizeof(path));
	unlinkat(env->dirfd, path, 0);
}

/* True while the granting process still maps the page. */
static bool granted(const struct simx_env *env, unsigned int domid, uint32_t ref)
{
	char path[48];
	bool live;
	int fd;

	page_path(domid, ref, "", path, sizeof(path));
	fd = openat(env->dirfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	live = flock(fd, LOCK_EX | LOCK_NB) < 0;
	close(fd);
	return live;
}

/* Whether @ref of env->domid may be handed out: never used, or ended. */
static bool ref_free(const struct simx_env *env, uint32_t ref)
{
	char path[48];

	page_path(env->domid, ref, "", path, sizeof(path));
	if (faccessat(env->dirfd, path, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT;
	if (granted(env, env->domid, ref))
		return false;
	forget(env, env->domid, ref);
	return true;
}

int simx_grant_alloc_locked(const struct simx_env *env, unsigned int grantee, bool writable,
			    uint32_t *ref)
{
	const uint32_t span = SIMX_GRANT_LIMIT - SIMX_GRANT_FIRST;
	char dir[32], path[48], tmp[48], meta[32], *hint;
	uint32_t start = SIMX_GRANT_FIRST, r = 0;
	int fd, rc;

	snprintf(dir, sizeof(dir), "grants/%u", env->domid);
	rc = simx_mkdir(env->dirfd, dir);
	if (rc)
		return rc;
	/* Hand refs out round-robin, as a free list would, from a hint. */
	snprintf(path, sizeof(path), "%s/next", dir);
	if (simx_read_file(env->dirfd, path, 16, &hint, NULL) == 0) {
		unsigned long v = strtoul(hint, NULL, 10);

		if (v >= SIMX_GRANT_FIRST && v < SIMX_GRANT_LIMIT)
			start = (uint32_t)v;
		free(hint);
	}
	for (uint32_t i = 0; i < span; i++) {
		uint32_t cand = SIMX_GRANT_FIRST + (start - SIMX_GRANT_FIRST + i) % span;

		if (ref_free(env, cand)) {
			r = cand;
			break;
		}
	}
	if (!r)
		return -ENOSPC;
	snprintf(meta, sizeof(meta), "%u %d\n", grantee, writable ? 1 : 0);
	page_path(env->domid, r, ".meta", path, sizeof(path));
	rc = simx_write_file(env->dirfd, path, meta, strlen(meta));
	if (rc)
		return rc;
	simx_tmp_name(tmp, sizeof(tmp), "g");
	fd = openat(env->dirfd, tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	/* Locked before it is visible, so that it is never taken for ended. */
	page_path(env->domid, r, "", path, sizeof(path));
	if (ftruncate(fd, SIMX_PAGE_SIZE) < 0 || flock(fd, LOCK_SH) < 0 ||
	    renameat(env->dirfd, tmp, env->dirfd, path) < 0) {
		rc = -errno;
		close(fd);
		unlinkat(env->dirfd, tmp, 0);
		return rc;
	}
	snprintf(meta, sizeof(meta), "%u", r + 1 < SIMX_GRANT_LIMIT ? r + 1 : SIMX_GRANT_FIRST);
	snprintf(path, sizeof(path), "%s/next", dir);
	simx_write_file(env->dirfd, path, meta, strlen(meta));
	*ref = r;
	return fd;
}

int simx_grant_open_locked(const struct simx_env *env, unsigned int granter, uint32_t ref,
			   int prot)
{
	char path[48], *meta;
	unsigned int grantee;
	int writable, fd;

	if (granter >= SIMX_DOMID_LIMIT || ref < SIMX_GRANT_FIRST || ref >= SIMX_GRANT_LIMIT)
		return -EINVAL;
	page_path(granter, ref, ".meta", path, sizeof(path));
	if (simx_read_file(env->dirfd, path, 64, &meta, NULL))
		return -EINVAL;
	if (sscanf(meta, "%u %d", &grantee, &writable) != 2)
		grantee = SIMX_DOMID_LIMIT;
	free(meta);
	if (grantee != env->domid || ((prot & PROT_WRITE) && !writable))
		return -EINVAL;
	if (!granted(env, granter, ref)) {
		forget(env, granter, ref);
		return -EINVAL;
	}
	page_path(granter, ref, "", path, sizeof(path));
	fd = openat(env->dirfd, path,
		    ((prot & PROT_WRITE) ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -EINVAL : fd;
}

void simx_grant_end_locked(const struct simx_env *env, uint32_t ref)
{
	forget(env, env->domid, ref);
}

void simx_grant_end_domain_locked(const struct simx_env *env, unsigned int domid)
{
	char dir[32];

	snprintf(dir, sizeof(dir), "grants/%u", domid);
	simx_rm_tree(env->dirfd, dir);
}
