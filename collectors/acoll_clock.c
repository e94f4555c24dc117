/*
 * The agent collector's clock placement (collectors/acoll_priv.h): a peer's
 * statistics, its clock placed and bounded by round trips, and Xen's system
 * time read here and heard from guests.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "collectors/agent_collector.h"
#include "collectors/builtin.h"
#include "collectors/guest_clock.h"
#include "collectors/xen_discover.h"
#include "weaver/weave.h"
#include "xflow/clock.h"
#include "xflow/control.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"
#include "xflow/ring.h"
#include "xflow/shm.h"
#include "xflow/xen.h"
#include "xflow/xen_time.h"
#include "collectors/acoll_priv.h"

/* Take a STATS reply's counts, unless they are a lie (acoll_vet_stats):
 * then the aspects keep the domain's last counts. */
void acoll_handle_stats(struct peer *p, const struct xflow_ctl_stats *s)
{
	uint32_t alive = 0;
	for (uint32_t i = 0; i < s->ntargets; i++)
		alive += s->targets[i].state == XFLOW_CTL_TARGET_RUNNING;
	p->ntargets = alive;
	if (acoll_vet_stats(&p->vet, s, p->adv, p->nadv, p->ring_dropped, xflow_monotonic_ns()) != ACOLL_GIVEN)
		return;
	if (s->nadvice != p->nadv) {
		free(p->adv);
		p->adv = calloc(s->nadvice + 1, sizeof(*p->adv));
		p->nadv = p->adv ? s->nadvice : 0;
	}
	if (p->adv && s->nadvice)
		memcpy(p->adv, s->advice, s->nadvice * sizeof(*p->adv));
	p->ring_dropped = s->ring_dropped;
	if (!p->xen && p->shm.base) {
		/* The ring's own counter was at most this when the agent
		 * answered (it only grows), so the rest was lost before it.
		 * Kept at its highest: a ring drop between the answer and this
		 * read hides some of the lanes' losses until the next STATS. */
		uint64_t ring = xflow_ring_dropped(&p->cons);
		if (s->ring_dropped > ring && s->ring_dropped - ring > p->lost_before_ring)
			p->lost_before_ring = s->ring_dropped - ring;
	}
}

/* A live Xen peer's source line: where from, and how its clock is placed. */
void acoll_xen_peer_source(struct peer *p)
{
	snprintf(p->source, sizeof(p->source), "xflow-agent pid %u via vchan from domain %u%s%s", p->agent_pid,
		 (unsigned)p->domid, p->clock_how[0] ? ", " : "", p->clock_how);
}


/* A guest's clock placed by its greeting's round trip is placed again by
 * the STATS round trips: under Xen the greeting's takes tens of
 * milliseconds where the hops across domains are tens of microseconds.
 * Placed otherwise, the round trips go on, to check and bound it.  One
 * that contradicts the others (the clocks parted: collectors/guest_clock.h)
 * is said once, and counted in the Domains row from then on. */
void acoll_peer_clock_refine(struct acoll *c, struct peer *p, const struct xflow_ctl_stats *s)
{
	if (!p->xen || !p->rt.at_ns || !s->clock_now)
		return;
	uint64_t agent_ns = xflow_clock_to_ns(p->conv, s->clock_now);
	enum guest_clock_take t = guest_clock_rt_take(&p->rt, p->stats_sent_ns, xflow_monotonic_ns(), agent_ns);
	if (t == GUEST_CLOCK_SAME)
		return;
	if (t == GUEST_CLOCK_CONTRADICTED && !p->rt_said) {
		p->rt_said = true;
		acoll_set_err(c,
			"agent of %s/%u: a round trip put its clock %.3f ms from where the earlier ones had proved it: "
			"the two clocks part (NTP, or Xen's time under emulation); its bound now widens by %.0f ppm "
			"between round trips",
			p->domain, (unsigned)p->domid, (double)p->rt.worst_jump_ns / 1e6, (double)p->rt.drift_ppb / 1e3);
	}
	acoll_bound_note(p);
	if (p->clk != PEER_CLOCK_RT)
		return; /* they only check what placed it */
	acoll_peer_offset_set(p, guest_clock_rt_offset(&p->rt));
	acoll_rt_how(p);
	if (p->state == PEER_LIVE)
		acoll_xen_peer_source(p);
}

/* Placed as its records are (peer_emit): a record it wrote before it
 * answered is stamped before this.  A guest's clock placed by evidence
 * (Xen's system time, round trips) says it before its first record: the
 * handoffs its first records close must wait for them, and under load a
 * guest's first records came seconds after dom0's sides of the same
 * requests (xen-check beside a make check: 5 of 402 keyed joins lost,
 * all of the guest's first batch, which a replay of the session joined).
 * One not placed yet (its first record places it) says nothing; if that
 * record moves its clock, what it said is forgotten (peer_emit). */
