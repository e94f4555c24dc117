/*
 * tui/aggregate.h — the live model behind xflowtop: records in, flows, hops,
 * latency histograms and the slowest flows out.
 *
 * Input is decoded records (xflow/record.h) from any number of sources, each
 * with its timestamps already converted to nanoseconds on one time line.
 * Records pass through a reorder window (tui/reorder.h: a queue per
 * thread, merged by time): a record is released once it is `window_ns`
 * older than the newest record seen, or early when the window holds
 * `max_pending` records (counted).  Records of threads whose producer
 * numbers them (XFLOW_REC_SEQ_COUNTS_LOST: a lane is written by one thread,
 * in its order) leave sooner: once every thread seen within the window has
 * passed them (the watermark; a thread's last record stays for its next),
 * and they are older than the newest record by twice the most any record
 * was seen to arrive behind it in the last second or two, and 1 ms more,
 * which leaves room for a thread not seen yet or back from quiet.  So the
 * window holds milliseconds of records at any rate, not 100 ms of them, and
 * overflows only when a thread holds the watermark back.  What may leave is
 * looked for every 16 records fed or 0.1 ms of their time, at a tick, and
 * before a record finds the window full (so the sooner look lets none go
 * early): a look's cost, not a record's, at millions a second.  A record
 * older than the last one released is "late": counted, and used anyway, so
 * nothing is silently lost; a hop it would make negative is not recorded.
 *
 * A flow is the records of one flow id from its START record to its QUIT
 * record.  Records of an id the model does not track that are not a START
 * (the flow's beginning was evicted to make room, its handoff was lost, or
 * its START record dropped) begin a partial flow: tracked like the others
 * for its hops, counted apart, and never ranked among the slowest, whose
 * durations are whole flows'.  Ids are scoped by domain: (domain, kind, id).  An id
 * leaving a domain through a ring header (a CROSS_DOMAIN record in the
 * sending domain) waits in a handoff queue; the next record of the same
 * kind in another domain that is not a START, of an id unknown there that
 * matches (in the bits carried, xft_agg_limits.carried_bits), continues
 * the same flow under its new (domain, kind, id).  Where the sites' roles
 * are known (xft_agg_set_roles: the plan says which advice sends an id
 * and which receives one), only a record of a site that sends leaves a
 * handoff and only one of a site that receives takes one: a guest sending
 * records of guessed ids elsewhere cannot take another domain's flow, and
 * the receiving side's own CROSS_DOMAIN record is not taken for a sender's.
 * A site whose roles are not known (0) may do either, as before roles were.
 *
 * Keyed handoffs (XFLOW_REC_KEYED: data[0] = key, data[1] = side, data[2]
 * = the sender's domain + 1 on an IN, see xflow/record.h) are joined by
 * tui/keyed_join.h, whichever side is applied first.  An IN that finds its
 * OUT continues the sender's flow.  An IN applied first begins a local flow
 * that waits, never ranked, for up to join_grace_ns: when the OUT comes,
 * the local flow is merged into the sender's (paths merged by time, its
 * keys moved over, the hop OUT -> IN recorded with its real time
 * difference, or counted in negative_hops when that is negative) and
 * stops counting as a flow of its own.  A waiting flow whose QUIT comes
 * first is held, not ended, until the join or the grace; joined late, the
 * sender's flow ends there as a whole flow.  An IN that never finds its OUT
 * leaves its local flow partial.  Hops inside each side are those each
 * side recorded as it was applied.
 *
 * A record lost on the way (in a lane, the agent's ring, the transport, or
 * not decodable here) shows as a gap in its thread's record numbers, for
 * producers that count their lost records (xflow/record.h, "Losses";
 * tui/seq_gap.h follows them).  Whose record it was is not known: every
 * flow that had a point in the losing domain when the gap opened, or
 * came to it before the gap closed, is counted partial, never finished
 * (a flow that crossed a ring header into the domain is one of them; one
 * whose crossing record was the lost one loses its handoff, and with it
 * its end).  Another domain's flows are not: a guest's numbers are its
 * claim, and a guest that lies about them marks only flows it had.  That
 * is exact when no other flow overlaps the gap, and errs towards partial
 * when flows do.  A gap is placed in the window at the time of the
 * record before it, so that flows ending inside it are judged with it.
 * A loss after a thread's last record is one gap too, closed by its
 * agent's loss note (XFLOW_REC_LOSS_NOTE), which counts as one of the
 * records lost and in no_flow.
 *
 * A hop is two consecutive points of a flow, a point being (domain, group):
 * the group of a site comes from a callback (the function it is in, say) so
 * that several accesses inside one function make one point; consecutive
 * records at the same point extend it and make no hop.  Each hop has a
 * latency histogram and a total.
 *
 * Memory is fixed at creation by the limits below whatever the traffic;
 * what does not fit is counted, never allocated.  Not thread-safe: one
 * thread feeds and reads the model.
 */
