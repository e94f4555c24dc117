/*
 * The aggregation model: reorder window, flows, handoffs between domains,
 * hops, top-K slowest.  See tui/aggregate.h for the contract.
 *
 * Everything is allocated in xft_agg_new(): the reorder window (tui/reorder.h), the flow pool
 * with its path storage, the key table (the project's flow-id table, keyed
 * by (kind, domain << 48 | id)), the hop array and its hash, the handoff
 * queue, the keyed join table (tui/keyed_join.c) and the top-K store.  The
 * feed path never allocates.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "tui/aggregate.h"
#include "tui/keyed_join.h"
#include "tui/reorder.h"
#include "tui/sched_join.h"
#include "tui/seq_gap.h"
#include "xflow/collector.h"
#include "xflow/flowid.h"

#define NIL UINT32_MAX
#define FLOW_MAX_KEYS 4
/* Domains a flow's losses are followed in one by one; past them, any. */
#define FLOW_TOUCH 4
/* A pending entry that is no record but a loss (loss_push): a flag bit no
 * decoded record has, its end in data[0] (ndata 1). */
#define PEND_LOSS 0x8000u
/* The threads' watermark releases a record only once it is this much, and
 * twice the lag records were seen to arrive with, older than the newest:
 * room for a thread not yet seen, or back from quiet, to be merged. */
#define LAG_FLOOR_NS UINT64_C(1000000)
#define LAG_PERIOD_NS UINT64_C(1000000000)
/* The window is looked at for what it may release once every this many
 * records fed, or once the newest record is this much newer than at the
 * last look (and at every tick and drain), not at each record: the look
 * costs more than a record's push (the threads' watermark, the lag, the
 * skew), and a few records held a few microseconds longer (at millions a
 * second) change nothing but the window's count (see xft_agg_feed).  The
 * time bound keeps a slow feed's records as prompt as before, within a
 * tenth of LAG_FLOOR_NS. */
#define RELEASE_EVERY 16
#define RELEASE_SLACK_NS (LAG_FLOOR_NS / 10)
/* A domain that has not moved for this many join graces is not waited
 * for (handoff_horizon): its agent is stuck or gone. */
#define HOLD_MAX_GRACES 5
_Static_assert((PEND_LOSS & XFLOW_REC_ALL_FLAGS) == 0, "a loss is not a record");

struct flow_key {
	uint16_t domain, kind;
	uint64_t id;
};

struct flow {
	uint16_t kind, origin_domain;
	uint64_t id;
	uint64_t start_ns, last_ns;
	struct xft_point last;
	int has_last;
	uint32_t npoints, points_lost;
	uint32_t nkeys;
	struct flow_key keys[FLOW_MAX_KEYS];
	uint32_t prev, next; /* activity list (oldest first) or free list */
	uint32_t dprev, dnext; /* its origin domain's activity list */
	uint16_t dslot;      /* that domain's slot in doms[], or NO_DSLOT */
	int live;
	int partial;         /* its beginning was not seen, or it may have
	                      * lost a record: never ranked */
	int lossy;           /* it may own a record lost on the way (see
	                      * flow_settle) */
	/* The domains it has had a point in, each with that domain's loss
	 * count when it came (flow_touch); touch_over: more than
	 * FLOW_TOUCH, and the count of losses anywhere then. */
	uint16_t tdom[FLOW_TOUCH];
	uint32_t tepoch[FLOW_TOUCH];
	uint32_t ntouch;
	int touch_over;
	uint64_t over_epoch;
	int awaiting;        /* begun by a keyed IN whose OUT has not come yet */
	int sending;         /* its keyed OUTs no IN has taken yet */
	int held;            /* awaiting or sending, and its QUIT seen: kept
	                      * for the join */
	int counted;         /* in the *_events figures (flow_count) */
	uint64_t gen;        /* which use of the slot this is */
};

struct handoff {
	uint16_t kind, from_domain;
	uint64_t id;
	uint64_t mask; /* bits of the id the receiver sees */
	uint32_t flow;
	uint64_t flow_start; /* to notice the flow slot was reused */
	uint64_t t;
};

/* A hop sample waiting for the trace to pass its end. */
struct split_wait {
	uint32_t hop;
	uint64_t gen; /* the model's reset count when queued */
	struct xft_sj_end from, to;
};

/* Domains whose live flows are counted apart, for the choice of a flow to
 * evict (flow_victim): more than a host has guests; the flows of any
 * further domain are only in the activity list of all. */
#define MAX_DSLOTS 256
#define NO_DSLOT 0xffffu

struct dom_lru {
	uint32_t head, tail; /* its live flows, oldest first */
	uint32_t live;
};

/* What a domain holds of the tables every domain shares, and what it was
 * refused for wanting more than its share (hop_room, handoff_send). */
struct dom_share {
	uint32_t hops, handoffs;
	uint64_t hops_refused, handoffs_refused;
};

#define CULPRITS 4
#define P99_EVERY 64
#define TAIL_MIN 100

/* Sites whose group is remembered (group_of): a direct-mapped cache, as
 * a flow's records come from a few sites over and over. */
#define GROUP_CACHE 256
#define GROUP_CACHED (UINT64_C(1) << 63) /* a tag in use: no (domain, site) is 0 then */

struct xft_agg {
	struct xft_agg_limits lim;
	xft_group_fn group;
	void *opaque;
	struct {
		uint64_t tag; /* GROUP_CACHED | domain << 32 | site, 0: empty */
		uint32_t group;
	} groups[GROUP_CACHE];
	/* The key table's answer to the last lookup that found a flow: a
	 * flow's records mostly come one after another.  Any change to the
	 * table for that key forgets it (key_cache_forget).  The key last
	 * mapped is held here, not yet in the table (pending; ptr, its key
	 * there), until the cache turns to another key (kc_flush): a flow
	 * whose records all come together, as a thread writes a request's,
	 * ends before that and never costs the table a write or a removal,
	 * two probes of a table too big for the caches. */
	struct {
		bool valid, pending;
		uint16_t domain, kind;
		uint64_t id;
		uint64_t ptr;
		uint32_t flow;
	} kc;
	struct xft_agg_stats st;
	struct xft_sched_status sched;

	struct xft_reorder rq;
	uint64_t newest, last_released;
	/* Records fed since the window was last looked at, and the newest
	 * record's time then. */
	uint32_t unreleased;
	uint64_t looked_newest;
	/* How far behind the newest record records arrive (release_until):
	 * the most in this period of record time and in the previous one. */
	uint64_t lag_now, lag_prev, lag_period_end;
	uint64_t warm_from; /* the watermark is used from this record time on */
	bool warm_set;

	/* How far each domain's agent has given its records
	 * (xft_agg_set_progress), for the domains that said; and the
	 * newest time the model was told it is (records or ticks), which
	 * says how long ago a domain last moved. */
	struct progress {
		uint16_t domain;
		uint64_t t;
	} progress[XFT_PROGRESS_DOMAINS];
	uint32_t nprogress;
	uint64_t clock_now;
	/* The domains whose records wait at their agents for room
	 * (xft_agg_set_held), and the oldest time any of them holds: the
	 * window releases nothing younger, 0: none holds. */
	struct progress held[XFT_PROGRESS_DOMAINS];
	uint32_t nheld;
	uint64_t held_min;

	/* Losses seen in threads' record numbers (tui/seq_gap.h), per
	 * domain: how many were applied (dloss) and when the latest one's
	 * gap ended (duntil); loss_epoch, every domain's.  A flow that had
	 * a point in a domain when one of its losses was applied, or came
	 * to it before the gap ended, may own a lost record. */
	struct xft_seqs seqs;
	uint32_t *dloss;
	uint64_t *duntil;
	uint64_t loss_epoch;

	struct flow *flows;
	struct xft_point *points; /* max_flows * max_path */
	uint32_t free_head, act_head, act_tail;
	uint16_t *dslot_of;        /* by domain id: its slot + 1, 0 none */
	struct dom_lru doms[MAX_DSLOTS];
	uint32_t ndoms;
	struct xflow_flowtab keys;

	struct xft_hop *hops;
	uint32_t nhops;
	struct dom_share *share; /* by domain id */
	uint32_t hop_holders;    /* domains holding a hop */
	uint32_t *hop_slots; /* hash: hop index + 1, 0 = empty */
	uint32_t hop_mask;

	struct handoff *handoffs; /* FIFO ring, unkeyed handoffs only */
	uint32_t ho_head, ho_count;
	xft_role_fn roles;        /* NULL: every site sends and receives */
	void *roles_opaque;
	struct xft_kj kj;
	struct xft_point *merge; /* max_path points: scratch for a late join */
	uint64_t gen;

	struct xft_flow_summary *top;
	struct xft_point *top_points;
	uint32_t ntop;
	uint32_t top_fastest; /* the slot a slower flow takes once all are in
	                       * use: the fastest of them, found again only
	                       * when a slot changes, not at every flow's end */
	struct xft_flow_summary *sorted; /* xft_agg_slowest()'s answer */

	/* The scheduler join; NULL without it. */
	struct xft_sj *sj;
	uint64_t wm; /* its watermark, as its last event left it: read at
	              * every hop, which should not pay a call for it */
	struct split_wait *waits; /* FIFO ring */
	uint32_t max_waits, wait_head, nwaits;
	uint64_t resets;
	struct xft_culprit *culprits; /* per hop: CULPRITS for all, CULPRITS for the tail */
	uint64_t *p99;                /* per hop: its p99 as last computed */
	uint32_t *p99_age;            /* samples split since */
	struct xft_gap_split *top_gaps; /* top_k * max_path */
	xft_agg_split_fn on_split;
	void *on_split_ctx;
	uint8_t *top_gaps_final;      /* per top slot: split after the trace passed its end */
	uint32_t top_unsplit;         /* slots in use not final: sched_advance() looks
	                               * at every slot only while there are some */
};

