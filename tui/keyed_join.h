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
 * Pairing: a ring slot is used again only once the receiver took the
 * request in it, so one sender's sides of one key alternate in true time,
 * OUT IN OUT IN...  The sides are applied in the order of their times,
 * which across domains are only as good as the placement of each domain's
 * clock on the monitor's: the next OUT of a key may be applied before the
 * IN of the last one.  So one domain's OUTs of a key wait in order, and
 * an IN takes the oldest.  Time settles what order cannot: with each
 * domain's clock bound known (xft_kj_set_bound), a side older than the
 * other side by more than the two bounds (a waiting side's being the
 * larger of its domain's now and when it was applied) certainly came
 * first:
 *   - an IN passes over the OUTs before the last one that certainly came
 *     before it (their INs were lost; counted unmatched);
 *   - an OUT passes over the INs that certainly came before it (their
 *     OUTs were lost).
 * With a bound unknown, nothing is decided by time: sides pair in order,
 * and what lost its peer waits out the grace.
 *
 * Trust: a side's domain is the record's domain_id, which the collector
 * vouches for; its key is not (a guest writes it).  Hence:
 *   - an IN matches an OUT of another domain only, and only of the domain
 *     the IN names as sender when it names one: other domains' OUTs of the
 *     same key (two guests' rings use the same slot numbers) are not its;
 *   - an IN that names no sender, finding OUTs of the key from two domains,
 *     cannot tell which is true: those OUTs are conflicts, the IN is
 *     unmatched, and a tombstone keeps sender-less INs of the key from
 *     joining until the grace has passed, so a lying guest cannot splice
 *     its flow into another domain's;
 *   - no domain may hold more than half of the slots, so a guest flooding
 *     keys cannot starve the others.
 *
 * Each OUT offered ends up counted exactly once: joined, unmatched_out
 * (expired, passed over, or its flow gone), conflicts, refused (its
 * domain's half was used up) or full (no slot left).  Each IN ends up
 * joined or unmatched_in (expired, passed over, blocked by a tombstone,
 * ambiguous, no room, or its flow gone).
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
/* A side that waited will never join (@in: an IN, else an OUT): it
 * waited the whole grace, was passed over, or (an OUT) was in conflict.
 * Already counted; the model decides what becomes of its flow (alive or
 * not), which may have been kept for the join. */
typedef void (*xft_kj_expired_fn)(void *opaque, const struct xft_kj_side *s, int in);

struct xft_kj_entry;

struct xft_kj {
	struct xft_kj_entry *e;
	uint32_t *bucket;         /* entry index + 1, 0 = empty chain */
	uint32_t *per_domain;     /* entries each domain holds (OUT and IN) */
	uint32_t *bound_us;       /* each domain's clock bound, XFT_KJ_BOUND_UNKNOWN */
	uint32_t cap, nbuckets, per_domain_max;
	uint32_t free_head, age_head, age_tail;
	uint64_t grace_ns, seq;
	xft_kj_alive_fn alive;
	xft_kj_expired_fn expired;
	void *opaque;
	struct xft_kj_stats st;
};

/* A domain's clock bound in microseconds when unknown (the default). */
#define XFT_KJ_BOUND_UNKNOWN UINT32_MAX

/* Take all memory for @capacity waiting sides.  0 or -ENOMEM. */
int xft_kj_init(struct xft_kj *j, uint32_t capacity, uint64_t grace_ns, xft_kj_alive_fn alive,
		xft_kj_expired_fn expired, void *opaque);
void xft_kj_fini(struct xft_kj *j);
/* Bytes init took, for the model's memory figure. */
uint64_t xft_kj_bytes(const struct xft_kj *j);
/* Forget every side and every count (not the bounds). */
void xft_kj_reset(struct xft_kj *j);

/* How far @domain's side times may be from the truth, at most, in ns
 * (0: on the monitor's own clock; UINT64_MAX: unknown). */
void xft_kj_set_bound(struct xft_kj *j, uint16_t domain, uint64_t bound_ns);

/* An OUT side at time @now.  Returns 1 when an IN was waiting for it (*peer
 * is that IN, taken off the table, counted joined), 0 when it now waits,
 * or a negative errno when it was refused and counted: -EDQUOT its
 * domain's half is used, -ENOSPC the table is full. */
int xft_kj_out(struct xft_kj *j, uint16_t kind, uint64_t key, const struct xft_kj_side *out,
	       uint64_t now, struct xft_kj_side *peer);

/* The OUT an IN side at time @now joins, taken off the table and counted
 * joined: 1 and *peer set, 0 if there is none yet, -EEXIST if it never
 * can (a tombstone, or OUTs of two domains for an IN naming no sender;
 * the IN is counted unmatched_in). */
int xft_kj_in_take(struct xft_kj *j, uint16_t kind, uint64_t key, const struct xft_kj_side *in,
		   uint64_t now, struct xft_kj_side *peer);

/* Let an IN that found no OUT wait for one.  0, or -EDQUOT / -ENOSPC when
 * there is no room for it (counted unmatched_in: it will never join). */
int xft_kj_in_wait(struct xft_kj *j, uint16_t kind, uint64_t key, const struct xft_kj_side *in,
		   uint64_t now);

/* Drop what has waited longer than the grace as of @now: OUTs and INs are
 * counted unmatched, INs reported through the expired callback. */
void xft_kj_expire(struct xft_kj *j, uint64_t now);

#endif
