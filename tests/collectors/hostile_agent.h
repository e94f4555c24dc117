/*
 * A simulated agent for the tests: a child process that speaks
 * xflow-agent's protocol on the same transport the real one uses (a Unix
 * control socket, a sealed memfd ring and an eventfd, xflow/control.h),
 * greets as the domain it is given, accepts any plan, then writes the
 * records it was scripted with and serves STATS until DETACH.  Honest or
 * hostile is only what the script says.
 *
 * A scripted record's timestamp is relative: the agent's CLOCK_MONOTONIC
 * when it writes it plus ha_rec.dt_ns, so a script can stamp the past or
 * the future.  The agent writes @pause_ms after it was planned.
 *
 * Its STATS replies say what a struct ha_stats scripts: the i-th reply
 * the i-th counts (the last repeated), so a script can tell counts that
 * go back or grow absurdly.
 */
#ifndef XFLOW_TESTS_COLLECTORS_HOSTILE_AGENT_H
#define XFLOW_TESTS_COLLECTORS_HOSTILE_AGENT_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "xflow/clock.h"
#include "xflow/control.h"
#include "xflow/ring.h"
#include "xflow/shm.h"

#define HA_NSLOTS 4096u

struct ha_rec {
	int64_t dt_ns;     /* added to the agent's clock at writing */
	uint64_t flow_id;
	uint32_t site;
	uint16_t domain;   /* as the record claims it */
	uint16_t flags;
};

/* Advice an agent's STATS replies count, and its scripted counts: reply
 * i says hits[i] (i >= n: hits[n - 1]) hits for each advice, a tenth of
 * them dropped; n 0 says no counts at all. */
#define HA_NADV 4
struct ha_stats {
	unsigned n;
	uint64_t hits[8];
};

/* Answer STATS request @req with the @i-th counts of @st. */
static inline void ha_reply_stats(struct xflow_ctl_conn *c, const struct xflow_ctl_msg *req, const struct ha_stats *st,
				  unsigned i)
{
	uint64_t hits = st->hits[i < st->n ? i : st->n - 1];
	struct xflow_ctl_advice_stats adv[HA_NADV];
	for (unsigned k = 0; k < HA_NADV; k++)
		adv[k] = (struct xflow_ctl_advice_stats){ .hits = hits, .drops = hits / 10, .sites = 1, .enabled = 1 };
	struct xflow_ctl_msg m = { .type = XFLOW_CTL_REPLY };
	m.u.reply = (struct xflow_ctl_reply){ .req_seq = req->seq, .req_type = XFLOW_CTL_STATS, .message = "" };
	m.u.reply.u.stats = (struct xflow_ctl_stats){ .nadvice = HA_NADV, .advice = adv };
	xflow_ctl_send(c, &m, NULL, 0, 2000);
}

/* What an agent does once its records are written: answer every request
 * "ok" (a STATS with @st's counts unless NULL) until DETACH, the hangup,
 * or @ms without one. */
static inline void ha_serve_stats_until_detach(struct xflow_ctl_conn *c, int ms, const struct ha_stats *st)
{
	struct xflow_ctl_msg *req;
	for (unsigned nstats = 0;;) {
		if (xflow_ctl_recv(c, &req, ms) <= 0)
			return;
		int type = req->type;
		if (type == XFLOW_CTL_STATS && st && st->n)
			ha_reply_stats(c, req, st, nstats++);
		else
			xflow_ctl_reply_simple(c, req, 0, "ok");
		xflow_ctl_msg_free(req);
		if (type == XFLOW_CTL_DETACH)
			return;
	}
}

static inline void ha_serve_until_detach(struct xflow_ctl_conn *c, int ms)
{
	ha_serve_stats_until_detach(c, ms, NULL);
}

/* Serve @sock as an agent of domain @domid tracing @exe, writing @n
 * records of @script once planned, its STATS replies from @st (NULL: no
 * counts).  Returns the child's pid. */
