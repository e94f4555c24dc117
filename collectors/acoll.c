/*
 * The agent collector: records from xflow-agents (guestrt/agent/agent.h) through
 * their rings, driven with the control protocol (xflow/control.h).
 *
 * Options (comma-separated key=value, keys repeatable where said):
 *   socket=PATH    an agent's control socket (repeatable)
 *   dir=DIR        every socket in DIR; without socket=, dir= or xen, the
 *                  agents' default directory (xflow_ctl_default_dir())
 *   flows=FILE     a flow file to weave (repeatable; at least one)
 *   bin=DOM:PATH   another binary of domain DOM (a shared library ...),
 *                  besides the executable each agent names (repeatable)
 *   timeout=MS     how long an agent may take to load its plan, and to
 *                  greet (over Xen at most 10 s) (default 30000)
 *   rate=N         records a second one agent may send; more are refused
 *                  and counted as a flood (0: no limit; by default
 *                  ACOLL_RATE_DEFAULT over Xen, no limit for a local one)
 *
 * At open the collector connects to every agent, takes the ring it offers,
 * compiles the flow files once, builds each domain's plan from the binaries
 * of that domain (cached by domain name and executable, so guests running
 * the same kernel share one) and sends it.  Records are read from the rings
 * and their timestamps converted with the monitor's own calibration (the
 * agent's, from its HELLO, only when the two clocks differ in kind).  A ring
 * that turns out corrupt, or an agent that goes away, is reported and
 * dropped; the others go on.
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

void acoll_set_err(struct acoll *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err, sizeof(c->err), fmt, ap);
	va_end(ap);
}

/* ---- the collector hooks ------------------------------------------------------------ */

static void agent_close(struct xflow_collector *xc);

static int agent_open(const char *options, struct xflow_collector **out, char *err, size_t errlen)
{
	struct acoll *c = calloc(1, sizeof(*c));
	int rc;
	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->timeout_ms = 30000;
	c->rate = ACOLL_RATE_UNSET;
	xflow_clock_init(&c->clock, 0);
	if ((rc = acoll_parse_options(c, options)) || (rc = acoll_compile_flows(c)))
		goto fail;
	c->xen_step_ms = c->timeout_ms < XEN_STEP_MS ? c->timeout_ms : XEN_STEP_MS;
	if (c->xen && (rc = xen_discover_open(&c->xd, c->err, sizeof(c->err))))
		goto fail;
	/* Our side of Xen's time: its slow part (the kernel's BTF) now,
	 * before any guest's greeting is timed. */
	if (c->xen && xen_time_reader_prepare(&c->xtime_r, c->xtime_why, sizeof(c->xtime_why)) &&
	    !c->xtime_r.simulated)
		c->xtime_never = true;
	/* Greet everyone, then weave, then wait for all the plans: agents
	 * install their probes in parallel. */
	for (unsigned i = 0; i < c->npeers; i++)
		if ((rc = acoll_peer_connect(c, c->peers[i])))
			goto fail;
	/* An agent refused at its greeting is gone: the others go on. */
	for (unsigned i = 0; i < c->npeers; i++)
		if (!c->peers[i]->gone && (rc = acoll_peer_send_plan(c, c->peers[i])))
			goto fail;
	for (unsigned i = 0; i < c->npeers; i++)
		if (!c->peers[i]->gone && (rc = acoll_peer_wait_plan(c, c->peers[i])))
			goto fail;
	*out = (struct xflow_collector *)c;
	return 0;
fail:
	snprintf(err, errlen, "%s", c->err[0] ? c->err : strerror(-rc));
	agent_close((struct xflow_collector *)c);
	return rc ? rc : -EINVAL;
}

static int agent_pollfds(struct xflow_collector *xc, int *fds, int max)
{
	struct acoll *c = (struct acoll *)xc;
	int n = 0;
	for (unsigned i = 0; i < c->npeers; i++) {
		struct peer *p = c->peers[i];
		if (p->ring_ok && !p->xen && n < max && p->nt.base.ops->pollfd)
			fds[n++] = p->nt.base.ops->pollfd(&p->nt.base);
		if (p->connected && n < max)
			fds[n++] = p->conn.fd;
		if (p->rec && n < max)
			fds[n++] = libxenvchan_fd_for_select(p->rec);
	}
	if (c->xd && n < max)
		fds[n++] = xen_discover_fd(c->xd);
	return n;
}

