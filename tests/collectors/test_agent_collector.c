/*
 * The agent collector against fake agents (the control protocol spoken by
 * hand): two agents; one writes good records, the other turns its ring
 * corrupt — that one is reported and dropped, the other goes on.  Records
 * that claim another domain are refused and counted as its lies.  An agent that greets without
 * its ring descriptors, or sends garbage, is refused with the reason.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collectors/agent_collector.h"
#include "tests/collectors/hostile_agent.h"
#include "tests/guestrt/gt.h"
#include "tests/weaver/fixtures/jp_fixture.h"
#include "xflow/clock.h"
#include "xflow/control.h"
#include "xflow/ring.h"
#include "xflow/shm.h"

enum fake_kind { FAKE_GOOD, FAKE_CORRUPT, FAKE_NO_FDS, FAKE_GARBAGE };

/* What the next fake agent's HELLO adds: a kernel agent's release and
 * modules, a TSC anchor (set before fake_agent() forks). */
static const char *fake_release;
static const char *const *fake_mods;
static uint32_t fake_nmods;
static uint64_t fake_tsc_hz, fake_base_tick, fake_base_ns;

/* A fake agent in a child process: serves @sock once, as @kind says. */
static pid_t fake_agent(const char *sock, const char *exe, uint16_t domid, enum fake_kind kind)
{
	int lfd = xflow_ctl_listen(sock);
	cr_assert_geq(lfd, 0, "listen %s: %s", sock, strerror(-lfd));
	pid_t pid = fork();
	if (pid != 0) {
		close(lfd);
		return pid;
	}
	int fd = accept(lfd, NULL, NULL);
	if (fd < 0)
		_exit(2);
	if (kind == FAKE_GARBAGE) {
		if (write(fd, "GET / HTTP/1.0\r\n\r\nxxxxxxxxxxxxxxxxxxxxxxxxx", 40) < 0)
			_exit(2);
		sleep(5);
		_exit(0);
	}
	struct xflow_ctl_conn c;
	xflow_ctl_conn_init_unix(&c, fd);
	struct xflow_shm shm;
	struct xflow_eventfd_notifier nt;
	struct xflow_ring_producer prod;
	size_t size = xflow_ring_region_size(XFLOW_RECORD_SIZE, 256);
	if (xflow_shm_create("fake", size, &shm) || xflow_eventfd_notifier_init(&nt, -1) ||
	    xflow_ring_format(shm.base, size, XFLOW_RECORD_SIZE, 256, XFLOW_CLOCK_MONOTONIC) ||
	    xflow_ring_producer_init(&prod, shm.base, size, &nt.base, 1))
		_exit(2);
	struct xflow_ctl_target t = { .pid = (uint32_t)getpid(), .exe = exe };
	struct xflow_ctl_msg m = { .type = XFLOW_CTL_HELLO };
	m.u.hello = (struct xflow_ctl_hello){ .domain_id = domid, .domain = "fake", .agent_pid = (uint32_t)getpid(),
					      .clock = XFLOW_CLOCK_MONOTONIC, .ring_offer = XFLOW_CTL_RING_LOCAL,
					      .slot_size = XFLOW_RECORD_SIZE, .nslots = 256, .region_size = size,
					      .ntargets = 1, .targets = &t, .kernel_release = fake_release,
					      .nmodules = fake_nmods, .modules = fake_mods, .tsc_hz = fake_tsc_hz,
					      .base_tick = fake_base_tick, .base_ns = fake_base_ns };
	int fds[2] = { shm.fd, nt.fd };
	if (xflow_ctl_send(&c, &m, fds, kind == FAKE_NO_FDS ? 0 : 2, 2000))
		_exit(2);
	struct xflow_ctl_msg *req;
	if (xflow_ctl_recv(&c, &req, 10000) != 1 || req->type != XFLOW_CTL_PLAN_LOAD)
		_exit(3);
	struct xflow_ctl_msg r = { .type = XFLOW_CTL_REPLY };
	r.u.reply = (struct xflow_ctl_reply){ .req_seq = req->seq, .req_type = XFLOW_CTL_PLAN_LOAD, .message = "ok" };
	r.u.reply.u.plan = (struct xflow_ctl_plan_result){ .sites = 1, .installed = 1 };
	xflow_ctl_msg_free(req);
	xflow_ctl_send(&c, &r, NULL, 0, 2000);
	/* Ten good records, one from another domain. */
	for (unsigned i = 0; i < 11; i++) {
		struct xflow_record rec;
		memset(&rec, 0, sizeof(rec));
		rec.version = XFLOW_RECORD_VERSION;
		rec.timestamp = xflow_monotonic_ns();
		rec.flow_id = i + 1;
		rec.flow_kind = 0;
		rec.domain_id = i == 10 ? (uint16_t)(domid + 1) : domid;
		rec.flags = XFLOW_REC_START;
		xflow_ring_push_record(&prod, &rec);
	}
	xflow_ring_flush(&prod);
	if (kind == FAKE_CORRUPT) {
		usleep(300000);
		/* An index no producer can reach: the ring is corrupt. */
		atomic_store(&prod.hdr->prod, (uint64_t)1 << 40);
	}
	/* Serve STATS and wait for DETACH or the hangup. */
	ha_serve_until_detach(&c, 10000);
	_exit(0);
}

