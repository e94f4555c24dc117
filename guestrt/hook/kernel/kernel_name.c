/*
 * The agent's kernel as its HELLO names it (guestrt/hook/kernel/kernel_name.h).
 */
#include "guestrt/hook/kernel/kernel_name.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int agent_kernel_name_read(struct agent_kernel_name *k, const char *btf_dir)
{
	memset(k, 0, sizeof(*k));
	struct utsname un;
	/* A release the HELLO may not carry is left unsaid: the monitor then
	 * plans as it did for agents that did not say. */
	if (uname(&un) == 0 && xflow_ctl_release_ok(un.release))
		snprintf(k->release, sizeof(k->release), "%s", un.release);
	DIR *d = opendir(btf_dir ? btf_dir : "/sys/kernel/btf");
	if (!d)
		return 0;
	uint32_t cap = 0;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.' || strcmp(e->d_name, "vmlinux") == 0)
			continue;
		if (!xflow_ctl_module_name_ok(e->d_name) || k->nmods == XFLOW_CTL_MAX_MODULES) {
			k->left_out++;
			continue;
		}
		if (k->nmods == cap) {
			cap = cap ? 2 * cap : 64;
			void *v = realloc(k->mods, cap * sizeof(*k->mods));
			if (!v) {
				rc = -ENOMEM;
				break;
			}
			k->mods = v;
		}
		/* At most XFLOW_CTL_MAX_MODNAME bytes: checked above. */
		memcpy(k->mods[k->nmods++], e->d_name, strlen(e->d_name) + 1);
	}
	closedir(d);
	if (!rc && k->nmods && !(k->modv = calloc(k->nmods, sizeof(*k->modv))))
		rc = -ENOMEM;
	if (rc) {
		agent_kernel_name_fini(k);
		return rc;
	}
	for (uint32_t i = 0; i < k->nmods; i++)
		k->modv[i] = k->mods[i];
	/* Sorted: the monitor caches plans by what the HELLO says. */
	if (k->nmods)
		qsort(k->modv, k->nmods, sizeof(*k->modv), cmp_name);
	return 0;
}

void agent_kernel_name_fini(struct agent_kernel_name *k)
{
	free(k->modv);
	free(k->mods);
	memset(k, 0, sizeof(*k));
}