/* Check one record against what @p may say and hand it on. */
static bool peer_emit(struct acoll *c, struct peer *p, const struct xflow_record *r, uint64_t now,
		      xflow_collector_emit_fn emit, void *ctx)
{
	const struct xflow_plan_domain *d = p->pc ? &p->pc->plan->domains[0] : NULL;
	/* An agent speaks for its own domain and plan only. */
	if (r->domain_id == p->domid && (!d || r->site_id >= d->nsites)) {
		p->bad++;
		c->bad++;
		return false;
	}
	uint64_t t = xflow_clock_to_ns(p->conv, r->timestamp) + (uint64_t)p->offset_ns;
	if (p->xen && !p->offset_checked && r->domain_id == p->domid) {
		/* A guest's clock may not be ours (its own boot, an offset
		 * TSC): moved onto ours by its first record, which is fresh. */
		int64_t skew = (int64_t)(xflow_monotonic_ns() - t);
		if (skew > XEN_CLOCK_SKEW_NS || skew < -XEN_CLOCK_SKEW_NS) {
			p->offset_ns += skew;
			t += (uint64_t)skew;
			p->clk = PEER_CLOCK_FIRST;
			p->progress_ns = 0; /* said on the clock it no longer has */
			acoll_bound_note(p);
		}
		p->offset_checked = true;
	}
	if (acoll_vet_record(&p->vet, p->domid, r, t, now, p->vet.bound) != ACOLL_GIVEN)
		return false;
	p->records++;
	emit(ctx, r, t);
	return true;
}

/*
 * The @n records popped into c->buf, each given or refused: the common
 * record (a site of its plan, judged by acoll_vet_quick()) goes to @emit
 * here, anything else through peer_emit().  Returns how many were given.
 */
static long peer_give(struct acoll *c, struct peer *p, long n, uint64_t now, xflow_collector_emit_fn emit,
		      void *ctx)
{
	const struct xflow_plan_domain *d = p->pc ? &p->pc->plan->domains[0] : NULL;
	uint32_t nsites = d ? d->nsites : 0;
	const struct xflow_clock *conv = p->conv;
	uint64_t offset = (uint64_t)p->offset_ns;
	/* Which records are ids leaving through a ring (acoll_vet_flow). */
	p->vet.roles = d ? p->pc->roles : NULL;
	p->vet.nroles = nsites;
	/* A guest's first record may move its clock (peer_emit). */
	if (p->xen && !p->offset_checked)
		nsites = 0;
	long done = 0;
	for (long i = 0; i < n; i++) {
		const struct xflow_record *r = &c->buf[i];
		uint64_t t = xflow_clock_to_ns(conv, r->timestamp) + offset;
		if (r->site_id < nsites && acoll_vet_quick(&p->vet, p->domid, r, t)) {
			p->records++;
			emit(ctx, r, t);
			done++;
		} else {
			done += peer_emit(c, p, r, now, emit, ctx);
		}
	}
	return done;
}

/* At most @max records of @p's ring, given or refused: an agent whose
 * records are all refused must not keep us reading for ever.  Returns how
 * many were given. */
static long peer_read(struct acoll *c, struct peer *p, uint64_t now, xflow_collector_emit_fn emit, void *ctx,
		      size_t max)
{
	long done = 0;
	size_t taken = 0;
	/* Before the pop: what it claims is in the ring by then. */
	uint64_t held = xflow_ring_held_before(&p->cons);
	p->vet.bound = acoll_peer_clock_bound(p);
	acoll_vet_read_begin(&p->vet, now, p->vet.bound);
	while (taken < max) {
		size_t want = max - taken < POP_CHUNK ? max - taken : POP_CHUNK;
		long n = xflow_ring_pop_records(&p->cons, c->buf, want);
		done += peer_give(c, p, n, now, emit, ctx);
		if (n > 0)
			taken += (size_t)n;
		if (n < 0) {
			char why[160];
			snprintf(why, sizeof(why), "ring corrupt: %s; dropped", p->cons.corrupt_why);
			p->ring_ok = false;
			acoll_peer_drop(c, p, why);
			break;
		}
		if ((size_t)n < want)
			break;
	}
	acoll_peer_held(p, held, p->cons.prod_seen, now);
	return done;
}

