/*
 * What advice compiled to machine code by the agent (guestrt/hook/inproc/inproc_jit.c)
 * calls: the start of a hit, and the operations too big to compile inline
 * (the flow-id table, fault-safe accesses that may be scratch cells, a
 * full lane).  Each is listed in the image's head (xflow/inproc.h, enum
 * xflow_rt_jit_fn) for the compiler to find.
 */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "guestrt/interp/interp.h"
#include "guestrt/hook/inproc/rt/rt.h"

/* The calling thread's lane with the hit's time in it, marked busy; NULL
 * when the hit must do nothing (no data region, no lane, a hit running). */
struct xflow_rt_lane *rt_jit_begin(void);
struct xflow_rt_lane *rt_jit_begin(void)
{
	struct xflow_rt_proc *p = (struct xflow_rt_proc *)rt_globals.proc;
	if (__builtin_expect(!p || !rt_config.ctl, 0)) {
		rt_globals.nodata++;
		return NULL;
	}
	uint32_t cpu;
	uint64_t now = rt_tsc_cpu((const struct xflow_rt_ctl *)rt_config.ctl, &cpu);
	struct xflow_rt_lane *l = rt_lane_get(p);
	if (__builtin_expect(!l, 0)) {
		atomic_fetch_add_explicit(&p->nolane, 1, memory_order_relaxed);
		return NULL;
	}
	if (__builtin_expect(l->busy, 0)) {
		l->nested++;
		return NULL;
	}
	l->busy = 1;
	/* The compiled code clears it; a signal handler of this thread sees
	 * it set before anything of the lane is touched. */
	atomic_signal_fence(memory_order_seq_cst);
	l->now = now;
	l->cpu_plus1 = cpu;
	return l;
}

/* The ring looked full by the cached index: read the consumer's again.
 * 1: room; 0: the record is dropped and counted. */
int rt_jit_room(struct xflow_rt_lane *l);
int rt_jit_room(struct xflow_rt_lane *l)
{
	struct xflow_ring_producer *p = &l->prod;
	/* Acquire: the consumer's copies out of the slots are complete. */
	p->cons_cache = atomic_load_explicit(&p->hdr->cons, memory_order_acquire);
	if (p->prod - p->cons_cache < (uint64_t)p->mask + 1)
		return 1;
	p->dropped++;
	atomic_store_explicit(&p->hdr->dropped, p->dropped, memory_order_relaxed);
	return 0;
}

uint64_t rt_jit_new_id(struct xflow_rt_lane *l);
uint64_t rt_jit_new_id(struct xflow_rt_lane *l)
{
	return rt_lane_new_id(l, (const struct xflow_rt_ctl *)rt_config.ctl);
}

static struct xflow_flowtab *flows_of(struct xflow_rt_lane *l)
{
	return &((struct xflow_rt_proc *)l->proc)->flows;
}

uint64_t rt_jit_flow_get(struct xflow_rt_lane *l, uint64_t kind, uint64_t key);
uint64_t rt_jit_flow_get(struct xflow_rt_lane *l, uint64_t kind, uint64_t key)
{
	return xflow_flowtab_get(flows_of(l), (uint16_t)kind, key);
}

/* The id under (kind, key), the lock not taken (advice that only looks ids
 * up): the slots are read between two reads of the lock's count, again
 * until no change overlapped.  The walk is bounded, as a change under it
 * may show it a run without its end. */
