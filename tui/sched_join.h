/*
 * tui/sched_join.h — Xen's scheduler trace joined with the flows: a
 * bounded timeline per vCPU, and the split of a hop over the states of
 * tui/hop_split.h (issue 24).
 *
 * Input is the scheduler events of xflow/collector.h (runstate changes,
 * switches, hypercalls, lost records, Xen's own time), in the trace's
 * merged order, their
 * times already on the flows' time line; the last event's time is the
 * watermark: every physical CPU's trace has passed it.
 *
 * Each vCPU seen has a timeline of the states it entered, a ring of fixed
 * size: when it is full the oldest entries go (counted), and a query
 * reaching before what is kept is '?'.  Each keeps the times of its
 * event-channel hypercalls (evtchn_op) too, in a smaller ring: the
 * notifications Xen 4.17's trace shows.  Memory is taken at creation.
 *
 * A hop [t0, t1] from a point on (domain, cpu) to one on (domain, cpu) is
 * split thus.  When both ends are on one vCPU, that vCPU is charged the
 * whole hop: running is `run`, runnable `wait`, blocked `blocked`, offline
 * `offline`.  Otherwise the sender's vCPU is charged until the
 * notification tn in the same way, and the receiver's from tn: blocked
 * until its first wake after tn is `notify`, blocked after that
 * `blocked`, runnable `wait`, running `backend`.  tn is the woven
 * notification when the sending end has one (has_tn: its point's record
 * at a notify="yes" point of the flow, clamped into [t0, t1]); else the
 * sender's first evtchn_op in [t0, t1], or t0 when it made none.  On either side, the time Xen ran instead of
 * the running vCPU (an interrupt it handled on that vCPU's pCPU) is `xen`:
 * carved out of the run, from the interrupt's start (never before the
 * vCPU's last state change: clamped there) to its end; an interrupt on an
 * idle pCPU, or while the trace does not show a vCPU running there, is
 * nobody's (stats.xen_idle).  Time in a state the trace does not give (no
 * timeline, before what is kept, after records were lost, an unknown CPU
 * in a domain of several vCPUs) is `?`, and so is the time within the
 * clock error of a hop boundary when the charged vCPU changed state that
 * near it.  An interrupt is no state change there: interrupts come every
 * few hundred microseconds, and each one near a boundary would make twice
 * the clock error '?'; so `xen` within the clock error of a boundary is
 * charged as the trace says, at most one interrupt's length off.  The
 * states always add up to t1 - t0 exactly, and the reasons of the '?'
 * (tui/hop_split.h) to its time exactly.
 *
 * The clock error is measured, not assumed: the record that ends a hop
 * across vCPUs is written by the receiver, whose vCPU must be running
 * then; how far from any running interval the record lies is a lower
 * bound of the error between the two clocks.  The error reported is the
 * largest such distance over the last XFT_SJ_ERROR_WINDOW checks (two
 * windows, so that it follows a clock that is repaired); it is the margin
 * of the boundaries above.  The same checks are ordered pairs that bound
 * the error from above: a record within the run [a, b) at t says that the
 * offset between the clocks lies in [a - t, b - t], and one outside every
 * run that it lies past the nearer run's edge.  Their intersection over
 * the two windows, taken as one constant offset, gives the bound; it is
 * not proven while every check leaves a side open (a vCPU that never
 * stops running bounds nothing) or when no constant offset fits them all
 * (the clocks drift against each other).  The checks take an interrupt
 * as part of the run it interrupted.
 *
 * A woven notification gives a second ordered pair: the guest's record
 * at tn precedes Xen's record of the evtchn_op it makes next, h, so the
 * offset is at most h - tn (one side only).  It is taken only where h is
 * unambiguous: the run of the sender's vCPU that holds tn, its start and
 * end known, holds exactly one evtchn_op (with two, either could be this
 * notification's, and with none it was not made in that run).  h before
 * tn is a violated pair: the error is at least tn - h.  Each pair counts
 * as one check of the windows above.
 *
 * Each interrupt takes two entries of its vCPU's ring: a vCPU that Xen
 * interrupts often keeps a shorter past (stats.overwritten, too_old).
 *
 * Not thread-safe: the model's thread feeds and queries it.
 */
#ifndef XFLOW_TUI_SCHED_JOIN_H
#define XFLOW_TUI_SCHED_JOIN_H

#include <stddef.h>
#include <stdint.h>

#include "tui/hop_split.h"
#include "xflow/collector.h"

#define XFT_SJ_ERROR_WINDOW 1024

struct xft_sj_limits {
	uint32_t max_vcpus;   /* vCPUs with a timeline (0: 256) */
	uint32_t per_vcpu;    /* state entries kept per vCPU (0: 4096) */
	uint32_t per_vcpu_hc; /* evtchn_op times kept per vCPU (0: 1024) */
	uint32_t max_pcpus;   /* physical CPUs followed (0: 256) */
};

