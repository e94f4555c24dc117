/*
 * The keyed join table: chained hash on (kind, key) over a fixed pool of
 * entries, plus a list in arrival order for expiry.  See tui/keyed_join.h
 * for the contract.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tui/keyed_join.h"

#define NIL UINT32_MAX
#define NDOMAINS 65536

enum side { KJ_OUT, KJ_IN, KJ_TOMB };

struct xft_kj_entry {
	uint64_t key;
	uint64_t t;      /* when the side was applied: the grace runs from here */
	uint64_t seq;    /* arrival order: the oldest waiting side matches first */
	uint16_t kind;
	uint8_t side;
	uint32_t bound_us; /* its domain's clock bound when it was applied */
	uint32_t chain;  /* next in the bucket, or next free */
	uint32_t prev, next; /* arrival list */
	struct xft_kj_side s;
};

static uint32_t bucket_of(const struct xft_kj *j, uint16_t kind, uint64_t key)
{
	uint64_t x = (key ^ ((uint64_t)kind << 48 | kind)) * UINT64_C(0x9E3779B97F4A7C15);
	return (uint32_t)(x >> 32) & (j->nbuckets - 1);
}

static void age_unlink(struct xft_kj *j, uint32_t i)
{
	struct xft_kj_entry *e = &j->e[i];
	if (e->prev != NIL)
		j->e[e->prev].next = e->next;
	else
		j->age_head = e->next;
	if (e->next != NIL)
		j->e[e->next].prev = e->prev;
	else
		j->age_tail = e->prev;
}

static void age_append(struct xft_kj *j, uint32_t i)
{
	struct xft_kj_entry *e = &j->e[i];
	e->prev = j->age_tail;
	e->next = NIL;
	if (j->age_tail != NIL)
		j->e[j->age_tail].next = i;
	else
		j->age_head = i;
	j->age_tail = i;
}

/* Take entry @i off its chain, the arrival list and its domain's share. */
static void entry_remove(struct xft_kj *j, uint32_t i)
{
	struct xft_kj_entry *e = &j->e[i];
	uint32_t *link = &j->bucket[bucket_of(j, e->kind, e->key)];
	while (*link != i + 1)
		link = &j->e[*link - 1].chain;
	*link = e->chain;
	age_unlink(j, i);
	if (e->side != KJ_TOMB)
		j->per_domain[e->s.domain]--;
	e->chain = j->free_head;
	j->free_head = i;
}

/* A slot for a new side of @domain, linked on its chain and at the end of
 * the arrival list; NIL (counted by the caller) when there is none. */
static uint32_t entry_add(struct xft_kj *j, uint16_t kind, uint64_t key, enum side side,
			  const struct xft_kj_side *s, uint64_t now, int *err)
{
	if (j->per_domain[s->domain] >= j->per_domain_max) {
		*err = -EDQUOT;
		return NIL;
	}
	if (j->free_head == NIL) {
		*err = -ENOSPC;
		return NIL;
	}
	uint32_t i = j->free_head;
	struct xft_kj_entry *e = &j->e[i];
	j->free_head = e->chain;
	e->key = key;
	e->kind = kind;
	e->side = (uint8_t)side;
	e->t = now;
	e->seq = j->seq++;
	e->s = *s;
	e->bound_us = j->bound_us[s->domain];
	uint32_t *head = &j->bucket[bucket_of(j, kind, key)];
	e->chain = *head;
	*head = i + 1;
	age_append(j, i);
	j->per_domain[s->domain]++;
	return i;
}

/* The next entry of (@kind, @key) on the bucket chain from *@i, or NIL;
 * *@i moves past it, so the caller may remove the entry it gets. */
static uint32_t next_of_key(const struct xft_kj *j, uint32_t *i, uint16_t kind, uint64_t key)
{
	while (*i) {
		uint32_t at = *i - 1;
		*i = j->e[at].chain;
		if (j->e[at].kind == kind && j->e[at].key == key)
			return at;
	}
	return NIL;
}

static int in_accepts(const struct xft_kj_side *in, uint16_t out_domain)
{
	return out_domain != in->domain && (in->sender == 0 || in->sender == (uint32_t)out_domain + 1);
}

/* Did side @e certainly come before a side of @dom at @t?  Only when both
 * clocks' bounds are known and @e is older by more than the two: @e's the
 * larger of its domain's now and when it was applied (a record keeps the
 * error of the placement it got), the new side's its domain's now. */
static int certainly_before(const struct xft_kj *j, const struct xft_kj_entry *e, uint16_t dom, uint64_t t)
{
	uint32_t b1 = j->bound_us[e->s.domain], b2 = j->bound_us[dom];
	if (e->bound_us > b1)
		b1 = e->bound_us;
	if (b1 == XFT_KJ_BOUND_UNKNOWN || b2 == XFT_KJ_BOUND_UNKNOWN)
		return 0;
	return e->t + ((uint64_t)b1 + b2) * 1000 < t;
}