#ifndef XFLOW_TUI_AGGREGATE_H
#define XFLOW_TUI_AGGREGATE_H

#include <stddef.h>
#include <stdint.h>

#include "xflow/histogram.h"
#include "xflow/record.h"
#include "tui/hop_split.h"

struct xft_agg_limits {
	uint64_t window_ns;     /* reorder window */
	uint32_t max_pending;   /* records the window may hold */
	uint32_t max_flows;     /* live flows */
	uint32_t max_hops;      /* distinct hops (each carries a histogram) */
	uint32_t max_path;      /* points kept per flow for its path */
	uint32_t top_k;         /* slowest finished flows kept */
	uint64_t expire_ns;     /* a flow idle this long is expired */
	uint32_t max_handoffs;  /* ids in flight between domains, and keyed
	                         * sides waiting for their other half */
	uint64_t join_grace_ns; /* how long a keyed side waits for its peer */
	uint32_t max_threads;   /* threads whose record numbers are followed
	                         * to see losses (tui/seq_gap.h; 0: 4096) */
	/* Bits of an id that survive a header transit per flow kind (0: all
	 * 48); indexed by kind, kinds >= 16 use 0. */
	uint8_t carried_bits[16];
};

/* Defaults: 100 ms window, 64K pending, 64K flows, 1024 hops, 32-point
 * paths, top 20, 10 s expiry, 4096 handoffs, 2 s join grace, full ids,
 * 4096 threads followed. */
void xft_agg_limits_default(struct xft_agg_limits *l);

/* The point a site belongs to (e.g. its function); identity if NULL.  The
 * same (domain, site) must always get the same answer: the model keeps
 * the answers it was given. */
typedef uint32_t (*xft_group_fn)(void *opaque, uint16_t domain, uint32_t site);

/* A site's roles: enum xflow_site_roles (xflow/collector.h), 0 when not
 * known.  Called for a record of a flow unknown in its domain and for a
 * CROSS_DOMAIN record (handoffs), and, with the scheduler join, for each
 * record a flow's path takes (XFLOW_SITE_NOTIFIES); it must not feed the
 * model. */
typedef unsigned (*xft_role_fn)(void *opaque, uint16_t domain, uint32_t site);

/* One point of a flow's path. */
struct xft_point {
	uint16_t domain;
	uint32_t site;   /* the first site of the point */
	uint32_t group;
	uint64_t t_ns;   /* when the flow reached it */
	uint32_t cpu_plus1; /* the CPU its record was written on + 1, 0: not
	                     * known (xflow/record.h) */
	uint32_t notify_plus1; /* its first record at a NOTIFIES site, in ns
	                        * after t_ns, + 1; 0: none (with the
	                        * scheduler join only) */
};

struct xft_hop_key {
	uint16_t from_domain, to_domain;
	uint32_t from_group, to_group;
};

struct xft_hop {
	struct xft_hop_key key;
	uint32_t from_site, to_site; /* representative sites, for names */
	uint64_t count;
	uint64_t total_ns;
	struct xflow_hist hist;
	struct xft_hop_split split; /* where the time went (tui/hop_split.h);
	                             * all zero while no trace is joined */
};

/* A finished flow kept among the slowest. */
struct xft_flow_summary {
	uint16_t kind;
	uint16_t origin_domain;
	uint64_t id;          /* in the origin domain */
	uint64_t start_ns, end_ns;
	uint32_t npoints;     /* points in path[] (the first max_path ones) */
	uint32_t points_lost; /* points past max_path */
	int expired;          /* ended by expiry, not by a QUIT record */
	struct xft_point *path;
	/* npoints - 1 gaps (path[i] -> path[i + 1]) split by state; NULL while
	 * no scheduler trace is joined. */
	struct xft_gap_split *gaps;
};