/* One side of a hop: its time, domain and the CPU its record was written
 * on (-1: not known).  The sending side may also say when its point
 * notified the next domain (has_tn: a record at an XFLOW_SITE_NOTIFIES
 * site, xflow/collector.h, at tn_ns); the receiving side's are not read. */
struct xft_sj_end {
	uint64_t t_ns;
	uint16_t domain;
	int32_t cpu;
	int has_tn;
	uint64_t tn_ns;
};

struct xft_sj_stats {
	uint64_t events;         /* taken into the timelines */
	uint64_t lost;           /* records Xen lost, and LOST events */
	uint64_t overwritten;    /* timeline entries the rings let go */
	uint64_t too_old;        /* splits that reached before what a ring kept */
	uint64_t out_of_order;   /* events older than their vCPU's last */
	uint64_t no_vcpu_room;   /* events of a vCPU beyond max_vcpus */
	uint64_t bad;            /* events out of range (kind, state, pcpu) */
	uint64_t xen_idle;       /* Xen's own time charged to no vCPU: on an
	                          * idle pCPU, or none seen running there */
	uint64_t checks;         /* clock checks made */
	uint64_t clock_error_ns; /* UINT64_MAX until the first check */
	uint64_t clock_bound_ns; /* the largest error the checks allow;
	                          * UINT64_MAX: not proven */
};

struct xft_sj;

/* 0 or -ENOMEM / -EINVAL. */
int xft_sj_new(const struct xft_sj_limits *l, struct xft_sj **out);
void xft_sj_free(struct xft_sj *j);
/* Bytes taken at creation. */
uint64_t xft_sj_bytes(const struct xft_sj *j);
/* Forget every timeline and count. */
void xft_sj_reset(struct xft_sj *j);

/* One scheduler event; hostile values are counted (stats.bad), never used. */
void xft_sj_event(struct xft_sj *j, const struct xflow_sched_event *e);
/* Every pCPU's trace has passed @t_ns (the last event's time, or later). */
uint64_t xft_sj_watermark(const struct xft_sj *j);

/*
 * Split the hop from @from to @to (from->t_ns <= to->t_ns) into @out
 * (overwritten) and name its biggest culprit in @culprit (wait_ns 0: none;
 * looked for among the first 64 runnable intervals of the hop, and its
 * wait never more than the split's).  Each state's time is two lookups
 * into its timeline (each entry carries the time spent in each state so
 * far), whatever the number of state changes inside the hop; a hop between
 * the same two ends as one split just before, whose ends moved over no
 * state change, entry or window, is that split moved, with no lookup, and
 * one whose ends moved over some while the hop kept its shape (the same
 * notification, wake and windows but its ends' own) is that split with
 * the ends' running totals taken again, a lookup or two each (neither is
 * from a woven notification, has_tn: it is always split anew).
 * Call once the watermark has passed to->t_ns; before, the part after the
 * watermark is '?'.  With @check, the receiving end is also checked against
 * the clock (see above; the split uses the error as it was before).
 */
void xft_sj_split(struct xft_sj *j, const struct xft_sj_end *from, const struct xft_sj_end *to, int check,
		  struct xft_split *out, struct xft_culprit *culprit);

/*
 * The same split of a hop out of the order the hops come in (the gaps of
 * the slowest flows, split once each, long after): always made anew, the
 * memos neither asked nor made, so that those of the hops in order stay
 * theirs.  A far-off split through them takes the slot of its ends, and
 * the next hop in order is made anew too.
 */
void xft_sj_split_aside(struct xft_sj *j, const struct xft_sj_end *from, const struct xft_sj_end *to, int check,
			struct xft_split *out, struct xft_culprit *culprit);

/*
 * The same split, added to the sum of splits @all and, when not NULL, to
 * @tail (either NULL: added to neither, as when its hop was forgotten;
 * the split is still made, and the clock checked).  A split the memo
 * answers may be only owed to the sums: the memo counts its answers, and
 * pays them all at once when its split changes, another sum takes its
 * place, or xft_sj_fold() is called.  So the sums must stay where they
 * are until then, and be read only after it.  A sum is exactly the sum
 * of the splits xft_sj_split() would give, mod 2^64 as adding them is.
 */
void xft_sj_split_add(struct xft_sj *j, const struct xft_sj_end *from, const struct xft_sj_end *to, int check,
		      struct xft_split *all, struct xft_split *tail, struct xft_culprit *culprit);
/* Pay into the sums given to xft_sj_split_add() all that is owed them:
 * before they are read, moved or forgotten.  xft_sj_reset() does it too;
 * xft_sj_free() does not (the sums may be gone). */
void xft_sj_fold(struct xft_sj *j);

/* Not const: the bound of the clock (clock_bound_ns) is taken when read. */
const struct xft_sj_stats *xft_sj_stats(struct xft_sj *j);
/* The same but for clock_bound_ns, which is as xft_sj_stats() last took
 * it: for a caller that looks at every event, where taking the bound
 * would cost more than the event. */
const struct xft_sj_stats *xft_sj_stats_peek(const struct xft_sj *j);

#endif
