/*
 * The agent's side of the Xen transport (guestrt/agent/agent_xen.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libxenvchan.h>
#include <xenstore.h>

#include "guestrt/agent/agent_xen.h"
#include "xflow/xen.h"

#define PUMP_CHUNK 64

int agent_xen_init(struct agent_xen *x, char *why, size_t whylen)
{
	memset(x, 0, sizeof(*x));
	int rc = xflow_xen_probe(&x->domid, x->name, sizeof(x->name), why, whylen);
	if (rc)
		return rc;
	if (!x->name[0]) {
		snprintf(why, whylen, "xenstore gives domain %u no name", (unsigned)x->domid);
		return -ENOENT;
	}
	snprintf(x->base, sizeof(x->base), "/local/domain/%u/" XFLOW_XEN_DIR, (unsigned)x->domid);
	return 0;
}

static int write_node(const char *path, const char *value)
{
	struct xs_handle *xs = xs_open(0);
	if (!xs)
		return -(errno ? errno : EIO);
	bool ok = xs_write(xs, XBT_NULL, path, value, (unsigned)strlen(value));
	int e = errno;
	xs_close(xs);
	return ok ? 0 : -(e ? e : EIO);
}

static void agent_node(struct agent_xen *x, const char *state)
{
	char path[96], val[64];
	snprintf(path, sizeof(path), "%s/agent", x->base);
	snprintf(val, sizeof(val), "xflow-agent %d %ld %s", XFLOW_XEN_VERSION, (long)getpid(), state);
	write_node(path, val);
}

int agent_xen_offer(struct agent_xen *x, char *err, size_t errlen)
{
	char path[96];
	snprintf(path, sizeof(path), "%s/ctl", x->base);
	x->ctl = libxenvchan_server_init(NULL, 0, path, XFLOW_XEN_CTL_RING, XFLOW_XEN_CTL_RING);
	if (!x->ctl) {
		int e = errno ? errno : EIO;
		snprintf(err, errlen, "cannot offer the control vchan at %s: %s (are xen-gntalloc and xen-evtchn loaded?)",
			 path, strerror(e));
		return -e;
	}
	x->ctl->blocking = 0;
	snprintf(path, sizeof(path), "%s/rec", x->base);
	/* Nothing flows from the monitor on this one: the smallest ring. */
	x->rec = libxenvchan_server_init(NULL, 0, path, 1024, XFLOW_XEN_REC_RING);
	if (!x->rec) {
		int e = errno ? errno : EIO;
		snprintf(err, errlen, "cannot offer the record vchan at %s: %s", path, strerror(e));
		libxenvchan_close(x->ctl);
		x->ctl = NULL;
		return -e;
	}
	x->rec->blocking = 0;
	agent_node(x, "ready");
	x->offered = true;
	return 0;
}

bool agent_xen_monitor_arrived(const struct agent_xen *x)
{
	/* libxenvchan: the client sets cli_live to 1 when it has mapped the
	 * rings (2 before, 0 after it left). */
	return x->ctl && x->ctl->ring && x->ctl->ring->cli_live == 1;
}

void agent_xen_mark_busy(struct agent_xen *x)
{
	agent_node(x, "busy");
}

int agent_xen_pump_start(struct agent_xen *x, void *region, size_t size)
{
	/* No notifier: the agent pumps between slices and never sleeps on
	 * its own ring. */
	return xflow_ring_consumer_init(&x->own, region, size, XFLOW_RECORD_SIZE, NULL);
}

bool agent_xen_pending(struct agent_xen *x)
{
	/* Acquire: pairs with the producer's release of prod. */
	return x->rec && x->own.hdr &&
	       x->own.cons != atomic_load_explicit(&x->own.hdr->prod, memory_order_acquire);
}

long agent_xen_pump(struct agent_xen *x)
{
	struct xflow_record r[PUMP_CHUNK];
	long moved = 0;
	if (!x->rec)
		return -EPIPE;
	for (;;) {
		if (!libxenvchan_is_open(x->rec))
			return -EPIPE;
		int space = libxenvchan_buffer_space(x->rec);
		size_t fit = space > 0 ? (size_t)space / XFLOW_RECORD_SIZE : 0;
		if (fit == 0)
			break; /* the rest waits in our ring */
		long n = xflow_ring_pop_records(&x->own, r, fit < PUMP_CHUNK ? fit : PUMP_CHUNK);
		if (n <= 0)
			break;
		long w = xflow_xen_rstream_write(x->rec, r, (size_t)n);
		if (w < 0)
			return w;
		if (w != n)
			return -EIO; /* there was room: cannot happen */
		moved += n;
		x->pumped += (uint64_t)n;
		if (n < PUMP_CHUNK)
			break;
	}
	return moved;
}

void agent_xen_withdraw(struct agent_xen *x)
{
	/* libxenvchan_close removes each server's own ring-ref and
	 * event-channel; the directory and the agent node are ours. */
	if (x->rec)
		libxenvchan_close(x->rec);
	if (x->ctl)
		libxenvchan_close(x->ctl);
	x->rec = x->ctl = NULL;
	if (x->offered) {
		struct xs_handle *xs = xs_open(0);
		if (xs) {
			xs_rm(xs, XBT_NULL, x->base);
			xs_close(xs);
		}
	}
	x->offered = false;
}