struct xft_agg_stats {
	uint64_t records;        /* fed in */
	uint64_t released;       /* out of the window, applied */
	uint64_t late;           /* older than the last released one */
	uint64_t window_full;    /* released early because the window was full */
	uint64_t flows_started;  /* by their START record */
	uint64_t flows_partial;  /* tracked from the middle (beginning not seen),
	                          * or live while a record was lost */
	uint64_t flows_finished; /* whole flows ended by QUIT */
	uint64_t flows_expired;
	uint64_t flows_evicted;  /* to make room: the idlest live flow of the
	                          * domain holding the most, so that one
	                          * domain's flood evicts its own */
	uint64_t flows_live;
	uint64_t no_flow;        /* records with flow id 0 */
	uint64_t hops_dropped;   /* hop samples for which no hop slot was free */
	uint64_t negative_hops;
	/* Both kinds of handoff: by header bits and keyed. */
	uint64_t handoffs_sent, handoffs_matched, handoffs_lost;
	/* Keyed handoffs (see the join above): every OUT is counted once in
	 * joined, join_unmatched_out, join_conflicts, join_refused or
	 * join_full; every IN once in joined or join_unmatched_in. */
	uint64_t join_joined;
	uint64_t join_unmatched_out;  /* no IN within the grace, replaced, or its flow gone */
	uint64_t join_unmatched_in;   /* no OUT within the grace, a tombstoned key, or no room */
	uint64_t join_conflicts;      /* OUTs of one key from two domains: neither joins */
	uint64_t join_refused;        /* OUTs of a domain holding half the table already */
	uint64_t join_full;           /* OUTs with no slot left */
	uint64_t join_negative_hops;  /* late joins whose OUT came after its IN: no hop */
	uint64_t points_lost;    /* path points past max_path */
	uint64_t memory_bytes;   /* everything the model allocated, fixed */
	/* The scheduler join (xft_agg_sched_join): hop samples split before
	 * every pCPU's trace had passed their end, because the queue of
	 * those waiting was full (the part not yet traced is '?'). */
	uint64_t split_early;
	/* Losses seen in the record numbers of threads that count them
	 * (XFLOW_REC_SEQ_COUNTS_LOST): records lost, in how many gaps, gaps
	 * seen after flows may have ended in them (the window had let
	 * their start go), threads no longer followed to make room. */
	uint64_t records_lost, loss_gaps, loss_late, threads_forgotten;
	/* flows_started and flows_partial say what each flow is now, so a
	 * flow found partial moves from one to the other, and a keyed side
	 * merged into its sender's flow leaves the figures.  The same as
	 * events, each counted once and never taken back, for the figures
	 * that must only grow (Prometheus's counters): flows begun whole by
	 * their START record (one found partial later stays counted there),
	 * and flows found partial, whether begun so or found so later.  A
	 * keyed side waiting for its sender is counted once its fate is
	 * known: never when it is merged, partial when its grace ends. */
	uint64_t flows_started_events, flows_partial_events;
};

struct xft_agg;

/* Allocate a model; all memory is taken here.  0 or -errno. */
int xft_agg_new(const struct xft_agg_limits *l, xft_group_fn group, void *opaque, struct xft_agg **out);
void xft_agg_free(struct xft_agg *a);

/* Where unkeyed handoffs may be sent and taken (see above); NULL @roles
 * (the default): every site may do either. */
void xft_agg_set_roles(struct xft_agg *a, xft_role_fn roles, void *opaque);

/* Feed one record whose timestamp is already in ns. */
void xft_agg_feed(struct xft_agg *a, const struct xflow_record *r, uint64_t t_ns);

/* Release everything older than (newest - window) and expire idle flows
 * as of @now_ns (pass the newest time seen to use record time). */
void xft_agg_tick(struct xft_agg *a, uint64_t now_ns);

/* Release every pending record (end of input). */
void xft_agg_drain(struct xft_agg *a);

const struct xft_agg_stats *xft_agg_stats(const struct xft_agg *a);

/* Whether a scheduler trace is joined, and how well (tui/hop_split.h). */
const struct xft_sched_status *xft_agg_sched_status(const struct xft_agg *a);

/*
 * The join with Xen's scheduler trace (issue 24, tui/sched_join.h).  Call
 * once, before the first record, when a collector gives scheduler events:
 * allocates the timelines, a queue of @max_pending hop samples waiting for
 * the trace to pass their end (0: 65536) and the slowest flows' gap splits.
 * 0 or -errno.  Then each hop sample is split once every pCPU's trace has
 * passed its end: its hop's split.all adds it, and split.tail too when it
 * is in the hop's slowest 1 % (at or above the hop's p99 as it stands when
 * the sample is split, the p99 refreshed every 64 samples); and each
 * finished flow among the slowest gets its gaps[] split once the trace has
 * passed its end.
 */
