/*
 * The agent on a small program: a flow file woven through the agent
 * collector into a target the agent starts (held until the plan is in),
 * records with the right flow ids arrive, every site installed, the target
 * runs to completion with its own output, and a second monitor is refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collectors/agent_collector.h"
#include "gt.h"
#include "guestrt/agent/agent.h"
#include "weaver/jp/joinpoint.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"
#include "xflow/clock.h"
#include "xflow/control.h"

#define NPKT 40

/* Processes a test started: killed at its end, also when an assertion
 * ended it early. */
static pid_t started[4];

static void kill_started(void)
{
	for (unsigned i = 0; i < 4; i++)
		if (started[i] > 0) {
			kill(started[i], SIGKILL);
			waitpid(started[i], NULL, WNOHANG);
		}
}

static void remember(pid_t pid)
{
	for (unsigned i = 0; i < 4; i++)
		if (started[i] <= 0) {
			started[i] = pid;
			return;
		}
}

static const char flow_xml[] =
	"<flows>\n"
	"<xflow name=\"pktflow\">\n"
	"  <start><pointcut>access(pkt.data) AND within_function(pkt_alloc)</pointcut></start>\n"
	"  <quit><pointcut>access(pkt.%) AND within_function(pkt_free)</pointcut></quit>\n"
	"</xflow>\n"
	"<advice>\n"
	"  <pointcut>access(pkt.flags) AND target(p) AND within_function(pkt_fill) AND xflow(pktflow, p, id)</pointcut>\n"
	"  <before>STORE_DATA2($pc$, id);</before>\n"
	"</advice>\n"
	"</flows>\n";

struct rec {
	struct xflow_record r;
	uint64_t t;
};
static struct rec recs[4096];
static unsigned nrecs;

static void emit(void *ctx, const struct xflow_record *r, uint64_t t)
{
	(void)ctx;
	if (nrecs < 4096)
		recs[nrecs++] = (struct rec){ *r, t };
}

/* Run an agent in a child process: it starts @bin with @npkt (held until
 * the plan comes) and serves @sock; its stdout (the target's too) goes to
 * @out. */
static pid_t agent_child(const char *bin, unsigned npkt, const char *sock, const char *out)
{
	pid_t pid = fork();
	if (pid == 0) {
		FILE *f = freopen(out, "w", stdout);
		(void)f;
		char n[16];
		snprintf(n, sizeof(n), "%u", npkt);
		char *argv[] = { (char *)bin, n, NULL };
		struct xflow_agent_opts o = { .domain = "fixture", .domain_id = 7, .argv = argv, .socket_path = sock,
					      .ring_slots = 1024 };
		struct xflow_agent *a;
		char err[512];
		if (xflow_agent_new(&o, &a, err, sizeof(err))) {
			fprintf(stderr, "agent: %s\n", err);
			_exit(3);
		}
		int rc = xflow_agent_run(a, NULL);
		xflow_agent_free(a);
		fflush(stdout);
		_exit(rc ? 1 : 0);
	}
	remember(pid);
	return pid;
}

static void wait_socket(const char *sock, pid_t agent)
{
	for (int i = 0; i < 500 && access(sock, F_OK) != 0; i++) {
		int st;
		cr_assert_eq(waitpid(agent, &st, WNOHANG), 0, "the agent died at start");
		usleep(10000);
	}
	cr_assert_eq(access(sock, F_OK), 0, "no socket");
}

/* Write the flows to @flows, start an agent on @bin (@npkt packets)
 * serving @sock with its output in @out, all named with @tag in the test's
 * directory, and wait until it serves. */
