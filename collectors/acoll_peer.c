/*
 * The agent collector's peers (collectors/acoll_priv.h): connecting to an
 * agent, taking its greeting and ring, and its control messages: statistics,
 * the plan sent and its reply.
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

/* ---- peers ------------------------------------------------------------------ */

void acoll_peer_drop(struct acoll *c, struct peer *p, const char *why)
{
	(void)c;
	if (p->connected)
		xflow_ctl_conn_close(&p->conn);
	p->connected = false;
	p->gone = true;
	if (why)
		acoll_set_err(c, "agent %s (domain %s/%u): %s", p->path, p->domain, (unsigned)p->domid, why);
}

void acoll_peer_free(struct peer *p)
{
	if (p->connected)
		xflow_ctl_conn_close(&p->conn);
	if (p->rec)
		libxenvchan_close(p->rec);
	if (p->nt.base.ops && p->nt.base.ops->close)
		p->nt.base.ops->close(&p->nt.base);
	xflow_shm_release(&p->shm);
	acoll_vet_fini(&p->vet);
	free(p->adv);
	free(p->trap);
	free(p->kmods);
	free(p);
}

/* A clock that converts the agent's ticks when it counts another kind
 * of clock than ours. */
void acoll_agent_clock_from_hello(struct xflow_clock *k, const struct xflow_ctl_hello *h)
{
	memset(k, 0, sizeof(*k));
	k->kind = (enum xflow_clock_kind)h->clock;
	if (k->kind == XFLOW_CLOCK_TSC) {
		k->tsc_hz = h->tsc_hz;
		k->base_tick = h->base_tick;
		k->base_ns = h->base_ns;
		k->mult = (uint64_t)(((unsigned __int128)1000000000u << 32) / h->tsc_hz);
	}
}

/* Take a HELLO's description of the agent (not its ring). */
void acoll_peer_take_hello(struct peer *p, const struct xflow_ctl_hello *h)
{
	if (!p->xen) {
		/* Over Xen the domain is xenstore's, set when it was found. */
		p->domid = h->domain_id;
		snprintf(p->domain, sizeof(p->domain), "%s", h->domain);
	}
	p->agent_pid = h->agent_pid;
	p->ntargets = h->ntargets;
	for (uint32_t i = 0; i < h->ntargets && !p->exe[0]; i++) {
		if (h->targets[i].exe[0]) {
			snprintf(p->exe, sizeof(p->exe), "%s", h->targets[i].exe);
		} else if (!p->xen) {
			char link[64];
			snprintf(link, sizeof(link), "/proc/%u/exe", h->targets[i].pid);
			ssize_t n = readlink(link, p->exe, sizeof(p->exe) - 1);
			p->exe[n > 0 ? n : 0] = 0;
		}
	}
	/* The decoder let through only names of [A-Za-z0-9_-]: nothing in
	 * them reads as a path or another item of the spec. */
	p->krelease[0] = 0;
	free(p->kmods);
	p->kmods = NULL;
	if (!jp_kbtf_is_kernel(p->exe) || !h->kernel_release || !h->kernel_release[0])
		return;
	snprintf(p->krelease, sizeof(p->krelease), "%s", h->kernel_release);
	size_t len = 1;
	for (uint32_t i = 0; i < h->nmodules; i++)
		len += strlen(h->modules[i]) + 2;
	if (!(p->kmods = malloc(len)))
		return;
	char *w = p->kmods;
	*w = 0;
	for (uint32_t i = 0; i < h->nmodules; i++)
		w += sprintf(w, "+?%s", h->modules[i]);
}

