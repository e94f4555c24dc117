/*
 * The control protocol: every message type round-trips; a hostile peer
 * (random frames, lies about lengths, truncations, descriptors missing or
 * unexpected) is refused with a reason through the same code the agent and
 * the collector use, and never leaks a descriptor.
 *
 * With XFLOW_WRITE_CORPUS=DIR set, the valid frames are also written there
 * (the seed corpus of tests/fuzz/fuzz_control.c, one byte of descriptor
 * count first).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xflow/control.h"

static const struct xflow_ctl_target targets[] = {
	{ .pid = 1234, .state = XFLOW_CTL_TARGET_RUNNING, .exe = "/usr/lib/xflowtop/sim/linuxU" },
	{ .pid = 99, .state = XFLOW_CTL_TARGET_CRASHED, .status = 9, .exe = "" },
};
static const struct xflow_ctl_site_fail fails[] = {
	{ .site = 3, .err = -EFAULT, .why = "address 0x1234 is not mapped" },
};
static const struct xflow_ctl_advice_stats advice[] = {
	{ .hits = 10, .drops = 1, .faults = 2, .sites = 5, .enabled = 1 },
	{ .hits = 0, .sites = 1, .enabled = 0 },
};
static const unsigned char fake_plan[] = "XFLOWPLN-not-really";
static const struct xflow_ctl_target kernel_target[] = { { .pid = 0, .exe = "kernel:" } };
static const char *const kernel_mods[] = { "xen_blkfront", "xen_netfront" };

/* One valid message of each kind (and each reply body). */
static unsigned sample(unsigned i, struct xflow_ctl_msg *m, int *nfds)
{
	memset(m, 0, sizeof(*m));
	m->seq = 7 + i;
	*nfds = 0;
	switch (i) {
	case 0:
		m->type = XFLOW_CTL_HELLO;
		m->u.hello = (struct xflow_ctl_hello){ .domain_id = 1, .domain = "linuxU", .agent_pid = 42,
						       .clock = 1, .tsc_hz = 2400000000u, .base_tick = 5,
						       .base_ns = 6, .ring_offer = XFLOW_CTL_RING_LOCAL,
						       .slot_size = 88, .nslots = 1024, .region_size = 90368,
						       .ntargets = 2, .targets = targets };
		*nfds = 2;
		break;
	case 1:
		m->type = XFLOW_CTL_PLAN_LOAD;
		m->u.plan_load = (struct xflow_ctl_plan_load){ .plan = fake_plan, .plan_len = sizeof(fake_plan) };
		break;
	case 2:
		m->type = XFLOW_CTL_ASPECT_SET;
		m->u.aspect = (struct xflow_ctl_aspect_set){ .kind = XFLOW_CTL_ASPECT_FLOW, .enabled = 1, .index = 0 };
		break;
	case 3: m->type = XFLOW_CTL_STATS; break;
	case 4: m->type = XFLOW_CTL_DETACH; break;
	case 5:
		m->type = XFLOW_CTL_REPLY;
		m->u.reply = (struct xflow_ctl_reply){ .req_seq = 3, .req_type = XFLOW_CTL_PLAN_LOAD,
						       .message = "12 of 13 sites installed" };
		m->u.reply.u.plan = (struct xflow_ctl_plan_result){ .sites = 13, .installed = 12,
								    .nfailed_total = 1, .nfailed = 1,
								    .failed = fails };
		break;
	case 6:
		m->type = XFLOW_CTL_REPLY;
		m->u.reply = (struct xflow_ctl_reply){ .req_seq = 4, .req_type = XFLOW_CTL_STATS, .message = "" };
		m->u.reply.u.stats = (struct xflow_ctl_stats){ .records = 100, .ring_dropped = 3, .faults_total = 2,
							       .nadvice = 2, .advice = advice,
							       .ntargets = 1, .targets = targets,
							       .clock_now = 0x123456789abcull,
							       .xen_time = true, .xen_minus_mono = -5 };
		break;
	case 7:
		m->type = XFLOW_CTL_REPLY;
		m->u.reply = (struct xflow_ctl_reply){ .req_seq = 5, .req_type = XFLOW_CTL_ASPECT_SET,
						       .status = -ENOENT, .message = "no advice 9" };
		break;
	case 8:
		m->type = XFLOW_CTL_EVENT;
		m->u.event = (struct xflow_ctl_event){ .kind = XFLOW_CTL_EV_TARGET_CRASHED, .pid = 99, .status = 9,
						       .sites = 12, .message = "target 99 killed by signal 9" };
		break;
	case 9:
		/* A kernel agent over Xen: its release, modules, TSC anchor. */
		m->type = XFLOW_CTL_HELLO;
		m->u.hello = (struct xflow_ctl_hello){ .domain_id = 3, .domain = "linuxU", .agent_pid = 7,
						       .clock = 2, .tsc_hz = 2400000000u, .base_tick = 123456789,
						       .base_ns = 987654321, .ring_offer = XFLOW_CTL_RING_VCHAN,
						       .slot_size = 88, .nslots = 2048, .region_size = 180224,
						       .ntargets = 1, .targets = kernel_target,
						       .kernel_release = "6.1.0-50-amd64", .nmodules = 2,
						       .modules = kernel_mods, .xen_time = true,
						       .xen_minus_mono = 7012345678901ll };
		break;
	default:
		return 0;
	}
	return 1;
}

