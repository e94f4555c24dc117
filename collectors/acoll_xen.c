/*
 * The agent collector over Xen (collectors/acoll_priv.h): discovering agents'
 * offers in xenstore, backing off failed ones, greeting and planning peers.
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

/* ---- peers over Xen -------------------------------------------------------------- */

/* @domid's failures, or NULL. */
static struct failed_offer *failed_of(struct acoll *c, uint32_t domid)
{
	for (unsigned i = 0; i < c->nfailed; i++)
		if (c->failed[i].domid == domid)
			return &c->failed[i];
	return NULL;
}

/* Whether @domid's offer is left alone now; if so, a scan is due when
 * that ends. */
static bool offer_backing_off(struct acoll *c, uint32_t domid, uint64_t now)
{
	const struct failed_offer *f = failed_of(c, domid);
	if (!f || now >= f->until_ns)
		return false;
	xen_discover_again_at(c->xd, f->until_ns);
	return true;
}

/* The slot of @domid's failures: its own, else one whose wait is over
 * (forgetting that domain's), else a new one, else the first. */
static struct failed_offer *failed_slot(struct acoll *c, uint32_t domid, uint64_t now)
{
	struct failed_offer *f = failed_of(c, domid);
	if (f)
		return f;
	for (unsigned i = 0; i < c->nfailed; i++)
		if (c->failed[i].until_ns <= now) {
			c->failed[i] = (struct failed_offer){ .domid = domid };
			return &c->failed[i];
		}
	unsigned slot = c->nfailed < MAX_PEERS ? c->nfailed++ : 0;
	c->failed[slot] = (struct failed_offer){ .domid = domid };
	return &c->failed[slot];
}

/* A domain whose offer failed is left alone for a while: a guest that
 * keeps offering garbage costs us one attempt per XEN_RETRY_STEPS steps
 * of the greeting's deadline (30 s by default). */
static void offer_failed(struct acoll *c, uint32_t domid)
{
	uint64_t now = xflow_monotonic_ns();
	failed_slot(c, domid, now)->until_ns = now + XEN_RETRY_STEPS * (uint64_t)c->xen_step_ms * 1000000u;
}

/* How many times longer than the usual deadlines @domid's agent is given:
 * a guest starved of CPU (an emulated host under load) answered its
 * greeting after the 10 s it was given, found us gone, and the next try
 * met the same deadline. */
static uint64_t patience(struct acoll *c, uint32_t domid)
{
	const struct failed_offer *f = failed_of(c, domid);
	return f ? UINT64_C(1) << f->slow : 1;
}

/* @p's agent ran out of time: its next deadlines double (at most 32x). */
static void peer_late(struct acoll *c, struct peer *p, const char *what, uint64_t waited_ns)
{
	struct failed_offer *f = failed_slot(c, p->domid, xflow_monotonic_ns());
	if (f->slow < 5)
		f->slow++;
	char why[160];
	snprintf(why, sizeof(why), "%s (%.0f s; it gets %.0f s next time)", what, (double)waited_ns / 1e9,
		 (double)waited_ns * 2 / 1e9);
	acoll_xen_peer_fail(c, p, why);
}

void acoll_xen_peer_fail(struct acoll *c, struct peer *p, const char *why)
{
	offer_failed(c, p->domid);
	if (p->rec)
		libxenvchan_close(p->rec);
	p->rec = NULL;
	p->ring_ok = false;
	snprintf(p->source, sizeof(p->source), "xflow-agent pid %u over vchan: %.120s", p->agent_pid, why);
	acoll_peer_drop(c, p, why);
}