void xft_agg_limits_default(struct xft_agg_limits *l)
{
	memset(l, 0, sizeof(*l));
	l->window_ns = 100 * 1000 * 1000;
	l->max_pending = 65536;
	l->max_flows = 65536;
	l->max_hops = 1024;
	l->max_path = 32;
	l->top_k = 20;
	l->expire_ns = UINT64_C(10) * 1000 * 1000 * 1000;
	l->max_handoffs = 4096;
	l->join_grace_ns = UINT64_C(2) * 1000 * 1000 * 1000;
	l->max_threads = 4096;
}

static void *take(size_t n, size_t size, uint64_t *total)
{
	*total += (uint64_t)n * size;
	return calloc(n ? n : 1, size);
}

static void sched_free(struct xft_agg *a)
{
	xft_sj_free(a->sj);
	free(a->waits);
	free(a->culprits);
	free(a->p99);
	free(a->p99_age);
	free(a->top_gaps);
	free(a->top_gaps_final);
	a->sj = NULL;
	a->waits = NULL;
	a->culprits = NULL;
	a->p99 = NULL;
	a->p99_age = NULL;
	a->top_gaps = NULL;
	a->top_gaps_final = NULL;
}

/* --- flows ---------------------------------------------------------------- */

static uint64_t key_ptr(const struct xft_agg *a, uint16_t domain, uint16_t kind, uint64_t id)
{
	/* Ids run 1, 3, 5... (xflow/flowid.h): numbered so that a domain's
	 * consecutive ids take neighbouring slots of the key table, each
	 * domain from a place of its own.  A hashed key cost a cache miss
	 * at each flow's start, the biggest single item of a record's time
	 * at millions of records a second.  A bijection of (domain, id); one
	 * (domain, id) of each kind but 0 has no key (its flow is refused a
	 * key, and its records are partial flows of their own). */
	uint64_t half = (id & XFLOW_FLOWID_MAX) >> 1 | (id & 1) << (XFLOW_FLOWID_BITS - 1);
	uint64_t n = (uint64_t)domain << XFLOW_FLOWID_BITS |
		     ((half + domain * UINT64_C(0x9E3779B97F4A7C15)) & XFLOW_FLOWID_MAX);
	return xflow_flowtab_key_of_number(&a->keys, kind, n);
}

/* The cache's pending key into the table, before the cache turns to
 * another.  It is not refused: the table has room for FLOW_MAX_KEYS keys
 * of every flow, and this one is already counted in its flow's.  Were it
 * refused, the flow would no longer be reached by it, as when
 * flow_key_take() was refused before keys were held. */
static void kc_flush(struct xft_agg *a)
{
	if (!a->kc.pending)
		return;
	a->kc.pending = false;
	if (xflow_flowtab_register(&a->keys, a->kc.kind, a->kc.ptr, (uint64_t)a->kc.flow + 1) == 0)
		return;
	struct flow *f = &a->flows[a->kc.flow];
	for (uint32_t k = 0; k < f->nkeys; k++)
		if (f->keys[k].domain == a->kc.domain && f->keys[k].kind == a->kc.kind && f->keys[k].id == a->kc.id) {
			f->keys[k] = f->keys[--f->nkeys];
			break;
		}
	a->kc.valid = false;
}

/* flow_lookup() past its cache. */
static __attribute__((noinline)) uint32_t flow_lookup_table(struct xft_agg *a, uint16_t domain, uint16_t kind,
							    uint64_t id)
{
	uint64_t v = xflow_flowtab_get(&a->keys, kind, key_ptr(a, domain, kind, id));
	if (!v)
		return NIL;
	kc_flush(a);
	a->kc.valid = true;
	a->kc.domain = domain;
	a->kc.kind = kind;
	a->kc.id = id;
	a->kc.flow = (uint32_t)(v - 1);
	return a->kc.flow;
}

static inline uint32_t flow_lookup(struct xft_agg *a, uint16_t domain, uint16_t kind, uint64_t id)
{
	if (a->kc.valid && a->kc.id == id && a->kc.domain == domain && a->kc.kind == kind)
		return a->kc.flow;
	return flow_lookup_table(a, domain, kind, id);
}

/* The key table changes for (@domain, @kind, @id): true when that key
 * was the cache's pending one, which the table does not hold. */
static bool key_cache_forget(struct xft_agg *a, uint16_t domain, uint16_t kind, uint64_t id)
{
	if (a->kc.valid && a->kc.id == id && a->kc.domain == domain && a->kc.kind == kind) {
		bool pending = a->kc.pending;
		a->kc.valid = a->kc.pending = false;
		return pending;
	}
	return false;
}

/* Remove the keys of flow @f from the key table. */
static void flow_keys_remove(struct xft_agg *a, struct flow *f)
{
	for (uint32_t k = 0; k < f->nkeys; k++) {
		if (key_cache_forget(a, f->keys[k].domain, f->keys[k].kind, f->keys[k].id))
			continue;
		xflow_flowtab_remove(&a->keys, f->keys[k].kind, key_ptr(a, f->keys[k].domain, f->keys[k].kind, f->keys[k].id));
	}
	f->nkeys = 0;
}

static void act_unlink(struct xft_agg *a, uint32_t i)
{
	struct flow *f = &a->flows[i];
	if (f->prev != NIL)
		a->flows[f->prev].next = f->next;
	else
		a->act_head = f->next;
	if (f->next != NIL)
		a->flows[f->next].prev = f->prev;
	else
		a->act_tail = f->prev;
	if (f->dslot == NO_DSLOT)
		return;
	struct dom_lru *d = &a->doms[f->dslot];
	if (f->dprev != NIL)
		a->flows[f->dprev].dnext = f->dnext;
	else
		d->head = f->dnext;
	if (f->dnext != NIL)
		a->flows[f->dnext].dprev = f->dprev;
	else
		d->tail = f->dprev;
	d->live--;
}

/* @domain's slot in doms[], taken at its first flow; NO_DSLOT once
 * MAX_DSLOTS domains have one. */
static uint16_t dslot(struct xft_agg *a, uint16_t domain)
{
	uint16_t s = a->dslot_of[domain];
	if (s)
		return (uint16_t)(s - 1);
	if (a->ndoms == MAX_DSLOTS)
		return NO_DSLOT;
	a->doms[a->ndoms] = (struct dom_lru){ .head = NIL, .tail = NIL };
	a->dslot_of[domain] = (uint16_t)(++a->ndoms);
	return (uint16_t)(a->ndoms - 1);
}

static void act_append(struct xft_agg *a, uint32_t i)
{
	struct flow *f = &a->flows[i];
	f->prev = a->act_tail;
	f->next = NIL;
	if (a->act_tail != NIL)
		a->flows[a->act_tail].next = i;
	else
		a->act_head = i;
	a->act_tail = i;
	f->dslot = dslot(a, f->origin_domain);
	if (f->dslot == NO_DSLOT)
		return;
	struct dom_lru *d = &a->doms[f->dslot];
	f->dprev = d->tail;
	f->dnext = NIL;
	if (d->tail != NIL)
		a->flows[d->tail].dnext = i;
	else
		d->head = i;
	d->tail = i;
	d->live++;
}

/*
 * The flow to evict when the table is full: the idlest of the domain
 * that holds the most live flows, so that a domain flooding the table
 * (a guest sending ids it never started: xflow/collector.h's lies) evicts
 * its own flows, not another's; with one domain, its idlest, as before.
 */
static uint32_t flow_victim(const struct xft_agg *a)
{
	uint32_t best = NIL, most = 0;
	for (uint32_t k = 0; k < a->ndoms; k++)
		if (a->doms[k].live > most) {
			most = a->doms[k].live;
			best = k;
		}
	return best != NIL && a->doms[best].head != NIL ? a->doms[best].head : a->act_head;
}

/* Map one more key to flow @i, the key now mapped to flow @old (NIL:
 * none); a key that named another flow is taken over (the id was
 * recycled there). */
static void flow_key_take(struct xft_agg *a, uint32_t i, uint32_t old, uint16_t domain, uint16_t kind,
			  uint64_t id)
{
	struct flow *f = &a->flows[i];
	if (old == i)
		return;
	if (f->nkeys == FLOW_MAX_KEYS)
		return; /* still reachable through its other keys */
	/* Held pending by the cache for @old: the key goes to @i, nothing
	 * of it is in the table to take over. */
	bool held = key_cache_forget(a, domain, kind, id);
	uint64_t ptr = key_ptr(a, domain, kind, id);
	if (ptr) {
		/* Its next records are likely next: held in the cache, into
		 * the table only if they are not (kc_flush). */
		kc_flush(a);
		if (old != NIL && !held)
			xflow_flowtab_remove(&a->keys, kind, ptr);
		f->keys[f->nkeys++] = (struct flow_key){ domain, kind, id };
		a->kc.valid = a->kc.pending = true;
		a->kc.domain = domain;
		a->kc.kind = kind;
		a->kc.id = id;
		a->kc.ptr = ptr;
		a->kc.flow = i;
	}
	/* A key of 0 (the one (domain, id) of each kind key_ptr() leaves
	 * out) is not taken: the flow is not reached by it. */
	if (old != NIL) {
		/* Forget the key in the old flow's list. */
		struct flow *o = &a->flows[old];
		for (uint32_t k = 0; k < o->nkeys; k++)
			if (o->keys[k].domain == domain && o->keys[k].kind == kind &&
			    o->keys[k].id == id) {
				o->keys[k] = o->keys[--o->nkeys];
				break;
			}
	}
}

static void flow_add_key(struct xft_agg *a, uint32_t i, uint16_t domain, uint16_t kind,
			 uint64_t id)
{
	flow_key_take(a, i, flow_lookup(a, domain, kind, id), domain, kind, id);
}

