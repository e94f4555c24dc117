/*
 * What every hit needs, whichever way its advice runs (rt_hit.c interprets
 * it, rt_jit.c serves the code the agent compiled from it): the runtime's
 * own state, the calling thread's lane, flow ids, the flow-id table's lock.
 */
#include <stdatomic.h>

#include "guestrt/hook/inproc/rt/rt.h"

struct xflow_rt_config rt_config __attribute__((section(".rt_config"), used));
struct xflow_rt_globals rt_globals;



static void lane_take(struct xflow_rt_proc *p, struct xflow_rt_lane *l)
{
	atomic_store_explicit(&l->tid, (uint32_t)rt_syscall3(RT_SYS_gettid, 0, 0, 0), memory_order_relaxed);
	atomic_store_explicit(&l->stale, 0, memory_order_relaxed);
	l->proc = (uint64_t)(uintptr_t)p;
	if (!l->ready) {
		/* The agent formatted the ring; the producer resumes at its
		 * indexes.  A batch bigger than the ring is cut to half of it:
		 * there is no notifier, the agent polls. */
		if (xflow_ring_producer_init(&l->prod, RT_AT(l, p->ring_off), p->lane_size - p->ring_off, NULL,
					     UINT32_MAX) == 0)
			l->ready = 1;
	}
}

/*
 * The lane of the thread whose key is @key (its fs base: distinct for every
 * live thread), claimed at its first hit.  Linear probing over the lanes
 * from a hash of the key; a free lane ends a search.  Lanes are never freed
 * while threads run, so a search never misses its lane.
 */
struct xflow_rt_lane *rt_lane_find(struct xflow_rt_proc *p, uint64_t key)
{
	uint32_t mask = p->nlanes - 1, i;
	struct xflow_rt_lane *gone = NULL;
	char *lanes = RT_AT(p, p->off_lanes);

	rt_lane_at(p, key, &i);
	for (uint32_t n = 0; n <= mask; n++, i = (i + 1) & mask) {
		struct xflow_rt_lane *l = (void *)(lanes + (uint64_t)i * p->lane_size);
		/* Acquire: a lane taken by another thread is seen whole. */
		uint64_t o = atomic_load_explicit(&l->owner, memory_order_acquire);
		if (o == key) {
			if (__builtin_expect(atomic_load_explicit(&l->stale, memory_order_relaxed), 0))
				lane_take(p, l);
			return l->ready ? l : NULL;
		}
		if (o == XFLOW_RT_LANE_GONE && !gone)
			gone = l;
		if (o != 0)
			continue;
		/* Not here: take the first lane whose owner left, or this one. */
		for (struct xflow_rt_lane *t = gone ? gone : l;; t = l) {
			uint64_t want = t == gone ? XFLOW_RT_LANE_GONE : 0;
			if (atomic_compare_exchange_strong_explicit(&t->owner, &want, key, memory_order_acq_rel,
								    memory_order_acquire)) {
				lane_take(p, t);
				return t->ready ? t : NULL;
			}
			if (t == l)
				break; /* another thread took it: search on */
		}
	}
	return NULL;
}

uint64_t rt_lane_new_id(struct xflow_rt_lane *l, const struct xflow_rt_ctl *c)
{
	if (l->id_next >= l->id_end) {
		/* Ids are unique across the target's processes, whose tables
		 * are separate: blocks of one shared counter. */
		uint64_t b = atomic_fetch_add_explicit((_Atomic uint64_t *)&c->next_id, XFLOW_RT_ID_BLOCK,
						       memory_order_relaxed);
		l->id_next = b;
		l->id_end = b + XFLOW_RT_ID_BLOCK;
	}
	/* The counter's n-th id is 2n + 1: odd, as xflow_flowid_after
	 * explains (never all zero in the low bits a ring header carries). */
	return ((l->id_next++ << 1) | 1) & XFLOW_FLOWID_MAX;
}

/* ---- the flow-id table's lock ------------------------------------------- */

/*
 * A spin lock that is also a sequence count (odd: held): advice that only
 * looks ids up reads the table without taking it, and reads again when a
 * change overlapped (rt_jit_flow_peek), so that the common guard of an
 * xflow() pointcut writes no shared line.
 */
void rt_flows_wait(struct xflow_rt_proc *p, uint32_t *spins)
{
	__builtin_ia32_pause();
	if (++*spins >= p->lock_spins) {
		/* The holder may have lost its CPU: give it ours. */
		atomic_fetch_add_explicit(&p->lock_waits, 1, memory_order_relaxed);
		rt_syscall3(RT_SYS_sched_yield, 0, 0, 0);
		*spins = 0;
	}
}

void rt_flows_lock(struct xflow_rt_proc *p)
{
	uint32_t spins = 0;
	for (;;) {
		/* Test before the exchange: waiters spin on a shared line. */
		uint32_t s = atomic_load_explicit(&p->flow_lock, memory_order_relaxed);
		if (!(s & 1) && atomic_compare_exchange_weak_explicit(&p->flow_lock, &s, s + 1, memory_order_acquire,
								      memory_order_relaxed)) {
			/* The table's changes come after the odd count, for a
			 * reader that saw one of them (the seqlock's writer
			 * side; free on x86). */
			atomic_thread_fence(memory_order_release);
			return;
		}
		rt_flows_wait(p, &spins);
	}
}

void rt_flows_unlock(struct xflow_rt_proc *p)
{
	/* Release: the table's changes are seen before the even count. */
	uint32_t s = atomic_load_explicit(&p->flow_lock, memory_order_relaxed);
	atomic_store_explicit(&p->flow_lock, s + 1, memory_order_release);
}

