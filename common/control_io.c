/*
 * Control frames over a byte stream (xflow/control.h): the framing, the
 * Unix socket transport with descriptor passing, and the owner-only socket
 * directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "xflow/control.h"

/* ---- the Unix socket transport -------------------------------------------- */

static ssize_t unix_write(struct xflow_ctl_conn *c, const void *buf, size_t len, const int *fds,
			  int nfds)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	union {
		char b[CMSG_SPACE(sizeof(int) * XFLOW_CTL_MAX_FDS)];
		struct cmsghdr align;
	} cm;
	if (nfds > XFLOW_CTL_MAX_FDS)
		return -EINVAL;
	if (nfds > 0) {
		memset(&cm, 0, sizeof(cm));
		mh.msg_control = cm.b;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
		h->cmsg_level = SOL_SOCKET;
		h->cmsg_type = SCM_RIGHTS;
		h->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(h), fds, sizeof(int) * (size_t)nfds);
	}
	ssize_t n = sendmsg(c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	return n < 0 ? -errno : n;
}

static ssize_t unix_read(struct xflow_ctl_conn *c, void *buf, size_t len, int *fds, int maxfds,
			 int *nfds)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	union {
		char b[CMSG_SPACE(sizeof(int) * XFLOW_CTL_MAX_FDS)];
		struct cmsghdr align;
	} cm;
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
			     .msg_controllen = sizeof(cm.b) };
	ssize_t n = recvmsg(c->fd, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	if (n < 0)
		return -errno;
	/* Every descriptor that came is either kept or closed here, whatever
	 * the peer sent: a hostile peer must not make us leak them. */
	for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h)) {
		if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int *in = (int *)CMSG_DATA(h);
		for (size_t i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, in + i, sizeof(fd));
			if (*nfds < maxfds)
				fds[(*nfds)++] = fd;
			else
				close(fd), (*nfds)++;
		}
	}
	if (mh.msg_flags & MSG_CTRUNC)
		*nfds = maxfds + 1; /* more than the frame may carry: refused */
	return n;
}

