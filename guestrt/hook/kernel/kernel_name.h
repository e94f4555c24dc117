/*
 * guestrt/hook/kernel/kernel_name.h — the kernel an agent runs on, as its HELLO names
 * it (xflow/control.h): the release (uname -r) and the modules the kernel
 * has BTF for.  The monitor plans a kernel agent's domain with exactly
 * those modules and refuses another release's offsets (collectors/acoll_plan.c).
 */
#ifndef XFLOW_GUESTRT_HOOK_KERNEL_KERNEL_NAME_H
#define XFLOW_GUESTRT_HOOK_KERNEL_KERNEL_NAME_H

#include <stdint.h>

#include "xflow/control.h"

struct agent_kernel_name {
	char release[65];
	char (*mods)[XFLOW_CTL_MAX_MODNAME + 1];
	const char **modv;      /* mods as the HELLO takes them, sorted */
	uint32_t nmods;
	uint32_t left_out;      /* names the HELLO could not carry */
};

/*
 * Read the release and the module names under @btf_dir (NULL:
 * /sys/kernel/btf), vmlinux left out.  A directory that cannot be read
 * gives no modules (a kernel without module BTF).  0 or -ENOMEM.
 */
int agent_kernel_name_read(struct agent_kernel_name *k, const char *btf_dir);
void agent_kernel_name_fini(struct agent_kernel_name *k);

#endif
