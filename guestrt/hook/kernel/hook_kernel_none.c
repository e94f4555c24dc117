/*
 * The kernel hook engine where the build could not make the BPF object
 * (guestrt/hook/kernel/kernel.mk): every engine it would start says why.
 */
#include <errno.h>

#include "guestrt/hook/hook.h"

#ifndef KERNEL_BPF_WHY
#define KERNEL_BPF_WHY "KERNEL_BPF=0"
#endif

const char *xflow_hook_kernel_unbuilt(void)
{
	return "the kernel backend was not built: " KERNEL_BPF_WHY;
}

static int kn_none_new(const struct xflow_hook_config *cfg, struct xflow_hook **out)
{
	(void)cfg;
	*out = 0;
	return -ENOTSUP;
}

const struct xflow_hook_backend_ops xflow_hook_kernel_ops = {
	.name = "kernel",
	.hook_new = kn_none_new,
};
