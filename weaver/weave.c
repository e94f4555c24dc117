/*
 * The weaver as other folders use it (weaver/weave.h): flow files compiled
 * in one call, and what a compiled unit's flows carry across domains.
 */
#include "weaver/weave.h"

#include <errno.h>

#include "weaver/lang/unit.h"

int xflow_weave_compile(const char *const *paths, size_t n, unsigned flags, struct xflow_unit **out)
{
	int rc = xflow_unit_new(out, NULL);
	if (rc) {
		*out = NULL;
		return rc;
	}
	bool every = flags & XFLOW_WEAVE_EVERY_FILE;
	for (size_t i = 0; i < n && (!rc || every); i++) {
		int r = xflow_unit_add_file(*out, paths[i]);
		if (!every)
			rc = r;
	}
	return rc ? rc : xflow_unit_compile(*out);
}

unsigned xflow_weave_carried_bits(const struct xflow_unit *u, int flow)
{
	unsigned bits = 0;
	for (const struct fl_xflow *f = u ? u->flows : NULL; f; f = f->next) {
		if (f->index != flow)
			continue;
		for (const struct fl_xpoint *pt = f->points; pt; pt = pt->next)
			for (size_t k = 0; k < pt->nops; k++) {
				const struct fl_xop *op = pt->ops[k];
				if ((op->kind == FL_X_XIN_MOVE || op->kind == FL_X_XIN_COPY) && op->has_field && op->size &&
				    (!bits || op->size < bits))
					bits = op->size;
			}
	}
	return bits;
}