/* Entry @i will never join: take it off, counted as its side's loss. */
static void entry_lost(struct xft_kj *j, uint32_t i)
{
	struct xft_kj_side s = j->e[i].s;
	int in = j->e[i].side == KJ_IN;
	entry_remove(j, i);
	if (in)
		j->st.unmatched_in++;
	else
		j->st.unmatched_out++;
	j->expired(j->opaque, &s, in);
}

int xft_kj_out(struct xft_kj *j, uint16_t kind, uint64_t key, const struct xft_kj_side *out,
	       uint64_t now, struct xft_kj_side *peer)
{
	uint32_t in = NIL;
	uint32_t i = j->bucket[bucket_of(j, kind, key)];
	for (uint32_t at; (at = next_of_key(j, &i, kind, key)) != NIL;) {
		struct xft_kj_entry *e = &j->e[at];
		if (e->side == KJ_TOMB)
			continue; /* it holds back sender-less INs only */
		if (!j->alive(j->opaque, &e->s)) {
			/* Its flow is gone: it can never join. */
			if (e->side == KJ_OUT)
				j->st.unmatched_out++;
			else
				j->st.unmatched_in++;
			entry_remove(j, at);
			continue;
		}
		if (e->side != KJ_IN || !in_accepts(&e->s, out->domain))
			continue;
		if (certainly_before(j, e, out->domain, now)) {
			/* Taken before this request was sent: its own OUT
			 * was lost. */
			entry_lost(j, at);
			continue;
		}
		if (in == NIL || e->seq < j->e[in].seq)
			in = at;
	}
	if (in != NIL) {
		*peer = j->e[in].s;
		entry_remove(j, in);
		j->st.joined++;
		return 1;
	}
	int err = 0;
	if (entry_add(j, kind, key, KJ_OUT, out, now, &err) == NIL) {
		if (err == -EDQUOT)
			j->st.refused++;
		else
			j->st.full++;
		return err;
	}
	return 0;
}

/* An IN naming no sender found OUTs of @key from two domains: it cannot
 * tell which is true, so none joins, and the key is held back from
 * sender-less INs for the grace, a tombstone in the first one's slot. */
static int in_ambiguous(struct xft_kj *j, uint16_t kind, uint64_t key, const struct xft_kj_side *in,
			uint64_t now)
{
	uint32_t tomb = NIL;
	uint32_t i = j->bucket[bucket_of(j, kind, key)];
	for (uint32_t at; (at = next_of_key(j, &i, kind, key)) != NIL;) {
		struct xft_kj_entry *e = &j->e[at];
		if (e->side != KJ_OUT || !in_accepts(in, e->s.domain))
			continue;
		j->st.conflicts++;
		struct xft_kj_side lost = e->s;
		if (tomb == NIL) {
			tomb = at;
			j->per_domain[e->s.domain]--;
			e->side = KJ_TOMB;
			e->t = now;
			age_unlink(j, at);
			age_append(j, at);
		} else {
			entry_remove(j, at);
		}
		j->expired(j->opaque, &lost, 0);
	}
	j->st.unmatched_in++;
	return -EEXIST;
}

int xft_kj_in_take(struct xft_kj *j, uint16_t kind, uint64_t key, const struct xft_kj_side *in,
		   uint64_t now, struct xft_kj_side *peer)
{
	/* First pass: the OUTs it may join, their domains, and the last of
	 * them that certainly came before it. */
	uint32_t n = 0, last_before = NIL;
	int32_t dom = -1;
	int two_domains = 0;
	uint32_t i = j->bucket[bucket_of(j, kind, key)];
	for (uint32_t at; (at = next_of_key(j, &i, kind, key)) != NIL;) {
		struct xft_kj_entry *e = &j->e[at];
		if (e->side == KJ_TOMB) {
			if (in->sender == 0) {
				j->st.unmatched_in++;
				return -EEXIST;
			}
			continue;
		}
		if (e->side != KJ_OUT || !in_accepts(in, e->s.domain))
			continue;
		if (!j->alive(j->opaque, &e->s)) {
			j->st.unmatched_out++;
			entry_remove(j, at);
			continue;
		}
		n++;
		if (dom >= 0 && dom != e->s.domain)
			two_domains = 1;
		dom = e->s.domain;
		if (certainly_before(j, e, in->domain, now) && (last_before == NIL || e->seq > j->e[last_before].seq))
			last_before = at;
	}
	if (n == 0)
		return 0;
	if (two_domains)
		return in_ambiguous(j, kind, key, in, now);
	/* One sender: its OUTs before the last one that certainly came
	 * before this IN lost their INs; the oldest left is this IN's. */
	uint64_t floor = last_before == NIL ? 0 : j->e[last_before].seq;
	uint32_t best = NIL;
	i = j->bucket[bucket_of(j, kind, key)];
	for (uint32_t at; (at = next_of_key(j, &i, kind, key)) != NIL;) {
		struct xft_kj_entry *e = &j->e[at];
		if (e->side != KJ_OUT || !in_accepts(in, e->s.domain))
			continue;
		if (e->seq < floor) {
			entry_lost(j, at);
			continue;
		}
		if (best == NIL || e->seq < j->e[best].seq)
			best = at;
	}
	*peer = j->e[best].s;
	entry_remove(j, best);
	j->st.joined++;
	return 1;
}