static unsigned nrec[4];
static int64_t max_shift; /* the largest |monitor time - record time| emitted */

static void emit(void *ctx, const struct xflow_record *r, uint64_t t)
{
	(void)ctx;
	int64_t d = (int64_t)(t - r->timestamp);
	if (d < 0)
		d = -d;
	if (d > max_shift)
		max_shift = d;
	if (r->domain_id < 4)
		nrec[r->domain_id]++;
}

Test(agent_collector, corrupt_ring_dropped_others_go_on, .timeout = 60)
{
	char flows[160], s1[160], s2[160], opts[600], err[1024];
	const char *bin = gt_pkt_flow_setup(flows, sizeof(flows));
	snprintf(s1, sizeof(s1), "%s/a/1.sock", gt_dir);
	snprintf(s2, sizeof(s2), "%s/a/2.sock", gt_dir);
	pid_t a = fake_agent(s1, bin, 1, FAKE_GOOD), b = fake_agent(s2, bin, 2, FAKE_CORRUPT);
	snprintf(opts, sizeof(opts), "dir=%s/a,flows=%s,timeout=10000", gt_dir, flows);
	const struct xflow_collector_ops *ops = &xflow_collector_agent;
	struct xflow_collector *c;
	int rc = ops->open(opts, &c, err, sizeof(err));
	cr_assert_eq(rc, 0, "%s", err);
	uint64_t end = xflow_monotonic_ns() + 1500000000u;
	while (xflow_monotonic_ns() < end) {
		ops->read(c, xflow_monotonic_ns(), emit, NULL, 100);
		usleep(10000);
	}
	cr_expect_eq(nrec[1], 10);
	cr_expect_eq(nrec[2], 10);
	cr_expect_eq(nrec[3], 0, "a record claiming another domain was delivered");
	struct xflow_collector_stats st;
	ops->stats(c, &st);
	/* A record claiming another domain is a lie, not a malformed one. */
	cr_expect_eq(st.bad, 0);
	struct xflow_domain_info di;
	cr_assert_eq(ops->domain_info(c, 0, &di), 0);
	cr_expect_eq(di.gone, 0);
	cr_expect_eq(di.clock_bound_ns, 0, "a local agent's records are on our own clock");
	uint64_t bad = di.bad;
	cr_assert_eq(ops->domain_info(c, 1, &di), 0);
	cr_expect_eq(di.gone, 1, "the corrupt ring's agent was not dropped");
	cr_expect_eq(bad + di.bad, st.bad, "each bad record is some domain's");
	cr_expect_eq(di.lies.other_domain, 1);
	const char *e = ops->last_error(c);
	cr_expect(e && strstr(e, "ring corrupt"), "%s", e ? e : "(none)");
	ops->close(c);
	int s;
	waitpid(a, &s, 0);
	cr_expect(WIFEXITED(s) && WEXITSTATUS(s) == 0, "good agent status %d", s);
	waitpid(b, &s, 0);
}