/* Connect and take the HELLO and its ring. */
int acoll_peer_connect(struct acoll *c, struct peer *p)
{
	acoll_vet_init(&p->vet, acoll_rate_for(c, false), xflow_monotonic_ns());
	int fd = xflow_ctl_connect(p->path);
	if (fd < 0) {
		acoll_set_err(c, "agent socket %s: %s", p->path, strerror(-fd));
		return fd;
	}
	int rc = xflow_ctl_conn_init_unix(&p->conn, fd);
	if (rc) {
		close(fd);
		return rc;
	}
	p->connected = true;
	struct xflow_ctl_msg *m = NULL;
	rc = xflow_ctl_recv(&p->conn, &m, c->timeout_ms);
	if (rc <= 0) {
		acoll_set_err(c, "agent socket %s: no greeting (%s)", p->path,
			rc == 0 ? "timed out" : p->conn.why ? p->conn.why : strerror(-rc));
		return rc ? rc : -ETIMEDOUT;
	}
	if (m->type == XFLOW_CTL_REPLY) {
		acoll_set_err(c, "agent socket %s: %s", p->path, m->u.reply.message);
		rc = m->u.reply.status ? m->u.reply.status : -EPROTO;
		goto out;
	}
	if (m->type != XFLOW_CTL_HELLO || m->u.hello.ring_offer != XFLOW_CTL_RING_LOCAL) {
		acoll_set_err(c, "agent socket %s: expected a HELLO with a local ring, got %s", p->path,
			xflow_ctl_type_name(m->type));
		rc = -EPROTO;
		goto out;
	}
	const struct xflow_ctl_hello *h = &m->u.hello;
	/* Locally the HELLO is all that says which domain an agent is: a
	 * second agent claiming a domain another speaks for would have its
	 * records taken as that domain's.  It is refused, its lie counted
	 * in a row of its own, and the others go on. */
	for (unsigned i = 0; i < c->npeers; i++) {
		const struct peer *o = c->peers[i];
		if (o == p || !o->connected || o->gone || o->xen || o->domid != h->domain_id)
			continue;
		p->vet.lies.other_domain++;
		p->domid = ACOLL_DOMID_REFUSED;
		p->agent_pid = h->agent_pid;
		snprintf(p->domain, sizeof(p->domain), "refused");
		snprintf(p->source, sizeof(p->source), "xflow-agent pid %u via %s: refused, it greeted as domain %u",
			 h->agent_pid, p->path, (unsigned)h->domain_id);
		acoll_peer_drop(c, p, NULL);
		acoll_set_err(c, "agent %s (pid %u) greeted as domain %u, which the agent %s (pid %u) speaks for: refused",
			p->path, h->agent_pid, (unsigned)h->domain_id, o->path, o->agent_pid);
		rc = 0;
		goto out;
	}
	acoll_peer_take_hello(p, h);
	/* The descriptors become ours; the message must not close them. */
	int memfd = m->fds[0], efd = m->fds[1];
	m->fds[0] = m->fds[1] = -1;
	if ((rc = xflow_eventfd_notifier_init(&p->nt, efd))) {
		close(memfd);
		goto out;
	}
	if ((rc = xflow_shm_map(memfd, h->region_size, &p->shm))) {
		acoll_set_err(c, "agent %s: cannot map its ring: %s", p->path, strerror(-rc));
		goto out;
	}
	if ((rc = xflow_ring_consumer_init(&p->cons, p->shm.base, p->shm.size, XFLOW_RECORD_SIZE, &p->nt.base))) {
		acoll_set_err(c, "agent %s: bad ring: %s", p->path, p->cons.corrupt_why);
		goto out;
	}
	if (p->cons.nslots != h->nslots || (unsigned)p->cons.clock != h->clock) {
		acoll_set_err(c, "agent %s: the ring and its HELLO disagree", p->path);
		rc = -EPROTO;
		goto out;
	}
	acoll_agent_clock_from_hello(&p->agent_clock, h);
	p->conv = p->cons.clock == c->clock.kind ? &c->clock : &p->agent_clock;
	p->ring_ok = true;
	snprintf(p->source, sizeof(p->source), "xflow-agent pid %u via %s", p->agent_pid, p->path);
out:
	xflow_ctl_msg_free(m);
	return rc;
}

int acoll_peer_control(struct acoll *c, struct peer *p, int timeout_ms, struct xflow_ctl_msg **plan_reply)
{
	struct xflow_ctl_msg *m;
	int rc = xflow_ctl_recv(&p->conn, &m, timeout_ms);
	if (rc <= 0)
		return rc;
	switch (m->type) {
	case XFLOW_CTL_REPLY:
		if (m->u.reply.req_type == XFLOW_CTL_STATS) {
			p->stats_pending = false;
			if (m->u.reply.status == 0) {
				acoll_handle_stats(p, &m->u.reply.u.stats);
				acoll_peer_clock_refine(c, p, &m->u.reply.u.stats);
				acoll_peer_progress(p, m->u.reply.u.stats.clock_now);
				acoll_xtime_heard(c, p, m->u.reply.u.stats.xen_time, m->u.reply.u.stats.xen_minus_mono);
			}
		} else if (m->u.reply.req_type == XFLOW_CTL_DETACH && p->detach_asked &&
			   m->u.reply.req_seq == p->detach_seq) {
			/* It moved what its targets recorded before answering. */
			p->detached = true;
		} else if (m->u.reply.req_type == XFLOW_CTL_PLAN_LOAD && plan_reply &&
			   m->u.reply.req_seq == p->plan_seq) {
			*plan_reply = m;
			return 1;
		} else if (m->u.reply.status) {
			acoll_set_err(c, "agent of %s/%u: %s", p->domain, (unsigned)p->domid, m->u.reply.message);
		}
		break;
	case XFLOW_CTL_EVENT:
		acoll_set_err(c, "agent of %s/%u: %s", p->domain, (unsigned)p->domid, m->u.event.message);
		break;
	default:
		acoll_set_err(c, "agent of %s/%u sent an unexpected %s", p->domain, (unsigned)p->domid,
			xflow_ctl_type_name(m->type));
		xflow_ctl_msg_free(m);
		return -EPROTO;
	}
	xflow_ctl_msg_free(m);
	return 1;
}