static void top_consider(struct xft_agg *a, const struct flow *f, uint32_t fi, uint64_t end)
{
	/* A fragment's duration is not its flow's, nor is the receiving half
	 * of a flow still waiting for its sender. */
	if (a->lim.top_k == 0 || f->partial || f->awaiting)
		return;
	uint64_t dur = end - f->start_ns;
	uint32_t slot;
	int fresh = 0;
	if (a->ntop < a->lim.top_k) {
		slot = a->ntop++;
		fresh = 1;
	} else {
		slot = a->top_fastest;
		if (a->top[slot].end_ns - a->top[slot].start_ns >= dur)
			return;
	}
	struct xft_flow_summary *s = &a->top[slot];
	s->kind = f->kind;
	s->origin_domain = f->origin_domain;
	s->id = f->id;
	s->start_ns = f->start_ns;
	s->end_ns = end;
	s->npoints = f->npoints;
	s->points_lost = f->points_lost;
	s->expired = 0;
	s->path = &a->top_points[(size_t)slot * a->lim.max_path];
	memcpy(s->path, &a->points[(size_t)fi * a->lim.max_path], f->npoints * sizeof(*s->path));
	s->gaps = NULL;
	if (a->sj) {
		/* Split once the trace has passed its end (sched_advance). */
		s->gaps = &a->top_gaps[(size_t)slot * a->lim.max_path];
		if (fresh || a->top_gaps_final[slot])
			a->top_unsplit++;
		a->top_gaps_final[slot] = 0;
	}
	if (a->ntop == a->lim.top_k) {
		uint32_t fast = 0;
		for (uint32_t k = 1; k < a->ntop; k++)
			if (a->top[k].end_ns - a->top[k].start_ns < a->top[fast].end_ns - a->top[fast].start_ns)
				fast = k;
		a->top_fastest = fast;
	}
}

/* Flow @i as a flow of its own, in the figures that only grow: once,
 * whole or partial as it is now (a whole one found partial later is
 * counted again there, by flow_make_partial). */
static void flow_count(struct xft_agg *a, uint32_t i)
{
	struct flow *f = &a->flows[i];
	if (f->counted)
		return;
	f->counted = 1;
	if (f->partial)
		a->st.flows_partial_events++;
	else
		a->st.flows_started_events++;
}

/* Flow @i will never be whole: count it with the partial ones. */
static void flow_make_partial(struct xft_agg *a, uint32_t i)
{
	struct flow *f = &a->flows[i];
	if (f->partial)
		return;
	f->partial = 1;
	a->st.flows_started--;
	a->st.flows_partial++;
	if (f->counted)
		a->st.flows_partial_events++;
}

/* Flow @f has been in domain @d since that domain's loss count was
 * @epoch, unless it was there already. */
static void touch_add(struct xft_agg *a, struct flow *f, uint16_t d, uint32_t epoch)
{
	for (uint32_t k = 0; k < f->ntouch; k++)
		if (f->tdom[k] == d)
			return;
	if (f->ntouch < FLOW_TOUCH) {
		f->tdom[f->ntouch] = d;
		f->tepoch[f->ntouch++] = epoch;
	} else if (!f->touch_over) {
		f->touch_over = 1;
		f->over_epoch = a->loss_epoch;
	}
}

/* Flow @f has a point in domain @d at @t: a gap of that domain's that
 * was still open then may hold its record. */
static void flow_touch(struct xft_agg *a, struct flow *f, uint16_t d, uint64_t t)
{
	if (t < a->duntil[d])
		f->lossy = 1;
	touch_add(a, f, d, a->dloss[d]);
}

/*
 * A loss in a domain counts itself there when it is applied, which costs
 * nothing however many flows there are; each flow is judged when it
 * matters, as it ends and as it merges: it may own the lost record if it
 * was in that domain then.  Only the losing domain's flows are suspects:
 * a guest that lies about its numbers makes its own flows partial, never
 * another domain's (a flow it never had a point in).
 */
static int flow_settle(struct xft_agg *a, uint32_t i)
{
	struct flow *f = &a->flows[i];
	for (uint32_t k = 0; k < f->ntouch && !f->lossy; k++)
		if (a->dloss[f->tdom[k]] != f->tepoch[k])
			f->lossy = 1;
	if (f->touch_over && a->loss_epoch != f->over_epoch)
		f->lossy = 1;
	if (f->lossy)
		flow_make_partial(a, i);
	return f->lossy;
}

/* End flow @i, settled (flow_settle) since the last loss was applied:
 * by QUIT (@expired 0) or by expiry/eviction. */
static void flow_end_settled(struct xft_agg *a, uint32_t i, int expired)
{
	struct flow *f = &a->flows[i];
	flow_count(a, i);
	if (!expired)
		top_consider(a, f, i, f->last_ns);
	flow_keys_remove(a, f);
	f->live = 0;
	act_unlink(a, i);
	f->next = a->free_head;
	a->free_head = i;
	a->st.flows_live--;
}

static void flow_end(struct xft_agg *a, uint32_t i, int expired)
{
	flow_settle(a, i);
	flow_end_settled(a, i, expired);
}

/* Track a flow from record @r: a whole one when @r is its START, else a
 * partial one, whose beginning was not seen (evicted to make room, lost
 * with its handoff, or its record dropped). */
static uint32_t flow_start(struct xft_agg *a, const struct xflow_record *r, uint64_t t)
{
	uint16_t domain = r->domain_id, kind = r->flow_kind;
	uint64_t id = r->flow_id;
	if (a->free_head == NIL) {
		/* Full: a flow of the domain holding the most makes room. */
		a->st.flows_evicted++;
		flow_end(a, flow_victim(a), 1);
	}
	uint32_t i = a->free_head;
	struct flow *f = &a->flows[i];
	a->free_head = f->next;
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->origin_domain = domain;
	f->id = id;
	f->start_ns = f->last_ns = t;
	f->live = 1;
	f->gen = ++a->gen;
	/* Begun while a loss of its domain lasted: a record lost then may
	 * be its own. */
	flow_touch(a, f, domain, t);
	f->partial = !(r->flags & XFLOW_REC_START) || f->lossy;
	act_append(a, i);
	/* Every caller found no flow of this key, or ended the one it had. */
	flow_key_take(a, i, NIL, domain, kind, id);
	if (f->partial)
		a->st.flows_partial++;
	else
		a->st.flows_started++;
	a->st.flows_live++;
	return i;
}

/* --- hops ------------------------------------------------------------------ */

static uint32_t hop_hash(const struct xft_hop_key *k)
{
	uint64_t x = ((uint64_t)k->from_domain << 48) ^ ((uint64_t)k->to_domain << 32) ^
		     ((uint64_t)k->from_group << 16) ^ k->to_group ^
		     ((uint64_t)k->to_group << 40);
	return (uint32_t)((x * UINT64_C(0x9E3779B97F4A7C15)) >> 32);
}

/*
 * Whether domain @d may take one more hop slot.  The hop is charged to
 * the domain whose record made it (its to_domain): a guest's records name
 * only its own domain (the collector refuses the others), so a guest
 * pairing ever new sites is charged for every hop it makes.  A domain may
 * hold at most max_hops / (D + 1) slots, D the domains holding hops with
 * @d among them: each domain's share as if one more were to come, so a
 * domain not seen yet always finds room, whatever one other domain sent
 * before it, and a domain that came first keeps what it took.  The cost is
 * that a lone domain uses half the table (max_hops is its limit).
 */
static bool hop_room(struct xft_agg *a, uint16_t d)
{
	if (a->nhops == a->lim.max_hops)
		return false;
	uint32_t holders = a->hop_holders + (a->share[d].hops == 0);
	if (a->share[d].hops < a->lim.max_hops / (holders + 1))
		return true;
	a->share[d].hops_refused++;
	return false;
}

static void hop_holders_charge(struct xft_agg *a, uint16_t d)
{
	if (a->share[d].hops++ == 0)
		a->hop_holders++;
}

static struct xft_hop *hop_get(struct xft_agg *a, const struct xft_hop_key *k,
				uint32_t from_site, uint32_t to_site)
{
	for (uint32_t s = hop_hash(k) & a->hop_mask;; s = (s + 1) & a->hop_mask) {
		uint32_t v = a->hop_slots[s];
		if (v == 0) {
			if (!hop_room(a, k->to_domain))
				return NULL;
			struct xft_hop *h = &a->hops[a->nhops];
			memset(h, 0, sizeof(*h));
			xflow_hist_init(&h->hist);
			h->key = *k;
			h->from_site = from_site;
			h->to_site = to_site;
			a->hop_slots[s] = ++a->nhops;
			hop_holders_charge(a, k->to_domain);
			return h;
		}
		struct xft_hop *h = &a->hops[v - 1];
		if (!memcmp(&h->key, k, sizeof(*k)))
			return h;
	}
}

/* --- the scheduler join (tui/sched_join.h) ---------------------------------- */

/* cpu_plus1 0 wraps to -1: not known. */
static struct xft_sj_end sj_end(const struct xft_point *p)
{
	return (struct xft_sj_end){ .t_ns = p->t_ns, .domain = p->domain, .cpu = (int32_t)(p->cpu_plus1 - 1),
				    .has_tn = p->notify_plus1 != 0, .tn_ns = p->t_ns + p->notify_plus1 - 1 };
}

/* The receiving end of a hop: its notification is not read
 * (tui/sched_join.h), and a hop split as it comes pays no word for it. */
static inline void sj_end_to(const struct xft_point *p, struct xft_sj_end *e)
{
	e->t_ns = p->t_ns;
	e->domain = p->domain;
	e->cpu = (int32_t)(p->cpu_plus1 - 1);
}

/* restrict: the two never overlap, and without it the compiler adds one
 * word at a time, reloading each in case a store changed the other.  The
 * reasons' loop is spelt out: five words, the count of a loop cost more
 * than its adds, twice a hop. */
