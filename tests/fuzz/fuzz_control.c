/*
 * Fuzz the control protocol's decoder: any bytes either decode to a message
 * that re-encodes to the same bytes, or are refused with a reason and the
 * kind of fault; and the refusal a receiver then sends (xflow_ctl_refuse())
 * is a REPLY that every peer can decode, naming what was wrong.  The first
 * byte of the input says how many descriptors "came" with the frame (0..3,
 * as placeholders -1: the decoder never touches them).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xflow/control.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A transport that keeps what is written, for the refusal's bytes. */
static unsigned char sent[4096];
static size_t nsent;

static ssize_t keep_write(struct xflow_ctl_conn *c, const void *buf, size_t len, const int *fds, int nfds)
{
	(void)c;
	(void)fds;
	(void)nfds;
	if (len > sizeof(sent) - nsent)
		abort(); /* a refusal is a few hundred bytes */
	memcpy(sent + nsent, buf, len);
	nsent += len;
	return (ssize_t)len;
}

static const struct xflow_ctl_io_ops keep_ops = { .write = keep_write };

/* Refuse the frame @frame (@len bytes) was, as a connection would. */
static void check_refusal(const uint8_t *frame, size_t len, const struct xflow_ctl_fault *f)
{
	struct xflow_ctl_conn c = { .ops = &keep_ops, .fd = -1 };
	c.fault = *f;
	size_t h = len < XFLOW_CTL_HDR_SIZE ? len : XFLOW_CTL_HDR_SIZE;
	memcpy(c.hdr, frame, h);
	if (len >= XFLOW_CTL_HDR_SIZE)
		c.plen = (uint32_t)(len - XFLOW_CTL_HDR_SIZE);
	else
		c.fault = (struct xflow_ctl_fault){ XFLOW_CTL_FAULT_CUT, "the stream ended inside a frame" };
	c.cut_at = h;
	nsent = 0;
	if (xflow_ctl_refuse(&c) != 0 || c.why != c.refusal)
		abort();
	struct xflow_ctl_msg *m = NULL;
	const char *why = NULL;
	if (xflow_ctl_decode(sent, nsent, NULL, 0, &m, &why) != 0 || m->type != XFLOW_CTL_REPLY ||
	    m->u.reply.status >= 0 || strcmp(m->u.reply.message, c.refusal) != 0)
		abort();
	xflow_ctl_msg_free(m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int nfds = data[0] & 3;
	int fds[4] = { -1, -1, -1, -1 };
	struct xflow_ctl_msg *m = NULL;
	struct xflow_ctl_fault f;
	int rc = xflow_ctl_decode_fault(data + 1, size - 1, fds, nfds, &m, &f);
	if (rc == 0) {
		void *back;
		size_t len;
		if (!m || f.why != NULL || f.kind != XFLOW_CTL_FAULT_NONE)
			abort();
		/* Placeholders only: the message must not close them. */
		m->nfds = 0;
		if (xflow_ctl_encode(m, &back, &len) != 0)
			abort();
		if (len != size - 1 || memcmp(back, data + 1, len) != 0)
			abort();
		free(back);
		xflow_ctl_msg_free(m);
	} else if (rc != -ENOMEM) {
		if (f.why == NULL || f.kind == XFLOW_CTL_FAULT_NONE || m != NULL)
			abort();
		check_refusal(data + 1, size - 1, &f);
	}
	return 0;
}