static void unix_close(struct xflow_ctl_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static const struct xflow_ctl_io_ops unix_ops = {
	.write = unix_write,
	.read = unix_read,
	.close = unix_close,
};

int xflow_ctl_conn_init_unix(struct xflow_ctl_conn *c, int fd)
{
	memset(c, 0, sizeof(*c));
	c->ops = &unix_ops;
	c->fd = fd;
	c->out_events = POLLOUT;
	c->next_seq = 1;
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static void drop_fds(struct xflow_ctl_conn *c)
{
	for (int i = 0; i < c->nfds && i < XFLOW_CTL_MAX_FDS; i++)
		close(c->fds[i]);
	c->nfds = 0;
}

void xflow_ctl_conn_close(struct xflow_ctl_conn *c)
{
	drop_fds(c);
	free(c->frame);
	c->frame = NULL;
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	if (c->ops && c->ops->close)
		c->ops->close(c);
	c->ops = NULL;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Milliseconds left until @deadline (-1: none). */
static int left_ms(uint64_t deadline)
{
	if (deadline == UINT64_MAX)
		return -1;
	uint64_t n = now_ms();
	return n >= deadline ? 0 : (int)(deadline - n);
}

int xflow_ctl_flush(struct xflow_ctl_conn *c)
{
	if (!c->ops)
		return -EPIPE;
	while (c->out_off < c->out_len) {
		ssize_t n = c->ops->write(c, c->out + c->out_off, c->out_len - c->out_off, NULL, 0);
		if (n == -EAGAIN || n == -EINTR)
			return 0;
		if (n < 0)
			return n == -ECONNRESET ? -EPIPE : (int)n;
		c->out_off += (size_t)n;
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	return 1;
}

int xflow_ctl_send_async(struct xflow_ctl_conn *c, struct xflow_ctl_msg *m)
{
	void *buf;
	size_t len;
	if (!c->ops)
		return -EPIPE;
	if (m->seq == 0)
		m->seq = c->next_seq++;
	int rc = xflow_ctl_encode(m, &buf, &len);
	if (rc)
		return rc;
	if (c->out_len == 0) {
		c->out = buf;
		c->out_len = len;
		c->out_off = 0;
	} else {
		unsigned char *q = realloc(c->out, c->out_len + len);
		if (!q) {
			free(buf);
			return -ENOMEM;
		}
		memcpy(q + c->out_len, buf, len);
		c->out = q;
		c->out_len += len;
		free(buf);
	}
	rc = xflow_ctl_flush(c);
	return rc < 0 ? rc : 0;
}

int xflow_ctl_send(struct xflow_ctl_conn *c, struct xflow_ctl_msg *m, const int *fds, int nfds,
		   int timeout_ms)
{
	void *buf;
	size_t len, off = 0;
	if (!c->ops)
		return -EPIPE;
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : now_ms() + (uint64_t)timeout_ms;
	/* What was queued goes first: frames must not interleave. */
	int rc;
	while ((rc = xflow_ctl_flush(c)) == 0) {
		int ms = left_ms(deadline);
		if (ms == 0)
			return -ETIMEDOUT;
		struct pollfd p = { .fd = c->fd, .events = c->out_events ? c->out_events : POLLOUT };
		poll(&p, 1, ms < 0 || ms > 100 ? 100 : ms);
	}
	if (rc < 0)
		return rc;
	if (m->seq == 0)
		m->seq = c->next_seq++;
	rc = xflow_ctl_encode(m, &buf, &len);
	if (rc)
		return rc;
	while (off < len) {
		ssize_t n = c->ops->write(c, (char *)buf + off, len - off, off ? NULL : fds,
					  off ? 0 : nfds);
		if (n == -EAGAIN || n == -EINTR) {
			int ms = left_ms(deadline);
			if (ms == 0) {
				rc = -ETIMEDOUT;
				break;
			}
			struct pollfd p = { .fd = c->fd, .events = c->out_events ? c->out_events : POLLOUT };
			poll(&p, 1, ms < 0 || ms > 100 ? 100 : ms);
			continue;
		}
		if (n < 0) {
			rc = n == -ECONNRESET ? -EPIPE : (int)n;
			break;
		}
		off += (size_t)n;
	}
	free(buf);
	return rc;
}

/* Take what is ready.  1: a whole frame is in; 0: not yet; < 0: error. */
static int fill(struct xflow_ctl_conn *c)
{
	for (;;) {
		unsigned char *dst;
		size_t want;
		if (c->got < XFLOW_CTL_HDR_SIZE) {
			dst = c->hdr + c->got;
			want = XFLOW_CTL_HDR_SIZE - c->got;
		} else {
			size_t total = XFLOW_CTL_HDR_SIZE + (size_t)c->plen;
			if (c->got == total)
				return 1;
			dst = c->frame + c->got;
			want = total - c->got;
		}
		int nfds = c->nfds;
		ssize_t n = c->ops->read(c, dst, want, c->fds, XFLOW_CTL_MAX_FDS, &nfds);
		if (nfds > XFLOW_CTL_MAX_FDS) {
			c->nfds = XFLOW_CTL_MAX_FDS;
			c->fault = (struct xflow_ctl_fault){ XFLOW_CTL_FAULT_FDS, "too many descriptors" };
			c->why = c->fault.why;
			return -EBADMSG;
		}
		c->nfds = nfds;
		if (n == -EAGAIN || n == -EINTR)
			return 0;
		if (n < 0)
			return (int)n;
		if (n == 0) {
			if (c->got) {
				c->fault = (struct xflow_ctl_fault){ XFLOW_CTL_FAULT_CUT,
								     "the stream ended inside a frame" };
				c->why = c->fault.why;
				c->cut_at = c->got;
			}
			return -ECONNRESET;
		}
		c->got += (size_t)n;
		if (c->got == XFLOW_CTL_HDR_SIZE) {
			int rc = xflow_ctl_header_fault(c->hdr, &c->plen, &c->fault);
			c->why = c->fault.why;
			if (rc)
				return rc;
			/* The header is checked before anything of this size
			 * is allocated; the bound is XFLOW_CTL_MAX_PAYLOAD. */
			c->frame = malloc(XFLOW_CTL_HDR_SIZE + (size_t)c->plen);
			if (!c->frame)
				return -ENOMEM;
			memcpy(c->frame, c->hdr, XFLOW_CTL_HDR_SIZE);
		}
	}
}

int xflow_ctl_recv(struct xflow_ctl_conn *c, struct xflow_ctl_msg **out, int timeout_ms)
{
	*out = NULL;
	if (c->broken)
		return c->broken;
	if (!c->ops)
		return -EPIPE;
	uint64_t deadline = timeout_ms < 0 ? UINT64_MAX : now_ms() + (uint64_t)timeout_ms;
	for (;;) {
		int rc = fill(c);
		if (rc < 0) {
			c->broken = rc;
			drop_fds(c);
			return rc;
		}
		if (rc == 1)
			break;
		int ms = left_ms(deadline);
		if (ms == 0)
			return 0;
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		if (poll(&p, 1, ms) < 0 && errno != EINTR)
			return -errno;
	}
	size_t len = XFLOW_CTL_HDR_SIZE + (size_t)c->plen;
	int rc = xflow_ctl_decode_fault(c->frame, len, c->fds, c->nfds, out, &c->fault);
	c->why = c->fault.why;
	free(c->frame);
	c->frame = NULL;
	c->got = 0;
	if (rc) {
		drop_fds(c);
		c->broken = rc;
		return rc;
	}
	c->nfds = 0; /* now the message's */
	return 1;
}

/* The types a monitor sends and a REPLY answers. */
static bool is_request(unsigned type)
{
	return type == XFLOW_CTL_PLAN_LOAD || type == XFLOW_CTL_ASPECT_SET || type == XFLOW_CTL_STATS ||
	       type == XFLOW_CTL_DETACH;
}

int xflow_ctl_reply_simple(struct xflow_ctl_conn *c, const struct xflow_ctl_msg *req, int status,
			   const char *fmt, ...)
{
	char text[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	struct xflow_ctl_msg m = { .type = XFLOW_CTL_REPLY };
	m.u.reply.req_seq = req->seq;
	m.u.reply.req_type = is_request(req->type) ? req->type : XFLOW_CTL_HELLO;
	m.u.reply.status = status;
	m.u.reply.message = text;
	/* The bodies of PLAN_LOAD, ASPECT_SET and STATS replies are zeros. */
	return xflow_ctl_send(c, &m, NULL, 0, 2000);
}

/* "a PLAN_LOAD", "an ASPECT_SET", "a frame" (type unknown). */
static const char *a_frame(unsigned type)
{
	static const char *const names[] = { "a frame", "a HELLO", "a PLAN_LOAD", "an ASPECT_SET", "a STATS",
					     "a DETACH", "a REPLY", "an EVENT" };
	return type <= XFLOW_CTL_TYPE_MAX ? names[type] : names[0];
}

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int xflow_ctl_refuse(struct xflow_ctl_conn *c)
{
	const struct xflow_ctl_fault *f = &c->fault;
	if (f->kind == XFLOW_CTL_FAULT_NONE)
		return -ENOENT;
	/* What of the header is there: all of it unless the stream was cut
	 * inside it.  Its seq and type are the sender's own only when its
	 * magic and version are ours. */
	const unsigned char *h = c->hdr;
	bool whole = f->kind != XFLOW_CTL_FAULT_CUT || c->cut_at >= XFLOW_CTL_HDR_SIZE;
	bool ours = whole && f->kind != XFLOW_CTL_FAULT_MAGIC && f->kind != XFLOW_CTL_FAULT_VERSION;
	unsigned type = ours ? (unsigned)(h[6] | h[7] << 8) : 0;
	const char *what = a_frame(f->kind == XFLOW_CTL_FAULT_TYPE ? 0 : type);
	/* The sentence stays in the connection: c->why, for the caller's log. */
	char *text = c->refusal;
	const size_t tlen = sizeof(c->refusal);
	switch (f->kind) {
	case XFLOW_CTL_FAULT_MAGIC:
		snprintf(text, tlen, "bad magic: 0x%08x is not a control frame's 0x%08x (\"XFCT\")",
			 (unsigned)le32(h), (unsigned)XFLOW_CTL_MAGIC);
		break;
	case XFLOW_CTL_FAULT_VERSION:
		snprintf(text, tlen, "unknown version: the frame is of protocol version %u, this peer speaks %u",
			 (unsigned)(h[4] | h[5] << 8), (unsigned)XFLOW_CTL_VERSION);
		break;
	case XFLOW_CTL_FAULT_TYPE:
		snprintf(text, tlen, "unknown type: message type %u (version %u has types 1 to %u)",
			 (unsigned)(h[6] | h[7] << 8), (unsigned)XFLOW_CTL_VERSION, (unsigned)XFLOW_CTL_TYPE_MAX);
		break;
	case XFLOW_CTL_FAULT_LENGTH:
		snprintf(text, tlen, "absurd length: %s with a payload of %u bytes (at most %u)", what,
			 (unsigned)le32(h + 12), (unsigned)XFLOW_CTL_MAX_PAYLOAD);
		break;
	case XFLOW_CTL_FAULT_RESERVED:
		snprintf(text, tlen, "reserved bits: %s with flags 0x%x and reserved 0x%x (both must be 0)",
			 what, (unsigned)le32(h + 16), (unsigned)le32(h + 20));
		break;
	case XFLOW_CTL_FAULT_TRUNCATED:
		snprintf(text, tlen, "truncated: the %u-byte payload of %s ends inside its %s", (unsigned)c->plen,
			 what, f->why);
		break;
	case XFLOW_CTL_FAULT_CUT:
		if (whole)
			snprintf(text, tlen, "truncated: the stream ended %zu bytes into %s of %zu bytes",
				 c->cut_at, what, (size_t)XFLOW_CTL_HDR_SIZE + c->plen);
		else
			snprintf(text, tlen, "truncated: the stream ended %zu bytes into a %d-byte frame header",
				 c->cut_at, XFLOW_CTL_HDR_SIZE);
		break;
	case XFLOW_CTL_FAULT_TRAILING:
		snprintf(text, tlen, "trailing bytes: %s has bytes after its last field", what);
		break;
	case XFLOW_CTL_FAULT_FDS:
		snprintf(text, tlen, "bad descriptors: %s came with %s", what,
			 !strcmp(f->why, "ring descriptors missing") ? "too few (a HELLO offering a local ring has 2)"
			 : !strcmp(f->why, "unexpected descriptors") ? "descriptors it may not carry"
								       : "more descriptors than a frame may carry");
		break;
	default:
		snprintf(text, tlen, "bad field: %s: %s", what, f->why);
		break;
	}
	struct xflow_ctl_msg m = { .type = XFLOW_CTL_REPLY };
	m.u.reply.req_seq = ours && is_request(type) ? le32(h + 8) : 0;
	m.u.reply.req_type = ours && is_request(type) ? (uint16_t)type : XFLOW_CTL_HELLO;
	m.u.reply.status = f->kind == XFLOW_CTL_FAULT_MAGIC || f->kind == XFLOW_CTL_FAULT_VERSION ? -EPROTO
												: -EBADMSG;
	m.u.reply.message = text;
	c->why = text;
	return xflow_ctl_send_async(c, &m);
}

/* ---- the local socket -------------------------------------------------------- */

int xflow_ctl_default_dir(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;
	if (xdg && xdg[0] == '/')
		n = snprintf(buf, len, "%s/xflow", xdg);
	else if (geteuid() == 0)
		n = snprintf(buf, len, "/run/xflow");
	else
		n = snprintf(buf, len, "/tmp/xflow-%u", (unsigned)geteuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* The directory holding @path must be ours and closed to others. */
static int check_dir(const char *path)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	const char *slash = strrchr(path, '/');
	if (!slash)
		return 0; /* the current directory: the caller's choice */
	size_t n = (size_t)(slash - path);
	if (n == 0)
		return -EPERM; /* never in / */
	if (n >= sizeof(dir))
		return -ENAMETOOLONG;
	memcpy(dir, path, n);
	dir[n] = 0;
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	struct stat st;
	if (lstat(dir, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077))
		return -EPERM;
	return 0;
}

static int fill_addr(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

int xflow_ctl_connect(const char *path)
{
	struct sockaddr_un sa;
	int rc = fill_addr(&sa, path);
	if (rc)
		return rc;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int xflow_ctl_listen(const char *path)
{
	struct sockaddr_un sa;
	int rc = fill_addr(&sa, path);
	if (rc)
		return rc;
	if ((rc = check_dir(path)))
		return rc;
	struct stat st;
	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode))
			return -EEXIST;
		int probe = xflow_ctl_connect(path);
		if (probe >= 0) {
			close(probe);
			return -EADDRINUSE;
		}
		unlink(path); /* stale: its agent is gone */
	}
	/* Bound and listening under a private name first, then renamed into
	 * place: whoever sees the socket file can connect at once (a monitor
	 * started right after the agent must not meet ECONNREFUSED).  A path
	 * too long for the suffix is bound in place. */
	struct sockaddr_un tmp;
	char tmp_path[sizeof(sa.sun_path) + 16];
	snprintf(tmp_path, sizeof(tmp_path), "%s.%ld", path, (long)getpid());
	bool staged = fill_addr(&tmp, tmp_path) == 0;
	if (!staged)
		tmp = sa;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (staged)
		unlink(tmp_path); /* left by a process of this pid before */
	/* The mode is set at bind through the umask, so there is no moment
	 * when others could connect. */
	mode_t old = umask(077);
	rc = bind(fd, (struct sockaddr *)&tmp, sizeof(tmp));
	umask(old);
	/* Sockets need no execute bit: 0600 as documented. */
	if (rc == 0 && chmod(tmp.sun_path, 0600) < 0)
		rc = -1;
	if (rc == 0)
		rc = listen(fd, 4);
	if (rc == 0 && staged)
		rc = rename(tmp_path, path);
	if (rc < 0) {
		rc = -errno;
		if (staged)
			unlink(tmp_path);
		close(fd);
		return rc;
	}
	return fd;
}