uint64_t rt_jit_flow_peek(struct xflow_rt_lane *l, uint64_t kind, uint64_t key);
uint64_t rt_jit_flow_peek(struct xflow_rt_lane *l, uint64_t kind, uint64_t key)
{
	struct xflow_rt_proc *p = (struct xflow_rt_proc *)l->proc;
	const struct xflow_flowtab *t = &p->flows;
	uint64_t want = kind << XFLOW_FLOWID_BITS;
	uint32_t spins = 0;
	for (;;) {
		/* Acquire: the slots read below are at least as new as the
		 * release that made the count even. */
		uint32_t s = atomic_load_explicit(&p->flow_lock, memory_order_acquire);
		if (!(s & 1)) {
			uint64_t id = 0, i = xflow_flowtab__hash(t, (uint16_t)kind, key);
			for (uint64_t n = 0; n <= t->mask; n++, i = (i + 1) & t->mask) {
				uint64_t ptr = __atomic_load_n(&t->slots[i].ptr, __ATOMIC_RELAXED);
				uint64_t val = __atomic_load_n(&t->slots[i].val, __ATOMIC_RELAXED);
				if (ptr == 0)
					break;
				if (ptr == key && (val & ~XFLOW_FLOWID_MAX) == want) {
					id = val & XFLOW_FLOWID_MAX;
					break;
				}
			}
			/* Acquire: the slot reads are done before the count is
			 * read again; a change that overlapped them moved it. */
			atomic_thread_fence(memory_order_acquire);
			if (atomic_load_explicit(&p->flow_lock, memory_order_relaxed) == s)
				return id;
		}
		rt_flows_wait(p, &spins);
	}
}

uint64_t rt_jit_flow_reg(struct xflow_rt_lane *l, uint64_t kind, uint64_t key, uint64_t id);
uint64_t rt_jit_flow_reg(struct xflow_rt_lane *l, uint64_t kind, uint64_t key, uint64_t id)
{
	/* As the interpreter: ids wider than 48 bits are cut. */
	id &= XFLOW_FLOWID_MAX;
	return id && xflow_flowtab_register(flows_of(l), (uint16_t)kind, key, id) == 0 ? id : 0;
}

uint64_t rt_jit_flow_del(struct xflow_rt_lane *l, uint64_t kind, uint64_t key);
uint64_t rt_jit_flow_del(struct xflow_rt_lane *l, uint64_t kind, uint64_t key)
{
	struct xflow_flowtab *t = flows_of(l);
	uint64_t id = xflow_flowtab_get(t, (uint16_t)kind, key);
	if (id)
		xflow_flowtab_remove(t, (uint16_t)kind, key);
	return id;
}

void rt_jit_lock(struct xflow_rt_lane *l);
void rt_jit_lock(struct xflow_rt_lane *l)
{
	rt_flows_lock((struct xflow_rt_proc *)l->proc);
}

void rt_jit_unlock(struct xflow_rt_lane *l);
void rt_jit_unlock(struct xflow_rt_lane *l)
{
	rt_flows_unlock((struct xflow_rt_proc *)l->proc);
}

/* A fault-safe access of len (1, 2, 4, 8) bytes, or of a scratch cell of
 * the hit (guestrt/interp/interp.h: a local_var() without an address); the value
 * read is zero-extended into *out. */
int rt_jit_read(uint64_t addr, uint64_t *out, uint64_t len, uint64_t *scratch);
int rt_jit_read(uint64_t addr, uint64_t *out, uint64_t len, uint64_t *scratch)
{
	uint64_t off = addr - XFLOW_INTERP_SCRATCH_BASE;
	*out = 0;
	if (addr >= XFLOW_INTERP_SCRATCH_BASE && off < 8u * XFLOW_BC_MAX_INPUTS) {
		if (off + len > 8u * XFLOW_BC_MAX_INPUTS)
			return -EFAULT;
		memcpy(out, (char *)scratch + off, len);
		return 0;
	}
	return rt_safe_read(addr, out, len);
}

int rt_jit_write(uint64_t addr, const uint64_t *in, uint64_t len, uint64_t *scratch);
int rt_jit_write(uint64_t addr, const uint64_t *in, uint64_t len, uint64_t *scratch)
{
	uint64_t off = addr - XFLOW_INTERP_SCRATCH_BASE;
	if (addr >= XFLOW_INTERP_SCRATCH_BASE && off < 8u * XFLOW_BC_MAX_INPUTS) {
		if (off + len > 8u * XFLOW_BC_MAX_INPUTS)
			return -EFAULT;
		memcpy((char *)scratch + off, in, len);
		return 0;
	}
	return rt_safe_write(addr, in, len);
}
