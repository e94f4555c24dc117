/*
 * An agent's clock against ours (collectors/guest_clock.h).
 */
#include "collectors/guest_clock.h"

#include <inttypes.h>
#include <stdio.h>

enum guest_clock_how guest_clock_offset(const struct guest_clock_in *in, int64_t *offset, char *why, size_t len)
{
	/* Its clock was read between our connecting and the HELLO's
	 * arrival: taken at the middle, off by at most half that round trip
	 * (the arrival alone is always late, by up to all of it). */
	int64_t arrival = (int64_t)(in->now_ns - in->base_ns);
	int64_t rtt = (int64_t)(in->now_ns - in->since_ns);
	*offset = in->since_ns && rtt >= 0 ? arrival - rtt / 2 : arrival;
	if (!in->tsc_hz)
		return GUEST_CLOCK_ARRIVAL;
	/* Signed: a TSC behind the anchor is another TSC, said below. */
	int64_t ticks = (int64_t)(in->now_tick - in->base_tick);
	__int128 lat = (__int128)ticks * 1000000000 / (__int128)in->tsc_hz;
	if (lat < -GUEST_CLOCK_MARGIN_NS || lat > (__int128)rtt + GUEST_CLOCK_MARGIN_NS) {
		snprintf(why, len,
			 "its TSC anchor says the HELLO took %.3f ms, the round trip was %.3f ms: another TSC; "
			 "its clock is placed by the HELLO's round trip (off by up to half of it)",
			 (double)lat / 1e6, (double)rtt / 1e6);
		return GUEST_CLOCK_TSC_REFUSED;
	}
	*offset = arrival - (int64_t)lat;
	return GUEST_CLOCK_TSC;
}

bool guest_clock_refine(int64_t *offset, uint64_t *bound_ns, uint64_t sent_ns, uint64_t recv_ns, uint64_t agent_ns)
{
	if (!agent_ns || recv_ns < sent_ns)
		return false;
	uint64_t half = (recv_ns - sent_ns) / 2;
	if (half >= *bound_ns)
		return false;
	*offset = (int64_t)(sent_ns + half - agent_ns);
	*bound_ns = half;
	return true;
}