/* The records of an agent over Xen: at most @max, whatever it sends. */
static long peer_read_xen(struct acoll *c, struct peer *p, uint64_t now, xflow_collector_emit_fn emit, void *ctx,
			  size_t max)
{
	long done = 0;
	size_t taken = 0;
	p->vet.bound = acoll_peer_clock_bound(p);
	acoll_vet_read_begin(&p->vet, now, p->vet.bound);
	while (taken < max) {
		size_t want = max - taken < POP_CHUNK ? max - taken : POP_CHUNK;
		long n = xflow_xen_rstream_read(p->rec, &p->rs, c->buf, want);
		done += peer_give(c, p, n, now, emit, ctx);
		if (n > 0)
			taken += (size_t)n;
		if (n == 0 && p->detached)
			p->empty_after_detach++;
		if (n < 0 || (n == 0 && p->gone)) {
			/* Closed, garbage, or drained after the agent went. */
			libxenvchan_close(p->rec);
			p->rec = NULL;
			p->ring_ok = false;
			if (n == -EBADMSG) {
				char why[160];
				snprintf(why, sizeof(why), "sent %u bad records in a row (%s); dropped",
					 XFLOW_XEN_MAX_BAD_RUN, p->rs.why ? p->rs.why : "?");
				acoll_xen_peer_fail(c, p, why);
			} else if (!p->gone) {
				acoll_peer_drop(c, p, "its record vchan closed");
			}
			break;
		}
		if ((size_t)n < want)
			break;
	}
	return done;
}

static long agent_read(struct xflow_collector *xc, uint64_t now_ns, xflow_collector_emit_fn emit, void *ctx,
		       size_t max)
{
	struct acoll *c = (struct acoll *)xc;
	long total = 0;
	/* The TSC's rate measured again over all the run so far: the 20 ms
	 * of calibration would have the times drift away from Xen's trace
	 * and other domains' clocks (xflow/clock.h). */
	if (now_ns - c->clock_refined_ns >= CLOCK_REFINE_NS) {
		xflow_clock_refine(&c->clock);
		c->clock_refined_ns = now_ns;
	}
	if (c->xd)
		acoll_xen_tick(c, now_ns);
	/* Start with the next agent each call: a busy one must not starve
	 * the others' rings (their records would reach the reorder window
	 * late and split flows). */
	unsigned first = c->npeers ? c->next_peer++ % c->npeers : 0;
	for (unsigned k = 0; k < c->npeers; k++) {
		struct peer *p = c->peers[(first + k) % c->npeers];
		if (p->xen && p->connected && p->state == PEER_HELLO) {
			acoll_xen_peer_hello(c, p, now_ns);
			continue;
		}
		if (p->xen && p->connected && p->state == PEER_PLAN)
			acoll_xen_peer_planned(c, p, now_ns);
		if (p->xen && p->ring_ok) {
			total += peer_read_xen(c, p, now_ns, emit, ctx, max - (size_t)total);
			acoll_vet_read_done(&p->vet, now_ns);
			if ((size_t)total >= max)
				break;
		}
		if (p->connected && p->state == PEER_LIVE) {
			int rc = xflow_ctl_flush(&p->conn);
			int budget = 64; /* messages per call: a chatty agent cannot keep us */
			while (rc >= 0 && budget-- > 0 && (rc = acoll_peer_control(c, p, 0, NULL)) > 0)
				;
			if (rc < 0)
				/* One that answered our DETACH leaves as asked. */
				acoll_peer_drop(c, p, p->detached ? NULL
								  : rc == -ECONNRESET ? "went away"
								  : p->conn.why	   ? p->conn.why
										   : strerror(-rc));
			else if (!p->stats_pending && now_ns - p->stats_sent_ns >= STATS_EVERY_NS) {
				struct xflow_ctl_msg m = { .type = XFLOW_CTL_STATS };
				if (xflow_ctl_send_async(&p->conn, &m) == 0) {
					p->stats_pending = true;
					p->stats_sent_ns = now_ns;
				}
			}
		}
		if (p->ring_ok && !p->xen) {
			if (p->nt.base.ops->ack)
				p->nt.base.ops->ack(&p->nt.base);
			long got = peer_read(c, p, now_ns, emit, ctx, max - (size_t)total);
			total += got;
			/* Drained: announce that we sleep on the eventfd the
			 * monitor polls, so the agent notifies at its next batch
			 * or idle flush; what was published meanwhile is read now. */
			if (p->ring_ok && (size_t)total < max && xflow_ring_arm(&p->cons) == 1)
				total += peer_read(c, p, now_ns, emit, ctx, max - (size_t)total);
			acoll_vet_read_done(&p->vet, now_ns);
			/* Records left behind by an agent that went away are
			 * still read; once drained, the ring is let go. */
			if (p->gone && p->ring_ok && p->cons.cons == atomic_load(&p->cons.hdr->prod))
				p->ring_ok = false;
		}
		if ((size_t)total >= max)
			break;
	}
	return total;
}

