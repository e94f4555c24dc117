/*
 * Where the agent was built without the kernel backend
 * (guestrt/kernel.mk): no BPF, so no timekeeper's read.
 */
#include <errno.h>
#include <stdio.h>

#include "xflow/xen_time.h"

int xen_time_read_kernel(int64_t *xen_minus_mono, char *why, size_t whylen)
{
	(void)xen_minus_mono;
	snprintf(why, whylen, "the agent was built without the kernel backend (no BPF to read the timekeeper)");
	return -ENOTSUP;
}

int xen_time_read_at(uint64_t core, int64_t *xen_minus_mono, char *why, size_t whylen)
{
	(void)core;
	return xen_time_read_kernel(xen_minus_mono, why, whylen);
}