static void split_add(struct xft_split *restrict to, const struct xft_split *restrict s)
{
	for (unsigned i = 0; i < XFT_NSTATES; i++)
		to->ns[i] += s->ns[i];
	_Static_assert(XFT_UNK_NREASONS == 5, "split_add() adds five reasons");
	to->unknown_ns[0] += s->unknown_ns[0];
	to->unknown_ns[1] += s->unknown_ns[1];
	to->unknown_ns[2] += s->unknown_ns[2];
	to->unknown_ns[3] += s->unknown_ns[3];
	to->unknown_ns[4] += s->unknown_ns[4];
}

/* Add @c's wait to the hop's table @t of CULPRITS; the biggest to @best.
 * A split without a culprit changes neither: @best is already the
 * biggest of @t (both start zero, with the hop and at every reset). */
static void culprit_add(struct xft_culprit *t, const struct xft_culprit *c, struct xft_culprit *best)
{
	if (!c->wait_ns)
		return;
	unsigned k, min = 0;
	for (k = 0; k < CULPRITS; k++) {
		if (t[k].wait_ns && t[k].domain == c->domain && t[k].vcpu == c->vcpu && t[k].pcpu == c->pcpu)
			break;
		if (t[k].wait_ns < t[min].wait_ns)
			min = k;
	}
	if (k == CULPRITS) {
		/* A holder not in the table takes the smallest's place
		 * (space-saving: its count is an overestimate). */
		k = min;
		t[k].domain = c->domain;
		t[k].vcpu = c->vcpu;
		t[k].pcpu = c->pcpu;
	}
	t[k].wait_ns += c->wait_ns;
	*best = t[0];
	for (k = 1; k < CULPRITS; k++)
		if (t[k].wait_ns > best->wait_ns)
			*best = t[k];
}

/* Whether the sample of @w is in its hop's slowest 1 %: at or above the
 * hop's p99 as it stands now, once TAIL_MIN samples give it a meaning.
 * Split within 50 ms of the first flows, a hop's first splits met a p99
 * of its first few samples and put 5 % of its flows in its slowest 1 %. */
static inline int split_in_tail(struct xft_agg *a, uint32_t hop, const struct xft_sj_end *from,
				const struct xft_sj_end *to, const struct xft_hop *h)
{
	if (h->hist.count < TAIL_MIN)
		return 0;
	if (a->p99_age[hop]++ % P99_EVERY == 0)
		a->p99[hop] = xflow_hist_quantile(&h->hist, 0.99);
	return to->t_ns - from->t_ns >= a->p99[hop];
}

/* A split for a callback that sees each split (xft_agg_on_split()),
 * made whole: out of line, so that split_one() has the frame of the
 * split most take. */
static __attribute__((noinline)) void split_told(struct xft_agg *a, uint32_t hop, const struct xft_sj_end *from,
						 const struct xft_sj_end *to)
{
	struct xft_split s;
	struct xft_culprit c;
	struct xft_hop *h = &a->hops[hop];
	struct xft_culprit *t = &a->culprits[(size_t)hop * 2 * CULPRITS];
	xft_sj_split(a->sj, from, to, 1, &s, &c);
	split_add(&h->split.all, &s);
	culprit_add(t, &c, &h->split.culprit_all);
	a->on_split(a->on_split_ctx, h, from->t_ns, to->t_ns, &s, &c);
	if (split_in_tail(a, hop, from, to, h)) {
		h->split.tail_count++;
		split_add(&h->split.tail, &s);
		culprit_add(t + CULPRITS, &c, &h->split.culprit_tail);
	}
}

/* The hop's sums take most splits as the join's memo owes them
 * (xft_sj_split_add()): xft_agg_hops() has them paid before anyone reads
 * them.  A callback that sees each split has it made whole.  Inline: most
 * hops are split as they come (split_wait()), and paid its frame. */
__attribute__((always_inline)) static inline void split_one(struct xft_agg *a, uint32_t hop, uint64_t gen, const struct xft_sj_end *from,
		      const struct xft_sj_end *to)
{
	struct xft_culprit c;
	a->sched.hops_split++;
	if (gen != a->resets || hop >= a->nhops) {
		/* Its hop was forgotten: the split still checks the clock. */
		xft_sj_split_add(a->sj, from, to, 1, NULL, NULL, &c);
		return;
	}
	if (a->on_split) {
		split_told(a, hop, from, to);
		return;
	}
	struct xft_hop *h = &a->hops[hop];
	struct xft_culprit *t = &a->culprits[(size_t)hop * 2 * CULPRITS];
	int tail = split_in_tail(a, hop, from, to, h);
	xft_sj_split_add(a->sj, from, to, 1, &h->split.all, tail ? &h->split.tail : NULL, &c);
	culprit_add(t, &c, &h->split.culprit_all);
	if (tail) {
		h->split.tail_count++;
		culprit_add(t + CULPRITS, &c, &h->split.culprit_tail);
	}
}

/* Split the oldest hop waiting and let it go.  An empty queue starts again
 * at its first slot: it is usually short, and a FIFO that kept walking
 * around all of its max_waits slots would stream through megabytes and
 * push the rest of the model out of the cache. */
static void split_head(struct xft_agg *a)
{
	const struct split_wait *w = &a->waits[a->wait_head];
	split_one(a, w->hop, w->gen, &w->from, &w->to);
	/* No modulo: perf showed its division on every hop. */
	a->nwaits--;
	if (++a->wait_head == a->max_waits || a->nwaits == 0)
		a->wait_head = 0;
}

/* The gaps of top slot @slot's path, split as far as the trace goes. */
static void top_gaps(const struct xft_agg *a, uint32_t slot)
{
	const struct xft_flow_summary *s = &a->top[slot];
	for (uint32_t i = 0; i + 1 < s->npoints; i++) {
		struct xft_sj_end f = sj_end(&s->path[i]), t = sj_end(&s->path[i + 1]);
		if (t.t_ns < f.t_ns)
			t.t_ns = f.t_ns; /* merged paths may cross: an empty gap */
		xft_sj_split_aside(a->sj, &f, &t, 0, &s->gaps[i].split, &s->gaps[i].culprit);
	}
}

/* Split what the trace has passed. */
static void sched_advance(struct xft_agg *a)
{
	uint64_t wm = a->wm;
	while (a->nwaits && a->waits[a->wait_head].to.t_ns <= wm)
		split_head(a);
	/* Every event that moves the watermark comes here: most find every
	 * slot final, and need not look. */
	for (uint32_t k = 0; a->top_unsplit && k < a->ntop; k++)
		if (!a->top_gaps_final[k] && a->top[k].end_ns <= wm) {
			top_gaps(a, k);
			a->top_gaps_final[k] = 1;
			a->top_unsplit--;
		}
	a->sched.hops_pending = a->nwaits;
}

static void split_wait(struct xft_agg *a, uint32_t hop, const struct xft_point *from, const struct xft_point *to)
{
	if (!a->nwaits && to->t_ns <= a->wm) {
		/* The reorder window holds records well past the trace's
		 * watermark, so most hops come already passed: split now, as
		 * sched_advance() would at the next event, without the trip
		 * through the queue.  Only with none waiting: splits stay in
		 * the order the hops ended. */
		struct xft_sj_end f = sj_end(from), t;
		sj_end_to(to, &t);
		split_one(a, hop, a->resets, &f, &t);
		return;
	}
	if (a->nwaits == a->max_waits) {
		/* Full: the oldest is split now, its untraced part '?'. */
		a->sched.split_early = ++a->st.split_early;
		split_head(a);
	}
	uint32_t slot = a->wait_head + a->nwaits++;
	struct split_wait *w = &a->waits[slot >= a->max_waits ? slot - a->max_waits : slot];
	w->hop = hop;
	w->gen = a->resets;
	w->from = sj_end(from);
	w->to = sj_end(to);
	a->sched.hops_pending = a->nwaits;
}

/* The join's status, as every scheduler event leaves it; the clock's
 * bound only with @bound (at a tick and a flush): taking it makes the
 * clock checks the join's memos hold (xft_sj_stats()), which at every
 * event cost more than the event. */
static void sched_status(struct xft_agg *a, int bound)
{
	const struct xft_sj_stats *st = bound ? xft_sj_stats(a->sj) : xft_sj_stats_peek(a->sj);
	a->sched.joined = 1;
	a->sched.clock_error_ns = st->clock_error_ns;
	if (bound)
		a->sched.clock_bound_ns = st->clock_bound_ns;
	a->sched.trace_records = st->events;
	/* What a split missed: Xen's losses, and what the timelines could
	 * not keep (entries let go before a split needed them, vCPUs
	 * beyond the limit). */
	a->sched.lost_records = st->lost;
	a->sched.too_old = st->too_old;
	a->sched.no_vcpu_room = st->no_vcpu_room;
	a->sched.xen_idle = st->xen_idle;
	a->sched.trace_lost = st->lost + st->too_old + st->no_vcpu_room;
	a->sched.split_early = a->st.split_early;
}

void xft_agg_sched_event(struct xft_agg *a, const struct xflow_sched_event *e)
{
	if (!a->sj)
		return;
	uint64_t wm = a->wm;
	xft_sj_event(a->sj, e);
	a->wm = xft_sj_watermark(a->sj);
	if (a->wm != wm)
		sched_advance(a);
	sched_status(a, 0);
}

void xft_agg_sched_flush(struct xft_agg *a)
{
	if (!a->sj)
		return;
	while (a->nwaits)
		split_head(a);
	for (uint32_t k = 0; k < a->ntop; k++)
		if (!a->top_gaps_final[k]) {
			top_gaps(a, k);
			a->top_gaps_final[k] = 1;
			a->top_unsplit--;
		}
	a->sched.hops_pending = 0;
	sched_status(a, 1);
}

void xft_agg_on_split(struct xft_agg *a, xft_agg_split_fn fn, void *ctx)
{
	/* The callback may read the sums: from now on none is owed. */
	if (a->sj)
		xft_sj_fold(a->sj);
	a->on_split = fn;
	a->on_split_ctx = ctx;
}

