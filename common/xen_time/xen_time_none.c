/*
 * Where the build had no BPF objects (common/xen_time/xen_time.mk): no timekeeper's
 * read, only the simulated host's (common/xen_time/xen_time.c).
 */
#include <errno.h>
#include <stdio.h>

#include "xflow/xen_time.h"

int xen_time_bpf_layout(struct xen_time_layout *at, char *why, size_t whylen)
{
	(void)at;
	snprintf(why, whylen, "built without the kernel backend (no BPF to read the timekeeper)");
	return -ENOTSUP;
}

int xen_time_bpf_open(struct xen_time_reader *r, char *why, size_t whylen)
{
	(void)r;
	snprintf(why, whylen, "built without the kernel backend (no BPF to read the timekeeper)");
	return -ENOTSUP;
}

int xen_time_bpf_read(struct xen_time_reader *r, int64_t *xen_minus_mono, char *why, size_t whylen)
{
	(void)r;
	(void)xen_minus_mono;
	snprintf(why, whylen, "built without the kernel backend");
	return -ENOTSUP;
}

void xen_time_bpf_close(struct xen_time_reader *r)
{
	(void)r;
}

uint32_t xen_time_bpf_prog_id(const struct xen_time_reader *r)
{
	(void)r;
	return 0;
}
