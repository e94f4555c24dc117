/*
 * A site's roles in unkeyed cross-domain handoffs, from the advice bound
 * there (xflow_plan_site_roles in xflow/plan.h).  The monitor's model
 * trusts these over what a guest's records claim, so they come from the
 * plan the monitor built, never from the records.
 */
#include "xflow/plan.h"

#include "xflow/collector.h"
#include "xflow/flowlang.h"
#include "xflow/record.h"

/* A keyed handoff's advice writes its records with XFLOW_OP_HANDOFF
 * (XFLOW_REC_KEYED): joined by key, it neither sends nor receives by
 * header bits, though its rec_flags say CROSS_DOMAIN as the unkeyed
 * sides' do. */
static int is_keyed(const struct xflow_plan_advice *a)
{
	for (uint32_t i = 0; i < a->prog.ninsns; i++)
		if (a->prog.insns[i].op == XFLOW_OP_HANDOFF)
			return 1;
	return 0;
}

/* The first binding of @site: bindings are sorted by site. */
static uint32_t first_binding(const struct xflow_plan_domain *d, uint32_t site)
{
	uint32_t lo = 0, hi = d->nbindings;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (d->bindings[mid].site < site)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

uint32_t xflow_plan_site_roles(const struct xflow_plan *p, const struct xflow_plan_domain *d,
			       uint32_t site)
{
	if (!p || !d || site >= d->nsites || (p->version && p->version < 4))
		return 0;
	uint32_t roles = XFLOW_SITE_ROLES_KNOWN;
	for (uint32_t b = first_binding(d, site); b < d->nbindings && d->bindings[b].site == site; b++) {
		if (d->bindings[b].advice >= p->nadvice)
			continue;
		const struct xflow_plan_advice *a = &p->advice[d->bindings[b].advice];
		if (a->flags & XFLOW_ADVICE_RECEIVES)
			roles |= XFLOW_SITE_RECEIVES;
		else if ((a->rec_flags & XFLOW_REC_CROSS_DOMAIN) && !is_keyed(a))
			roles |= XFLOW_SITE_SENDS;
		if (a->flags & XFLOW_ADVICE_NOTIFIES)
			roles |= XFLOW_SITE_NOTIFIES;
	}
	return roles;
}
