/*
 * A weave plan's field table as the interpreter reads it (guestrt/interp/interp.h).
 * Apart from interp.c, which the in-process runtime compiles without a C
 * library and without plans.
 */
#include <string.h>

#include "guestrt/interp/interp.h"
#include "xflow/plan.h"

void xflow_interp_fields(const struct xflow_plan *p, const struct xflow_plan_domain *d, struct xflow_field_rt *out)
{
	memset(out, 0, p->nfields * sizeof(*out));
	for (uint32_t f = 0; f < p->nfields; f++) {
		const struct xflow_plan_layout *l = &d->layouts[f];
		struct xflow_field_rt *r = &out[f];
		if (l->nelems && l->stride && l->offset >= 0 && l->offset <= UINT32_MAX) {
			r->offset = (uint32_t)l->offset;
			r->nelems = l->nelems;
			r->stride = l->stride;
		}
		if (l->offset < 0 || l->offset > UINT32_MAX || l->size == 0 || l->size > 8)
			continue; /* size 0: every access faults, counted */
		unsigned sz = l->size <= 1 ? 1 : l->size <= 2 ? 2 : l->size <= 4 ? 4 : 8;
		r->offset = (uint32_t)l->offset;
		r->size = (uint8_t)sz;
		r->is_signed = (l->flags & XFLOW_LAYOUT_SIGNED) != 0;
		if (l->bit_size) {
			uint64_t first = (uint64_t)l->offset * 8;
			if (l->bit_offset < first || l->bit_offset - first + l->bit_size > sz * 8u) {
				r->size = 0;
				continue;
			}
			r->bit_offset = (uint8_t)(l->bit_offset - first);
			r->bit_size = (uint8_t)l->bit_size;
		}
	}
}
