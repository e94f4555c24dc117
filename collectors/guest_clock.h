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
 * A later round trip (a STATS request sent at our @sent_ns, its answer
 * taken at our @recv_ns, the agent's clock reading @agent_ns, in ns, just
 * before it answered): when half of it is under *bound_ns, its middle
 * becomes *offset and half of it *bound_ns, and true is returned.  So the
 * placement tightens to half the shortest round trip seen, however slow
 * the greeting was.  A round trip that runs backwards or an agent that
 * said nothing (0) changes nothing.
 */
bool guest_clock_refine(int64_t *offset, uint64_t *bound_ns, uint64_t sent_ns, uint64_t recv_ns, uint64_t agent_ns);

#endif