/* A scan found @o: connect unless we already have this domain's agent. */
static void xen_found(void *ctx, const struct xen_offer *o)
{
	struct acoll *c = ctx;
	uint64_t now = xflow_monotonic_ns();
	if (o->busy || offer_backing_off(c, o->domid, now))
		return;
	for (unsigned i = 0; i < c->npeers; i++)
		if (c->peers[i]->xen && !c->peers[i]->gone && c->peers[i]->domid == o->domid)
			return;
	if (c->npeers == MAX_PEERS) {
		acoll_set_err(c, "agent: more than %d agents in this run; %s/%u not followed", MAX_PEERS, o->name,
			(unsigned)o->domid);
		offer_failed(c, o->domid);
		return;
	}
	struct peer *p = calloc(1, sizeof(*p));
	if (!p)
		return;
	p->xen = true;
	p->domid = o->domid;
	p->agent_pid = o->agent_pid;
	snprintf(p->domain, sizeof(p->domain), "%s", o->name);
	snprintf(p->path, sizeof(p->path), "%s", o->path);
	snprintf(p->tag, sizeof(p->tag), "%s", o->tag);
	char path[128];
	snprintf(path, sizeof(path), "%s/ctl", o->path);
	/* The agent greets once it sees us connected, and reads its clock
	 * for the HELLO then: the stamp that bounds that reading from below
	 * is taken before we connect.  Taken after, a monitor descheduled
	 * between the two (seen: 6 ms, a sanitized run beside two busy
	 * loops) stamps a moment later than the agent's reading, and the
	 * HELLO's round trip proves an interval the truth is outside of:
	 * every later round trip then "moves" the clock, and a guest's true
	 * word of Xen's time is refused against it. */
	uint64_t before_connect = xflow_monotonic_ns();
	struct libxenvchan *v = libxenvchan_client_init(NULL, (int)o->domid, path);
	if (!v) {
		acoll_set_err(c, "agent of %s/%u: cannot connect to its control vchan %s: %s", o->name, (unsigned)o->domid,
			path, strerror(errno ? errno : EIO));
		offer_failed(c, o->domid);
		free(p);
		return;
	}
	xflow_ctl_conn_init_vchan(&p->conn, v);
	p->connected = true;
	p->state = PEER_HELLO;
	/* Its HELLO left after this, which bounds the latency its TSC
	 * anchor may claim and the round trip that places its clock. */
	p->since_ns = before_connect;
	acoll_vet_init(&p->vet, acoll_rate_for(c, true), p->since_ns);
	p->deadline_ns = now + (uint64_t)c->xen_step_ms * 1000000ull * patience(c, o->domid);
	snprintf(p->source, sizeof(p->source), "xflow-agent pid %u over vchan: connecting", p->agent_pid);
	c->peers[c->npeers++] = p;
}

/* Rescan xenstore when it changed: new offers, destroyed domains,
 * agents that withdrew. */
void acoll_xen_tick(struct acoll *c, uint64_t now)
{
	acoll_xtime_ours(c, now);
	if (!xen_discover_due(c->xd, now))
		return;
	for (unsigned i = 0; i < c->npeers; i++) {
		struct peer *p = c->peers[i];
		if (!p->xen || p->gone)
			continue;
		if (!xen_discover_domain_alive(c->xd, p->domid)) {
			snprintf(p->source, sizeof(p->source), "xflow-agent pid %u over vchan: the domain is gone",
				 p->agent_pid);
			acoll_peer_drop(c, p, "the domain is gone");
		} else if (!xen_discover_offer_present(c->xd, p->domid, p->tag)) {
			snprintf(p->source, sizeof(p->source), "xflow-agent pid %u over vchan: the agent withdrew",
				 p->agent_pid);
			acoll_peer_drop(c, p, "the agent withdrew its offer");
		}
	}
	unsigned malformed = 0;
	if (xen_discover_scan(c->xd, xen_found, c, &malformed) < 0)
		acoll_set_err(c, "agent: cannot read xenstore: %s", strerror(errno));
	else if (malformed)
		c->bad_offers += malformed;
}

/* Take the HELLO of an agent found over Xen, connect its record vchan and
 * send its plan. */