void acoll_peer_progress(struct peer *p, uint64_t agent_ticks)
{
	if (!agent_ticks)
		return;
	if (p->xen && !p->offset_checked && p->clk != PEER_CLOCK_XTIME && p->clk != PEER_CLOCK_RT)
		return;
	uint64_t t = xflow_clock_to_ns(p->conv, agent_ticks) + (uint64_t)p->offset_ns;
	if (t > p->progress_ns)
		p->progress_ns = t;
}

void acoll_peer_held(struct peer *p, uint64_t held_ticks, uint64_t prod, uint64_t now)
{
	if (prod != p->held_prod) {
		p->held_prod = prod;
		p->held_moved_at = now;
	}
	p->held_ns = held_ticks ? xflow_clock_to_ns(p->conv, held_ticks) + (uint64_t)p->offset_ns : 0;
	if (held_ticks && !p->held_ns)
		p->held_ns = 1; /* 0 says "nothing" */
}

uint64_t acoll_peer_held_ns(const struct peer *p, uint64_t now)
{
	if (!p->held_ns || p->gone || !p->connected || now - p->held_moved_at >= HELD_STALE_NS ||
	    p->held_ns + HELD_MAX_NS < now)
		return 0;
	return p->held_ns;
}

/* The Domains row's words for a clock placed by round trips. */
void acoll_rt_how(struct peer *p)
{
	int n = snprintf(p->clock_how, sizeof(p->clock_how), "clock by round trip, within %.3fms",
			 (double)guest_clock_rt_bound(&p->rt, xflow_monotonic_ns()) / 1e6);
	if (p->rt.contradictions && n > 0 && (size_t)n < sizeof(p->clock_how))
		snprintf(p->clock_how + n, sizeof(p->clock_how) - (size_t)n, " (moved %" PRIu64 "x, up to %.3fms)",
			 p->rt.contradictions, (double)p->rt.worst_jump_ns / 1e6);
}

/* How far @p's record times may be from ours (xflow_domain_info's
 * clock_bound_ns): what its placement proves.  A TSC anchor is checked
 * against its greeting's latency to microseconds; Xen's time is exact
 * where Xen keeps one time (its hosts), but what is proven is only that
 * it agrees with the round trips, so their bound and the distance. */
static uint64_t placement_bound(const struct peer *p)
{
	if (!p->xen)
		return 0; /* on our own clock */
	switch (p->clk) {
	case PEER_CLOCK_TSC:
		return 10000;
	case PEER_CLOCK_RT:
		return guest_clock_rt_bound(&p->rt, xflow_monotonic_ns());
	case PEER_CLOCK_XTIME: {
		if (!p->rt.at_ns)
			return UINT64_MAX;
		int64_t d = p->offset_ns - guest_clock_rt_offset(&p->rt);
		return (uint64_t)(d < 0 ? -d : d) + guest_clock_rt_bound(&p->rt, xflow_monotonic_ns());
	}
	default:
		return UINT64_MAX;
	}
}

/* The placement's bound, and while records placed before its last move
 * may wait in the model, the move too: the model compares their times
 * with those of records placed after it (the keyed join decides which
 * side of a request came first by these bounds; in the Xen lab under
 * load a guest's round trips moved its clock by 14.8 ms while they
 * bounded it within 6.9 ms, and 40 of 402 joins went to the wrong side). */
static uint64_t clock_bound_now(const struct peer *p)
{
	uint64_t b = placement_bound(p);
	if (p->moved_ns && b != UINT64_MAX && xflow_monotonic_ns() < p->moved_until)
		b = p->moved_ns > UINT64_MAX - b ? UINT64_MAX : b + p->moved_ns;
	return b;
}

/* A record keeps the error of the placement it got.  The model keeps, with
 * each side waiting in its join, the bound it had when it applied the
 * side; what the hold covers is the time a record takes to be applied
 * after it was placed (the model's reorder window, its refresh of the
 * bounds once a second), with room to spare. */
#define BOUND_HOLD_NS (10ull * 1000 * 1000 * 1000)

/* The placement of @p's clock changed, or may have: a higher bound is
 * reported at once, a lower one once BOUND_HOLD_NS have passed since the
 * last change, for records placed before it. */
void acoll_bound_note(struct peer *p)
{
	uint64_t b = clock_bound_now(p);
	if (b >= p->bound_held || !p->records) {
		p->bound_held = p->bound_next = b;
		p->bound_until = 0;
	} else if (b != p->bound_next) {
		p->bound_next = b;
		p->bound_until = xflow_monotonic_ns() + BOUND_HOLD_NS;
	}
}

/* A move within what was said already is no one's error: round trips
 * that agree narrow the offsets possible, and their middle moves inside
 * the bound the records placed before were given (held for them).  A
 * move that leaves it (a contradicting round trip, Xen's time refused
 * for the round trips) says those records were off by more: by how far
 * the new placement, with its own bound, reaches past the old bound. */
