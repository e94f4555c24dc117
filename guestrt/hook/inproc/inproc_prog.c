/*
 * The plan as the runtime in a target reads it (the control region), and a
 * process's data region (its flow-id table and lanes): their sizes, and
 * writing them through this process's mapping with the target's addresses
 * inside (xflow/inproc.h).
 */
#include <cpuid.h>
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "guestrt/hook/inproc/inproc_priv.h"
#include "guestrt/interp/interp.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"

#define ALIGN8(x) (((x) + 7) & ~(size_t)7)
#define ALIGN64(x) (((x) + 63) & ~(size_t)63)
#define ALIGN4K(x) (((x) + 4095) & ~(size_t)4095)

/* Byte offsets of the control region's tables; size in the last. */
struct ctl_layout {
	size_t advice, enabled, sites, bindings, fetches, fields, bases, code, size;
};

static size_t prog_bytes(const struct xflow_bc_prog *p)
{
	return ALIGN8(p->ninsns * sizeof(struct xflow_bc_insn)) + ALIGN8(p->nconsts * sizeof(uint64_t)) +
	       ALIGN8(p->nlocals);
}

static void ctl_layout(const struct xflow_hook_prog *p, struct ctl_layout *l)
{
	const struct xflow_plan *pl = p->plan;
	const struct xflow_plan_domain *d = p->dom;
	size_t at = ALIGN64(sizeof(struct xflow_rt_ctl));
	l->advice = at;
	at += ALIGN8(pl->nadvice * sizeof(struct xflow_rt_advice));
	l->enabled = at;
	at += ALIGN8(pl->nadvice);
	l->sites = at;
	at += ALIGN8(d->nsites * sizeof(struct xflow_rt_site));
	l->bindings = at;
	at += ALIGN8(d->nbindings * sizeof(struct xflow_rt_binding));
	l->fetches = at;
	at += ALIGN8(d->nfetches * sizeof(struct xflow_rt_fetch));
	l->fields = at;
	at += ALIGN8(pl->nfields * sizeof(struct xflow_field_rt));
	l->bases = at;
	at += ALIGN8(d->nbinaries * sizeof(uint64_t));
	l->code = at;
	for (uint32_t i = 0; i < pl->nadvice; i++)
		at += prog_bytes(&pl->advice[i].prog);
	l->size = at;
}

size_t ip_ctl_size(const struct xflow_hook_prog *p)
{
	struct ctl_layout l;
	ctl_layout(p, &l);
	return l.size;
}

/* 0: no flow-id table; 1: changes it; 2: only looks ids up (the guard of
 * an xflow() pointcut), which compiled advice does without the lock. */
static uint8_t uses_flow_table(const struct xflow_bc_prog *p)
{
	uint8_t use = 0;
	for (uint32_t i = 0; i < p->ninsns; i++) {
		if (p->insns[i].op == XFLOW_OP_FLOW_REG || p->insns[i].op == XFLOW_OP_FLOW_DEL)
			return 1;
		if (p->insns[i].op == XFLOW_OP_FLOW_GET)
			use = 2;
	}
	return use;
}

/* RDTSCP is there (CPUID 0x80000001 EDX bit 27), and with it the kernel
 * keeps each CPU's number in TSC_AUX (Linux does wherever RDTSCP or RDPID
 * is, for its vDSO's getcpu). */
static int rdtscp_usable(void)
{
	unsigned eax, ebx, ecx, edx;
	return __get_cpuid(0x80000001u, &eax, &ebx, &ecx, &edx) && (edx >> 27 & 1);
}

/* RDPID is there (CPUID 7.0 ECX bit 22): the CPU without RDTSCP's wait. */
static int rdpid_usable(void)
{
	unsigned eax, ebx, ecx, edx;
	return __get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx) && (ecx >> 22 & 1);
}

