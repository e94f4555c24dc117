/* A guest's shared memory: see hostmem.h for the layout. */
#include "sim/hostmem.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int hostmem_create(uint32_t domid)
{
	char name[32];
	struct hostmem hm;
	int fd, rc;

	snprintf(name, sizeof(name), "xensim-dom%u", domid);
	/* No MFD_CLOEXEC: the launcher hands this fd to both domains. */
	fd = memfd_create(name, 0);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, HOSTMEM_SIZE) < 0) {
		rc = -errno;
		goto fail;
	}
	hm.size = HOSTMEM_SIZE;
	hm.base = mmap(NULL, hm.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hm.base == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}
	/* The file is zero-filled: rings, grants and channels start empty. */
	hostmem_info(&hm)->domid = domid;
	hostmem_info(&hm)->ram_pages = HOSTMEM_RAM_PAGES;
	for (int i = 0; i < HOSTMEM_NR_EVTCHN; i++) {
		hostmem_info(&hm)->evtchn[i].domid[0] = domid; /* the frontend */
		hostmem_info(&hm)->evtchn[i].domid[1] = 0;     /* the backend, in dom0 */
	}
	hostmem_info(&hm)->magic = HOSTMEM_MAGIC;
	munmap(hm.base, hm.size);
	return fd;
fail:
	close(fd);
	return rc;
}

int hostmem_map(struct hostmem *hm, int fd, uint32_t domid)
{
	hm->size = HOSTMEM_SIZE;
	hm->base = mmap(NULL, hm->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hm->base == MAP_FAILED) {
		hm->base = NULL;
		return -errno;
	}
	if (hostmem_info(hm)->magic != HOSTMEM_MAGIC || hostmem_info(hm)->domid != domid) {
		hostmem_unmap(hm);
		return -EINVAL;
	}
	return 0;
}

void hostmem_unmap(struct hostmem *hm)
{
	if (hm->base)
		munmap(hm->base, hm->size);
	hm->base = NULL;
}
