/*
 * Sealed memfd regions.  See xflow/shm.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "xflow/shm.h"

#define XFLOW_SHM_SEALS (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL)

static int shm_mmap(int fd, size_t size, struct xflow_shm *out)
{
	void *base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (base == MAP_FAILED)
		return -errno;
	out->base = base;
	out->size = size;
	out->fd = fd;
	return 0;
}

int xflow_shm_create(const char *name, size_t size, struct xflow_shm *out)
{
	int rc, fd;

	memset(out, 0, sizeof(*out));
	out->fd = -1;
	if (size == 0)
		return -EINVAL;
	fd = memfd_create(name ? name : "xflow", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0 || fcntl(fd, F_ADD_SEALS, XFLOW_SHM_SEALS) < 0) {
		rc = -errno;
		goto fail;
	}
	rc = shm_mmap(fd, size, out);
	if (rc == 0)
		return 0;
fail:
	close(fd);
	return rc;
}

int xflow_shm_map(int fd, size_t expect_size, struct xflow_shm *out)
{
	struct stat st;
	int rc, seals;

	memset(out, 0, sizeof(*out));
	out->fd = -1;
	if (fd < 0)
		return -EBADF;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto fail;
	}
	seals = fcntl(fd, F_GET_SEALS);
	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) {
		rc = -EPERM;
		goto fail;
	}
	if (st.st_size <= 0 || (expect_size && (size_t)st.st_size != expect_size)) {
		rc = -EINVAL;
		goto fail;
	}
	rc = shm_mmap(fd, (size_t)st.st_size, out);
	if (rc == 0)
		return 0;
fail:
	close(fd);
	return rc;
}

void xflow_shm_release(struct xflow_shm *shm)
{
	if (shm->base)
		munmap(shm->base, shm->size);
	if (shm->fd >= 0)
		close(shm->fd);
	shm->base = NULL;
	shm->size = 0;
	shm->fd = -1;
}