void ip_ctl_fill(void *map, uint64_t addr, size_t size, const struct xflow_hook_prog *p)
{
	const struct xflow_plan *pl = p->plan;
	const struct xflow_plan_domain *d = p->dom;
	struct ctl_layout l;
	char *m = map;
	ctl_layout(p, &l);
	memset(map, 0, l.size);

	struct xflow_rt_ctl *c = map;
	c->magic = XFLOW_RT_CTL_MAGIC;
	c->version = XFLOW_RT_VERSION;
	c->size = size;
	c->domain_id = p->domain_id;
	c->clock = XFLOW_CLOCK_TSC;
	if (p->fixed_cpu_plus1) {
		c->cpu_how = XFLOW_RT_CPU_FIXED;
		c->cpu_fixed = p->fixed_cpu_plus1 - 1;
	} else {
		c->cpu_how = rdpid_usable()    ? XFLOW_RT_CPU_RDPID
			     : rdtscp_usable() ? XFLOW_RT_CPU_RDTSCP
					       : XFLOW_RT_CPU_NONE;
	}
	c->nadvice = pl->nadvice;
	c->nsites = d->nsites;
	c->nbindings = d->nbindings;
	c->nfetches = d->nfetches;
	c->nfields = pl->nfields;
	c->nbases = d->nbinaries;
	c->off_advice = l.advice;
	c->off_enabled = l.enabled;
	c->off_sites = l.sites;
	c->off_bindings = l.bindings;
	c->off_fetches = l.fetches;
	c->off_fields = l.fields;
	c->off_bases = l.bases;
	/* The id counter: its n-th id is 2n + 1 (rt_lane_new_id), so 1 first. */
	atomic_store_explicit(&c->next_id, 0, memory_order_relaxed);

	struct xflow_rt_advice *adv = (void *)(m + l.advice);
	size_t code = l.code;
	for (uint32_t i = 0; i < pl->nadvice; i++) {
		const struct xflow_plan_advice *pa = &pl->advice[i];
		const struct xflow_bc_prog *src = &pa->prog;
		struct xflow_bc_prog *dst = &adv[i].prog;
		*dst = *src;
		dst->insns = (const void *)(uintptr_t)(addr + code);
		memcpy(m + code, src->insns, src->ninsns * sizeof(struct xflow_bc_insn));
		code += ALIGN8(src->ninsns * sizeof(struct xflow_bc_insn));
		dst->consts = (const void *)(uintptr_t)(addr + code);
		if (src->nconsts)
			memcpy(m + code, src->consts, src->nconsts * sizeof(uint64_t));
		code += ALIGN8(src->nconsts * sizeof(uint64_t));
		dst->local_types = (const void *)(uintptr_t)(addr + code);
		if (src->nlocals)
			memcpy(m + code, src->local_types, src->nlocals);
		code += ALIGN8(src->nlocals);
		dst->inputs = NULL; /* names, which the interpreter never reads */
		adv[i].marker_flags = pa->origin != XFLOW_ADVICE_USER ? (uint16_t)pa->rec_flags : 0;
		adv[i].uses_flows = uses_flow_table(src);
		adv[i].counter = i < XFLOW_RT_NCOUNTERS ? i : XFLOW_RT_NCOUNTERS - 1;
	}
	memset(m + l.enabled, 1, pl->nadvice);

	struct xflow_rt_site *sites = (void *)(m + l.sites);
	for (uint32_t s = 0; s < d->nsites; s++)
		sites[s].binary = d->sites[s].binary;
	struct xflow_rt_binding *b = (void *)(m + l.bindings);
	struct xflow_rt_fetch *f = (void *)(m + l.fetches);
	/* Bindings are sorted by site (the plan reader checked it). */
	for (uint32_t i = d->nbindings; i-- > 0;) {
		const struct xflow_plan_binding *pb = &d->bindings[i];
		sites[pb->site].first_binding = i;
		sites[pb->site].nbindings++;
		b[i] = (struct xflow_rt_binding){ .advice = pb->advice, .first_fetch = pb->first_fetch, .when = pb->when,
						  .ninputs = pb->ninputs };
		const struct xflow_bc_prog *prog = &pl->advice[pb->advice].prog;
		for (uint32_t k = 0; k < pb->ninputs && pb->first_fetch + k < d->nfetches; k++) {
			const struct xflow_plan_fetch *pf = &d->fetches[pb->first_fetch + k];
			f[pb->first_fetch + k] = (struct xflow_rt_fetch){
				.kind = pf->kind, .reg = pf->reg, .index = pf->index, .scale = pf->scale, .off = pf->off,
				.local = k < prog->ninputs && prog->inputs[k].kind == XFLOW_IN_LOCAL_VAR };
		}
	}
	memcpy(m + l.fields, p->fields, pl->nfields * sizeof(struct xflow_field_rt));
	memcpy(m + l.bases, p->bases, d->nbinaries * sizeof(uint64_t));
}

