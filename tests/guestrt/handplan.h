/*
 * Weave plans placed by hand, for the in-process backend's tests and
 * benchmark: advice compiled from a flow file by the weaver's front end
 * (xflow_unit), sites at addresses the caller picks (symbols of
 * hand-written functions whose bytes it knows), fetch recipes and field
 * layouts it states.  The join-point engine is tested elsewhere; this keeps
 * the code under test independent of what a compiler makes of C.
 */
#ifndef XFLOW_TESTS_GUESTRT_HANDPLAN_H
#define XFLOW_TESTS_GUESTRT_HANDPLAN_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guestrt/hook/hook.h"
#include "guestrt/interp/interp.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"

#define HP_MAX 64

struct handplan {
	struct xflow_unit *u;
	struct xflow_plan plan;
	struct xflow_plan_domain dom;
	struct xflow_plan_binary bin;
	const char *flows[HP_MAX];
	struct xflow_plan_field fields[HP_MAX];
	struct xflow_plan_layout layouts[HP_MAX];
	struct xflow_plan_advice adv[HP_MAX];
	struct xflow_plan_site sites[HP_MAX];
	struct xflow_plan_binding bind[HP_MAX];
	struct xflow_plan_fetch fetch[HP_MAX];
	struct xflow_field_rt frt[HP_MAX];
	uint64_t base;
};

/* Compile @xml; the plan's one domain "hp" is the binary at @bin (a PIE).
 * 0, or -1 with the diagnostics on stderr. */
static inline int handplan_init(struct handplan *hp, const char *xml, const char *bin)
{
	memset(hp, 0, sizeof(*hp));
	struct xflow_unit_opts o = { .no_include = true };
	if (xflow_unit_new(&hp->u, &o) || xflow_unit_add_buffer(hp->u, "handplan.xml", xml, strlen(xml)) ||
	    xflow_unit_compile(hp->u)) {
		if (hp->u)
			xflow_unit_print_diags(hp->u, stderr);
		return -1;
	}
	size_t n = xflow_unit_advice_count(hp->u);
	for (size_t i = 0; i < n && i < HP_MAX; i++) {
		struct xflow_advice_info ai;
		xflow_unit_advice(hp->u, i, &ai);
		hp->adv[i] = (struct xflow_plan_advice){ .origin = ai.origin, .flow = ai.flow, .flags = ai.flags,
							 .after_store_field = ai.after_store_field,
							 .rec_flags = ai.rec_flags, .file = ai.file, .line = ai.line,
							 .col = ai.col, .prog = *ai.prog };
	}
	hp->plan.nadvice = (uint32_t)n;
	for (size_t i = 0; i < xflow_unit_flow_count(hp->u) && i < HP_MAX; i++)
		hp->flows[hp->plan.nflows++] = xflow_unit_flow_name(hp->u, i);
	for (size_t i = 0; i < xflow_unit_field_count(hp->u) && i < HP_MAX; i++) {
		unsigned bits;
		xflow_unit_field(hp->u, i, &hp->fields[i].sname, &hp->fields[i].member, &bits);
		hp->layouts[i] = (struct xflow_plan_layout){ .offset = -1 };
		hp->plan.nfields++;
	}
	hp->bin = (struct xflow_plan_binary){ .path = bin, .flags = XFLOW_PLAN_BIN_RELOCATABLE };
	hp->dom = (struct xflow_plan_domain){ .name = "hp", .binaries = &hp->bin, .nbinaries = 1,
					      .layouts = hp->layouts, .sites = hp->sites,
					      .bindings = hp->bind, .fetches = hp->fetch };
	hp->plan.flows = hp->flows;
	hp->plan.fields = hp->fields;
	hp->plan.advice = hp->adv;
	hp->plan.domains = &hp->dom;
	hp->plan.ndomains = 1;
	return 0;
}

/* Field @f (in the unit's order) at @offset, @size bytes. */
static inline void handplan_layout(struct handplan *hp, uint32_t f, int64_t offset, uint32_t size)
{
	hp->layouts[f] = (struct xflow_plan_layout){ .offset = offset, .size = size };
}

/* A site at link-time address @addr (sites in ascending order). */
static inline uint32_t handplan_site(struct handplan *hp, uint64_t addr, uint8_t len)
{
	uint32_t s = hp->dom.nsites++;
	hp->sites[s] = (struct xflow_plan_site){ .addr = addr, .kind = XFLOW_SITE_LOAD, .len = len, .field = -1,
						 .file = "handplan", .func = "handplan" };
	return s;
}

/* Advice @a at site @s (bindings by site, then advice, ascending), its
 * inputs fetched by @f. */
static inline void handplan_bind(struct handplan *hp, uint32_t s, uint32_t a, unsigned when,
				 const struct xflow_plan_fetch *f, unsigned nf)
{
	uint32_t b = hp->dom.nbindings++;
	hp->bind[b] = (struct xflow_plan_binding){ .site = s, .advice = a, .when = (uint8_t)when,
						   .ninputs = (uint8_t)nf, .first_fetch = hp->dom.nfetches };
	for (unsigned i = 0; i < nf; i++)
		hp->fetch[hp->dom.nfetches++] = f[i];
	hp->sites[s].when_mask |= (uint8_t)(1u << when);
}

/* Check the plan as the plan reader would, and fill @prog for a target
 * whose binary is loaded at @base. */
static inline int handplan_prog(struct handplan *hp, uint64_t base, uint16_t domid, struct xflow_hook_prog *prog)
{
	char why[256];
	if (xflow_plan_check(&hp->plan, why, sizeof(why))) {
		fprintf(stderr, "handplan: %s\n", why);
		return -1;
	}
	hp->base = base;
	xflow_interp_fields(&hp->plan, &hp->dom, hp->frt);
	*prog = (struct xflow_hook_prog){ .plan = &hp->plan, .dom = &hp->dom, .fields = hp->frt, .bases = &hp->base,
					  .domain_id = domid };
	return 0;
}

static inline void handplan_fini(struct handplan *hp)
{
	xflow_unit_free(hp->u);
}

#endif