struct xft_sj_limits;
struct xflow_sched_event;
int xft_agg_sched_join(struct xft_agg *a, const struct xft_sj_limits *l, uint32_t max_pending);
/* One scheduler event, in the trace's order (xflow/collector.h). */
void xft_agg_sched_event(struct xft_agg *a, const struct xflow_sched_event *e);
/* The trace has ended: split whatever still waits. */
void xft_agg_sched_flush(struct xft_agg *a);
/* Each hop sample as it is split (tests, diagnostics): its hop, its two
 * ends' times, its split and culprit.  NULL: none. */
typedef void (*xft_agg_split_fn)(void *ctx, const struct xft_hop *h, uint64_t t0, uint64_t t1,
				 const struct xft_split *s, const struct xft_culprit *c);
void xft_agg_on_split(struct xft_agg *a, xft_agg_split_fn fn, void *ctx);
/* The time every pCPU's trace has passed (0: no trace yet). */
uint64_t xft_agg_sched_watermark(const struct xft_agg *a);

/* Hops, in no particular order: *n is set to their number. */
const struct xft_hop *xft_agg_hops(const struct xft_agg *a, size_t *n);

/* The slowest finished flows, slowest first; *n is set. */
size_t xft_agg_slowest(const struct xft_agg *a, const struct xft_flow_summary **out, size_t max);

/* Forget hops, flows and statistics; keep the limits and clock bounds. */
void xft_agg_reset(struct xft_agg *a);

/*
 * The tables every domain shares, hops and unkeyed handoffs, are shared
 * fairly: a domain may hold at most max_hops / (D + 1) hops, D the domains
 * holding hops with it among them (a hop is charged to the domain of the
 * record that made it, its to_domain), and at most half of max_handoffs
 * waiting handoffs; a full handoff queue lets the oldest of the domain
 * holding the most go.  So one guest whose agent pairs ever new sites, or
 * sends OUT after OUT, keeps neither another domain's new hop nor its
 * waiting handoff out.  What each domain was refused over its share
 * (counted in hops_dropped and handoffs_lost as well):
 */
struct xft_agg_refused {
	uint64_t hops;     /* new hops past its share of the hop table */
	uint64_t handoffs; /* OUTs past its half of the handoff queue */
};
void xft_agg_domain_refused(const struct xft_agg *a, uint16_t domain, struct xft_agg_refused *out);

/* How far the times of @domain's records may be from the truth, in ns (a
 * collector's xflow_domain_info.clock_bound_ns): 0 on the monitor's own
 * clock, UINT64_MAX unknown (the default).  Keyed joins decide by time
 * only what the bounds make certain (tui/keyed_join.h). */
void xft_agg_set_clock_bound(struct xft_agg *a, uint16_t domain, uint64_t bound_ns);

/* How far @domain's agent has given its records, on the records' time (a
 * collector's xflow_domain_info.progress_ns); 0: not known, or gone.
 * Handoff sides (keyed and not) run out of their grace only once every
 * domain that says how far it is has passed it (less the reorder window):
 * a guest descheduled for seconds, as an emulated host under load does,
 * sends its side late, and a verdict by the monitor's clock alone made
 * such pairs unmatched.  A domain that has not moved for five graces is
 * not waited for.  At most XFT_PROGRESS_DOMAINS domains are; others are
 * judged by the clock alone. */
#define XFT_PROGRESS_DOMAINS 256
void xft_agg_set_progress(struct xft_agg *a, uint16_t domain, uint64_t progress_ns);

/* @domain's records from @held_ns on may still wait at its agent for room
 * (a collector's xflow_domain_info.held_ns); 0: none wait.  While any
 * domain holds, the window releases no record younger than the oldest
 * time held, by the clock or by the threads' watermark, and no flow
 * expires past it: the held records come after a stopped monitor's
 * backlog, older than what it read first, and were counted late (a
 * monitor stopped for 0.3 s with an agent ring of 64: 10 to 205 records).
 * A full window still lets its oldest go.  The collector says how long a
 * domain is waited for.  At most XFT_PROGRESS_DOMAINS domains hold. */
void xft_agg_set_held(struct xft_agg *a, uint16_t domain, uint64_t held_ns);

#endif