/*
 * Records a peer's agent lost, wherever: over Xen, what its last STATS
 * said; on this host, the ring's counter read now (fresher than any STATS)
 * and what the last STATS said was lost before the ring, in the targets'
 * lanes (full, a thread without one, a hit inside a hit).
 */
static uint64_t peer_drops(const struct peer *p)
{
	if (p->xen)
		return p->ring_dropped;
	return p->shm.base ? xflow_ring_dropped(&p->cons) + p->lost_before_ring : 0;
}

static void agent_stats(struct xflow_collector *xc, struct xflow_collector_stats *out)
{
	struct acoll *c = (struct acoll *)xc;
	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < c->npeers; i++) {
		struct peer *p = c->peers[i];
		out->records += p->records;
		out->drops += peer_drops(p);
		out->bad += p->bad + p->cons.bad_records + p->rs.bad;
	}
	out->ndomains = c->npeers;
}

static struct peer *peer_of(struct acoll *c, uint16_t domain)
{
	/* Newest first: an agent that came back speaks for its domain now. */
	for (unsigned i = c->npeers; i-- > 0;)
		if (c->peers[i]->domid == domain && c->peers[i]->pc)
			return c->peers[i];
	return NULL;
}

static int agent_site_info(struct xflow_collector *xc, uint16_t domain, uint32_t site, struct xflow_site_info *out)
{
	struct acoll *c = (struct acoll *)xc;
	struct peer *p = peer_of(c, domain);
	if (!p || site >= p->pc->plan->domains[0].nsites)
		return -ENOENT;
	const struct xflow_plan_site *s = &p->pc->plan->domains[0].sites[site];
	out->domain = p->domain;
	/* A kernel's site has no source line (its BTF has none for the
	 * kernel's functions, and its DWARF is not read): named by what it is. */
	out->file = s->file ? s->file
		  : s->kind == XFLOW_SITE_TRACEPOINT ? "tracepoint"
		  : s->kind == XFLOW_SITE_ENTRY ? "fentry"
		  : s->kind == XFLOW_SITE_RETURN ? "fexit" : "?";
	out->line = s->line;
	out->function = s->func ? s->func : "?";
	out->what = p->pc->what[site];
	out->roles = p->pc->roles[site];
	return 0;
}

static int agent_domain_info(struct xflow_collector *xc, uint32_t i, struct xflow_domain_info *out)
{
	struct acoll *c = (struct acoll *)xc;
	if (i >= c->npeers)
		return -ENOENT;
	struct peer *p = c->peers[i];
	/* A full lane is said where the domain is: the drops alone do not
	 * say that a bigger lane (not a faster monitor) is the cure. */
	const char *source = p->source;
	if (!p->xen && p->lost_before_ring) {
		snprintf(p->source_said, sizeof(p->source_said),
			 "%s; %" PRIu64 " records lost in the targets' lanes (full: xflow-agent --lane-slots; "
			 "none free: --lanes)", p->source,
			 p->lost_before_ring);
		source = p->source_said;
	}
	/* Its flow-id lies that stood (all, once it is gone: nothing of it
	 * is to come that could forgive them). */
	uint64_t now = xflow_monotonic_ns();
	acoll_vet_settle(&p->vet, p->gone ? UINT64_MAX : now);
	/* What waits in its lanes was not given: its progress is no further. */
	uint64_t held = acoll_peer_held_ns(p, now);
	uint64_t progress = p->gone || !p->connected ? 0 : p->progress_ns;
	if (held && held < progress)
		progress = held;
	*out = (struct xflow_domain_info){ .id = p->domid, .name = p->domain, .source = source,
					   .targets = p->ntargets, .records = p->records,
					   .drops = peer_drops(p),
					   .gone = p->gone, .bad = p->bad + p->cons.bad_records + p->rs.bad,
					   .clock_bound_ns = acoll_peer_clock_bound(p), .lies = p->vet.lies,
					   .progress_ns = progress, .held_ns = held,
					   .planning = !p->gone && p->state != PEER_LIVE };
	return 0;
}