static void write_seed(unsigned i, const void *frame, size_t len, int nfds)
{
	const char *dir = getenv("XFLOW_WRITE_CORPUS");
	if (!dir)
		return;
	char path[512];
	snprintf(path, sizeof(path), "%s/seed_%02u", dir, i);
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	fputc(nfds, f);
	fwrite(frame, 1, len, f);
	fclose(f);
}

Test(control, round_trip)
{
	struct xflow_ctl_msg m;
	int nfds;
	int fds[2] = { -1, -1 };
	for (unsigned i = 0; sample(i, &m, &nfds); i++) {
		void *buf, *back;
		size_t len, blen;
		cr_assert_eq(xflow_ctl_encode(&m, &buf, &len), 0, "sample %u", i);
		write_seed(i, buf, len, nfds);
		struct xflow_ctl_msg *d;
		const char *why = NULL;
		cr_assert_eq(xflow_ctl_decode(buf, len, fds, nfds, &d, &why), 0, "sample %u: %s", i, why);
		cr_expect_eq(d->type, m.type);
		cr_expect_eq(d->seq, m.seq);
		d->nfds = 0;
		cr_assert_eq(xflow_ctl_encode(d, &back, &blen), 0);
		cr_expect_eq(blen, len);
		cr_expect_eq(memcmp(back, buf, len), 0, "sample %u re-encodes differently", i);
		if (i == 6) {
			cr_expect_eq(d->u.reply.u.stats.clock_now, 0x123456789abcull, "the STATS reply's clock");
			cr_expect(d->u.reply.u.stats.xen_time);
			cr_expect_eq(d->u.reply.u.stats.xen_minus_mono, -5, "a negative Xen time offset");
		}
		if (i == 0)
			cr_expect_not(d->u.hello.xen_time, "a HELLO that says no Xen time");
		if (i == 0) {
			cr_expect_str_eq(d->u.hello.domain, "linuxU");
			cr_expect_eq(d->u.hello.ntargets, 2);
			cr_expect_str_eq(d->u.hello.targets[0].exe, "/usr/lib/xflowtop/sim/linuxU");
		}
		if (i == 9) {
			cr_expect_str_eq(d->u.hello.kernel_release, "6.1.0-50-amd64");
			cr_assert_eq(d->u.hello.nmodules, 2);
			cr_expect_str_eq(d->u.hello.modules[1], "xen_netfront");
			cr_expect_eq(d->u.hello.base_tick, 123456789);
			cr_expect(d->u.hello.xen_time);
			cr_expect_eq(d->u.hello.xen_minus_mono, 7012345678901ll);
		}
		if (i == 5)
			cr_expect_str_eq(d->u.reply.u.plan.failed[0].why, "address 0x1234 is not mapped");
		if (i == 6)
			cr_expect_eq(d->u.reply.u.stats.advice[0].hits, 10);
		/* Every truncation is refused with a reason. */
		for (size_t cut = 0; cut < len; cut++) {
			struct xflow_ctl_msg *t = NULL;
			why = NULL;
			cr_expect_neq(xflow_ctl_decode(buf, cut, fds, nfds, &t, &why), 0);
			cr_expect_null(t);
			cr_expect_not_null(why);
		}
		/* Descriptors missing, or where none belong. */
		why = NULL;
		cr_expect_eq(xflow_ctl_decode(buf, len, fds, nfds ? 0 : 1, &d, &why), -EBADMSG);
		cr_expect_not_null(why);
		free(buf);
		free(back);
		xflow_ctl_msg_free(d);
	}
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

Test(control, lies)
{
	struct xflow_ctl_msg m, *d;
	int nfds;
	void *buf;
	size_t len;
	const char *why;
	sample(6, &m, &nfds);
	cr_assert_eq(xflow_ctl_encode(&m, &buf, &len), 0);
	unsigned char *b = buf;
	/* Payload length bigger or smaller than the frame, over the maximum. */
	put32(b + 12, (uint32_t)(len - XFLOW_CTL_HDR_SIZE + 1));
	cr_expect_eq(xflow_ctl_decode(b, len, NULL, 0, &d, &why), -EBADMSG);
	put32(b + 12, XFLOW_CTL_MAX_PAYLOAD + 1);
	cr_expect_eq(xflow_ctl_decode(b, len, NULL, 0, &d, &why), -EBADMSG);
	cr_expect_str_eq(why, "payload length over the maximum");
	put32(b + 12, (uint32_t)(len - XFLOW_CTL_HDR_SIZE));
	/* A count of advice far past the payload (after the 3 u64s). */
	size_t off = XFLOW_CTL_HDR_SIZE + 4 + 2 + 4 + 2 + 0 + 24;
	put32(b + off, 0x7fffffff);
	cr_expect_eq(xflow_ctl_decode(b, len, NULL, 0, &d, &why), -EBADMSG);
	put32(b + off, 2);
	/* Bad magic, version, type, reserved. */
	b[0] ^= 1;
	cr_expect_eq(xflow_ctl_decode(b, len, NULL, 0, &d, &why), -EPROTO);
	b[0] ^= 1;
	b[4] = 9;
	cr_expect_eq(xflow_ctl_decode(b, len, NULL, 0, &d, &why), -EPROTO);
	cr_expect_str_eq(why, "unknown protocol version");
	b[4] = XFLOW_CTL_VERSION;
	b[6] = 0x55;
	cr_expect_eq(xflow_ctl_decode(b, len, NULL, 0, &d, &why), -EBADMSG);
	b[6] = XFLOW_CTL_REPLY;
	b[20] = 1;
	cr_expect_eq(xflow_ctl_decode(b, len, NULL, 0, &d, &why), -EBADMSG);
	b[20] = 0;
	cr_assert_eq(xflow_ctl_decode(b, len, NULL, 0, &d, &why), 0, "%s", why);
	xflow_ctl_msg_free(d);
	free(buf);
	/* A string with a NUL inside, and a string over the limit on encode. */
	sample(8, &m, &nfds);
	cr_assert_eq(xflow_ctl_encode(&m, &buf, &len), 0);
	((unsigned char *)buf)[len - 3] = 0;
	cr_expect_eq(xflow_ctl_decode(buf, len, NULL, 0, &d, &why), -EBADMSG);
	free(buf);
	char *big = malloc(XFLOW_CTL_MAX_STR + 2);
	memset(big, 'x', XFLOW_CTL_MAX_STR + 1);
	big[XFLOW_CTL_MAX_STR + 1] = 0;
	m.u.event.message = big;
	cr_expect_eq(xflow_ctl_encode(&m, &buf, &len), -EINVAL);
	free(big);
}

/* The xen_time pair has one encoding: said 0 or 1, a value only when
 * said.  It ends both the HELLO and the STATS reply. */
Test(control, xen_time_is_checked)
{
	struct xflow_ctl_msg m, *d;
	int nfds;
	void *buf;
	size_t len;
	const char *why;
	for (unsigned i = 6; i <= 9; i += 3) {
		sample(i, &m, &nfds);
		cr_assert_eq(xflow_ctl_encode(&m, &buf, &len), 0);
		unsigned char *b = buf;
		int fds[2] = { -1, -1 };
		b[len - 9] = 2;
		why = NULL;
		cr_expect_eq(xflow_ctl_decode(b, len, fds, nfds, &d, &why), -EBADMSG, "sample %u", i);
		cr_expect(why && strstr(why, "xen_time is not 0 or 1"), "sample %u: %s", i, why ? why : "no reason");
		b[len - 9] = 0;
		why = NULL;
		cr_expect_eq(xflow_ctl_decode(b, len, fds, nfds, &d, &why), -EBADMSG, "sample %u: a value not said", i);
		memset(b + len - 8, 0, 8);
		cr_assert_eq(xflow_ctl_decode(b, len, fds, nfds, &d, &why), 0, "sample %u: %s", i, why);
		cr_expect_not(i == 6 ? d->u.reply.u.stats.xen_time : d->u.hello.xen_time);
		xflow_ctl_msg_free(d);
		free(buf);
	}
}

/* Module names become items of the monitor's kernel:... spec: one that
 * could name a path or another item is refused at both ends. */
Test(control, hello_kernel_names_are_checked)
{
	struct xflow_ctl_msg m, *d;
	int nfds;
	void *buf;
	size_t len;
	const char *why = NULL;
	static const char *const bad[] = { "xen+evil", "../x", "", "a?b",
					   "a_name_of_sixty_four_bytes_is_more_than_a_module_may_have_xxxxxx" };
	sample(9, &m, &nfds);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *one[] = { bad[i] };
		m.u.hello.modules = one;
		m.u.hello.nmodules = 1;
		cr_expect_eq(xflow_ctl_encode(&m, &buf, &len), -EINVAL, "module '%s' encoded", bad[i]);
	}
	sample(9, &m, &nfds);
	m.u.hello.kernel_release = "6.1 x";
	cr_expect_eq(xflow_ctl_encode(&m, &buf, &len), -EINVAL);
	m.u.hello.kernel_release = "6.1/x";
	cr_expect_eq(xflow_ctl_encode(&m, &buf, &len), -EINVAL);
	m.u.hello.kernel_release = "6.1.0+";
	cr_assert_eq(xflow_ctl_encode(&m, &buf, &len), 0);
	free(buf);
	/* A hostile agent writes '+' into a name on the wire: refused. */
	sample(9, &m, &nfds);
	cr_assert_eq(xflow_ctl_encode(&m, &buf, &len), 0);
	unsigned char *b = memmem(buf, len, "xen_netfront", 12);
	cr_assert_not_null(b);
	b[3] = '+';
	cr_expect_eq(xflow_ctl_decode(buf, len, NULL, 0, &d, &why), -EBADMSG);
	cr_expect_not_null(strstr(why, "module name"), "%s", why);
	b[3] = '_';
	b = memmem(buf, len, "6.1.0-50", 8);
	b[1] = '/';
	cr_expect_eq(xflow_ctl_decode(buf, len, NULL, 0, &d, &why), -EBADMSG);
	cr_expect_not_null(strstr(why, "kernel release"), "%s", why);
	free(buf);
}