Test(agent_collector, hostile_greetings, .timeout = 60)
{
	char flows[160], s1[160], opts[600], err[1024];
	const char *bin = gt_pkt_flow_setup(flows, sizeof(flows));
	const struct xflow_collector_ops *ops = &xflow_collector_agent;
	struct xflow_collector *c;
	snprintf(s1, sizeof(s1), "%s/b/1.sock", gt_dir);
	pid_t a = fake_agent(s1, bin, 1, FAKE_NO_FDS);
	snprintf(opts, sizeof(opts), "socket=%s,flows=%s,timeout=3000", s1, flows);
	cr_expect_neq(ops->open(opts, &c, err, sizeof(err)), 0);
	cr_expect(strstr(err, "ring descriptors missing"), "%s", err);
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	unlink(s1);
	a = fake_agent(s1, bin, 1, FAKE_GARBAGE);
	cr_expect_neq(ops->open(opts, &c, err, sizeof(err)), 0);
	cr_expect(strstr(err, "bad magic"), "%s", err);
	kill(a, SIGKILL);
	waitpid(a, NULL, 0);
	/* Options.  Without socket=, dir= or xen: the agents' default
	 * directory, here an empty one. */
	char xdg[200];
	snprintf(xdg, sizeof(xdg), "%s/b/run", gt_dir);
	cr_assert_eq(mkdir(xdg, 0700), 0);
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	cr_expect_eq(ops->open("flows=x.xml", &c, err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "socket=PATH, dir=DIR or xen"), "%s", err);
	cr_expect_eq(ops->open("socket=/nonexistent", &c, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "flows=FILE"), "%s", err);
	cr_expect_eq(ops->open("sockets=/x", &c, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "unknown option 'sockets'"), "%s", err);
}

/* Issue 19 item 8: a flow file that is a FIFO is refused at once, with what
 * it is; opening it to read would have waited for a writer for ever. */
Test(agent_collector, fifo_flow_file_refused_at_once, .timeout = 10)
{
	char flows[160], fifo[200], opts[600], err[1024] = "";
	gt_pkt_flow_setup(flows, sizeof(flows));
	snprintf(fifo, sizeof(fifo), "%s/flows.fifo", gt_dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	const struct xflow_collector_ops *ops = &xflow_collector_agent;
	struct xflow_collector *c;
	snprintf(opts, sizeof(opts), "socket=%s/none.sock,flows=%s", gt_dir, fifo);
	int rc = ops->open(opts, &c, err, sizeof(err));
	unlink(fifo);
	cr_assert_neq(rc, 0);
	cr_expect(strstr(err, "flows.fifo") && strstr(err, "not a regular file (a FIFO)"), "%s", err);
}

/* Issue 19 item 7c: with neither socket=, dir= nor xen, the collector
 * looks where xflow-agent puts its socket by default. */
Test(agent_collector, default_socket_directory, .timeout = 60)
{
	char flows[160], xdg[160], sock[240], opts[600], err[1024] = "";
	const char *bin = gt_pkt_flow_setup(flows, sizeof(flows));
	snprintf(xdg, sizeof(xdg), "%s/run", gt_dir);
	cr_assert_eq(mkdir(xdg, 0700), 0);
	setenv("XDG_RUNTIME_DIR", xdg, 1);
	const struct xflow_collector_ops *ops = &xflow_collector_agent;
	struct xflow_collector *c;
	snprintf(opts, sizeof(opts), "flows=%s,timeout=10000", flows);
	cr_assert_neq(ops->open(opts, &c, err, sizeof(err)), 0, "opened with no agent");
	char want[300];
	snprintf(want, sizeof(want), "no agent socket in %s/xflow, where xflow-agent listens by default", xdg);
	cr_expect(strstr(err, want), "expected '%s' in '%s'", want, err);
	/* An agent there, under the name xflow-agent gives its socket. */
	snprintf(sock, sizeof(sock), "%s/xflow/agent-fake-1.sock", xdg);
	pid_t a = fake_agent(sock, bin, 1, FAKE_GOOD);
	int rc = ops->open(opts, &c, err, sizeof(err));
	if (rc)
		kill(a, SIGKILL);
	cr_assert_eq(rc, 0, "%s", err);
	memset(nrec, 0, sizeof(nrec));
	uint64_t end = xflow_monotonic_ns() + 10000000000u;
	while (nrec[1] < 10 && xflow_monotonic_ns() < end) {
		ops->read(c, xflow_monotonic_ns(), emit, NULL, 100);
		usleep(10000);
	}
	cr_expect_eq(nrec[1], 10);
	ops->close(c);
	int st;
	waitpid(a, &st, 0);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "agent status %d", st);
}

/* A fake agent for @exe, and the collector's options to weave @xml into
 * it (written to DIR/w.xml); returns the agent's pid. */
static pid_t serve(const char *dir, const char *exe, const char *xml, char *opts, size_t len)
{
	char sock[300], flows[300];
	snprintf(sock, sizeof(sock), "%s/w.sock", dir);
	snprintf(flows, sizeof(flows), "%s/w.xml", dir);
	FILE *f = fopen(flows, "w");
	cr_assert(f);
	fputs(xml, f);
	fclose(f);
	unlink(sock);
	snprintf(opts, len, "socket=%s,flows=%s,timeout=10000", sock, flows);
	return fake_agent(sock, exe, 1, FAKE_GOOD);
}