static pid_t start_pkt_agent(const char *bin, const char *tag, unsigned npkt, char flows[160], char sock[160],
			     char out[160])
{
	snprintf(flows, 160, "%s/pkt%s.xml", gt_dir, tag);
	snprintf(sock, 160, "%s/s%s/agent.sock", gt_dir, tag);
	snprintf(out, 160, "%s/out%s.txt", gt_dir, tag);
	FILE *f = fopen(flows, "w");
	cr_assert(f, "%s: %s", flows, strerror(errno));
	fputs(flow_xml, f);
	fclose(f);
	pid_t agent = agent_child(bin, npkt, sock, out);
	wait_socket(sock, agent);
	return agent;
}

Test(agent, fixture_flows, .timeout = 60, .fini = kill_started)
{
	gt_need_ptrace();
	const char *bin = gt_build("agent_pkt", "-O1");
	char flows[160], sock[160], out[160];
	pid_t agent = start_pkt_agent(bin, "", NPKT, flows, sock, out);

	/* A second monitor while one is served is refused with a reason. */
	const struct xflow_collector_ops *ops = &xflow_collector_agent;
	struct xflow_collector *c;
	char opts[512], err[1024];
	snprintf(opts, sizeof(opts), "socket=%s,flows=%s,timeout=20000", sock, flows);
	int rc = ops->open(opts, &c, err, sizeof(err));
	if (rc)
		kill(agent, SIGTERM);
	cr_assert_eq(rc, 0, "%s", err);

	/* Until the target has run through and the agent left. */
	uint64_t end = xflow_monotonic_ns() + 30000000000u;
	int st = -1;
	while (xflow_monotonic_ns() < end) {
		while (ops->read(c, xflow_monotonic_ns(), emit, NULL, 1024) > 0)
			;
		if (waitpid(agent, &st, WNOHANG) == agent)
			break;
		usleep(5000);
	}
	while (ops->read(c, xflow_monotonic_ns(), emit, NULL, 1024) > 0)
		;
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "agent status %d", st);

	/* Every packet: START in pkt_alloc, a record in pkt_fill carrying the
	 * same id, QUIT in pkt_free, in that order; ids all different. */
	uint64_t ids[NPKT + 1] = { 0 };
	unsigned starts = 0, quits = 0, data = 0;
	for (unsigned i = 0; i < nrecs; i++) {
		const struct xflow_record *r = &recs[i].r;
		struct xflow_site_info si;
		cr_assert_eq(ops->site_info(c, r->domain_id, r->site_id, &si), 0);
		cr_expect_eq(r->domain_id, 7);
		cr_expect_str_eq(si.domain, "fixture");
		cr_expect(strstr(si.file, "agent_pkt.c"), "%s", si.file);
		cr_assert_neq(r->flow_id, 0);
		if (r->flags & XFLOW_REC_START) {
			cr_expect_str_eq(si.function, "pkt_alloc");
			cr_assert_lt(starts, NPKT);
			ids[starts++] = r->flow_id;
		} else if (r->flags & XFLOW_REC_QUIT) {
			cr_expect_str_eq(si.function, "pkt_free");
			cr_expect_eq(r->flow_id, ids[quits], "quit of flow %llu, expected %llu",
				     (unsigned long long)r->flow_id, (unsigned long long)ids[quits]);
			quits++;
		} else if (r->ndata == 2) {
			cr_expect_str_eq(si.function, "pkt_fill");
			cr_expect_eq(r->data[1], r->flow_id, "STORE_DATA2 carries the id");
			cr_expect_eq(r->flow_id, ids[data], "pkt_fill of the packet being filled");
			data++;
		}
	}
	cr_expect_eq(starts, NPKT);
	cr_expect_eq(quits, NPKT);
	cr_expect_eq(data, NPKT);
	for (unsigned i = 1; i < starts; i++)
		cr_expect_neq(ids[i], ids[i - 1]);
	struct xflow_aspect_info ai;
	cr_assert_eq(ops->aspect_info(c, 0, &ai), 0);
	cr_expect_str_eq(ai.name, "xflow pktflow");
	cr_expect_gt(ai.sites, 0);
	cr_expect_eq(ops->carried_bits(c, 0), 0);
	struct xflow_collector_stats cs;
	ops->stats(c, &cs);
	cr_expect_eq(cs.drops, 0);
	cr_expect_eq(cs.bad, 0);
	ops->close(c);
	/* The target ran to completion with its own output. */
	char line[128] = "";
	FILE *f = fopen(out, "r");
	cr_assert_not_null(f);
	cr_expect_not_null(fgets(line, sizeof(line), f));
	fclose(f);
	char want[64];
	snprintf(want, sizeof(want), "done %d %d\n", NPKT, NPKT * (NPKT - 1) / 2);
	cr_expect_str_eq(line, want);
	cr_expect_neq(access(sock, F_OK), 0, "the agent left its socket behind");
}

