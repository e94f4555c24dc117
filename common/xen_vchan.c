/*
 * libxenvchan for the Xen transport (xflow/xen.h): the record stream and
 * control frames over a vchan.
 *
 * libxenvchan bounds every ring index it reads from the shared page (an
 * index out of range reads as "nothing ready", see its io.c), so a lying
 * peer can stall its own vchan but not make us read out of bounds.  What
 * is left to us: take at most what the caller asked for (a peer that
 * always has data cannot keep us here), decode records out of private
 * memory, and never block: the event channel's descriptor is blocking,
 * so an event is consumed only once poll() says one is there.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <libxenvchan.h>

#include "xflow/control.h"
#include "xflow/xen.h"

#define CHUNK 64 /* records per read or write call */

void xflow_xen_vchan_ack(struct libxenvchan *v)
{
	struct pollfd p = { .fd = libxenvchan_fd_for_select(v), .events = POLLIN };
	if (p.fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN))
		libxenvchan_wait(v);
}

long xflow_xen_rstream_read(struct libxenvchan *v, struct xflow_xen_rstream *s, struct xflow_record *out,
			    size_t max)
{
	unsigned char chunk[CHUNK * XFLOW_RECORD_SIZE];
	size_t n = 0;
	if (s->bad_run >= XFLOW_XEN_MAX_BAD_RUN)
		return -EBADMSG;
	xflow_xen_vchan_ack(v);
	while (n < max) {
		size_t room = max - n < CHUNK ? max - n : CHUNK;
		size_t have = s->have, cap = room * XFLOW_RECORD_SIZE;
		memcpy(chunk, s->part, have);
		int r = libxenvchan_read(v, chunk + have, cap - have);
		if (r < 0)
			return n ? (long)n : -EPIPE; /* closed, and nothing left */
		if (r == 0)
			break;
		if ((size_t)r > cap - have)
			return -EIO; /* cannot happen: libxenvchan broke its word */
		have += (size_t)r;
		size_t whole = have / XFLOW_RECORD_SIZE;
		for (size_t i = 0; i < whole; i++) {
			const char *why = NULL;
			if (xflow_record_decode(chunk + i * XFLOW_RECORD_SIZE, XFLOW_RECORD_SIZE, &out[n], &why)) {
				s->bad++;
				s->why = why;
				if (++s->bad_run >= XFLOW_XEN_MAX_BAD_RUN)
					return n ? (long)n : -EBADMSG;
				continue;
			}
			s->bad_run = 0;
			s->records++;
			n++;
		}
		s->have = have - whole * XFLOW_RECORD_SIZE;
		memcpy(s->part, chunk + whole * XFLOW_RECORD_SIZE, s->have);
		if (have < cap)
			break; /* took everything that was there */
	}
	return (long)n;
}

long xflow_xen_rstream_write(struct libxenvchan *v, const struct xflow_record *r, size_t n)
{
	unsigned char chunk[CHUNK * XFLOW_RECORD_SIZE];
	if (!libxenvchan_is_open(v))
		return -EPIPE;
	int space = libxenvchan_buffer_space(v);
	if (space < 0 || (size_t)space < n * XFLOW_RECORD_SIZE)
		return 0;
	for (size_t done = 0; done < n;) {
		size_t k = n - done < CHUNK ? n - done : CHUNK;
		for (size_t i = 0; i < k; i++)
			xflow_record_encode(&r[done + i], chunk + i * XFLOW_RECORD_SIZE);
		/* There was room for all of it and we are the only writer. */
		int w = libxenvchan_write(v, chunk, k * XFLOW_RECORD_SIZE);
		if (w < 0)
			return -EPIPE;
		if ((size_t)w != k * XFLOW_RECORD_SIZE)
			return -EIO;
		done += k;
	}
	return (long)n;
}

/* ---- control frames ------------------------------------------------------------ */

static ssize_t vchan_write(struct xflow_ctl_conn *c, const void *buf, size_t len, const int *fds, int nfds)
{
	(void)fds;
	struct libxenvchan *v = c->tctx;
	if (nfds > 0)
		return -ENOTSUP;
	xflow_xen_vchan_ack(v);
	if (!libxenvchan_is_open(v))
		return -EPIPE;
	int w = libxenvchan_write(v, buf, len);
	if (w < 0)
		return -EPIPE;
	return w == 0 ? -EAGAIN : w;
}

static ssize_t vchan_read(struct xflow_ctl_conn *c, void *buf, size_t len, int *fds, int maxfds, int *nfds)
{
	(void)fds, (void)maxfds, (void)nfds;
	struct libxenvchan *v = c->tctx;
	xflow_xen_vchan_ack(v);
	int r = libxenvchan_read(v, buf, len);
	if (r < 0)
		return 0; /* closed and drained: the end of the stream */
	return r == 0 ? -EAGAIN : r;
}

static void vchan_close(struct xflow_ctl_conn *c)
{
	if (c->tctx)
		libxenvchan_close(c->tctx);
	c->tctx = NULL;
	c->fd = -1;
}

static const struct xflow_ctl_io_ops vchan_ops = {
	.write = vchan_write,
	.read = vchan_read,
	.close = vchan_close,
};

int xflow_ctl_conn_init_vchan(struct xflow_ctl_conn *c, struct libxenvchan *v)
{
	memset(c, 0, sizeof(*c));
	c->ops = &vchan_ops;
	c->tctx = v;
	c->fd = libxenvchan_fd_for_select(v);
	/* The reader's progress comes as an event, when we asked for one
	 * (libxenvchan asks when the ring is full). */
	c->out_events = POLLIN;
	c->next_seq = 1;
	v->blocking = 0;
	return 0;
}