static void reap(pid_t agent)
{
	kill(agent, SIGKILL);
	waitpid(agent, NULL, 0);
}

/* What weaving says reaches the monitor: a site left out goes to its
 * aspect's note; when a domain cannot be woven, the first error (not the
 * first warning) is the reason. */
Test(agent_collector, weaving_diagnostics_reach_the_monitor, .timeout = 120)
{
	char *dir = jpf_tmp_new();
	cr_assert(dir);
	char *bin = jpf_build(dir, "jp_reqpipe", "gcc", "-g -O2", "gcc");
	cr_assert(bin);
	const struct xflow_collector_ops *ops = &xflow_collector_agent;
	char err[1024], opts[700];
	struct xflow_collector *c;
	/* 'part' is dead at the later accesses of req in req_split. */
	pid_t a = serve(dir, bin,
			"<flows><advice><pointcut>access(req.%) AND within_function(req_split) AND "
			"local_var(part, pp)</pointcut><before>STORE_DATA2($pc$, pp);</before></advice></flows>\n",
			opts, sizeof(opts));
	cr_assert_eq(ops->open(opts, &c, err, sizeof(err)), 0, "%s", err);
	struct xflow_aspect_info ai;
	cr_assert_eq(ops->aspect_info(c, 0, &ai), 0);
	cr_expect_gt(ai.sites, 0, "the sites where 'part' lives are woven");
	cr_assert(ai.note, "no note on the aspect");
	cr_expect(strstr(ai.note, "warnings; the first: ") && strstr(ai.note, "'part' is optimized out") &&
		  strstr(ai.note, "not woven"), "%s", ai.note);
	ops->close(c);
	reap(a);

	/* A warning comes first in the file, then the error. */
	a = serve(dir, bin,
		  "<flows>\n"
		  "<advice><pointcut>call(no_such_fn)</pointcut><before>STORE_DATA1($pc$);</before></advice>\n"
		  "<advice><pointcut>(access(part.len) OR call(req_stamp)) AND target(t)</pointcut>\n"
		  "<before>STORE_DATA1(t);</before></advice>\n"
		  "</flows>\n",
		  opts, sizeof(opts));
	cr_assert_neq(ops->open(opts, &c, err, sizeof(err)), 0);
	reap(a);
	cr_expect(strstr(err, "cannot weave domain") && strstr(err, "w.xml:3:") &&
		  strstr(err, "target() at ") && strstr(err, "which is not a member access"), "%s", err);
	cr_expect(!strstr(err, "no_such_fn"), "the warning given as the reason: %s", err);
	free(bin);
	jpf_tmp_free(dir);
}

/* A flow file refused: its first error with the note xflowc prints under
 * it, not the error alone. */
Test(agent_collector, refused_flow_file_says_its_note, .timeout = 60)
{
	char *dir = jpf_tmp_new();
	cr_assert(dir);
	char err[1024], opts[700];
	struct xflow_collector *c;
	pid_t a = serve(dir, "/bin/true", "<xflows><advice/></xflows>\n", opts, sizeof(opts));
	cr_assert_neq(xflow_collector_agent.open(opts, &c, err, sizeof(err)), 0);
	reap(a);
	cr_expect(strstr(err, "w.xml:1:1: unknown element <xflows>; a flow file holds <advice>"), "%s", err);
	jpf_tmp_free(dir);
}

/* ---- kernel agents: their release and modules, their clock ------------------------- */

static const char *kernel_flow =
	"<flows><xflow name='f'><start><pointcut>call(__dev_queue_xmit) OR call(xennet_start_xmit)"
	"</pointcut><select local_var='skb'/></start></xflow></flows>\n";

static void need_btf(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
		cr_skip_test("no /sys/kernel/btf/vmlinux to plan a kernel against");
}

/* Another release's struct offsets would be silently wrong: the domain is
 * refused, naming both releases and the way out; with its BTF given
 * (bin=DOM:kernel:PATH) it is planned. */