/* A monitor that vanishes: the agent detaches and exits at once. */
Test(agent, monitor_killed, .timeout = 60, .fini = kill_started)
{
	gt_need_ptrace();
	const char *bin = gt_build("fx_loop", "-O2");
	char sock[160];
	snprintf(sock, sizeof(sock), "%s/s2/agent.sock", gt_dir);
	struct gt_proc p;
	gt_start(&p, bin, "1", "1000000000", "s");
	remember(p.pid);
	char pid[16];
	snprintf(pid, sizeof(pid), "%d", (int)p.pid);
	pid_t agent = fork();
	if (agent == 0) {
		pid_t pids[1] = { p.pid };
		struct xflow_agent_opts o = { .domain = "loop", .pids = pids, .npids = 1, .socket_path = sock };
		struct xflow_agent *a;
		char err[512];
		if (xflow_agent_new(&o, &a, err, sizeof(err)))
			_exit(3);
		int rc = xflow_agent_run(a, NULL);
		xflow_agent_free(a);
		_exit(rc ? 1 : 0);
	}
	remember(agent);
	wait_socket(sock, agent);
	int fd = xflow_ctl_connect(sock);
	cr_assert_geq(fd, 0);
	struct xflow_ctl_conn conn;
	cr_assert_eq(xflow_ctl_conn_init_unix(&conn, fd), 0);
	struct xflow_ctl_msg *m;
	cr_assert_eq(xflow_ctl_recv(&conn, &m, 5000), 1);
	cr_expect_eq(m->type, XFLOW_CTL_HELLO);
	cr_expect_eq(m->nfds, 2);
	cr_expect_str_eq(m->u.hello.domain, "loop");
	cr_expect_eq(m->u.hello.targets[0].pid, (uint32_t)p.pid);
	xflow_ctl_msg_free(m);
	/* A second monitor while one is served is refused with a reason. */
	const struct xflow_collector_ops *ops = &xflow_collector_agent;
	struct xflow_collector *c2;
	char opts[256], err[1024];
	snprintf(opts, sizeof(opts), "socket=%s,flows=/nonexistent.xml", sock);
	cr_expect_neq(ops->open(opts, &c2, err, sizeof(err)), 0);
	snprintf(opts, sizeof(opts), "socket=%s,flows=flows/netflow.xml,timeout=5000", sock);
	cr_expect_neq(ops->open(opts, &c2, err, sizeof(err)), 0);
	cr_expect(strstr(err, "already serves a monitor"), "%s", err);
	/* A plan that is not one: refused with the reader's reason. */
	struct xflow_ctl_msg pl = { .type = XFLOW_CTL_PLAN_LOAD };
	pl.u.plan_load.plan = "XFLOWPLN garbage";
	pl.u.plan_load.plan_len = 16;
	cr_assert_eq(xflow_ctl_send(&conn, &pl, NULL, 0, 1000), 0);
	cr_assert_eq(xflow_ctl_recv(&conn, &m, 5000), 1);
	cr_expect_eq(m->type, XFLOW_CTL_REPLY);
	cr_expect_lt(m->u.reply.status, 0);
	cr_expect(strstr(m->u.reply.message, "plan refused"), "%s", m->u.reply.message);
	xflow_ctl_msg_free(m);
	xflow_ctl_conn_close(&conn); /* the monitor is gone */
	int st = -1;
	for (int i = 0; i < 300 && waitpid(agent, &st, WNOHANG) == 0; i++)
		usleep(10000);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the agent did not leave after the hangup (%d)", st);
	/* The target was let go and runs on. */
	char status[64], l[256];
	snprintf(status, sizeof(status), "/proc/%d/status", (int)p.pid);
	{
		FILE *f = fopen(status, "r");
		cr_assert_not_null(f);
		while (fgets(l, sizeof(l), f))
			if (!strncmp(l, "TracerPid:", 10))
				cr_expect_eq(atoi(l + 10), 0, "still traced");
		fclose(f);
	}
	kill(p.pid, SIGKILL);
	waitpid(p.pid, NULL, 0);
	fclose(p.in);
	fclose(p.out);
}

