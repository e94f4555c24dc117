/*
 * collectors/guest_clock.h — where an agent's CLOCK_MONOTONIC stands
 * against the monitor's, from its HELLO (xflow/control.h).
 *
 * A guest counts CLOCK_MONOTONIC from its own boot.  Its HELLO says what
 * its clock read just before sending (base_ns); taking the HELLO's arrival
 * for that same instant is off by the HELLO's latency, milliseconds between
 * domains, where the hops measured across them are tens of microseconds.
 * When the agent read the TSC with its clock (base_tick, at tsc_hz) and
 * both read one TSC (Xen domains do in the common case), the ticks between
 * its read and ours measure that latency, and only they are scaled by a
 * rate estimate.  Whether they read one TSC is checked: the latency the
 * ticks say must lie between 0 and the round trip we saw (plus a margin);
 * otherwise, as for agents without an anchor, its read is taken for the
 * middle of the round trip (from our connecting to its HELLO's arrival),
 * off by at most half of it.
 */
#ifndef XFLOW_COLLECTORS_GUEST_CLOCK_H
#define XFLOW_COLLECTORS_GUEST_CLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What the TSC's rate error and the pairs' own width may add (the rate is
 * good to ~1e-4, the pairs to tens of ns). */
#define GUEST_CLOCK_MARGIN_NS 500000ll

struct guest_clock_in {
	uint64_t tsc_hz, base_tick, base_ns; /* the HELLO's; tsc_hz 0: no anchor */
	uint64_t since_ns;  /* our clock before the agent could send it */
	uint64_t now_tick, now_ns; /* a pair of ours, taken at its arrival */
};

enum guest_clock_how {
	GUEST_CLOCK_ARRIVAL = 0,   /* no anchor: the round trip's middle (or, with
	                            * no since_ns, the arrival) is the send time */
	GUEST_CLOCK_TSC = 1,       /* from the TSC anchor */
	GUEST_CLOCK_TSC_REFUSED = 2, /* an anchor from another TSC: as ARRIVAL */
};

/*
 * The offset to add to the agent's times (*offset) and how it was found.
 * With GUEST_CLOCK_TSC_REFUSED, @why (@len bytes) says what disagreed.
 */
enum guest_clock_how guest_clock_offset(const struct guest_clock_in *in, int64_t *offset, char *why, size_t len);

/*
 * What the round trips prove about an agent's clock against ours.
 *
 * A round trip (a request sent at our @sent_ns, its answer taken at our
 * @recv_ns, the agent's clock reading @agent_ns just before it answered)
 * proves that the offset to add to the agent's times lies in
 * [sent - agent, recv - agent]: the agent read its clock between the two.
 * Every round trip taken narrows the offsets still possible to the
 * intersection with its own, so the placement is as good as the best
 * round trips together, however slow the greeting was.
 *
 * That holds only while the two clocks run at one rate.  Two domains'
 * CLOCK_MONOTONICs part when NTP slews one, and under emulation Xen's time
 * itself differs between physical CPUs by milliseconds: an interval proved
 * minutes ago may no longer hold the offset, and a bound kept from it
 * would be a lie.  So a round trip that excludes every offset left is a
 * contradiction: counted, the placement starts again from that round trip
 * alone, and the rate at which the clocks were seen to part (twice the one
 * that would have explained it) widens the bound from then on, as time
 * passes since the last round trip.  Where the clocks keep one rate, as on
 * a Xen host's domains without NTP, no contradiction comes and the bound
 * is the round trips'.
 */
struct guest_clock_rt {
	int64_t lo, hi;          /* the offsets still possible, as of at_ns */
	uint64_t at_ns;          /* our clock when they were (0: nothing yet) */
	uint64_t drift_ppb;      /* the rate the clocks were seen to part at */
	uint64_t contradictions; /* round trips that excluded every offset left */
	uint64_t worst_jump_ns;  /* the farthest a contradiction moved it */
};

/* The widest drift assumed, 1 %: a round trip further off than that is
 * a clock stepped, not drifting, and the next round trips place it. */
#define GUEST_CLOCK_DRIFT_MAX_PPB 10000000ull

/* Start from an offset known within @bound_ns at our @at_ns. */
void guest_clock_rt_init(struct guest_clock_rt *rt, int64_t offset, uint64_t bound_ns, uint64_t at_ns);

enum guest_clock_take {
	GUEST_CLOCK_SAME = 0,       /* nothing changed (or a round trip that
	                             * runs backwards, or an agent that said 0) */
	GUEST_CLOCK_AGREED = 1,     /* it agreed: the offsets possible changed */
	GUEST_CLOCK_CONTRADICTED = 2, /* placed again from this round trip */
};
enum guest_clock_take guest_clock_rt_take(struct guest_clock_rt *rt, uint64_t sent_ns, uint64_t recv_ns,
					  uint64_t agent_ns);

/* The placement: the middle of the offsets possible, and how far the
 * offset may be from it as of our @now_ns (UINT64_MAX before any). */
int64_t guest_clock_rt_offset(const struct guest_clock_rt *rt);
uint64_t guest_clock_rt_bound(const struct guest_clock_rt *rt, uint64_t now_ns);

#endif