int xft_kj_in_wait(struct xft_kj *j, uint16_t kind, uint64_t key, const struct xft_kj_side *in,
		   uint64_t now)
{
	int err = 0;
	if (entry_add(j, kind, key, KJ_IN, in, now, &err) == NIL) {
		j->st.unmatched_in++;
		return err;
	}
	return 0;
}

void xft_kj_expire(struct xft_kj *j, uint64_t now)
{
	/* The arrival list is in application order, which is time order but
	 * for late records: one of those may wait behind a younger entry for
	 * at most the reorder window. */
	while (j->age_head != NIL) {
		uint32_t i = j->age_head;
		struct xft_kj_entry *e = &j->e[i];
		if (now < j->grace_ns || e->t > now - j->grace_ns)
			break;
		enum side side = e->side;
		struct xft_kj_side s = e->s;
		entry_remove(j, i);
		if (side == KJ_OUT) {
			j->st.unmatched_out++;
			j->expired(j->opaque, &s, 0);
		} else if (side == KJ_IN) {
			j->st.unmatched_in++;
			j->expired(j->opaque, &s, 1);
		}
	}
}

void xft_kj_reset(struct xft_kj *j)
{
	memset(j->bucket, 0, (size_t)j->nbuckets * sizeof(*j->bucket));
	memset(j->per_domain, 0, NDOMAINS * sizeof(*j->per_domain));
	for (uint32_t i = 0; i < j->cap; i++)
		j->e[i].chain = i + 1 < j->cap ? i + 1 : NIL;
	j->free_head = j->cap ? 0 : NIL;
	j->age_head = j->age_tail = NIL;
	j->seq = 0;
	memset(&j->st, 0, sizeof(j->st));
}

int xft_kj_init(struct xft_kj *j, uint32_t capacity, uint64_t grace_ns, xft_kj_alive_fn alive,
		xft_kj_expired_fn expired, void *opaque)
{
	memset(j, 0, sizeof(*j));
	uint32_t nb = 1;
	while (nb < capacity && nb < (1u << 31))
		nb <<= 1;
	j->cap = capacity;
	j->nbuckets = nb;
	/* Half, but at least one, so that a tiny table still joins. */
	j->per_domain_max = capacity / 2 ? capacity / 2 : 1;
	j->grace_ns = grace_ns;
	j->alive = alive;
	j->expired = expired;
	j->opaque = opaque;
	j->e = calloc(capacity ? capacity : 1, sizeof(*j->e));
	j->bucket = calloc(nb, sizeof(*j->bucket));
	j->per_domain = calloc(NDOMAINS, sizeof(*j->per_domain));
	j->bound_us = malloc(NDOMAINS * sizeof(*j->bound_us));
	if (!j->e || !j->bucket || !j->per_domain || !j->bound_us) {
		xft_kj_fini(j);
		return -ENOMEM;
	}
	for (uint32_t d = 0; d < NDOMAINS; d++)
		j->bound_us[d] = XFT_KJ_BOUND_UNKNOWN;
	xft_kj_reset(j);
	return 0;
}

void xft_kj_set_bound(struct xft_kj *j, uint16_t domain, uint64_t bound_ns)
{
	if (bound_ns == UINT64_MAX) {
		j->bound_us[domain] = XFT_KJ_BOUND_UNKNOWN;
		return;
	}
	/* Whole microseconds, rounded up: a bound is never shrunk. */
	uint64_t us = bound_ns / 1000 + (bound_ns % 1000 != 0);
	j->bound_us[domain] = us < XFT_KJ_BOUND_UNKNOWN ? (uint32_t)us : XFT_KJ_BOUND_UNKNOWN - 1;
}

uint64_t xft_kj_bytes(const struct xft_kj *j)
{
	return (uint64_t)(j->cap ? j->cap : 1) * sizeof(*j->e) +
	       (uint64_t)j->nbuckets * sizeof(*j->bucket) + NDOMAINS * sizeof(*j->per_domain) +
	       NDOMAINS * sizeof(*j->bound_us);
}

void xft_kj_fini(struct xft_kj *j)
{
	free(j->e);
	free(j->bucket);
	free(j->per_domain);
	free(j->bound_us);
	j->bound_us = NULL;
	j->e = NULL;
	j->bucket = NULL;
	j->per_domain = NULL;
}
