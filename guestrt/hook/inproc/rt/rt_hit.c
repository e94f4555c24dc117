/*
 * The hit: what a trampoline's call into the runtime does.  It finds the
 * calling thread's lane, takes the time once, and runs each enabled advice
 * bound at the hook's sites on the shared interpreter (guestrt/interp/interp.c),
 * with the program's registers as the trampoline saved them, fault-safe
 * memory accesses, the process's flow-id table and records into the lane.
 *
 * No allocation, no system call (but a thread's first hit, which asks its
 * tid), no lock but the flow-id table's, which advice that uses the table
 * holds for the run of one program.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "guestrt/interp/interp.h"
#include "guestrt/hook/inproc/rt/rt.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"


struct hit {
	const struct xflow_rt_ctl *c;
	struct xflow_rt_proc *p;
	struct xflow_rt_lane *lane;
	uint64_t *counters;
	const uint64_t *frame;
	const struct xflow_rt_hook *hook;
	uint64_t now;
	uint32_t cpu_plus1;
	uint64_t scratch[XFLOW_BC_MAX_INPUTS];
};


/* ---- memory ------------------------------------------------------------- */

static int scratch_at(struct hit *h, uint64_t addr, uint64_t len, char **at)
{
	uint64_t off = addr - XFLOW_INTERP_SCRATCH_BASE;
	if (addr < XFLOW_INTERP_SCRATCH_BASE || off >= sizeof(h->scratch))
		return 0;
	*at = off + len <= sizeof(h->scratch) ? (char *)h->scratch + off : NULL;
	return 1;
}

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	char *s;
	if (scratch_at(ctx, addr, len, &s)) {
		if (!s)
			return -EFAULT;
		memcpy(buf, s, len);
		return 0;
	}
	return rt_safe_read(addr, buf, len);
}

static int mem_write(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	char *s;
	if (scratch_at(ctx, addr, len, &s)) {
		if (!s)
			return -EFAULT;
		memcpy(s, buf, len);
		return 0;
	}
	return rt_safe_write(addr, buf, len);
}

static uint64_t hit_clock(void *ctx)
{
	/* Every record of a hit carries the hit's time. */
	return ((struct hit *)ctx)->now;
}

static uint64_t new_id(void *ctx)
{
	struct hit *h = ctx;
	return rt_lane_new_id(h->lane, h->c);
}

static int lane_sink(void *ctx, struct xflow_record *r)
{
	struct xflow_rt_lane *l = ((struct hit *)ctx)->lane;
	/* Numbered before the push: a record the full lane drops leaves a gap
	 * the monitor sees (xflow/record.h, "Losses"). */
	r->thread_seq = l->seq++;
	r->flags |= XFLOW_REC_SEQ_COUNTS_LOST;
	return xflow_ring_push_record(&l->prod, r) ? -ENOBUFS : 0;
}

/* ---- advice ------------------------------------------------------------- */

static uint64_t reg_value(const struct hit *h, unsigned reg)
{
	/* DWARF locations are computed at the site's address. */
	return reg < 16 ? h->frame[reg] : h->hook->addr;
}

/* Input @i: the struct pointer of target(), or the address of a
 * local_var() (a scratch cell when the variable has none). */
static int fetch(struct hit *h, const struct xflow_rt_site *s, const struct xflow_rt_fetch *f, unsigned i,
		 uint64_t *out)
{
	uint64_t r;
	switch (f->kind) {
	case XFLOW_FETCH_REG:
		r = reg_value(h, f->reg);
		break;
	case XFLOW_FETCH_MEM:
		*out = reg_value(h, f->reg) + (uint64_t)f->off;
		return 0;
	case XFLOW_FETCH_STATIC: {
		const uint64_t *base = RT_AT(h->c, h->c->off_bases);
		*out = (s->binary < h->c->nbases ? base[s->binary] : 0) + (uint64_t)f->off;
		return 0;
	}
	case XFLOW_FETCH_VALUE:
		r = reg_value(h, f->reg) + (f->scale ? reg_value(h, f->index) * f->scale : 0) + (uint64_t)f->off;
		break;
	default:
		return -EINVAL;
	}
	if (f->local) {
		h->scratch[i] = r;
		*out = XFLOW_INTERP_SCRATCH_BASE + 8u * i;
	} else {
		*out = r;
	}
	return 0;
}