/* Does advice @i belong to aspect @a? */
bool acoll_in_aspect(const struct acoll *c, const struct aspect *a, uint32_t i)
{
	if (a->kind == XFLOW_CTL_ASPECT_ADVICE)
		return i == a->index;
	struct xflow_advice_info ai;
	return xflow_unit_advice(c->unit, i, &ai) == 0 && ai.origin != XFLOW_ADVICE_USER && ai.flow >= 0 &&
	       (uint32_t)ai.flow == a->index;
}

static int agent_aspect_info(struct xflow_collector *xc, uint32_t i, struct xflow_aspect_info *out)
{
	struct acoll *c = (struct acoll *)xc;
	if (i >= c->naspects)
		return -ENOENT;
	struct aspect *a = &c->aspects[i];
	*out = (struct xflow_aspect_info){ .name = a->name, .enabled = a->enabled };
	if (a->warnings) {
		snprintf(a->note, sizeof(a->note), "%u warning%s; the first: %s", a->warnings,
			 a->warnings == 1 ? "" : "s", a->first_warning);
		out->note = a->note;
	}
	for (unsigned k = 0; k < c->npeers; k++) {
		const struct peer *p = c->peers[k];
		for (uint32_t j = 0; j < p->nadv; j++) {
			if (!acoll_in_aspect(c, a, j))
				continue;
			out->hits += p->adv[j].hits;
			out->drops += p->adv[j].drops;
			out->faults += p->adv[j].faults;
		}
		/* Sites from the plan: known before any STATS, and after the
		 * agent is gone. */
		if (!p->pc)
			continue;
		const struct xflow_plan_domain *d = &p->pc->plan->domains[0];
		uint32_t last = UINT32_MAX;
		for (uint32_t b = 0; b < d->nbindings; b++)
			if (d->bindings[b].site != last && acoll_in_aspect(c, a, d->bindings[b].advice)) {
				last = d->bindings[b].site;
				out->sites++;
				if (p->trap && last < p->ntrap && p->trap[last]) {
					out->trap_sites++;
					if (!out->trap_why)
						out->trap_why = p->trap_why;
				}
			}
	}
	return 0;
}

static int agent_aspect_set(struct xflow_collector *xc, uint32_t i, int enabled)
{
	struct acoll *c = (struct acoll *)xc;
	if (i >= c->naspects)
		return -ENOENT;
	struct aspect *a = &c->aspects[i];
	a->enabled = enabled ? 1 : 0;
	int rc = 0;
	for (unsigned k = 0; k < c->npeers; k++) {
		struct peer *p = c->peers[k];
		if (!p->connected || p->state != PEER_LIVE)
			continue;
		struct xflow_ctl_msg m = { .type = XFLOW_CTL_ASPECT_SET };
		m.u.aspect = (struct xflow_ctl_aspect_set){ .kind = (uint8_t)a->kind, .enabled = (uint8_t)a->enabled,
							    .index = a->index };
		/* The agent applies it as soon as it reads it; its REPLY is
		 * taken by read() like any other. */
		int r = p->xen ? xflow_ctl_send_async(&p->conn, &m) : xflow_ctl_send(&p->conn, &m, NULL, 0, 200);
		if (r && !rc)
			rc = r;
	}
	return rc;
}

static unsigned agent_carried_bits(struct xflow_collector *xc, uint16_t kind)
{
	struct acoll *c = (struct acoll *)xc;
	return xflow_weave_carried_bits(c->unit, (int)kind);
}

static const char *agent_last_error(struct xflow_collector *xc)
{
	struct acoll *c = (struct acoll *)xc;
	return c->err[0] ? c->err : NULL;
}

/* Whether everything @p will send has been read: it answered our DETACH
 * (having moved its targets' records first) or was not asked, and its
 * records are read: the ring empty, or over Xen the vchan found empty
 * twice since the answer (once could be a record stream's half record). */