/* ---- the process's data region -------------------------------------------- */

size_t ip_proc_size(uint32_t lanes, uint32_t lane_slots, uint32_t capacity, uint64_t *ring_off, uint64_t *lane_size,
		    uint64_t *off_slots, uint64_t *off_lanes, uint32_t *nslots_bits)
{
	unsigned bits = 1;
	while ((UINT64_C(1) << bits) < 2 * (uint64_t)capacity)
		bits++;
	*nslots_bits = bits;
	*off_slots = ALIGN64(sizeof(struct xflow_rt_proc));
	*ring_off = ALIGN64(sizeof(struct xflow_rt_lane) + XFLOW_RT_NCNT * XFLOW_RT_NCOUNTERS * sizeof(uint64_t));
	*lane_size = ALIGN4K(*ring_off + xflow_ring_region_size(XFLOW_RECORD_SIZE, lane_slots));
	*off_lanes = ALIGN4K(*off_slots + ((size_t)1 << bits) * sizeof(struct xflow_flowtab_slot));
	return *off_lanes + (size_t)lanes * *lane_size;
}

static struct xflow_rt_lane *lane_at(struct ip_target *t, uint32_t i)
{
	struct xflow_rt_proc *p = t->proc.map;
	return (void *)((char *)t->proc.map + p->off_lanes + (uint64_t)i * p->lane_size);
}

int ip_proc_format(struct ip_target *t, uint32_t lanes, uint32_t lane_slots, uint32_t capacity)
{
	uint64_t ring_off, lane_size, off_slots, off_lanes;
	uint32_t bits;
	size_t size = ip_proc_size(lanes, lane_slots, capacity, &ring_off, &lane_size, &off_slots, &off_lanes, &bits);
	if (size > t->proc.size)
		return -EINVAL;
	struct xflow_rt_proc *p = t->proc.map;
	memset(p, 0, sizeof(*p));
	p->magic = XFLOW_RT_PROC_MAGIC;
	p->version = XFLOW_RT_VERSION;
	p->size = t->proc.size;
	p->nlanes = lanes;
	p->lane_slots = lane_slots;
	p->lane_size = lane_size;
	p->ring_off = ring_off;
	p->off_lanes = off_lanes;
	p->off_slots = off_slots;
	p->lock_spins = 256;
	p->flows.slots = (void *)(uintptr_t)(t->proc.addr + off_slots);
	p->flows.mask = ((uint64_t)1 << bits) - 1;
	p->flows.shift = 64 - bits;
	p->flows.capacity = capacity;
	t->lanes = calloc(lanes, sizeof(*t->lanes));
	if (!t->lanes)
		return -ENOMEM;
	t->nlanes = lanes;
	for (uint32_t i = 0; i < lanes; i++) {
		t->lanes[i].rt = lane_at(t, i);
		char *ring = (char *)t->lanes[i].rt + ring_off;
		size_t rsize = lane_size - ring_off;
		int rc = xflow_ring_format(ring, rsize, XFLOW_RECORD_SIZE, lane_slots, XFLOW_CLOCK_TSC);
		if (rc == 0)
			rc = xflow_ring_consumer_init(&t->lanes[i].ring, ring, rsize, XFLOW_RECORD_SIZE, NULL);
		if (rc < 0)
			return rc;
	}
	/* Last: the magic says the region is whole. */
	atomic_thread_fence(memory_order_release);
	return 0;
}

/* A new program: an empty flow-id table and zero counters.  No thread may
 * be running a hit (the caller made sure). */
void ip_proc_reset(struct ip_target *t)
{
	struct xflow_rt_proc *p = t->proc.map;
	if (!p)
		return;
	memset((char *)p + p->off_slots, 0, (size_t)(p->flows.mask + 1) * sizeof(struct xflow_flowtab_slot));
	p->flows.live = 0;
	p->flows.full = 0;
	for (uint32_t i = 0; i < p->nlanes; i++)
		memset(lane_at(t, i) + 1, 0, XFLOW_RT_NCNT * XFLOW_RT_NCOUNTERS * sizeof(uint64_t));
}
