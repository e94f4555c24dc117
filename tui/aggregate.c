/*
 * The aggregation model: reorder window, flows, handoffs between domains,
 * hops, top-K slowest.  See tui/aggregate.h for the contract.
 *
 * Everything is allocated in xft_agg_new(): the pending heap, the flow pool
 * with its path storage, the key table (the project's flow-id table, keyed
 * by (kind, domain << 48 | id)), the hop array and its hash, the handoff
 * queue and the top-K store.  The feed path never allocates.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tui/aggregate.h"
#include "xflow/flowid.h"

#define NIL UINT32_MAX
#define FLOW_MAX_KEYS 4

struct pending {
	uint64_t t;
	uint64_t seq; /* arrival order: equal times stay in arrival order */
	struct xflow_record r;
};

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
	int live;
	int partial;         /* its beginning was not seen: never ranked */
};

struct handoff {
	uint16_t kind, from_domain;
	int keyed;
	uint64_t id_or_key;
	uint64_t mask; /* bits of the id the receiver sees */
	uint32_t flow;
	uint64_t flow_start; /* to notice the flow slot was reused */
	uint64_t t;
};

struct xft_agg {
	struct xft_agg_limits lim;
	xft_group_fn group;
	void *opaque;
	struct xft_agg_stats st;

	struct pending *heap;
	uint32_t npending;
	uint64_t seq, newest, last_released;

	struct flow *flows;
	struct xft_point *points; /* max_flows * max_path */
	uint32_t free_head, act_head, act_tail;
	struct xflow_flowtab keys;

	struct xft_hop *hops;
	uint32_t nhops;
	uint32_t *hop_slots; /* hash: hop index + 1, 0 = empty */
	uint32_t hop_mask;

	struct handoff *handoffs; /* FIFO ring */
	uint32_t ho_head, ho_count;

	struct xft_flow_summary *top;
	struct xft_point *top_points;
	uint32_t ntop;
	struct xft_flow_summary *sorted; /* xft_agg_slowest()'s answer */
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
}

/* --- pending heap (min on time, then arrival) -------------------------- */

static int pend_less(const struct pending *a, const struct pending *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_push(struct xft_agg *a, const struct xflow_record *r, uint64_t t)
{
	uint32_t i = a->npending++;
	struct pending p = { .t = t, .seq = a->seq++, .r = *r };
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (!pend_less(&p, &a->heap[parent]))
			break;
		a->heap[i] = a->heap[parent];
		i = parent;
	}
	a->heap[i] = p;
}

static void heap_pop(struct xft_agg *a, struct pending *out)
{
	*out = a->heap[0];
	struct pending last = a->heap[--a->npending];
	uint32_t i = 0, n = a->npending;
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && pend_less(&a->heap[c + 1], &a->heap[c]))
			c++;
		if (!pend_less(&a->heap[c], &last))
			break;
		a->heap[i] = a->heap[c];
		i = c;
	}
	if (n)
		a->heap[i] = last;
}

/* --- flows ---------------------------------------------------------------- */

static uint64_t key_ptr(uint16_t domain, uint64_t id)
{
	/* Keys look like pointers to the flow-id table, but ids run 1, 2,
	 * 3...: scramble them with an odd multiplier, a bijection that keeps
	 * keys distinct and never 0, so that no hash the table uses sees
	 * consecutive integers. */
	return ((uint64_t)domain << XFLOW_FLOWID_BITS | (id & XFLOW_FLOWID_MAX)) *
	       UINT64_C(0x9E3779B97F4A7C15);
}

static uint32_t flow_lookup(struct xft_agg *a, uint16_t domain, uint16_t kind, uint64_t id)
{
	uint64_t v = xflow_flowtab_get(&a->keys, kind, key_ptr(domain, id));
	return v ? (uint32_t)(v - 1) : NIL;
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
}

/* Map one more key to flow @i; a key that named another flow is taken
 * over (the id was recycled there). */