static bool peer_done(const struct peer *p)
{
	if (p->connected && p->detach_seq && !p->detached)
		return false;
	if (!p->ring_ok)
		return true;
	if (p->xen)
		return p->empty_after_detach >= 2 || !p->detached;
	return p->cons.cons == atomic_load(&p->cons.hdr->prod);
}

static int agent_detach(struct xflow_collector *xc, uint64_t now_ns)
{
	struct acoll *c = (struct acoll *)xc;
	(void)now_ns;
	bool done = true;
	for (unsigned i = 0; i < c->npeers; i++) {
		struct peer *p = c->peers[i];
		if (!p->detach_asked) {
			p->detach_asked = true;
			struct xflow_ctl_msg m = { .type = XFLOW_CTL_DETACH };
			if (p->connected && p->state == PEER_LIVE && xflow_ctl_send_async(&p->conn, &m) == 0)
				p->detach_seq = m.seq;
		}
		if (p->connected && xflow_ctl_flush(&p->conn) < 0)
			acoll_peer_drop(c, p, NULL);
		done = done && peer_done(p);
	}
	return done;
}

static void agent_close(struct xflow_collector *xc)
{
	struct acoll *c = (struct acoll *)xc;
	if (!c)
		return;
	xen_time_reader_close(&c->xtime_r);
	/* Ask every agent to detach, then wait for each answer (it comes
	 * once the agent has read everything before it), so that the agents
	 * restore their targets now rather than when they notice the hangup. */
	for (unsigned i = 0; i < c->npeers; i++) {
		struct peer *p = c->peers[i];
		/* Asked already (agent_detach): its answer was waited for
		 * there, or the monitor stopped waiting. */
		p->plan_seq = 0;
		if (!p->connected || p->detach_asked)
			continue;
		struct xflow_ctl_msg m = { .type = XFLOW_CTL_DETACH };
		if ((p->xen ? xflow_ctl_send_async(&p->conn, &m) : xflow_ctl_send(&p->conn, &m, NULL, 0, 500)) == 0)
			p->plan_seq = m.seq;
		else
			p->plan_seq = 0;
	}
	for (unsigned i = 0; i < c->npeers; i++) {
		struct peer *p = c->peers[i];
		/* A guest gets less patience than a local agent. */
		uint64_t deadline = xflow_monotonic_ns() + (p->xen ? 500000000u : 2000000000u);
		while (p->connected && p->plan_seq && xflow_monotonic_ns() < deadline) {
			struct xflow_ctl_msg *m;
			if (p->xen && xflow_ctl_flush(&p->conn) < 0)
				break;
			int rc = xflow_ctl_recv(&p->conn, &m, 100);
			if (rc < 0)
				break;
			if (rc == 1) {
				bool done = m->type == XFLOW_CTL_REPLY && m->u.reply.req_type == XFLOW_CTL_DETACH;
				xflow_ctl_msg_free(m);
				if (done)
					break;
			}
		}
		acoll_peer_free(p);
	}
	for (unsigned i = 0; i < c->ncache; i++) {
		xflow_plan_free(c->cache[i].plan);
		free(c->cache[i].buf);
		free(c->cache[i].domain);
		free(c->cache[i].exe);
		free(c->cache[i].what);
		free(c->cache[i].roles);
	}
	xen_discover_close(c->xd);
	xflow_unit_free(c->unit);
	free(c->aspects);
	free(c->opts);
	free(c);
}

const struct xflow_collector_ops xflow_collector_agent = {
	.abi = XFLOW_COLLECTOR_ABI,
	.name = "agent",
	.help = "records from xflow-agents, woven live "
		"(socket=PATH|dir=DIR|xen,flows=FILE,bin=DOMAIN:PATH,timeout=MS,rate=N)",
	.open = agent_open,
	.pollfds = agent_pollfds,
	.read = agent_read,
	.stats = agent_stats,
	.site_info = agent_site_info,
	.domain_info = agent_domain_info,
	.aspect_info = agent_aspect_info,
	.aspect_set = agent_aspect_set,
	.carried_bits = agent_carried_bits,
	.last_error = agent_last_error,
	.close = agent_close,
	.detach = agent_detach,
};
