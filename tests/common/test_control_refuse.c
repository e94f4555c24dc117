/*
 * Issue 30 item 6: every bad control frame is refused with a REPLY that
 * names what was wrong, and the connection then ends (common/control_io.c,
 * xflow_ctl_refuse(); the rules are in xflow/control.h, "Refusals").  Each
 * bad frame is sent twice: to a connection of this process over a socket
 * pair, and to a running xflow-agent, which must answer it the same way,
 * close, and serve the next monitor.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "xflow/control.h"

/* A bad frame, what the refusal must say, and which request it answers. */
struct bad {
	const char *name;
	unsigned char bytes[64];
	size_t n;
	bool shut;      /* then end the stream */
	bool with_fd;   /* one descriptor rides with it */
	int status;
	uint16_t req_type;
	uint32_t req_seq;
	const char *says[3];
};

static size_t header(unsigned char *b, uint32_t magic, uint16_t version, uint16_t type, uint32_t seq, uint32_t len,
		     uint32_t flags)
{
	uint32_t w[6] = { magic, (uint32_t)version | (uint32_t)type << 16, seq, len, flags, 0 };
	for (int i = 0; i < 6; i++)
		for (int k = 0; k < 4; k++)
			b[4 * i + k] = (unsigned char)(w[i] >> (8 * k));
	return XFLOW_CTL_HDR_SIZE;
}

#define M XFLOW_CTL_MAGIC
#define V XFLOW_CTL_VERSION

/* The cases, built once (header() fills the bytes). */
static struct bad cases[16];
static unsigned ncases;

static struct bad *add(const char *name, int status, uint16_t req_type, uint32_t req_seq, const char *s0,
		       const char *s1, const char *s2)
{
	struct bad *b = &cases[ncases++];
	*b = (struct bad){ .name = name, .status = status, .req_type = req_type, .req_seq = req_seq,
			   .says = { s0, s1, s2 } };
	return b;
}

/* @b's bytes: a good header of @type, @seq and payload length @len, then
 * the @n bytes of @payload. */
static void frame(struct bad *b, uint16_t type, uint32_t seq, uint32_t len, const char *payload, size_t n)
{
	b->n = header(b->bytes, M, V, type, seq, len, 0);
	memcpy(b->bytes + b->n, payload, n);
	b->n += n;
}

static void build_cases(void)
{
	struct bad *b;
	ncases = 0;
	b = add("bad magic", -EPROTO, XFLOW_CTL_HELLO, 0, "bad magic: 0x20544547 is not a control frame's", NULL,
		NULL);
	memcpy(b->bytes, "GET / HTTP/1.0\r\n\r\n......", 24);
	b->n = 24;
	b = add("old version", -EPROTO, XFLOW_CTL_HELLO, 0, "unknown version:", "protocol version 3", "speaks 4");
	b->n = header(b->bytes, M, 3, XFLOW_CTL_STATS, 9, 0, 0);
	b = add("new version", -EPROTO, XFLOW_CTL_HELLO, 0, "unknown version:", "protocol version 77", NULL);
	b->n = header(b->bytes, M, 77, XFLOW_CTL_STATS, 9, 0, 0);
	b = add("unknown type", -EBADMSG, XFLOW_CTL_HELLO, 0, "unknown type: message type 42", "types 1 to 7", NULL);
	b->n = header(b->bytes, M, V, 42, 9, 0, 0);
	b = add("type 0", -EBADMSG, XFLOW_CTL_HELLO, 0, "unknown type: message type 0", NULL, NULL);
	b->n = header(b->bytes, M, V, 0, 9, 0, 0);
	b = add("absurd length", -EBADMSG, XFLOW_CTL_STATS, 77,
		"absurd length: a STATS with a payload of 4294967295 bytes", "at most 67108864", NULL);
	b->n = header(b->bytes, M, V, XFLOW_CTL_STATS, 77, 0xffffffffu, 0);
	b = add("reserved bits", -EBADMSG, XFLOW_CTL_DETACH, 78, "reserved bits: a DETACH with flags 0x100", NULL,
		NULL);
	b->n = header(b->bytes, M, V, XFLOW_CTL_DETACH, 78, 0, 0x100);
	b = add("truncated field", -EBADMSG, XFLOW_CTL_ASPECT_SET, 79,
		"truncated: the 3-byte payload of an ASPECT_SET ends inside its aspect index", NULL, NULL);
	frame(b, XFLOW_CTL_ASPECT_SET, 79, 3, "\0\1\0", 3);
	b = add("truncated plan", -EBADMSG, XFLOW_CTL_PLAN_LOAD, 80,
		"truncated: the 4-byte payload of a PLAN_LOAD ends inside its plan length", NULL, NULL);
	frame(b, XFLOW_CTL_PLAN_LOAD, 80, 4, "\0\0\0\0", 4);
	b = add("bad field", -EBADMSG, XFLOW_CTL_ASPECT_SET, 81, "bad field: an ASPECT_SET: aspect kind or state unknown",
		NULL, NULL);
	frame(b, XFLOW_CTL_ASPECT_SET, 81, 6, "\7\1\0\0\0\0", 6);
	b = add("trailing bytes", -EBADMSG, XFLOW_CTL_STATS, 82, "trailing bytes: a STATS has bytes after its last field",
		NULL, NULL);
	frame(b, XFLOW_CTL_STATS, 82, 2, "ab", 2);
	b = add("a descriptor", -EBADMSG, XFLOW_CTL_STATS, 83,
		"bad descriptors: a STATS came with descriptors it may not carry", NULL, NULL);
	frame(b, XFLOW_CTL_STATS, 83, 0, "", 0);
	b->with_fd = true;
	b = add("cut in the header", -EBADMSG, XFLOW_CTL_HELLO, 0,
		"truncated: the stream ended 10 bytes into a 24-byte frame header", NULL, NULL);
	b->n = header(b->bytes, M, V, XFLOW_CTL_STATS, 84, 0, 0) - 14;
	b->shut = true;
	b = add("cut in the payload", -EBADMSG, XFLOW_CTL_PLAN_LOAD, 85,
		"truncated: the stream ended 27 bytes into a PLAN_LOAD of 124 bytes", NULL, NULL);
	frame(b, XFLOW_CTL_PLAN_LOAD, 85, 100, "\0\0\0", 3);
	b->shut = true;
}

