/*
 * tui/hop_split.h — where a hop's time went: the states a hop's latency is
 * split into once Xen's scheduler trace is joined with the flows (issue 24).
 *
 * This header is the contract between the model that computes the split
 * (tui/aggregate.c with the per-vCPU timeline beside it) and everything that
 * shows it (views, batch, JSON, snapshots, Prometheus).  It holds plain data
 * only: the model fills it, the renderers read it.
 *
 * Every nanosecond of a hop lands in exactly one state, so for every flow
 * the states of a hop add up to that hop's latency; a nanosecond the trace
 * cannot account for (no trace, records lost, a state change closer to a
 * hop boundary than the clock error) is XFT_ST_UNKNOWN: shown, never
 * guessed.  And every nanosecond of XFT_ST_UNKNOWN has exactly one reason
 * (enum xft_unknown_reason), so that the user can tell what to mend.
 */
#ifndef XFLOW_TUI_HOP_SPLIT_H
#define XFLOW_TUI_HOP_SPLIT_H

#include <stdint.h>

enum xft_state {
	XFT_ST_RUN,     /* the vCPU carrying the flow is running */
	XFT_ST_WAIT,    /* that vCPU is runnable, waiting for a physical CPU */
	XFT_ST_NOTIFY,  /* the receiver blocked until its first wake after the
	                 * sender's notification (ring and event channel) */
	XFT_ST_BACKEND, /* the receiver runs until the hop ends */
	XFT_ST_BLOCKED, /* blocked after it was woken (timers, disk, netem) */
	XFT_ST_OFFLINE, /* paused, or parked by a cap */
	XFT_ST_XEN,     /* Xen ran instead of the running vCPU: the interrupts
	                 * it handled on that vCPU's pCPU */
	XFT_ST_UNKNOWN, /* not attributable: shown as '?' */
	XFT_NSTATES
};

/* Short names as shown and exported: "run", "wait", "notify", "backend",
 * "blocked", "offline", "xen", "?" (Prometheus label: "unknown"). */
const char *xft_state_name(enum xft_state s);
const char *xft_state_label(enum xft_state s);

/* Why a nanosecond is '?': one reason each.  Each span of a hop is charged
 * to one vCPU; its time is no_trace when that vCPU has no timeline, and
 * otherwise, first match: before the first entry kept, old (lost when the
 * ring never let an entry go: before the vCPU's first record); past the
 * watermark, early; where the timeline's state is unknown, lost; a known
 * state a window of the clock error took out, clock.  A window over time
 * already '?' leaves it its own reason: it did not make it unknown. */
enum xft_unknown_reason {
	XFT_UNK_NO_TRACE, /* no timeline for the vCPU the record was written
	                   * on: its CPU not known in a domain of several
	                   * vCPUs, the vCPU not in the trace, no room for
	                   * its timeline, or the timeline empty */
	XFT_UNK_LOST,     /* the trace says the state is unknown: records
	                   * lost, out of order, or before the vCPU's first
	                   * record */
	XFT_UNK_CLOCK,    /* a known state within the clock error of a hop
	                   * boundary the vCPU changed state near */
	XFT_UNK_OLD,      /* before what the vCPU's timeline still keeps */
	XFT_UNK_EARLY,    /* past the trace's watermark: split before every
	                   * pCPU's trace passed the hop's end */
	XFT_UNK_NREASONS
};

/* "no_trace", "lost", "clock", "old", "early": as shown and exported
 * (JSON keys, Prometheus label values); "bad-reason" out of range. */
const char *xft_unknown_reason_name(enum xft_unknown_reason r);

/* Nanoseconds spent in each state; sum(ns) is the latency split.
 *
 * Invariant: for every split, and every sum of splits that has not
 * saturated, the reasons add up exactly to the '?' state:
 * sum(unknown_ns) == ns[XFT_ST_UNKNOWN].  Renderers still show a '?'
 * whose reasons are all zero, without a reason, rather than trust it. */
struct xft_split {
	uint64_t ns[XFT_NSTATES];
	uint64_t unknown_ns[XFT_UNK_NREASONS];
};

/* Who held the physical CPU while the flow's vCPU waited for it (from
 * Xen's switch records): the biggest such holder over the split. */
struct xft_culprit {
	uint64_t wait_ns;  /* the flow's wait while this vCPU held the pCPU;
	                    * 0: no culprit (no wait, or no switch seen) */
	uint16_t domain;   /* the holder: domain and vCPU */
	uint16_t vcpu;
	uint16_t pcpu;     /* the physical CPU waited for */
};

/* The split of one hop over all its flows (time-weighted: the sums of
 * every flow's split), and over the flows in its slowest 1 %. */
struct xft_hop_split {
	struct xft_split all;
	uint64_t tail_count;     /* flows counted in .tail */
	struct xft_split tail;
	struct xft_culprit culprit_all, culprit_tail;
};

/* The split of one gap of one flow's path (path[i] -> path[i + 1]). */
struct xft_gap_split {
	struct xft_split split;
	struct xft_culprit culprit;
};

/* Whether and how well the scheduler trace is joined (the header). */
struct xft_sched_status {
	int joined;               /* a scheduler trace is being joined */
	uint64_t clock_error_ns;  /* measured error between the flows' time and
	                           * the trace's (at least this much);
	                           * UINT64_MAX: not yet measured */
	uint64_t clock_bound_ns;  /* the largest error the measures allow (at
	                           * most this much); UINT64_MAX: not proven */
	uint64_t trace_records;   /* scheduler records taken into the timeline */
	uint64_t trace_lost;      /* records Xen or the timeline lost (counted,
	                           * their intervals become '?'): the sum of
	                           * the three reasons below */
	uint64_t lost_records;    /* lost before the join: Xen's buffers full,
	                           * or the collector's queue of events */
	uint64_t too_old;         /* splits that reached before what a vCPU's
	                           * timeline keeps (the trace ran too far ahead) */
	uint64_t no_vcpu_room;    /* events of vCPUs beyond the timelines' number */
	uint64_t hops_split;      /* hop samples split */
	uint64_t hops_pending;    /* waiting for every pCPU's trace to pass them */
	uint64_t split_early;     /* split before the trace passed them: the
	                           * queue of waiting ones was full */
	uint64_t xen_idle;        /* interrupts Xen handled with no vCPU shown
	                           * running on their pCPU: nobody's time, in
	                           * no hop's split */
};

#endif