Test(control, random_frames)
{
	srand(7);
	unsigned char frame[512];
	unsigned ok = 0;
	for (int it = 0; it < 200000; it++) {
		size_t len = (size_t)(rand() % (int)sizeof(frame));
		for (size_t k = 0; k < len; k++)
			frame[k] = (unsigned char)rand();
		/* Half of them with a plausible header, to get past it. */
		if (len >= XFLOW_CTL_HDR_SIZE && (it & 1)) {
			put32(frame, XFLOW_CTL_MAGIC);
			frame[4] = XFLOW_CTL_VERSION, frame[5] = 0;
			frame[6] = (unsigned char)(1 + rand() % 7), frame[7] = 0;
			put32(frame + 12, (uint32_t)(len - XFLOW_CTL_HDR_SIZE));
			memset(frame + 16, 0, 8);
		}
		struct xflow_ctl_msg *d = NULL;
		const char *why = NULL;
		int rc = xflow_ctl_decode(frame, len, NULL, 0, &d, &why);
		if (rc == 0) {
			ok++;
			xflow_ctl_msg_free(d);
		} else {
			cr_assert_not_null(why);
			cr_assert_null(d);
		}
	}
	cr_log_info("%u random frames decoded", ok);
}

static int count_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			n++;
	return n;
}