/* Send @b's bytes on @cli's socket, as they are. */
static void send_bad(struct xflow_ctl_conn *cli, const struct bad *b)
{
	int fd = b->with_fd ? dup(0) : -1;
	ssize_t n = cli->ops->write(cli, b->bytes, b->n, &fd, b->with_fd ? 1 : 0);
	cr_assert_eq(n, (ssize_t)b->n, "%s: sent %zd of %zu bytes", b->name, n, b->n);
	if (fd >= 0)
		close(fd);
	if (b->shut)
		shutdown(cli->fd, SHUT_WR);
}

/* The refusal of @b, read on @cli: its REPLY, then the end of the stream. */
static void expect_refusal(struct xflow_ctl_conn *cli, const struct bad *b)
{
	struct xflow_ctl_msg *m = NULL;
	int rc = xflow_ctl_recv(cli, &m, 5000);
	cr_assert_eq(rc, 1, "%s: no answer (%d, %s)", b->name, rc, cli->why ? cli->why : "");
	cr_assert_eq(m->type, XFLOW_CTL_REPLY, "%s: answered with %s", b->name, xflow_ctl_type_name(m->type));
	const struct xflow_ctl_reply *r = &m->u.reply;
	cr_expect_eq(r->status, b->status, "%s: status %d", b->name, r->status);
	cr_expect_eq(r->req_type, b->req_type, "%s: answers a %s", b->name, xflow_ctl_type_name(r->req_type));
	cr_expect_eq(r->req_seq, b->req_seq, "%s: answers seq %u", b->name, r->req_seq);
	for (int i = 0; i < 3; i++)
		if (b->says[i])
			cr_expect(strstr(r->message, b->says[i]), "%s: '%s' does not say '%s'", b->name, r->message,
				  b->says[i]);
	xflow_ctl_msg_free(m);
	rc = xflow_ctl_recv(cli, &m, 5000);
	cr_expect_eq(rc, -ECONNRESET, "%s: the connection was not closed after the refusal (%d)", b->name, rc);
	xflow_ctl_msg_free(m);
}

Test(control_refuse, each_bad_frame_is_refused_by_name)
{
	build_cases();
	for (unsigned i = 0; i < ncases; i++) {
		const struct bad *b = &cases[i];
		int sv[2];
		cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
		struct xflow_ctl_conn srv, cli;
		cr_assert_eq(xflow_ctl_conn_init_unix(&srv, sv[0]), 0);
		cr_assert_eq(xflow_ctl_conn_init_unix(&cli, sv[1]), 0);
		send_bad(&cli, b);
		struct xflow_ctl_msg *m = NULL;
		int rc = xflow_ctl_recv(&srv, &m, 2000);
		cr_assert_lt(rc, 0, "%s: accepted", b->name);
		cr_assert_neq(srv.fault.kind, XFLOW_CTL_FAULT_NONE, "%s: refused (%d) without a fault", b->name, rc);
		cr_assert_eq(xflow_ctl_refuse(&srv), 0, "%s", b->name);
		cr_expect_str_eq(srv.why, srv.refusal, "%s: the log says another thing than the peer is told", b->name);
		xflow_ctl_conn_close(&srv);
		expect_refusal(&cli, b);
		xflow_ctl_conn_close(&cli);
	}
}