static void run_binding(struct hit *h, uint32_t site, const struct xflow_rt_site *s, const struct xflow_rt_binding *b)
{
	const struct xflow_rt_ctl *c = h->c;
	const struct xflow_rt_advice *a = (const struct xflow_rt_advice *)RT_AT(c, c->off_advice) + b->advice;
	const struct xflow_rt_fetch *fetches = RT_AT(c, c->off_fetches);
	uint64_t *cnt = h->counters + a->counter;
	uint64_t inputs[XFLOW_BC_MAX_INPUTS];

	cnt[XFLOW_RT_CNT_HITS * XFLOW_RT_NCOUNTERS]++;
	for (unsigned i = 0; i < b->ninputs; i++) {
		if (b->first_fetch + i >= c->nfetches || fetch(h, s, &fetches[b->first_fetch + i], i, &inputs[i])) {
			cnt[XFLOW_RT_CNT_FAULTS * XFLOW_RT_NCOUNTERS]++;
			return;
		}
	}
	struct xflow_record tmpl;
	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.site_id = site;
	tmpl.domain_id = c->domain_id;
	tmpl.thread_id = atomic_load_explicit(&h->lane->tid, memory_order_relaxed);
	tmpl.cpu_plus1 = h->cpu_plus1;
	/* Filled field by field: a constant initialiser would hold absolute
	 * addresses of these functions, which the image cannot have. */
	struct xflow_mem_ops mem;
	mem.read = mem_read;
	mem.write = mem_write;
	struct xflow_interp_env env;
	memset(&env, 0, sizeof(env));
	env.prog = &a->prog;
	env.inputs = inputs;
	env.fields = RT_AT(c, c->off_fields);
	env.flows = &h->p->flows;
	env.mem = &mem;
	env.mem_ctx = h;
	env.pc = h->hook->addr;
	env.clock = hit_clock;
	env.clock_ctx = h;
	env.new_id = new_id;
	env.new_id_ctx = h;
	env.sink = lane_sink;
	env.sink_ctx = h;
	env.tmpl = &tmpl;
	env.marker_flags = a->marker_flags;
	struct xflow_interp_result res;
	if (a->uses_flows)
		rt_flows_lock(h->p);
	xflow_interp_run(&env, &res);
	if (a->uses_flows)
		rt_flows_unlock(h->p);
	cnt[XFLOW_RT_CNT_DROPS * XFLOW_RT_NCOUNTERS] += res.dropped;
	if (res.rc)
		cnt[XFLOW_RT_CNT_FAULTS * XFLOW_RT_NCOUNTERS]++;
}

void rt_hit(uint64_t *frame, const struct xflow_rt_hook *hook)
{
	struct hit h;
	h.p = (struct xflow_rt_proc *)rt_globals.proc;
	h.c = (const struct xflow_rt_ctl *)rt_config.ctl;
	if (__builtin_expect(!h.p || !h.c, 0)) {
		/* A forked child the agent has not set up (or never will). */
		rt_globals.nodata++;
		return;
	}
	h.now = rt_tsc_cpu(h.c, &h.cpu_plus1);
	h.lane = rt_lane_get(h.p);
	if (__builtin_expect(!h.lane, 0)) {
		atomic_fetch_add_explicit(&h.p->nolane, 1, memory_order_relaxed);
		return;
	}
	if (__builtin_expect(h.lane->busy, 0)) {
		/* A signal handler of this thread hit a site while a hit was
		 * running: the lane and the flow lock are in use. */
		h.lane->nested++;
		return;
	}
	h.lane->busy = 1;
	/* Compiler barriers: a signal handler on this thread sees busy set
	 * before the lane is touched, and clear only after. */
	atomic_signal_fence(memory_order_seq_cst);
	h.counters = (uint64_t *)(h.lane + 1);
	h.frame = frame;
	h.hook = hook;

	const struct xflow_rt_site *sites = RT_AT(h.c, h.c->off_sites);
	const struct xflow_rt_binding *bindings = RT_AT(h.c, h.c->off_bindings);
	const uint8_t *enabled = RT_AT(h.c, h.c->off_enabled);
	for (uint32_t i = 0; i < hook->nsites; i++) {
		uint32_t site = hook->site[i];
		if (site >= h.c->nsites)
			continue;
		const struct xflow_rt_site *s = &sites[site];
		for (uint32_t k = 0; k < s->nbindings; k++) {
			uint32_t bi = s->first_binding + k;
			if (bi >= h.c->nbindings)
				break;
			const struct xflow_rt_binding *b = &bindings[bi];
			/* Relaxed: a toggle takes effect at the next hit. */
			if (b->when != hook->when || b->advice >= h.c->nadvice ||
			    !atomic_load_explicit((const _Atomic uint8_t *)&enabled[b->advice], memory_order_relaxed))
				continue;
			run_binding(&h, site, s, b);
		}
	}
	atomic_signal_fence(memory_order_seq_cst);
	h.lane->busy = 0;
}