uint64_t xft_agg_sched_watermark(const struct xft_agg *a)
{
	return a->wm;
}

/* One hop sample from point @from to point @to; a negative one is counted
 * and not recorded. */
static void hop_sample(struct xft_agg *a, const struct xft_point *from, const struct xft_point *to)
{
	if (to->t_ns < from->t_ns) {
		a->st.negative_hops++;
		return;
	}
	struct xft_hop_key k;
	memset(&k, 0, sizeof(k));
	k.from_domain = from->domain;
	k.from_group = from->group;
	k.to_domain = to->domain;
	k.to_group = to->group;
	struct xft_hop *h = hop_get(a, &k, from->site, to->site);
	if (h) {
		uint64_t d = to->t_ns - from->t_ns;
		h->count++;
		h->total_ns += d;
		xflow_hist_record(&h->hist, d);
		if (a->sj)
			split_wait(a, (uint32_t)(h - a->hops), from, to);
	} else {
		a->st.hops_dropped++;
	}
}

/* Note in @p when @r, at @t, is its point's first record at a NOTIFIES
 * site: the woven notification, where the split ends the sender's part of
 * the hop that begins at @p.  Records of one function fold into one point,
 * so the notification is seldom the point's first record.  Only with the
 * scheduler join: nothing else reads it, and it costs a lookup a record. */
static inline void point_notify(const struct xft_agg *a, struct xft_point *p, const struct xflow_record *r, uint64_t t)
{
	if (!a->sj || !a->roles || p->notify_plus1 || t < p->t_ns || t - p->t_ns >= UINT32_MAX)
		return;
	if (a->roles(a->roles_opaque, r->domain_id, r->site_id) & XFLOW_SITE_NOTIFIES)
		p->notify_plus1 = (uint32_t)(t - p->t_ns) + 1;
}

/* The group of (@domain, @site), asked of the callback once while it
 * stays in the cache (xft_group_fn: the answer never changes). */
static uint32_t group_of(struct xft_agg *a, uint16_t domain, uint32_t site)
{
	if (!a->group)
		return site;
	uint64_t tag = GROUP_CACHED | (uint64_t)domain << 32 | site;
	uint32_t slot = (site ^ (uint32_t)domain * 0x9E3779B1u) & (GROUP_CACHE - 1);
	if (a->groups[slot].tag != tag) {
		a->groups[slot].tag = tag;
		a->groups[slot].group = a->group(a->opaque, domain, site);
	}
	return a->groups[slot].group;
}

/* The last point kept in @f's path, when it is @f's current one. */
static struct xft_point *kept_last(struct xft_agg *a, uint32_t i)
{
	const struct flow *f = &a->flows[i];
	struct xft_point *p = f->npoints ? &a->points[(size_t)i * a->lim.max_path + f->npoints - 1] : NULL;
	return p && p->t_ns == f->last.t_ns && p->domain == f->last.domain && p->group == f->last.group ? p : NULL;
}

static void flow_point(struct xft_agg *a, uint32_t i, const struct xflow_record *r, uint64_t t)
{
	uint16_t domain = r->domain_id;
	uint32_t site = r->site_id;
	struct flow *f = &a->flows[i];
	uint32_t g = group_of(a, domain, site);
	if (t > f->last_ns)
		f->last_ns = t;
	/* The newest already (the record before was this flow's, as most are
	 * where a thread's records of one request come together): it is the
	 * tail of its domain's list too, and nothing would move. */
	if (a->act_tail != i) {
		act_unlink(a, i);
		act_append(a, i);
	}
	if (f->has_last && f->last.domain == domain && f->last.group == g) {
		struct xft_point *kept = kept_last(a, i);
		point_notify(a, &f->last, r, t);
		if (kept)
			kept->notify_plus1 = f->last.notify_plus1;
		return;
	}
	flow_touch(a, f, domain, t);
	struct xft_point p = { .domain = domain, .site = site, .group = g, .t_ns = t, .cpu_plus1 = r->cpu_plus1 };
	point_notify(a, &p, r, t);
	if (f->has_last)
		hop_sample(a, &f->last, &p);
	f->last = p;
	f->has_last = 1;
	if (f->npoints < a->lim.max_path) {
		a->points[(size_t)i * a->lim.max_path + f->npoints++] = p;
	} else {
		f->points_lost++;
		a->st.points_lost++;
	}
}

/* --- handoffs between domains ------------------------------------------- */

/* Take the @n-th waiting handoff off the queue, keeping the others in
 * order: the nearer end moves up by one, so that the oldest (expiry) goes
 * at no cost, as the head's step it was before. */
static struct handoff handoff_remove(struct xft_agg *a, uint32_t n)
{
	uint32_t cap = a->lim.max_handoffs;
	struct handoff h = a->handoffs[(a->ho_head + n) % cap];
	if (n < a->ho_count / 2) {
		for (uint32_t m = n; m > 0; m--)
			a->handoffs[(a->ho_head + m) % cap] = a->handoffs[(a->ho_head + m - 1) % cap];
		a->ho_head = (a->ho_head + 1) % cap;
	} else {
		for (uint32_t m = n; m + 1 < a->ho_count; m++)
			a->handoffs[(a->ho_head + m) % cap] = a->handoffs[(a->ho_head + m + 1) % cap];
	}
	a->ho_count--;
	a->share[h.from_domain].handoffs--;
	return h;
}

static void handoff_expire(struct xft_agg *a, uint64_t now)
{
	while (a->ho_count) {
		struct handoff *h = &a->handoffs[a->ho_head];
		if (h->t + a->lim.expire_ns > now)
			break;
		a->st.handoffs_lost++;
		handoff_remove(a, 0);
	}
}

/* The queue is full: the oldest handoff of the domain holding the most
 * goes, so that a domain flooding OUTs loses its own, never another's
 * (with one domain, its oldest, as before). */
static void handoff_evict(struct xft_agg *a)
{
	uint32_t victim = 0, most = 0;
	for (uint32_t n = 0; n < a->ho_count; n++) {
		uint32_t held = a->share[a->handoffs[(a->ho_head + n) % a->lim.max_handoffs].from_domain].handoffs;
		if (held > most) {
			most = held;
			victim = n;
		}
	}
	a->st.handoffs_lost++;
	handoff_remove(a, victim);
}

/*
 * An unkeyed handoff waits, unless its domain holds half the queue already:
 * then it is refused and counted against the domain, as the keyed join
 * refuses (tui/keyed_join.h), so that no one domain's OUTs fill the queue.
 */
static void handoff_send(struct xft_agg *a, uint32_t fi, const struct xflow_record *r,
			 uint64_t t)
{
	if (a->lim.max_handoffs == 0)
		return;
	struct dom_share *d = &a->share[r->domain_id];
	if (d->handoffs >= (a->lim.max_handoffs + 1) / 2) {
		d->handoffs_refused++;
		a->st.handoffs_sent++;
		a->st.handoffs_lost++;
		return;
	}
	if (a->ho_count == a->lim.max_handoffs)
		handoff_evict(a);
	struct handoff *h = &a->handoffs[(a->ho_head + a->ho_count++) % a->lim.max_handoffs];
	unsigned bits = r->flow_kind < 16 ? a->lim.carried_bits[r->flow_kind] : 0;
	h->kind = r->flow_kind;
	h->from_domain = r->domain_id;
	h->id = r->flow_id;
	h->mask = bits && bits < 64 ? (UINT64_C(1) << bits) - 1 : UINT64_MAX;
	h->flow = fi;
	h->flow_start = a->flows[fi].start_ns;
	h->t = t;
	d->handoffs++;
	a->st.handoffs_sent++;
}

/* May @r's site take (XFLOW_SITE_RECEIVES) or leave (XFLOW_SITE_SENDS) an
 * unkeyed handoff?  As its plan says when its collector knows; anywhere
 * when not (a plugin, an old session), as before roles were known. */
static int site_may(const struct xft_agg *a, const struct xflow_record *r, unsigned role)
{
	if (!a->roles)
		return 1;
	unsigned k = a->roles(a->roles_opaque, r->domain_id, r->site_id);
	return !(k & XFLOW_SITE_ROLES_KNOWN) || (k & role);
}

/* The oldest handoff waiting for this receiving record, taken off the
 * queue; NIL if none.  Records match on the id in the carried bits, and
 * only from another domain.  (Keyed handoffs go to the join table.) */
static uint32_t handoff_receive(struct xft_agg *a, const struct xflow_record *r)
{
	for (uint32_t n = 0; n < a->ho_count; n++) {
		uint32_t idx = (a->ho_head + n) % a->lim.max_handoffs;
		struct handoff *h = &a->handoffs[idx];
		if (h->kind != r->flow_kind || h->from_domain == r->domain_id)
			continue;
		if ((h->id & h->mask) != (r->flow_id & h->mask))
			continue;
		uint32_t fi = h->flow;
		int alive = a->flows[fi].live && a->flows[fi].start_ns == h->flow_start;
		handoff_remove(a, n);
		if (!alive) {
			a->st.handoffs_lost++;
			return NIL;
		}
		a->st.handoffs_matched++;
		return fi;
	}
	return NIL;
}

/* --- keyed handoffs (the join table is tui/keyed_join.c) --------------- */

static int join_alive(void *opaque, const struct xft_kj_side *s)
{
	const struct xft_agg *a = opaque;
	const struct flow *f = &a->flows[s->flow];
	return f->live && f->gen == s->flow_gen;
}

static void join_expired(void *opaque, const struct xft_kj_side *s, int in)
{
	struct xft_agg *a = opaque;
	if (!join_alive(a, s))
		return;
	struct flow *f = &a->flows[s->flow];
	if (in)
		f->awaiting = 0;
	else if (f->sending)
		f->sending--;
	/* It lost a part on the way: whatever else it has, it is partial. */
	flow_make_partial(a, s->flow);
	flow_count(a, s->flow);
	if (f->held && !f->awaiting && !f->sending) {
		/* Its QUIT was seen long ago; partial, it is not ranked. */
		f->held = 0;
		flow_end(a, s->flow, 0);
	}
}

