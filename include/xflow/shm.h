/*
 * xflow/shm.h — anonymous shared memory for rings between processes.
 *
 * Regions are memfds: nothing is left in /dev/shm when every process holding
 * one exits, whatever the cause.  The creator seals the size, so a peer that
 * receives the descriptor cannot shrink it under the other side (which would
 * turn every later access into SIGBUS); xflow_shm_map() refuses an unsealed
 * descriptor from a peer for the same reason.
 */
#ifndef XFLOW_SHM_H
#define XFLOW_SHM_H

#include <stddef.h>

struct xflow_shm {
	void *base;
	size_t size;
	int fd;
};

/* Create and map a sealed region of @size bytes.  Returns 0 or -errno. */
int xflow_shm_create(const char *name, size_t size, struct xflow_shm *out);

/*
 * Map a region received from a peer.  Takes ownership of @fd (closed on
 * error too).  @expect_size 0 accepts the descriptor's size.  Returns 0,
 * -EPERM when the size is not sealed, -EINVAL on a size mismatch, or -errno.
 */
int xflow_shm_map(int fd, size_t expect_size, struct xflow_shm *out);

/* Unmap and close; safe on a zeroed or already released region. */
void xflow_shm_release(struct xflow_shm *shm);

#endif