Test(control_refuse, a_clean_end_is_no_refusal)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct xflow_ctl_conn srv;
	cr_assert_eq(xflow_ctl_conn_init_unix(&srv, sv[0]), 0);
	close(sv[1]);
	struct xflow_ctl_msg *m = NULL;
	cr_assert_eq(xflow_ctl_recv(&srv, &m, 2000), -ECONNRESET);
	cr_assert_eq(xflow_ctl_refuse(&srv), -ENOENT, "a stream ended between frames has nothing to refuse");
	xflow_ctl_conn_close(&srv);
}

/* A REPLY answers requests only: to any other frame, the connection. */
Test(control_refuse, a_reply_to_what_is_not_a_request_can_be_read)
{
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	struct xflow_ctl_conn srv, cli;
	cr_assert_eq(xflow_ctl_conn_init_unix(&srv, sv[0]), 0);
	cr_assert_eq(xflow_ctl_conn_init_unix(&cli, sv[1]), 0);
	struct xflow_ctl_msg ev = { .type = XFLOW_CTL_EVENT, .seq = 5 };
	cr_assert_eq(xflow_ctl_reply_simple(&srv, &ev, -EOPNOTSUPP, "EVENT is not a request"), 0);
	struct xflow_ctl_msg *m = NULL;
	cr_assert_eq(xflow_ctl_recv(&cli, &m, 2000), 1, "%s", cli.why ? cli.why : "");
	cr_assert_eq(m->u.reply.req_type, XFLOW_CTL_HELLO);
	cr_assert_str_eq(m->u.reply.message, "EVENT is not a request");
	xflow_ctl_msg_free(m);
	xflow_ctl_conn_close(&srv);
	xflow_ctl_conn_close(&cli);
}

/* ---- the same, told by xflow-agent -------------------------------------- */

static pid_t agent_pid = -1, target_pid = -1;

static void stop_agent(void)
{
	if (target_pid > 0)
		kill(target_pid, SIGKILL);
	if (agent_pid > 0) {
		kill(agent_pid, SIGKILL);
		waitpid(agent_pid, NULL, 0);
	}
}

/* A monitor's connection to the agent at @sock, its HELLO taken. */
static void connect_monitor(const char *sock, struct xflow_ctl_conn *cli)
{
	int fd = -1;
	for (int i = 0; i < 500 && (fd = xflow_ctl_connect(sock)) < 0; i++) {
		cr_assert_eq(waitpid(agent_pid, NULL, WNOHANG), 0, "the agent died");
		usleep(10000);
	}
	cr_assert_geq(fd, 0, "cannot connect to %s: %s", sock, strerror(-fd));
	cr_assert_eq(xflow_ctl_conn_init_unix(cli, fd), 0);
	struct xflow_ctl_msg *m = NULL;
	cr_assert_eq(xflow_ctl_recv(cli, &m, 5000), 1, "no HELLO: %s", cli->why ? cli->why : "timed out");
	cr_assert_eq(m->type, XFLOW_CTL_HELLO);
	if (m->u.hello.ntargets)
		target_pid = (pid_t)m->u.hello.targets[0].pid;
	xflow_ctl_msg_free(m);
}

Test(control_refuse, the_agent_says_why_then_closes, .timeout = 120, .fini = stop_agent)
{
	const char *build = getenv("BUILD");
	char agent[256], dir[] = "/tmp/xflow-refuse.XXXXXX", sock[160];
	snprintf(agent, sizeof(agent), "%s/bin/xflow-agent", build && *build ? build : "build");
	if (access(agent, X_OK) != 0)
		cr_skip_test("%s is not built", agent);
	cr_assert(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/agent.sock", dir);
	agent_pid = fork();
	cr_assert_geq(agent_pid, 0);
	if (agent_pid == 0) {
		/* Its target is held until a plan comes, which none will. */
		execl(agent, agent, "--domain", "refuse", "--socket", sock, "--stay", "--", "/bin/sleep", "60",
		      (char *)NULL);
		_exit(127);
	}
	build_cases();
	for (unsigned i = 0; i < ncases; i++) {
		struct xflow_ctl_conn cli;
		connect_monitor(sock, &cli);
		send_bad(&cli, &cases[i]);
		expect_refusal(&cli, &cases[i]);
		xflow_ctl_conn_close(&cli);
	}
	/* And it serves the next monitor as if nothing had happened. */
	struct xflow_ctl_conn cli;
	connect_monitor(sock, &cli);
	struct xflow_ctl_msg st = { .type = XFLOW_CTL_STATS };
	cr_assert_eq(xflow_ctl_send(&cli, &st, NULL, 0, 2000), 0);
	struct xflow_ctl_msg *m = NULL;
	cr_assert_eq(xflow_ctl_recv(&cli, &m, 5000), 1);
	cr_assert_eq(m->type, XFLOW_CTL_REPLY);
	cr_assert_eq(m->u.reply.req_type, XFLOW_CTL_STATS);
	xflow_ctl_msg_free(m);
	xflow_ctl_conn_close(&cli);
	stop_agent();
	agent_pid = -1;
	unlink(sock);
	rmdir(dir);
}