/* A waiting flow whose QUIT comes before the other side of its handoff
 * (its sender, or the receiver of what it sent: the two domains' clocks
 * apart put one before the other): keep the slot (its path is needed for
 * the join) but let its ids go, as a QUIT does. */
static void flow_hold(struct xft_agg *a, uint32_t i)
{
	struct flow *f = &a->flows[i];
	flow_keys_remove(a, f);
	f->held = 1;
}

/* Flow @i reached its QUIT record. */
static void flow_quit(struct xft_agg *a, uint32_t i)
{
	if (a->flows[i].awaiting || a->flows[i].sending) {
		flow_hold(a, i);
		return;
	}
	flow_settle(a, i);
	a->st.flows_finished += !a->flows[i].partial;
	flow_end_settled(a, i, 0);
}

/* The OUT of flow @si came after its IN, which began flow in->flow: make
 * the two one flow, the sender's, as if the IN had been applied after. */
static void flow_merge(struct xft_agg *a, uint32_t si, const struct xft_kj_side *in)
{
	uint32_t ri = in->flow, mp = a->lim.max_path;
	struct flow *s = &a->flows[si], *r = &a->flows[ri];
	if (ri == si) {
		/* The waiting flow reached the sending domain through another
		 * join and sent from there: it is already one flow. */
		s->awaiting = 0;
		flow_count(a, si);
		return;
	}
	/* What the receiving half may have lost, the whole flow has, and
	 * its domains' later losses. */
	if (flow_settle(a, ri)) {
		s->lossy = 1;
		flow_make_partial(a, si);
	}
	for (uint32_t k = 0; k < r->ntouch; k++)
		touch_add(a, s, r->tdom[k], r->tepoch[k]);
	if (r->touch_over && (!s->touch_over || r->over_epoch < s->over_epoch)) {
		s->touch_over = 1;
		s->over_epoch = r->over_epoch;
	}
	if (s->has_last) {
		a->st.join_negative_hops += in->point.t_ns < s->last.t_ns;
		hop_sample(a, &s->last, &in->point);
	}
	struct xft_point *sp = &a->points[(size_t)si * mp], *rp = &a->points[(size_t)ri * mp];
	uint32_t n = 0, x = 0, y = 0;
	while ((x < s->npoints || y < r->npoints) && n < mp) {
		if (y == r->npoints || (x < s->npoints && sp[x].t_ns <= rp[y].t_ns))
			a->merge[n++] = sp[x++];
		else
			a->merge[n++] = rp[y++];
	}
	uint32_t lost = (s->npoints - x) + (r->npoints - y);
	memcpy(sp, a->merge, n * sizeof(*sp));
	s->npoints = n;
	s->points_lost += r->points_lost + lost;
	a->st.points_lost += lost;
	if (r->has_last && (!s->has_last || r->last.t_ns >= s->last.t_ns)) {
		s->last = r->last;
		s->has_last = 1;
	}
	if (r->last_ns > s->last_ns)
		s->last_ns = r->last_ns;
	/* Later records of the receiver's ids continue the sender's flow. */
	while (r->nkeys) {
		struct flow_key k = r->keys[r->nkeys - 1];
		uint32_t before = r->nkeys;
		flow_add_key(a, si, k.domain, k.kind, k.id);
		if (r->nkeys == before)
			break; /* the sender has no room for more ids */
	}
	/* The receiving half is not a flow of its own any more, and never
	 * was in the figures that only grow. */
	r->counted = 1;
	int held = r->held;
	if (r->partial)
		a->st.flows_partial--;
	else
		a->st.flows_started--;
	r->awaiting = r->held = 0;
	flow_end(a, ri, 1);
	if (held) {
		flow_settle(a, si);
		a->st.flows_finished += !s->partial;
		flow_end(a, si, 0);
	}
}

/* Copy the join table's counts into the statistics; the handoff totals
 * cover both kinds of handoff. */
static void join_sync(struct xft_agg *a)
{
	const struct xft_kj_stats *k = &a->kj.st;
	struct xft_agg_stats *st = &a->st;
	uint64_t lost_was = st->join_unmatched_out + st->join_conflicts + st->join_refused + st->join_full;
	uint64_t lost_now = k->unmatched_out + k->conflicts + k->refused + k->full;
	st->handoffs_matched += k->joined - st->join_joined;
	st->handoffs_lost += lost_now - lost_was;
	st->join_joined = k->joined;
	st->join_unmatched_out = k->unmatched_out;
	st->join_unmatched_in = k->unmatched_in;
	st->join_conflicts = k->conflicts;
	st->join_refused = k->refused;
	st->join_full = k->full;
}

static void keyed_out(struct xft_agg *a, const struct xflow_record *r, uint64_t t)
{
	uint16_t dom = r->domain_id, kind = r->flow_kind;
	uint32_t fi = flow_lookup(a, dom, kind, r->flow_id);
	if ((r->flags & XFLOW_REC_START) && fi != NIL) {
		a->st.flows_expired++;
		flow_end(a, fi, 1);
		fi = NIL;
	}
	if (fi == NIL)
		fi = flow_start(a, r, t);
	flow_count(a, fi);
	flow_point(a, fi, r, t);
	struct flow *f = &a->flows[fi];
	uint64_t gen = f->gen;
	struct xft_kj_side out = { .domain = dom, .flow = fi, .flow_gen = gen, .point = f->last }, in;
	a->st.handoffs_sent++;
	int m = xft_kj_out(&a->kj, kind, r->data[0], &out, t, &in);
	if (m == 1)
		flow_merge(a, fi, &in);
	else if (m == 0)
		f->sending++;
	/* A late join may have ended the flow already (its receiver quit). */
	if ((r->flags & XFLOW_REC_QUIT) && f->live && f->gen == gen)
		flow_quit(a, fi);
}

static void keyed_in(struct xft_agg *a, const struct xflow_record *r, uint64_t t)
{
	uint16_t dom = r->domain_id, kind = r->flow_kind;
	uint64_t key = r->data[0];
	uint32_t fi = flow_lookup(a, dom, kind, r->flow_id);
	/* data[2] is the sender's domain + 1; a value no domain has matches
	 * no OUT. */
	struct xft_kj_side in = { .domain = dom,
				  .sender = r->data[2] <= 0x10000 ? (uint32_t)r->data[2] : UINT32_MAX };
	struct xft_kj_side out;
	int m = xft_kj_in_take(&a->kj, kind, key, &in, t, &out);
	if (m == 1) {
		fi = out.flow;
		struct flow *o = &a->flows[fi];
		if (o->sending)
			o->sending--;
		/* Its QUIT was applied first: it goes on here now. */
		if (!o->awaiting)
			o->held = 0;
		/* The hop across is from the sending point, whatever of the
		 * sender the clocks let through before this side. */
		o->last = out.point;
		o->has_last = 1;
		flow_add_key(a, fi, dom, kind, r->flow_id);
		a->st.join_negative_hops += t < out.point.t_ns;
	} else {
		if (fi != NIL) { /* a recycled local id with no sender */
			a->st.flows_expired++;
			flow_end(a, fi, 1);
		}
		fi = flow_start(a, r, t);
	}
	flow_point(a, fi, r, t);
	struct flow *f = &a->flows[fi];
	if (m == 0) {
		in.flow = fi;
		in.flow_gen = f->gen;
		in.point = f->last;
		if (xft_kj_in_wait(&a->kj, kind, key, &in, t) == 0)
			f->awaiting = 1;
		else
			flow_make_partial(a, fi);
	} else if (m < 0) {
		flow_make_partial(a, fi);
	}
	/* A side waiting for its sender is counted once its fate is known:
	 * merged (never), or partial when the grace runs out. */
	if (!f->awaiting)
		flow_count(a, fi);
	if (r->flags & XFLOW_REC_QUIT)
		flow_quit(a, fi);
}

/* --- applying one record --------------------------------------------------- */

/* A loss of @domain's applied at the time of the last record before it:
 * every flow in that domain now, and every flow that comes to it before
 * @until, may own a lost record (which thread wrote it says nothing of
 * its flow, so all of them are suspects; see flow_settle). */
static void loss_apply(struct xft_agg *a, uint16_t domain, uint64_t t, uint64_t until)
{
	if (t < a->last_released)
		a->st.loss_late++;
	a->dloss[domain]++;
	a->loss_epoch++;
	if (until > a->duntil[domain])
		a->duntil[domain] = until;
}

/* The time up to which handoff sides may run out of their grace: @t, held
 * back to what the slowest domain that said how far it is has given (less
 * the reorder window, which a record may still be behind by).  A domain
 * that has not moved for HOLD_MAX_GRACES graces is not waited for. */
static uint64_t handoff_horizon(const struct xft_agg *a, uint64_t t)
{
	uint64_t stale = HOLD_MAX_GRACES * a->lim.join_grace_ns;
	for (uint32_t i = 0; i < a->nprogress; i++) {
		uint64_t p = a->progress[i].t;
		if (a->clock_now - p >= stale)
			continue;
		p = p > a->lim.window_ns ? p - a->lim.window_ns : 0;
		if (p < t)
			t = p;
	}
	return t;
}

