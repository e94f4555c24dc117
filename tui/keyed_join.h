/*
 * tui/keyed_join.h — the table that joins the two sides of a keyed
 * cross-domain handoff (XFLOW_REC_KEYED records, see xflow/record.h).
 *
 * A ring request is seen twice: by the sending domain (an OUT side) and by
 * the receiving domain (an IN side, with a fresh local flow id).  Both carry
 * the same 64-bit key, packed from the request's fields.  The table holds
 * the sides that wait for their other half, keyed by (flow kind, key), so a
 * side finds its peer in one bucket walk whichever arrives first.
 *
 * Trust: a side's domain is the record's domain_id, which the collector
 * vouches for; its key is not (a guest writes it).  Hence:
 *   - an IN matches an OUT of another domain only, and only of the domain
 *     the IN names as sender when it names one;
 *   - two OUTs of the same (kind, key) from different domains outstanding at
 *     once are a conflict: both are counted and dropped, and a tombstone
 *     keeps the key from joining anything until the grace has passed, so a
 *     lying guest cannot splice its flow into another domain's;
 *   - an OUT replaces its own domain's unmatched OUT of the same key (ring
 *     slots are reused; the old one is counted unmatched);
 *   - no domain may hold more than half of the slots, so a guest flooding
 *     keys cannot starve the others.
 *
 * Each OUT offered ends up counted exactly once: joined, unmatched_out
 * (expired, replaced, or its flow gone), conflicts, refused (its domain's
 * half was used up) or full (no slot left).  Each IN ends up joined or
 * unmatched_in (expired, blocked by a tombstone, no room, or its flow gone).
 *
 * Memory is fixed at init by the capacity; what does not fit is counted.
 * The table knows nothing of flows: the model tells it, through the alive
 * callback, whether the flow a side points to still exists, and hears of
 * INs that expire through the expired callback.
 */
#ifndef XFLOW_TUI_KEYED_JOIN_H
#define XFLOW_TUI_KEYED_JOIN_H

#include <stdint.h>

#include "tui/aggregate.h"

/* One side as the model left it: where its flow was when the record was
 * applied. */
struct xft_kj_side {
	uint16_t domain;     /* the record's domain_id */
	uint32_t sender;     /* IN only: the sending domain + 1, 0 unknown */
	uint32_t flow;       /* the model's flow slot */
	uint64_t flow_gen;   /* the slot's generation, to notice reuse */
	struct xft_point point;
};

struct xft_kj_stats {
	uint64_t joined, unmatched_out, unmatched_in, conflicts, refused, full;
};

/* Does the flow @s points to still exist?  Called while matching, so that a
 * side whose flow was evicted or expired never joins. */
typedef int (*xft_kj_alive_fn)(void *opaque, const struct xft_kj_side *s);
/* An IN waited the whole grace for its OUT: already counted unmatched_in;
 * the model decides what becomes of its flow (alive or not). */
typedef void (*xft_kj_expired_fn)(void *opaque, const struct xft_kj_side *s);

struct xft_kj_entry;

struct xft_kj {
	struct xft_kj_entry *e;
	uint32_t *bucket;         /* entry index + 1, 0 = empty chain */
	uint32_t *per_domain;     /* entries each domain holds (OUT and IN) */
	uint32_t cap, nbuckets, per_domain_max;
	uint32_t free_head, age_head, age_tail;
	uint64_t grace_ns, seq;
	xft_kj_alive_fn alive;
	xft_kj_expired_fn expired;
	void *opaque;
	struct xft_kj_stats st;
};

/* Take all memory for @capacity waiting sides.  0 or -ENOMEM. */
int xft_kj_init(struct xft_kj *j, uint32_t capacity, uint64_t grace_ns, xft_kj_alive_fn alive,
		xft_kj_expired_fn expired, void *opaque);
void xft_kj_fini(struct xft_kj *j);
/* Bytes init took, for the model's memory figure. */
uint64_t xft_kj_bytes(const struct xft_kj *j);
/* Forget every side and every count. */
void xft_kj_reset(struct xft_kj *j);

/* An OUT side at time @now.  Returns 1 when an IN was waiting for it (*peer
 * is that IN, taken off the table, counted joined), 0 when it now waits,
 * or a negative errno when it was refused and counted: -EEXIST a conflict,
 * -EDQUOT its domain's half is used, -ENOSPC the table is full. */
int xft_kj_out(struct xft_kj *j, uint16_t kind, uint64_t key, const struct xft_kj_side *out,
	       uint64_t now, struct xft_kj_side *peer);

/* The OUT an IN side joins, taken off the table and counted joined: 1 and
 * *peer set, 0 if there is none yet, -EEXIST if the key is a tombstone (the
 * IN is counted unmatched_in: it will never join). */
int xft_kj_in_take(struct xft_kj *j, uint16_t kind, uint64_t key, const struct xft_kj_side *in,
		   struct xft_kj_side *peer);

/* Let an IN that found no OUT wait for one.  0, or -EDQUOT / -ENOSPC when
 * there is no room for it (counted unmatched_in: it will never join). */
int xft_kj_in_wait(struct xft_kj *j, uint16_t kind, uint64_t key, const struct xft_kj_side *in,
		   uint64_t now);

/* Drop what has waited longer than the grace as of @now: OUTs and INs are
 * counted unmatched, INs reported through the expired callback. */
void xft_kj_expire(struct xft_kj *j, uint64_t now);

#endif
