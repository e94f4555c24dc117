#include <criterion/criterion.h>
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "xflow/shm.h"

Test(shm, region_is_shared_through_its_descriptor)
{
	struct xflow_shm a, b;
	cr_assert_eq(xflow_shm_create("t", 8192, &a), 0);
	cr_assert_eq(xflow_shm_map(dup(a.fd), 8192, &b), 0);
	((volatile char *)a.base)[100] = 'x';
	cr_assert_eq(((volatile char *)b.base)[100], 'x');
	xflow_shm_release(&b);
	xflow_shm_release(&a);
	xflow_shm_release(&a); /* twice is harmless */
}

Test(shm, unsealed_or_wrong_size_descriptor_is_refused)
{
	int fd = memfd_create("plain", MFD_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 4096), 0);
	struct xflow_shm s;
	cr_assert_eq(xflow_shm_map(fd, 0, &s), -EPERM, "a peer could shrink it under us");

	struct xflow_shm a;
	cr_assert_eq(xflow_shm_create("t", 4096, &a), 0);
	cr_assert_eq(xflow_shm_map(dup(a.fd), 8192, &s), -EINVAL);
	/* The seal holds: the size cannot change. */
	cr_assert_eq(ftruncate(a.fd, 100), -1);
	cr_assert_eq(errno, EPERM);
	cr_assert_eq(xflow_shm_map(-1, 0, &s), -EBADF);
	xflow_shm_release(&a);
}