static void apply(struct xft_agg *a, const struct xflow_record *r, uint64_t t)
{
	if (r->flags & PEND_LOSS) {
		loss_apply(a, r->domain_id, t, r->data[0]);
		return;
	}
	a->st.released++;
	if (r->flags & XFLOW_REC_LOSS_NOTE) {
		/* Its loss went in when it came (xft_agg_feed); it is no
		 * flow's, and its time, its agent's, says nothing of the
		 * order of the records around it. */
		a->st.no_flow++;
		return;
	}
	if (t < a->last_released)
		a->st.late++;
	else
		a->last_released = t;
	if (r->flow_id == 0) {
		a->st.no_flow++;
		return;
	}
	if (r->flags & XFLOW_REC_KEYED) {
		int out = (r->flags & XFLOW_REC_CROSS_DOMAIN) && r->data[1] == 0;
		if (r->data[1] == 1 || out) {
			/* Sides wait at most the grace, as of what was applied
			 * and what every domain has given. */
			xft_kj_expire(&a->kj, handoff_horizon(a, a->last_released));
			if (out)
				keyed_out(a, r, t);
			else
				keyed_in(a, r, t);
			join_sync(a);
			return;
		}
	}
	/* Other keyed records (a side the contract does not know) are plain
	 * points: neither a handoff sent nor one received. */
	int plain = !!(r->flags & XFLOW_REC_KEYED);
	uint16_t dom = r->domain_id, kind = r->flow_kind;
	uint32_t fi = flow_lookup(a, dom, kind, r->flow_id);
	int arrived = 0; /* this record continues a flow from another domain */

	if ((r->flags & XFLOW_REC_START) && fi != NIL) {
		/* A new start under a live key: the old flow lost its quit. */
		a->st.flows_expired++;
		flow_end(a, fi, 1);
		fi = NIL;
	}
	if (fi == NIL) {
		/* A plain start begins a flow here; anything else unknown here
		 * may be a flow that left another domain through a ring, if
		 * its site is one where a flow arrives.  A record elsewhere
		 * that would have matched a waiting handoff is not counted as
		 * a lie: an honest agent that lost a flow's first records
		 * writes the same, and masked ids collide.  It begins a
		 * partial flow as any unknown record does. */
		uint32_t from = NIL;
		if (!(r->flags & XFLOW_REC_START) && !plain && site_may(a, r, XFLOW_SITE_RECEIVES))
			from = handoff_receive(a, r);
		if (from != NIL) {
			fi = from;
			flow_add_key(a, fi, dom, kind, r->flow_id);
			arrived = 1;
		} else {
			fi = flow_start(a, r, t);
			flow_count(a, fi);
		}
	}
	flow_point(a, fi, r, t);
	/* The receiving side's record says CROSS_DOMAIN too: one that took
	 * no handoff is a flow whose sender was not seen, not a sender. */
	if ((r->flags & XFLOW_REC_CROSS_DOMAIN) && !arrived && !plain && site_may(a, r, XFLOW_SITE_SENDS))
		handoff_send(a, fi, r, t);
	if (r->flags & XFLOW_REC_QUIT)
		flow_quit(a, fi);
}

static void expire(struct xft_agg *a, uint64_t now)
{
	while (a->act_head != NIL) {
		struct flow *f = &a->flows[a->act_head];
		if (f->last_ns + a->lim.expire_ns > now)
			break;
		a->st.flows_expired++;
		flow_end(a, a->act_head, 1);
	}
	uint64_t h = handoff_horizon(a, now);
	handoff_expire(a, h);
	xft_kj_expire(&a->kj, h);
	join_sync(a);
}

/* --- public ----------------------------------------------------------------- */

/* Release the oldest record held. */
static void release_one(struct xft_agg *a)
{
	uint64_t t;
	const struct xflow_record *r = xft_reorder_pop(&a->rq, &t);
	apply(a, r, t);
}

/* Release what is older than @now by the window, and what the threads'
 * watermark has passed (tui/reorder.h), once it is older than the newest
 * record by the lag records arrive with (twice the most seen in the last
 * second or two, and LAG_FLOOR_NS).  Not in the first LAG_PERIOD_NS of
 * record time: threads start together, and the agent's first rounds,
 * through lanes full from its start, bring some threads' first records
 * tens of milliseconds behind the others', before any lag was seen.
 * Strictly before the watermark: a
 * thread's last record stays, so that a gap found at its next one
 * (loss_push) goes in before it, and every record after it stays to be
 * judged with it. */
static void release_until(struct xft_agg *a, uint64_t now)
{
	uint64_t t, mark;
	bool marked = a->warm_set && a->newest >= a->warm_from && xft_reorder_watermark(&a->rq, a->newest, &mark);
	uint64_t lag = a->lag_now > a->lag_prev ? a->lag_now : a->lag_prev;
	uint64_t skew = lag < a->lim.window_ns / 2 ? 2 * lag + LAG_FLOOR_NS : a->lim.window_ns;
	if (marked && mark > a->newest - (skew < a->newest ? skew : a->newest))
		mark = a->newest - (skew < a->newest ? skew : a->newest);
	/* Nothing younger than what a domain's agent still holds: it comes
	 * later, and would be late (xft_agg_set_held). */
	uint64_t held = a->held_min;
	if (held && now > held + a->lim.window_ns)
		now = held + a->lim.window_ns;
	if (held && marked && mark > held)
		mark = held;
	while (xft_reorder_oldest(&a->rq, &t) && (t + a->lim.window_ns <= now || (marked && t < mark)))
		release_one(a);
}

/* The window looked at for what the newest record lets go. */
static void release_look(struct xft_agg *a)
{
	a->unreleased = 0;
	a->looked_newest = a->newest;
	release_until(a, a->newest);
}

/* Into the window; a full one lets its oldest go first. */
static void pend_add(struct xft_agg *a, const struct xflow_record *r, uint64_t t)
{
	if (xft_reorder_full(&a->rq)) {
		a->st.window_full++;
		release_one(a);
	}
	/* A loss note's time is its agent's, not its thread's: the thread's
	 * next record may be stamped before it, so it must not move the
	 * thread's watermark. */
	if (r->flags & (PEND_LOSS | XFLOW_REC_LOSS_NOTE))
		xft_reorder_push_loose(&a->rq, r, t);
	else
		xft_reorder_push(&a->rq, r, t, r->flags & XFLOW_REC_SEQ_COUNTS_LOST);
}

/*
 * Records lost between the times @from and @to: a loss that waits in the
 * window at @from, behind the record there (it came first), so that it is
 * applied before any flow could end in the gap.  A gap seen only after
 * @from has left the window is applied at once and counted late: flows
 * that ended in between were judged without it.
 */
static void loss_push(struct xft_agg *a, uint16_t domain, uint64_t from, uint64_t to)
{
	struct xflow_record l;
	memset(&l, 0, sizeof(l));
	l.flags = PEND_LOSS;
	l.domain_id = domain;
	l.ndata = 1; /* the window holds no more data words than that */
	l.data[0] = to;
	pend_add(a, &l, from);
}

void xft_agg_feed(struct xft_agg *a, const struct xflow_record *r, uint64_t t)
{
	/* A full window releases what the records before would have, had
	 * each looked: only then is a record let go early, as before. */
	if (a->unreleased && xft_reorder_full(&a->rq))
		release_look(a);
	a->st.records++;
	if (!a->warm_set) {
		a->warm_set = true;
		a->warm_from = t + LAG_PERIOD_NS;
	}
	if (t > a->clock_now)
		a->clock_now = t;
	if (t > a->newest) {
		a->newest = t;
		if (t >= a->lag_period_end) {
			a->lag_prev = a->lag_now;
			a->lag_now = 0;
			a->lag_period_end = t + LAG_PERIOD_NS;
		}
	} else if (a->newest - t > a->lag_now) {
		a->lag_now = a->newest - t;
	}
	if (r->flags & XFLOW_REC_SEQ_COUNTS_LOST) {
		uint64_t from;
		uint32_t lost = xft_seqs_check(&a->seqs, r, t, &from);
		if (lost)
			loss_push(a, r->domain_id, from, t);
		a->st.records_lost = a->seqs.lost;
		a->st.loss_gaps = a->seqs.gaps;
		a->st.threads_forgotten = a->seqs.forgotten;
	}
	pend_add(a, r, t);
	/* Release what is older than the window as we go, so a steady feed
	 * keeps the window at its time bound, not its count bound.  Every
	 * RELEASE_EVERY records: what a record's look would have released
	 * is released by the next look, in the same order (by time, then
	 * arrival), with the records fed in between among it; only a record
	 * that would have come late is then in order. */
	if (++a->unreleased == RELEASE_EVERY || a->newest - a->looked_newest >= RELEASE_SLACK_NS)
		release_look(a);
}

void xft_agg_tick(struct xft_agg *a, uint64_t now)
{
	if (now > a->clock_now)
		a->clock_now = now;
	/* First what the records fed since the last look would have
	 * released, had each looked: @now may be behind the newest. */
	if (a->unreleased)
		release_look(a);
	release_until(a, now);
	/* Expire against the oldest time not yet released, so records still
	 * in the window cannot be overtaken by their flow's expiry. */
	uint64_t horizon;
	if (!xft_reorder_oldest(&a->rq, &horizon) || horizon > now)
		horizon = now;
	if (a->held_min && horizon > a->held_min)
		horizon = a->held_min;
	expire(a, horizon);
	if (a->sj)
		sched_status(a, 1);
}

void xft_agg_drain(struct xft_agg *a)
{
	a->unreleased = 0;
	while (xft_reorder_count(&a->rq))
		release_one(a);
}

const struct xft_agg_stats *xft_agg_stats(const struct xft_agg *a)
{
	return &a->st;
}

const struct xft_sched_status *xft_agg_sched_status(const struct xft_agg *a)
{
	return &a->sched;
}

const struct xft_hop *xft_agg_hops(const struct xft_agg *a, size_t *n)
{
	/* Every reader of the hops' split sums comes here: what the join
	 * still owes them is paid first (xft_sj_split_add()). */
	if (a->sj)
		xft_sj_fold(a->sj);
	*n = a->nhops;
	return a->hops;
}

static int summary_slower(const void *x, const void *y)
{
	const struct xft_flow_summary *p = x, *q = y;
	uint64_t dp = p->end_ns - p->start_ns, dq = q->end_ns - q->start_ns;
	return dp < dq ? 1 : dp > dq ? -1 : 0;
}