void acoll_xen_peer_hello(struct acoll *c, struct peer *p, uint64_t now)
{
	struct xflow_ctl_msg *m = NULL;
	char why[200];
	int rc = xflow_ctl_recv(&p->conn, &m, 0);
	if (rc == 0) {
		if (now > p->deadline_ns)
			peer_late(c, p, "no greeting in time", now - p->since_ns);
		return;
	}
	if (rc < 0) {
		acoll_xen_peer_fail(c, p, p->conn.why ? p->conn.why : strerror(-rc));
		return;
	}
	if (m->type == XFLOW_CTL_REPLY) {
		snprintf(why, sizeof(why), "refused: %s", m->u.reply.message);
		goto fail;
	}
	if (m->type != XFLOW_CTL_HELLO || m->u.hello.ring_offer != XFLOW_CTL_RING_VCHAN) {
		snprintf(why, sizeof(why), "expected a HELLO offering a vchan, got %s", xflow_ctl_type_name(m->type));
		goto fail;
	}
	const struct xflow_ctl_hello *h = &m->u.hello;
	acoll_peer_take_hello(p, h);
	acoll_agent_clock_from_hello(&p->agent_clock, h);
	p->conv = h->clock == (uint16_t)c->clock.kind ? &c->clock : &p->agent_clock;
	if (h->clock == XFLOW_CLOCK_MONOTONIC && h->base_ns) {
		struct guest_clock_in in = { .tsc_hz = h->tsc_hz, .base_tick = h->base_tick, .base_ns = h->base_ns,
					     .since_ns = p->since_ns };
		xflow_clock_pair(&in.now_tick, &in.now_ns);
		/* Our TSC is trusted where our own records use it only. */
		if (c->clock.kind != XFLOW_CLOCK_TSC)
			in.tsc_hz = 0;
		char cwhy[240];
		enum guest_clock_how how = guest_clock_offset(&in, &p->offset_ns, cwhy, sizeof(cwhy));
		if (how == GUEST_CLOCK_TSC_REFUSED)
			acoll_set_err(c, "agent of %s/%u: %s", p->domain, (unsigned)p->domid, cwhy);
		if (how == GUEST_CLOCK_TSC) {
			p->clk = PEER_CLOCK_TSC;
			snprintf(p->clock_how, sizeof(p->clock_how), "clock by TSC anchor");
		} else {
			/* Tightened by the STATS round trips that follow. */
			p->clk = PEER_CLOCK_RT;
			guest_clock_rt_init(&p->rt, p->offset_ns, (in.now_ns - in.since_ns) / 2 + 1, in.now_ns);
			acoll_bound_note(p);
			snprintf(p->clock_how, sizeof(p->clock_how), "clock by HELLO round trip, within %.1fms",
				 (double)(in.now_ns - in.since_ns) / 2e6);
		}
	}
	acoll_xtime_heard(c, p, h->xen_time, h->xen_minus_mono);
	xflow_ctl_msg_free(m);
	m = NULL;
	char path[128];
	snprintf(path, sizeof(path), "%s/rec", p->path);
	p->rec = libxenvchan_client_init(NULL, (int)p->domid, path);
	if (!p->rec) {
		snprintf(why, sizeof(why), "cannot connect to its record vchan %s", path);
		goto fail;
	}
	p->rec->blocking = 0;
	p->ring_ok = true;
	if (!(p->pc = acoll_plan_for(c, p))) {
		snprintf(why, sizeof(why), "no plan: %.180s", c->err);
		goto fail;
	}
	struct xflow_ctl_msg pm = acoll_plan_load_msg(p);
	if ((rc = xflow_ctl_send_async(&p->conn, &pm))) {
		snprintf(why, sizeof(why), "cannot send its plan: %s", strerror(-rc));
		goto fail;
	}
	p->plan_seq = pm.seq;
	p->state = PEER_PLAN;
	p->plan_sent_ns = now;
	p->deadline_ns = now + (uint64_t)c->timeout_ms * 1000000ull * patience(c, p->domid);
	snprintf(p->source, sizeof(p->source), "xflow-agent pid %u over vchan: weaving", p->agent_pid);
	return;
fail:
	xflow_ctl_msg_free(m);
	acoll_xen_peer_fail(c, p, why);
}

/* The answer to the plan of an agent over Xen. */
void acoll_xen_peer_planned(struct acoll *c, struct peer *p, uint64_t now)
{
	struct xflow_ctl_msg *r = NULL;
	int rc = xflow_ctl_flush(&p->conn);
	if (rc >= 0)
		while ((rc = acoll_peer_control(c, p, 0, &r)) > 0 && !r)
			;
	if (rc < 0) {
		acoll_xen_peer_fail(c, p, p->conn.why ? p->conn.why : strerror(-rc));
		return;
	}
	if (!r) {
		if (now > p->deadline_ns)
			peer_late(c, p, "no answer to its plan in time", now - p->plan_sent_ns);
		return;
	}
	char why[200];
	if (acoll_take_plan_reply(c, p, r, why, sizeof(why))) {
		acoll_xen_peer_fail(c, p, why);
		return;
	}
	p->state = PEER_LIVE;
	acoll_xen_peer_source(p);
	/* Aspects switched off before this agent came: off here too. */
	for (uint32_t i = 0; i < c->naspects; i++) {
		if (c->aspects[i].enabled)
			continue;
		struct xflow_ctl_msg m = { .type = XFLOW_CTL_ASPECT_SET };
		m.u.aspect = (struct xflow_ctl_aspect_set){ .kind = (uint8_t)c->aspects[i].kind, .enabled = 0,
							    .index = c->aspects[i].index };
		xflow_ctl_send_async(&p->conn, &m);
	}
}