/* A plan with a bad address: that site fails with its reason in the
 * reply, the others are installed, and the agent serves on. */
Test(agent, plan_with_bad_address, .timeout = 60, .fini = kill_started)
{
	gt_need_ptrace();
	/* The target is the agent's child: once the agent leaves, it is ours
	 * to reap, not init's. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	const char *bin = gt_build("agent_pkt", "-O1");
	char flows[160], sock[160], out[160];
	/* So many packets that the target still runs when the plan comes. */
	pid_t agent = start_pkt_agent(bin, "3", 200000000, flows, sock, out);
	/* The plan, built here as the collector would, then broken. */
	struct xflow_unit *u;
	cr_assert_eq(xflow_unit_new(&u, NULL), 0);
	cr_assert_eq(xflow_unit_add_file(u, flows), 0);
	cr_assert_eq(xflow_unit_compile(u), 0);
	const char *bins[] = { bin };
	struct jp_domain_spec d = { "fixture", bins, 1 };
	struct jp_plan_opts po = { 0 };
	struct xflow_plan *p;
	cr_assert_eq(jp_plan_build(u, &d, 1, &po, &p), 0);
	cr_assert_gt(p->domains[0].nsites, 1);
	p->domains[0].sites[0].addr = 0x10; /* still sorted: the lowest */
	void *buf;
	size_t len;
	char why[256];
	cr_assert_eq(xflow_plan_write(p, &buf, &len, why, sizeof(why)), 0, "%s", why);
	uint32_t nsites = p->domains[0].nsites;
	xflow_plan_free(p);
	xflow_unit_free(u);
	int fd = xflow_ctl_connect(sock);
	cr_assert_geq(fd, 0);
	struct xflow_ctl_conn conn;
	cr_assert_eq(xflow_ctl_conn_init_unix(&conn, fd), 0);
	struct xflow_ctl_msg *m;
	cr_assert_eq(xflow_ctl_recv(&conn, &m, 5000), 1);
	pid_t target = (pid_t)m->u.hello.targets[0].pid;
	remember(target);
	xflow_ctl_msg_free(m);
	struct xflow_ctl_msg pl = { .type = XFLOW_CTL_PLAN_LOAD };
	pl.u.plan_load.plan = buf;
	pl.u.plan_load.plan_len = (uint32_t)len;
	cr_assert_eq(xflow_ctl_send(&conn, &pl, NULL, 0, 1000), 0);
	free(buf);
	cr_assert_eq(xflow_ctl_recv(&conn, &m, 10000), 1);
	cr_assert_eq(m->type, XFLOW_CTL_REPLY);
	const struct xflow_ctl_plan_result *r = &m->u.reply.u.plan;
	cr_expect_eq(m->u.reply.status, 0, "%s", m->u.reply.message);
	cr_expect_eq(r->sites, nsites);
	cr_expect_eq(r->installed, nsites - 1);
	cr_assert_eq(r->nfailed, 1);
	cr_expect_eq(r->failed[0].site, 0);
	cr_expect(strstr(r->failed[0].why, "not in an executable mapping"), "%s", r->failed[0].why);
	cr_log_info("bad site: %s", r->failed[0].why);
	xflow_ctl_msg_free(m);
	/* Stats: the advice is there, the target runs. */
	struct xflow_ctl_msg sreq = { .type = XFLOW_CTL_STATS };
	cr_assert_eq(xflow_ctl_send(&conn, &sreq, NULL, 0, 1000), 0);
	cr_assert_eq(xflow_ctl_recv(&conn, &m, 5000), 1);
	cr_expect_eq(m->u.reply.req_type, XFLOW_CTL_STATS);
	cr_expect_gt(m->u.reply.u.stats.nadvice, 0);
	xflow_ctl_msg_free(m);
	struct xflow_ctl_msg det = { .type = XFLOW_CTL_DETACH };
	cr_assert_eq(xflow_ctl_send(&conn, &det, NULL, 0, 1000), 0);
	cr_assert_eq(xflow_ctl_recv(&conn, &m, 5000), 1);
	cr_expect_eq(m->u.reply.req_type, XFLOW_CTL_DETACH);
	xflow_ctl_msg_free(m);
	xflow_ctl_conn_close(&conn);
	int st = -1;
	for (int i = 0; i < 500 && waitpid(agent, &st, WNOHANG) == 0; i++)
		usleep(10000);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "agent status %d", st);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
}