/* Through the socket: descriptors pass with HELLO; a peer that sends them
 * with anything else, or lies, breaks the connection and leaks nothing. */
Test(control, socket_fds)
{
	int sv[2];
	int before = count_fds();
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct xflow_ctl_conn a, b;
	cr_assert_eq(xflow_ctl_conn_init_unix(&a, sv[0]), 0);
	cr_assert_eq(xflow_ctl_conn_init_unix(&b, sv[1]), 0);
	struct xflow_ctl_msg m, *d;
	int nfds, p[2];
	cr_assert_eq(pipe(p), 0);
	sample(0, &m, &nfds);
	cr_assert_eq(xflow_ctl_send(&a, &m, p, 2, 1000), 0);
	cr_assert_eq(xflow_ctl_recv(&b, &d, 1000), 1);
	cr_expect_eq(d->nfds, 2);
	cr_expect_geq(d->fds[0], 0);
	xflow_ctl_msg_free(d);
	/* A large plan crosses in many reads. */
	size_t big = 3u << 20;
	unsigned char *plan = malloc(big);
	memset(plan, 0xab, big);
	memset(&m, 0, sizeof(m));
	m.type = XFLOW_CTL_PLAN_LOAD;
	m.u.plan_load.plan = plan;
	m.u.plan_load.plan_len = (uint32_t)big;
	pid_t kid = fork();
	if (kid == 0)
		_exit(xflow_ctl_send(&a, &m, NULL, 0, 5000) == 0 ? 0 : 1);
	cr_assert_eq(xflow_ctl_recv(&b, &d, 5000), 1);
	cr_expect_eq(d->u.plan_load.plan_len, big);
	cr_expect_eq(((unsigned char *)d->u.plan_load.plan)[big - 1], 0xab);
	xflow_ctl_msg_free(d);
	free(plan);
	int st;
	waitpid(kid, &st, 0);
	cr_expect_eq(st, 0);
	/* Descriptors with a STATS request: refused, closed. */
	memset(&m, 0, sizeof(m));
	m.type = XFLOW_CTL_STATS;
	cr_assert_eq(xflow_ctl_send(&a, &m, p, 2, 1000), 0);
	cr_expect_eq(xflow_ctl_recv(&b, &d, 1000), -EBADMSG);
	cr_expect_str_eq(b.why, "unexpected descriptors");
	/* Broken for good. */
	cr_expect_eq(xflow_ctl_recv(&b, &d, 0), -EBADMSG);
	xflow_ctl_conn_close(&b);
	/* HELLO offering a ring without descriptors, on a fresh pair. */
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	cr_assert_eq(xflow_ctl_conn_init_unix(&b, sv[1]), 0);
	xflow_ctl_conn_close(&a);
	cr_assert_eq(xflow_ctl_conn_init_unix(&a, sv[0]), 0);
	sample(0, &m, &nfds);
	m.seq = 0;
	cr_assert_eq(xflow_ctl_send(&a, &m, NULL, 0, 1000), 0);
	cr_expect_eq(xflow_ctl_recv(&b, &d, 1000), -EBADMSG);
	cr_expect_str_eq(b.why, "ring descriptors missing");
	xflow_ctl_conn_close(&b);
	/* A header that lies about the length, then the peer hangs up. */
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	cr_assert_eq(xflow_ctl_conn_init_unix(&b, sv[1]), 0);
	unsigned char hdr[XFLOW_CTL_HDR_SIZE] = { 0 };
	put32(hdr, XFLOW_CTL_MAGIC);
	hdr[4] = XFLOW_CTL_VERSION;
	hdr[6] = XFLOW_CTL_STATS;
	put32(hdr + 12, 1000);
	cr_assert_eq(write(sv[0], hdr, sizeof(hdr)), (ssize_t)sizeof(hdr));
	cr_expect_eq(xflow_ctl_recv(&b, &d, 50), 0, "waits for the rest");
	close(sv[0]);
	cr_expect_eq(xflow_ctl_recv(&b, &d, 1000), -ECONNRESET);
	xflow_ctl_conn_close(&b);
	xflow_ctl_conn_close(&a);
	close(p[0]);
	close(p[1]);
	cr_expect_eq(count_fds(), before, "descriptors leaked");
}

Test(control, socket_dir)
{
	char dir[] = "/tmp/xflow-ctl-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char path[128];
	snprintf(path, sizeof(path), "%s/sub/a.sock", dir);
	int fd = xflow_ctl_listen(path);
	cr_assert_geq(fd, 0, "%s", strerror(-fd));
	struct stat st;
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0600);
	snprintf(path, sizeof(path), "%s/sub", dir);
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0700);
	snprintf(path, sizeof(path), "%s/sub/a.sock", dir);
	cr_expect_eq(xflow_ctl_listen(path), -EADDRINUSE);
	close(fd);
	/* Stale now: replaced. */
	fd = xflow_ctl_listen(path);
	cr_expect_geq(fd, 0);
	close(fd);
	unlink(path);
	/* A directory open to others is refused. */
	snprintf(path, sizeof(path), "%s/sub", dir);
	chmod(path, 0755);
	snprintf(path, sizeof(path), "%s/sub/b.sock", dir);
	cr_expect_eq(xflow_ctl_listen(path), -EPERM);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}