static inline pid_t ha_agent_stats(const char *sock, const char *exe, uint16_t domid, const struct ha_rec *script,
				   size_t n, unsigned pause_ms, const struct ha_stats *st)
{
	int lfd = xflow_ctl_listen(sock);
	cr_assert_geq(lfd, 0, "listen %s: %s", sock, strerror(-lfd));
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid != 0) {
		close(lfd);
		return pid;
	}
	int fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		_exit(2);
	struct xflow_ctl_conn c;
	xflow_ctl_conn_init_unix(&c, fd);
	struct xflow_shm shm;
	struct xflow_eventfd_notifier nt;
	struct xflow_ring_producer prod;
	size_t size = xflow_ring_region_size(XFLOW_RECORD_SIZE, HA_NSLOTS);
	if (xflow_shm_create("hostile", size, &shm) || xflow_eventfd_notifier_init(&nt, -1) ||
	    xflow_ring_format(shm.base, size, XFLOW_RECORD_SIZE, HA_NSLOTS, XFLOW_CLOCK_MONOTONIC) ||
	    xflow_ring_producer_init(&prod, shm.base, size, &nt.base, 1))
		_exit(2);
	struct xflow_ctl_target t = { .pid = (uint32_t)getpid(), .exe = exe };
	struct xflow_ctl_msg m = { .type = XFLOW_CTL_HELLO };
	m.u.hello = (struct xflow_ctl_hello){ .domain_id = domid, .domain = domid == 1 ? "honest" : "liar",
					      .agent_pid = (uint32_t)getpid(), .clock = XFLOW_CLOCK_MONOTONIC,
					      .ring_offer = XFLOW_CTL_RING_LOCAL, .slot_size = XFLOW_RECORD_SIZE,
					      .nslots = HA_NSLOTS, .region_size = size, .ntargets = 1, .targets = &t };
	int fds[2] = { shm.fd, nt.fd };
	if (xflow_ctl_send(&c, &m, fds, 2, 2000))
		_exit(2);
	struct xflow_ctl_msg *req;
	int got = xflow_ctl_recv(&c, &req, 20000);
	if (got < 0)
		_exit(0); /* refused at its greeting: the monitor hung up */
	if (got != 1 || req->type != XFLOW_CTL_PLAN_LOAD)
		_exit(3);
	struct xflow_ctl_msg r = { .type = XFLOW_CTL_REPLY };
	r.u.reply = (struct xflow_ctl_reply){ .req_seq = req->seq, .req_type = XFLOW_CTL_PLAN_LOAD, .message = "ok" };
	r.u.reply.u.plan = (struct xflow_ctl_plan_result){ .sites = 2, .installed = 2 };
	xflow_ctl_msg_free(req);
	xflow_ctl_send(&c, &r, NULL, 0, 2000);
	usleep(pause_ms * 1000u);
	for (size_t i = 0; i < n; i++) {
		struct xflow_record rec;
		memset(&rec, 0, sizeof(rec));
		rec.version = XFLOW_RECORD_VERSION;
		rec.timestamp = xflow_monotonic_ns() + (uint64_t)script[i].dt_ns;
		rec.flow_id = script[i].flow_id;
		rec.site_id = script[i].site;
		rec.domain_id = script[i].domain;
		rec.flags = script[i].flags;
		/* A full ring waits for the monitor: the script is what the
		 * test counts on arriving. */
		while (xflow_ring_free_slots(&prod) == 0)
			usleep(1000);
		xflow_ring_push_record(&prod, &rec);
	}
	xflow_ring_flush(&prod);
	ha_serve_stats_until_detach(&c, 20000, st);
	_exit(0);
}

static inline pid_t ha_agent(const char *sock, const char *exe, uint16_t domid, const struct ha_rec *script,
			     size_t n, unsigned pause_ms)
{
	return ha_agent_stats(sock, exe, domid, script, n, pause_ms, NULL);
}

#endif