/* Issue 19 item 14: a --socket path longer than sockaddr_un holds is
 * refused, naming it and the limit; cut, it would have named another file,
 * where no monitor would look. */
Test(agent, socket_path_too_long, .timeout = 60, .fini = kill_started)
{
	gt_need_ptrace();
	const char *bin = gt_build("fx_loop", "-O2");
	struct gt_proc p;
	gt_start(&p, bin, "1", "1000000000", "s");
	remember(p.pid);
	char sock[200];
	int n = snprintf(sock, sizeof(sock), "%s/", gt_dir);
	while (n < 150)
		sock[n++] = 'x';
	snprintf(sock + n, sizeof(sock) - (size_t)n, ".sock");
	pid_t pids[1] = { p.pid };
	struct xflow_agent_opts o = { .domain = "loop", .pids = pids, .npids = 1, .socket_path = sock,
				      .transport = XFLOW_AGENT_LOCAL };
	struct xflow_agent *a = NULL;
	char err[512] = "";
	int rc = xflow_agent_new(&o, &a, err, sizeof(err));
	if (rc == 0)
		xflow_agent_free(a);
	cr_expect_eq(rc, -ENAMETOOLONG, "%d: %s", rc, err);
	cr_expect(strstr(err, "--socket") && strstr(err, sock) && strstr(err, "at most 107"), "%s", err);
	/* Nothing was created under the path cut to 107 bytes. */
	sock[107] = 0;
	cr_expect_neq(access(sock, F_OK), 0, "%s exists", sock);
	kill(p.pid, SIGKILL);
	waitpid(p.pid, NULL, 0);
	fclose(p.in);
	fclose(p.out);
}

/* Issue 26 item 7: without --lane-slots the lanes are sized from the
 * plan's placements, a power of two from 4096 to 32768. */
Test(agent, lanes_sized_from_the_plan)
{
	struct xflow_plan_domain d = { .name = "d" };
	cr_expect_eq(xflow_agent_lane_slots(NULL), 4096);
	d.nbindings = 3;
	cr_expect_eq(xflow_agent_lane_slots(&d), 4096);
	d.nbindings = 15; /* issue 26's nginx flow: 13 records a request */
	cr_expect_eq(xflow_agent_lane_slots(&d), 16384);
	d.nbindings = 263;
	cr_expect_eq(xflow_agent_lane_slots(&d), 32768);
}
