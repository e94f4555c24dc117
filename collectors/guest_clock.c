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

void guest_clock_rt_init(struct guest_clock_rt *rt, int64_t offset, uint64_t bound_ns, uint64_t at_ns)
{
	*rt = (struct guest_clock_rt){ .lo = offset - (int64_t)bound_ns, .hi = offset + (int64_t)bound_ns,
				       .at_ns = at_ns ? at_ns : 1 };
}

/* How much the offsets possible widen from @from_ns to @to_ns. */
static uint64_t drift_over(const struct guest_clock_rt *rt, uint64_t from_ns, uint64_t to_ns)
{
	if (!rt->drift_ppb || to_ns <= from_ns)
		return 0;
	return (uint64_t)((unsigned __int128)(to_ns - from_ns) * rt->drift_ppb / 1000000000u);
}

enum guest_clock_take guest_clock_rt_take(struct guest_clock_rt *rt, uint64_t sent_ns, uint64_t recv_ns,
					  uint64_t agent_ns)
{
	if (!agent_ns || recv_ns < sent_ns || sent_ns > INT64_MAX || recv_ns > INT64_MAX || agent_ns > INT64_MAX)
		return GUEST_CLOCK_SAME;
	int64_t a = (int64_t)sent_ns - (int64_t)agent_ns, b = (int64_t)recv_ns - (int64_t)agent_ns;
	if (!rt->at_ns) {
		*rt = (struct guest_clock_rt){ .lo = a, .hi = b, .at_ns = recv_ns };
		return GUEST_CLOCK_AGREED;
	}
	int64_t w = (int64_t)drift_over(rt, rt->at_ns, recv_ns);
	int64_t lo = rt->lo - w, hi = rt->hi + w;
	if (b < lo || a > hi) {
		/* The clocks parted faster than assumed: from this round trip
		 * on, assume twice the rate that would have kept it inside. */
		uint64_t gap = (uint64_t)(b < lo ? lo - b : a - hi);
		uint64_t dt = recv_ns > rt->at_ns ? recv_ns - rt->at_ns : 1;
		unsigned __int128 need = (unsigned __int128)gap * 1000000000u / dt;
		uint64_t want = need * 2 > GUEST_CLOCK_DRIFT_MAX_PPB ? GUEST_CLOCK_DRIFT_MAX_PPB : (uint64_t)need * 2;
		if (want > rt->drift_ppb)
			rt->drift_ppb = want;
		int64_t mid_old = rt->lo / 2 + rt->hi / 2, mid_new = a / 2 + b / 2;
		uint64_t jump = (uint64_t)(mid_new > mid_old ? mid_new - mid_old : mid_old - mid_new);
		if (jump > rt->worst_jump_ns)
			rt->worst_jump_ns = jump;
		rt->contradictions++;
		rt->lo = a;
		rt->hi = b;
		rt->at_ns = recv_ns;
		return GUEST_CLOCK_CONTRADICTED;
	}
	int64_t nlo = a > lo ? a : lo, nhi = b < hi ? b : hi;
	/* The old interval aged to this round trip is what it proves now. */
	bool changed = nlo != rt->lo || nhi != rt->hi;
	rt->lo = nlo;
	rt->hi = nhi;
	rt->at_ns = recv_ns;
	return changed ? GUEST_CLOCK_AGREED : GUEST_CLOCK_SAME;
}

int64_t guest_clock_rt_offset(const struct guest_clock_rt *rt)
{
	return rt->lo + (rt->hi - rt->lo) / 2;
}

uint64_t guest_clock_rt_bound(const struct guest_clock_rt *rt, uint64_t now_ns)
{
	if (!rt->at_ns)
		return UINT64_MAX;
	/* Half the width, rounded up: the middle is within it of either end. */
	uint64_t half = ((uint64_t)(rt->hi - rt->lo) + 1) / 2;
	return half + drift_over(rt, rt->at_ns, now_ns);
}
