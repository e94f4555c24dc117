/*
 * Fuzz what a kernel agent does with a plan before anything reaches
 * libbpf or the kernel: the plan read (any bytes: refused with a reason,
 * or a plan every index of which is in range) and each of its domains
 * lowered to the kernel backend's slots (a plan read: lowered, or refused
 * with a reason; a refusal keeps nothing).  The seeds are the shipped
 * kernel flows planned against this machine's BTF.
 */
#include <stdint.h>
#include <stdlib.h>

#include "guestrt/hook/kernel/klower.h"
#include "xflow/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xflow_plan *p;
	char why[512] = "";
	if (xflow_plan_read(data, size, &p, why, sizeof(why))) {
		if (!why[0])
			abort();
		return 0;
	}
	for (uint32_t d = 0; d < p->ndomains; d++) {
		struct xk_lowered l;
		why[0] = 0;
		int rc = xk_lower(p, &p->domains[d], &l, why, sizeof(why));
		if (rc) {
			if (!why[0] || l.slot_of_site)
				abort();
			continue;
		}
		if (l.nsites != p->domains[d].nsites || l.nused > XK_SLOTS)
			abort();
		for (uint32_t s = 0; s < l.nsites; s++)
			if (l.slot_of_site[s] >= XK_SLOTS || (l.slot_of_site[s] >= 0 && !l.slots[l.slot_of_site[s]].used))
				abort();
		xk_lowered_fini(&l);
	}
	xflow_plan_free(p);
	return 0;
}