/* The PLAN_LOAD of @p's plan (p->pc). */
struct xflow_ctl_msg acoll_plan_load_msg(const struct peer *p)
{
	struct xflow_ctl_msg m = { .type = XFLOW_CTL_PLAN_LOAD };
	m.u.plan_load.plan = p->pc->buf;
	m.u.plan_load.plan_len = (uint32_t)p->pc->len;
	return m;
}

/* Take the answer @r to @p's plan (and free it): its counts, and a
 * partial failure as the last error.  Returns the agent's status; when it
 * refused, @why says so with the agent's reason. */
int acoll_take_plan_reply(struct acoll *c, struct peer *p, struct xflow_ctl_msg *r, char *why, size_t whylen)
{
	const struct xflow_ctl_reply *rp = &r->u.reply;
	const struct xflow_ctl_plan_result *pr = &rp->u.plan;
	int rc = rp->status;
	p->installed = pr->installed;
	p->sites = pr->sites;
	free(p->trap);
	p->ntrap = pr->sites;
	p->trap = calloc(p->ntrap + 1, 1);
	p->trap_why[0] = 0;
	const struct xflow_ctl_site_fail *first = NULL;
	for (uint32_t i = 0; i < pr->nfailed; i++) {
		const struct xflow_ctl_site_fail *f = &pr->failed[i];
		if (f->err < 0) {
			first = first ? first : f;
			continue;
		}
		if (p->trap && f->site < p->ntrap)
			p->trap[f->site] = 1;
		if (!p->trap_why[0])
			snprintf(p->trap_why, sizeof(p->trap_why), "%s", f->why);
	}
	if (rc)
		snprintf(why, whylen, "refused the plan: %s", rp->message);
	else if (first)
		acoll_set_err(c, "agent of %s/%u: %s; first failure: %s", p->domain, (unsigned)p->domid, rp->message,
			first->why);
	xflow_ctl_msg_free(r);
	return rc;
}

int acoll_peer_send_plan(struct acoll *c, struct peer *p)
{
	p->pc = acoll_plan_for(c, p);
	if (!p->pc)
		return -EINVAL;
	struct xflow_ctl_msg m = acoll_plan_load_msg(p);
	int rc = xflow_ctl_send(&p->conn, &m, NULL, 0, c->timeout_ms);
	p->plan_seq = m.seq;
	if (rc)
		acoll_set_err(c, "agent %s: cannot send the plan: %s", p->path, strerror(-rc));
	return rc;
}

int acoll_peer_wait_plan(struct acoll *c, struct peer *p)
{
	uint64_t deadline = xflow_monotonic_ns() + (uint64_t)c->timeout_ms * 1000000u;
	for (;;) {
		struct xflow_ctl_msg *r = NULL;
		uint64_t now = xflow_monotonic_ns();
		if (now >= deadline) {
			acoll_set_err(c, "agent %s: no answer to the plan", p->path);
			return -ETIMEDOUT;
		}
		int rc = acoll_peer_control(c, p, (int)((deadline - now) / 1000000u) + 1, &r);
		if (rc < 0) {
			acoll_set_err(c, "agent %s: %s", p->path, p->conn.why ? p->conn.why : strerror(-rc));
			return rc;
		}
		if (!r)
			continue;
		char why[sizeof(c->err)];
		rc = acoll_take_plan_reply(c, p, r, why, sizeof(why));
		if (rc)
			acoll_set_err(c, "agent of %s/%u %s", p->domain, (unsigned)p->domid, why);
		return rc;
	}
}