static void flow_add_key(struct xft_agg *a, uint32_t i, uint16_t domain, uint16_t kind,
			 uint64_t id)
{
	struct flow *f = &a->flows[i];
	uint32_t old = flow_lookup(a, domain, kind, id);
	if (old == i)
		return;
	if (f->nkeys == FLOW_MAX_KEYS)
		return; /* still reachable through its other keys */
	if (xflow_flowtab_register(&a->keys, kind, key_ptr(domain, id), (uint64_t)i + 1) == 0)
		f->keys[f->nkeys++] = (struct flow_key){ domain, kind, id };
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

static void top_consider(struct xft_agg *a, const struct flow *f, uint32_t fi, uint64_t end)
{
	/* A fragment's duration is not its flow's. */
	if (a->lim.top_k == 0 || f->partial)
		return;
	uint64_t dur = end - f->start_ns;
	uint32_t slot;
	if (a->ntop < a->lim.top_k) {
		slot = a->ntop++;
	} else {
		slot = 0;
		for (uint32_t k = 1; k < a->ntop; k++)
			if (a->top[k].end_ns - a->top[k].start_ns <
			    a->top[slot].end_ns - a->top[slot].start_ns)
				slot = k;
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
}

/* End flow @i: by QUIT (@expired 0) or by expiry/eviction. */
static void flow_end(struct xft_agg *a, uint32_t i, int expired)
{
	struct flow *f = &a->flows[i];
	if (!expired)
		top_consider(a, f, i, f->last_ns);
	for (uint32_t k = 0; k < f->nkeys; k++)
		xflow_flowtab_remove(&a->keys, f->keys[k].kind,
				     key_ptr(f->keys[k].domain, f->keys[k].id));
	f->nkeys = 0;
	f->live = 0;
	act_unlink(a, i);
	f->next = a->free_head;
	a->free_head = i;
	a->st.flows_live--;
}

/* Track a flow from record @r: a whole one when @r is its START, else a
 * partial one, whose beginning was not seen (evicted to make room, lost
 * with its handoff, or its record dropped). */
static uint32_t flow_start(struct xft_agg *a, const struct xflow_record *r, uint64_t t)
{
	uint16_t domain = r->domain_id, kind = r->flow_kind;
	uint64_t id = r->flow_id;
	if (a->free_head == NIL) {
		/* Full: the flow idle the longest makes room. */
		a->st.flows_evicted++;
		flow_end(a, a->act_head, 1);
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
	f->partial = !(r->flags & XFLOW_REC_START);
	act_append(a, i);
	flow_add_key(a, i, domain, kind, id);
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

static struct xft_hop *hop_get(struct xft_agg *a, const struct xft_hop_key *k,
				uint32_t from_site, uint32_t to_site)
{
	for (uint32_t s = hop_hash(k) & a->hop_mask;; s = (s + 1) & a->hop_mask) {
		uint32_t v = a->hop_slots[s];
		if (v == 0) {
			if (a->nhops == a->lim.max_hops)
				return NULL;
			struct xft_hop *h = &a->hops[a->nhops];
			memset(h, 0, offsetof(struct xft_hop, hist));
			xflow_hist_init(&h->hist);
			h->key = *k;
			h->from_site = from_site;
			h->to_site = to_site;
			a->hop_slots[s] = ++a->nhops;
			return h;
		}
		struct xft_hop *h = &a->hops[v - 1];
		if (!memcmp(&h->key, k, sizeof(*k)))
			return h;
	}
}

static void flow_point(struct xft_agg *a, uint32_t i, uint16_t domain, uint32_t site, uint64_t t)
{
	struct flow *f = &a->flows[i];
	uint32_t g = a->group ? a->group(a->opaque, domain, site) : site;
	if (t > f->last_ns)
		f->last_ns = t;
	act_unlink(a, i);
	act_append(a, i);
	if (f->has_last && f->last.domain == domain && f->last.group == g)
		return;
	struct xft_point p = { .domain = domain, .site = site, .group = g, .t_ns = t };
	if (f->has_last) {
		if (t < f->last.t_ns) {
			a->st.negative_hops++;
		} else {
			struct xft_hop_key k;
			memset(&k, 0, sizeof(k));
			k.from_domain = f->last.domain;
			k.from_group = f->last.group;
			k.to_domain = domain;
			k.to_group = g;
			struct xft_hop *h = hop_get(a, &k, f->last.site, site);
			if (h) {
				uint64_t d = t - f->last.t_ns;
				h->count++;
				h->total_ns += d;
				xflow_hist_record(&h->hist, d);
			} else {
				a->st.hops_dropped++;
			}
		}
	}
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

static void handoff_expire(struct xft_agg *a, uint64_t now)
{
	while (a->ho_count) {
		struct handoff *h = &a->handoffs[a->ho_head];
		if (h->t + a->lim.expire_ns > now)
			break;
		a->st.handoffs_lost++;
		a->ho_head = (a->ho_head + 1) % a->lim.max_handoffs;
		a->ho_count--;
	}
}

static void handoff_send(struct xft_agg *a, uint32_t fi, const struct xflow_record *r,
			 uint64_t t)
{
	if (a->lim.max_handoffs == 0)
		return;
	if (a->ho_count == a->lim.max_handoffs) {
		a->st.handoffs_lost++;
		a->ho_head = (a->ho_head + 1) % a->lim.max_handoffs;
		a->ho_count--;
	}
	struct handoff *h = &a->handoffs[(a->ho_head + a->ho_count++) % a->lim.max_handoffs];
	unsigned bits = r->flow_kind < 16 ? a->lim.carried_bits[r->flow_kind] : 0;
	h->kind = r->flow_kind;
	h->from_domain = r->domain_id;
	h->keyed = !!(r->flags & XFLOW_REC_KEYED);
	h->id_or_key = h->keyed ? r->data[0] : r->flow_id;
	h->mask = bits && bits < 64 ? (UINT64_C(1) << bits) - 1 : UINT64_MAX;
	h->flow = fi;
	h->flow_start = a->flows[fi].start_ns;
	h->t = t;
	a->st.handoffs_sent++;
}

/* The oldest handoff waiting for this receiving record, taken off the
 * queue; NIL if none.  Keyed records match on the key, others on the id in
 * the carried bits; either way only from another domain. */
static uint32_t handoff_receive(struct xft_agg *a, const struct xflow_record *r)
{
	int keyed = !!(r->flags & XFLOW_REC_KEYED);
	for (uint32_t n = 0; n < a->ho_count; n++) {
		uint32_t idx = (a->ho_head + n) % a->lim.max_handoffs;
		struct handoff *h = &a->handoffs[idx];
		if (h->kind != r->flow_kind || h->from_domain == r->domain_id || h->keyed != keyed)
			continue;
		uint64_t want = keyed ? r->data[0] : r->flow_id;
		if ((h->id_or_key & h->mask) != (want & h->mask))
			continue;
		uint32_t fi = h->flow;
		int alive = a->flows[fi].live && a->flows[fi].start_ns == h->flow_start;
		/* Close the gap: later entries move up one place. */
		for (uint32_t m = n; m + 1 < a->ho_count; m++)
			a->handoffs[(a->ho_head + m) % a->lim.max_handoffs] =
				a->handoffs[(a->ho_head + m + 1) % a->lim.max_handoffs];
		a->ho_count--;
		if (!alive) {
			a->st.handoffs_lost++;
			return NIL;
		}
		a->st.handoffs_matched++;
		return fi;
	}
	return NIL;
}

/* --- applying one record --------------------------------------------------- */

static void apply(struct xft_agg *a, const struct xflow_record *r, uint64_t t)
{
	a->st.released++;
	if (t < a->last_released)
		a->st.late++;
	else
		a->last_released = t;
	if (r->flow_id == 0) {
		a->st.no_flow++;
		return;
	}
	uint16_t dom = r->domain_id, kind = r->flow_kind;
	int keyed_in = (r->flags & XFLOW_REC_KEYED) && r->data[1] == 1;
	uint32_t fi = flow_lookup(a, dom, kind, r->flow_id);
	int arrived = 0; /* this record continues a flow from another domain */

	if ((r->flags & XFLOW_REC_START) && fi != NIL && !keyed_in) {
		/* A new start under a live key: the old flow lost its quit. */
		a->st.flows_expired++;
		flow_end(a, fi, 1);
		fi = NIL;
	}
	if (fi == NIL || keyed_in) {
		/* A plain start begins a flow here; anything else unknown here
		 * may be a flow that left another domain through a ring. */
		uint32_t from = NIL;
		if (!(r->flags & XFLOW_REC_START) || keyed_in)
			from = handoff_receive(a, r);
		if (from != NIL) {
			fi = from;
			flow_add_key(a, fi, dom, kind, r->flow_id);
			arrived = 1;
		} else {
			if (fi != NIL) { /* a recycled local id with no sender */
				a->st.flows_expired++;
				flow_end(a, fi, 1);
			}
			fi = flow_start(a, r, t);
		}
	}
	flow_point(a, fi, dom, r->site_id, t);
	if ((r->flags & XFLOW_REC_CROSS_DOMAIN) && !arrived && !keyed_in)
		handoff_send(a, fi, r, t);
	if (r->flags & XFLOW_REC_QUIT) {
		a->st.flows_finished += !a->flows[fi].partial;
		flow_end(a, fi, 0);
	}
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
	handoff_expire(a, now);
}

/* --- public ----------------------------------------------------------------- */

void xft_agg_feed(struct xft_agg *a, const struct xflow_record *r, uint64_t t)
{
	a->st.records++;
	if (t > a->newest)
		a->newest = t;
	if (a->npending == a->lim.max_pending) {
		struct pending p;
		heap_pop(a, &p);
		a->st.window_full++;
		apply(a, &p.r, p.t);
	}
	heap_push(a, r, t);
	/* Release what is older than the window as we go, so a steady feed
	 * keeps the window at its time bound, not its count bound. */
	while (a->npending && a->heap[0].t + a->lim.window_ns <= a->newest) {
		struct pending p;
		heap_pop(a, &p);
		apply(a, &p.r, p.t);
	}
}

void xft_agg_tick(struct xft_agg *a, uint64_t now)
{
	while (a->npending && a->heap[0].t + a->lim.window_ns <= now) {
		struct pending p;
		heap_pop(a, &p);
		apply(a, &p.r, p.t);
	}
	/* Expire against the oldest time not yet released, so records still
	 * in the window cannot be overtaken by their flow's expiry. */
	uint64_t horizon = a->npending ? a->heap[0].t : now;
	if (horizon > now)
		horizon = now;
	expire(a, horizon);
}

void xft_agg_drain(struct xft_agg *a)
{
	while (a->npending) {
		struct pending p;
		heap_pop(a, &p);
		apply(a, &p.r, p.t);
	}
}

const struct xft_agg_stats *xft_agg_stats(const struct xft_agg *a)
{
	return &a->st;
}

const struct xft_hop *xft_agg_hops(const struct xft_agg *a, size_t *n)
{
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
	memcpy(a->sorted, a->top, a->ntop * sizeof(*a->top));
	qsort(a->sorted, a->ntop, sizeof(*a->sorted), summary_slower);
	*out = a->sorted;
	return a->ntop < max ? a->ntop : max;
}

void xft_agg_reset(struct xft_agg *a)
{
	uint64_t mem = a->st.memory_bytes;
	memset(&a->st, 0, sizeof(a->st));
	a->st.memory_bytes = mem;
	a->npending = 0;
	a->seq = a->newest = a->last_released = 0;
	xflow_flowtab_clear(&a->keys);
	for (uint32_t i = 0; i < a->lim.max_flows; i++) {
		a->flows[i].live = 0;
		a->flows[i].next = i + 1 < a->lim.max_flows ? i + 1 : NIL;
	}
	a->free_head = 0;
	a->act_head = a->act_tail = NIL;
	a->nhops = 0;
	memset(a->hop_slots, 0, ((size_t)a->hop_mask + 1) * sizeof(*a->hop_slots));
	a->ho_head = a->ho_count = 0;
	a->ntop = 0;
}

static void *take(size_t n, size_t size, uint64_t *total)
{
	*total += (uint64_t)n * size;
	return calloc(n ? n : 1, size);
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
	a->heap = take(l->max_pending, sizeof(*a->heap), &mem);
	a->flows = take(l->max_flows, sizeof(*a->flows), &mem);
	a->points = take((size_t)l->max_flows * l->max_path, sizeof(*a->points), &mem);
	a->hops = take(l->max_hops, sizeof(*a->hops), &mem);
	a->hop_slots = take(hs, sizeof(*a->hop_slots), &mem);
	a->handoffs = take(l->max_handoffs, sizeof(*a->handoffs), &mem);
	a->top = take(l->top_k, sizeof(*a->top), &mem);
	a->sorted = take(l->top_k, sizeof(*a->sorted), &mem);
	a->top_points = take((size_t)l->top_k * l->max_path, sizeof(*a->top_points), &mem);
	int rc = xflow_flowtab_init(&a->keys, (size_t)l->max_flows * FLOW_MAX_KEYS);
	mem += xflow_flowtab_bytes(&a->keys);
	if (rc || !a->heap || !a->flows || !a->points || !a->hops || !a->hop_slots ||
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

void xft_agg_free(struct xft_agg *a)
{
	if (!a)
		return;
	free(a->heap);
	free(a->flows);
	free(a->points);
	free(a->hops);
	free(a->hop_slots);
	free(a->handoffs);
	free(a->top);
	free(a->sorted);
	free(a->top_points);
	xflow_flowtab_fini(&a->keys);
	free(a);
}