size_t xft_agg_slowest(const struct xft_agg *a, const struct xft_flow_summary **out, size_t max)
{
	/* Gaps the trace has not passed yet: as far as it goes, for now. */
	for (uint32_t k = 0; a->sj && k < a->ntop; k++)
		if (!a->top_gaps_final[k])
			top_gaps(a, k);
	memcpy(a->sorted, a->top, a->ntop * sizeof(*a->top));
	qsort(a->sorted, a->ntop, sizeof(*a->sorted), summary_slower);
	*out = a->sorted;
	return a->ntop < max ? a->ntop : max;
}

void xft_agg_domain_refused(const struct xft_agg *a, uint16_t domain, struct xft_agg_refused *out)
{
	out->hops = a->share[domain].hops_refused;
	out->handoffs = a->share[domain].handoffs_refused;
}

void xft_agg_set_clock_bound(struct xft_agg *a, uint16_t domain, uint64_t bound_ns)
{
	xft_kj_set_bound(&a->kj, domain, bound_ns);
}

/* @domain's entry in the list @l of *@n (XFT_PROGRESS_DOMAINS at most),
 * added with t 0 if it has none and there is room; with !@keep it is
 * taken out instead.  NULL: none (taken out, or no room). */
static struct progress *domain_entry(struct progress *l, uint32_t *n, uint16_t domain, bool keep)
{
	uint32_t i;
	for (i = 0; i < *n && l[i].domain != domain; i++)
		;
	if (!keep) {
		if (i < *n)
			l[i] = l[--*n];
		return NULL;
	}
	if (i == *n) {
		if (*n == XFT_PROGRESS_DOMAINS)
			return NULL; /* beyond the table: not waited for */
		l[(*n)++] = (struct progress){ .domain = domain };
	}
	return &l[i];
}

void xft_agg_set_held(struct xft_agg *a, uint16_t domain, uint64_t held_ns)
{
	struct progress *h = domain_entry(a->held, &a->nheld, domain, held_ns != 0);
	if (h)
		h->t = held_ns;
	a->held_min = 0;
	for (uint32_t i = 0; i < a->nheld; i++)
		if (!a->held_min || a->held[i].t < a->held_min)
			a->held_min = a->held[i].t;
}

void xft_agg_set_progress(struct xft_agg *a, uint16_t domain, uint64_t progress_ns)
{
	struct progress *p = domain_entry(a->progress, &a->nprogress, domain, progress_ns != 0);
	if (!p)
		return;
	if (progress_ns > p->t)
		p->t = progress_ns;
	if (progress_ns > a->clock_now)
		a->clock_now = progress_ns;
}

void xft_agg_reset(struct xft_agg *a)
{
	uint64_t mem = a->st.memory_bytes;
	memset(&a->st, 0, sizeof(a->st));
	a->st.memory_bytes = mem;
	xft_reorder_reset(&a->rq);
	a->newest = a->last_released = 0;
	a->unreleased = 0;
	a->looked_newest = 0;
	a->lag_now = a->lag_prev = a->lag_period_end = 0;
	a->warm_set = false;
	xft_seqs_clear(&a->seqs);
	memset(a->dloss, 0, 65536 * sizeof(*a->dloss));
	memset(a->duntil, 0, 65536 * sizeof(*a->duntil));
	a->loss_epoch = 0;
	xflow_flowtab_clear(&a->keys);
	a->kc.valid = a->kc.pending = false;
	for (uint32_t i = 0; i < a->lim.max_flows; i++) {
		a->flows[i].live = 0;
		a->flows[i].next = i + 1 < a->lim.max_flows ? i + 1 : NIL;
	}
	a->free_head = 0;
	a->act_head = a->act_tail = NIL;
	memset(a->dslot_of, 0, 65536 * sizeof(*a->dslot_of));
	a->ndoms = 0;
	/* What the join owes the hops is paid before they are forgotten:
	 * never into the hops that take their places. */
	if (a->sj)
		xft_sj_fold(a->sj);
	a->nhops = 0;
	memset(a->share, 0, 65536 * sizeof(*a->share));
	a->hop_holders = 0;
	memset(a->hop_slots, 0, ((size_t)a->hop_mask + 1) * sizeof(*a->hop_slots));
	a->ho_head = a->ho_count = 0;
	xft_kj_reset(&a->kj);
	a->ntop = 0;
	a->top_unsplit = 0;
	/* The trace goes on: its timelines stay, the hops waiting for it go. */
	a->resets++;
	a->nwaits = a->wait_head = 0;
	a->sched.hops_split = a->sched.hops_pending = a->sched.split_early = 0;
	if (a->sj) {
		memset(a->culprits, 0, (size_t)a->lim.max_hops * 2 * CULPRITS * sizeof(*a->culprits));
		memset(a->p99_age, 0, (size_t)a->lim.max_hops * sizeof(*a->p99_age));
	}
}

int xft_agg_sched_join(struct xft_agg *a, const struct xft_sj_limits *l, uint32_t max_pending)
{
	if (a->sj)
		return -EALREADY;
	uint64_t mem = 0;
	a->max_waits = max_pending ? max_pending : 65536;
	int rc = xft_sj_new(l, &a->sj);
	if (rc)
		return rc;
	a->waits = take(a->max_waits, sizeof(*a->waits), &mem);
	a->culprits = take((size_t)a->lim.max_hops * 2 * CULPRITS, sizeof(*a->culprits), &mem);
	a->p99 = take(a->lim.max_hops, sizeof(*a->p99), &mem);
	a->p99_age = take(a->lim.max_hops, sizeof(*a->p99_age), &mem);
	a->top_gaps = take((size_t)a->lim.top_k * a->lim.max_path, sizeof(*a->top_gaps), &mem);
	a->top_gaps_final = take(a->lim.top_k, sizeof(*a->top_gaps_final), &mem);
	if (!a->waits || !a->culprits || !a->p99 || !a->p99_age || !a->top_gaps || !a->top_gaps_final) {
		sched_free(a);
		return -ENOMEM;
	}
	a->st.memory_bytes += mem + xft_sj_bytes(a->sj);
	a->sched.clock_error_ns = UINT64_MAX;
	a->sched.clock_bound_ns = UINT64_MAX;
	return 0;
}


int xft_agg_new(const struct xft_agg_limits *l, xft_group_fn group, void *opaque,
		struct xft_agg **out)
{
	*out = NULL;
	if (!l->max_pending || !l->max_flows || !l->max_hops || !l->max_path ||
	    l->max_flows > (1u << 28) || l->max_hops > (1u << 24))
		return -EINVAL;
	struct xft_agg *a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	uint64_t mem = sizeof(*a);
	a->lim = *l;
	a->group = group;
	a->opaque = opaque;
	uint32_t hs = 1;
	while (hs < 2 * l->max_hops)
		hs <<= 1;
	a->hop_mask = hs - 1;
	a->flows = take(l->max_flows, sizeof(*a->flows), &mem);
	a->dslot_of = take(65536, sizeof(*a->dslot_of), &mem);
	a->dloss = take(65536, sizeof(*a->dloss), &mem);
	a->duntil = take(65536, sizeof(*a->duntil), &mem);
	a->share = take(65536, sizeof(*a->share), &mem);
	a->points = take((size_t)l->max_flows * l->max_path, sizeof(*a->points), &mem);
	a->hops = take(l->max_hops, sizeof(*a->hops), &mem);
	a->hop_slots = take(hs, sizeof(*a->hop_slots), &mem);
	a->handoffs = take(l->max_handoffs, sizeof(*a->handoffs), &mem);
	a->top = take(l->top_k, sizeof(*a->top), &mem);
	a->sorted = take(l->top_k, sizeof(*a->sorted), &mem);
	a->top_points = take((size_t)l->top_k * l->max_path, sizeof(*a->top_points), &mem);
	a->merge = take(l->max_path, sizeof(*a->merge), &mem);
	int rc = xflow_flowtab_init(&a->keys, (size_t)l->max_flows * FLOW_MAX_KEYS);
	mem += xflow_flowtab_bytes(&a->keys);
	if (rc == 0) {
		rc = xft_reorder_init(&a->rq, l->max_pending, l->max_threads ? l->max_threads : 4096, l->window_ns);
		mem += xft_reorder_bytes(&a->rq);
	}
	if (rc == 0) {
		rc = xft_seqs_init(&a->seqs, l->max_threads);
		mem += xft_seqs_bytes(&a->seqs);
	}
	if (rc == 0) {
		rc = xft_kj_init(&a->kj, l->max_handoffs, l->join_grace_ns, join_alive, join_expired, a);
		mem += xft_kj_bytes(&a->kj);
	}
	if (rc || !a->merge || !a->flows || !a->dslot_of || !a->dloss || !a->duntil || !a->share || !a->points || !a->hops ||
	    !a->hop_slots ||
	    !a->handoffs || !a->top || !a->sorted || !a->top_points) {
		if (rc == 0)
			rc = -ENOMEM;
		xft_agg_free(a);
		return rc;
	}
	a->st.memory_bytes = mem;
	xft_agg_reset(a);
	*out = a;
	return 0;
}

void xft_agg_set_roles(struct xft_agg *a, xft_role_fn roles, void *opaque)
{
	a->roles = roles;
	a->roles_opaque = opaque;
}

void xft_agg_free(struct xft_agg *a)
{
	if (!a)
		return;
	xft_reorder_fini(&a->rq);
	free(a->flows);
	free(a->dslot_of);
	free(a->dloss);
	free(a->duntil);
	free(a->share);
	free(a->points);
	free(a->hops);
	free(a->hop_slots);
	free(a->handoffs);
	free(a->top);
	free(a->sorted);
	free(a->top_points);
	free(a->merge);
	xft_kj_fini(&a->kj);
	xflow_flowtab_fini(&a->keys);
	xft_seqs_fini(&a->seqs);
	sched_free(a);
	free(a);
}