Test(agent_collector, a_kernel_agent_of_another_release_is_refused, .timeout = 60)
{
	need_btf();
	char *dir = jpf_tmp_new();
	cr_assert(dir);
	char err[1024], opts[900];
	struct xflow_collector *c;
	fake_release = "0.0.1-not-this-kernel";
	pid_t a = serve(dir, "kernel:", kernel_flow, opts, sizeof(opts));
	cr_assert_neq(xflow_collector_agent.open(opts, &c, err, sizeof(err)), 0);
	reap(a);
	struct utsname un;
	cr_assert_eq(uname(&un), 0);
	char want[400];
	snprintf(want, sizeof(want), "it runs kernel 0.0.1-not-this-kernel, this machine %s; give its BTF: "
		 "bin=fake:kernel:PATH", un.release);
	cr_expect(strstr(err, "cannot weave domain fake: ") && strstr(err, want), "%s", err);
	cr_expect(!strchr(err, '\n'), "one line: %s", err);

	a = serve(dir, "kernel:", kernel_flow, opts, sizeof(opts));
	strcat(opts, ",bin=fake:kernel:/sys/kernel/btf/vmlinux");
	int rc = xflow_collector_agent.open(opts, &c, err, sizeof(err));
	cr_expect_eq(rc, 0, "its BTF given: %s", err);
	if (rc == 0)
		xflow_collector_agent.close(c);
	reap(a);
	fake_release = NULL;
	jpf_tmp_free(dir);
}

/* The same release: planned with vmlinux and the modules the agent named;
 * one this machine cannot find is skipped and said, and a join point that
 * only it could have is named in its aspect's note. */
Test(agent_collector, a_kernel_agent_is_planned_with_its_modules, .timeout = 60)
{
	need_btf();
	char *dir = jpf_tmp_new();
	cr_assert(dir);
	char err[1024], opts[900];
	struct xflow_collector *c;
	struct utsname un;
	cr_assert_eq(uname(&un), 0);
	static const char *const mods[] = { "xflow_absent_mod" };
	fake_release = un.release;
	fake_mods = mods;
	fake_nmods = 1;
	pid_t a = serve(dir, "kernel:", kernel_flow, opts, sizeof(opts));
	int rc = xflow_collector_agent.open(opts, &c, err, sizeof(err));
	fake_release = NULL;
	fake_mods = NULL;
	fake_nmods = 0;
	cr_assert_eq(rc, 0, "%s", err);
	const char *e = xflow_collector_agent.last_error(c);
	cr_expect(e && strstr(e, "module xflow_absent_mod skipped"), "%s", e ? e : "(none)");
	struct xflow_aspect_info ai;
	cr_assert_eq(xflow_collector_agent.aspect_info(c, 0, &ai), 0);
	cr_expect_gt(ai.sites, 0, "vmlinux's join point is woven");
	cr_expect(ai.note && strstr(ai.note, "no function xennet_start_xmit") &&
		  strstr(ai.note, "not found on this machine: xflow_absent_mod"), "%s", ai.note ? ai.note : "(none)");
	xflow_collector_agent.close(c);
	reap(a);
	jpf_tmp_free(dir);
}

/* A local agent shares our CLOCK_MONOTONIC: its times are taken as they
 * are, whatever TSC anchor its HELLO carries (here one that is wrong by
 * ten seconds), never moved by the HELLO's latency. */
Test(agent_collector, a_local_monotonic_agent_keeps_its_times, .timeout = 60)
{
	char flows[160], s1[160], opts[600], err[1024];
	const char *bin = gt_pkt_flow_setup(flows, sizeof(flows));
	snprintf(s1, sizeof(s1), "%s/m/1.sock", gt_dir);
	xflow_clock_pair(&fake_base_tick, &fake_base_ns);
	fake_tsc_hz = 1000000000u;
	fake_base_ns -= 10000000000ull;
	pid_t a = fake_agent(s1, bin, 1, FAKE_GOOD);
	fake_tsc_hz = fake_base_tick = fake_base_ns = 0;
	snprintf(opts, sizeof(opts), "socket=%s,flows=%s,timeout=10000", s1, flows);
	struct xflow_collector *c;
	cr_assert_eq(xflow_collector_agent.open(opts, &c, err, sizeof(err)), 0, "%s", err);
	memset(nrec, 0, sizeof(nrec));
	max_shift = 0;
	uint64_t end = xflow_monotonic_ns() + 1000000000u;
	while (xflow_monotonic_ns() < end && nrec[1] < 10) {
		xflow_collector_agent.read(c, xflow_monotonic_ns(), emit, NULL, 100);
		usleep(10000);
	}
	cr_expect_eq(nrec[1], 10);
	cr_expect_eq(max_shift, 0, "times moved by %lld ns", (long long)max_shift);
	xflow_collector_agent.close(c);
	reap(a);
}