void acoll_peer_offset_set(struct peer *p, int64_t offset_ns)
{
	uint64_t old_bound = p->bound_held;
	uint64_t d = offset_ns > p->offset_ns ? (uint64_t)offset_ns - (uint64_t)p->offset_ns
					      : (uint64_t)p->offset_ns - (uint64_t)offset_ns;
	p->offset_ns = offset_ns;
	uint64_t b = placement_bound(p);
	if (p->records && old_bound != UINT64_MAX && b != UINT64_MAX && d + b > old_bound) {
		uint64_t now = xflow_monotonic_ns();
		/* Moves while earlier ones still count add up: records placed
		 * before the first are off by all of them against the last. */
		if (now >= p->moved_until)
			p->moved_ns = 0;
		uint64_t past = d + b - old_bound;
		p->moved_ns = past > UINT64_MAX - p->moved_ns ? UINT64_MAX : p->moved_ns + past;
		p->moved_until = now + BOUND_HOLD_NS;
	}
	acoll_bound_note(p);
}

/* What xflow_domain_info says: what @p's records still waiting in the
 * model may be off by. */
uint64_t acoll_peer_clock_bound(struct peer *p)
{
	acoll_bound_note(p);
	if (p->bound_until && xflow_monotonic_ns() >= p->bound_until) {
		p->bound_held = p->bound_next;
		p->bound_until = 0;
	}
	return p->bound_held;
}

#define XTIME_HOW "clock by Xen system time"

/* Every guest that said Xen's system time against its clock is placed on
 * ours by it, once ours is known: both clocks are Xen's time less a
 * constant, so the difference of the constants is exact, where a round
 * trip leaves half of itself unknown.  A guest's word is checked against
 * what its round trips proved: outside their bound (with a millisecond to
 * spare) it is refused, said once, and the round trips keep the clock. */
static void xtime_place(struct acoll *c)
{
	if (!c->xtime)
		return;
	for (unsigned i = 0; i < c->npeers; i++) {
		struct peer *p = c->peers[i];
		if (!p->xen || !p->xtime || p->xtime_refused || p->gone || p->clk == PEER_CLOCK_TSC)
			continue;
		int64_t off = p->xtime_d - c->xtime_d;
		int64_t rt_off = guest_clock_rt_offset(&p->rt);
		uint64_t rt_bound = guest_clock_rt_bound(&p->rt, xflow_monotonic_ns());
		uint64_t dist = off > rt_off ? (uint64_t)(off - rt_off) : (uint64_t)(rt_off - off);
		if (p->rt.at_ns && dist > rt_bound + 1000000) {
			p->xtime_refused = true;
			acoll_set_err(c,
				"agent of %s/%u: its Xen system time puts its clock %.3f ms from where its round trips "
				"put it (within %.3f ms): not believed",
				p->domain, (unsigned)p->domid, (double)dist / 1e6, (double)rt_bound / 1e6);
			if (p->clk == PEER_CLOCK_XTIME) {
				/* It said otherwise before: back to the round trips. */
				p->clk = PEER_CLOCK_RT;
				acoll_peer_offset_set(p, rt_off);
				acoll_rt_how(p);
				if (p->state == PEER_LIVE)
					acoll_xen_peer_source(p);
			}
			continue;
		}
		p->clk = PEER_CLOCK_XTIME;
		acoll_peer_offset_set(p, off);
		/* With what the round trips say of it: the evidence. */
		if (p->rt.at_ns)
			snprintf(p->clock_how, sizeof(p->clock_how), XTIME_HOW "; round trips %+.3fms, within %.3fms",
				 (double)(rt_off - off) / 1e6, (double)rt_bound / 1e6);
		else
			snprintf(p->clock_how, sizeof(p->clock_how), XTIME_HOW);
		if (p->state == PEER_LIVE)
			acoll_xen_peer_source(p);
	}
}

/* Our own side, read again when due. */
void acoll_xtime_ours(struct acoll *c, uint64_t now)
{
	if (c->xtime_never || (c->xtime && now - c->xtime_at < XFLOW_XEN_TIME_EVERY_NS))
		return;
	c->xtime_at = now;
	int64_t d;
	int rc = xen_time_reader_read(&c->xtime_r, &d, c->xtime_why, sizeof(c->xtime_why));
	if (rc == 0) {
		c->xtime = true;
		c->xtime_d = d;
		xtime_place(c);
	} else if (rc != -EINVAL && !c->xtime) {
		/* No BPF, no kallsyms, not root: for good.  Another
		 * clocksource (-EINVAL) may yet become Xen's. */
		c->xtime_never = true;
	}
}

/* A guest's HELLO or STATS reply said Xen's system time (or not). */
void acoll_xtime_heard(struct acoll *c, struct peer *p, bool said, int64_t d)
{
	if (!said || !p->xen)
		return;
	p->xtime = true;
	p->xtime_d = d;
	if (!c->xtime && c->xtime_why[0] && !c->xtime_why_said) {
		c->xtime_why_said = true;
		acoll_set_err(c, "agent: the guests say Xen's system time, but ours cannot be read (%s): their clocks are "
			   "placed by round trips",
			c->xtime_why);
	}
	xtime_place(c);
}

/* Take one message from @p's control socket.  1: one handled, 0: none
 * ready, < 0: the agent is gone or broke the protocol.  *reply_seq gets a
 * REPLY's req_seq (PLAN_LOAD replies are returned in *plan_reply). */
