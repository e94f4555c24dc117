/*
 * xflow/xen.h — the Xen transport: an agent in a domain reached by the
 * monitor in dom0 over libxenvchan (grant-shared pages and an event
 * channel), found through xenstore.
 *
 * ---- xenstore (written by the agent, i.e. by the guest: untrusted) --------
 *
 * Under its domain's own path /local/domain/<id>/data/xflow (the guest may
 * write beneath "data"), an agent offering itself writes:
 *
 *   ctl/ring-ref, ctl/event-channel   a libxenvchan server for control
 *                                     frames (xflow/control.h), both ways
 *   rec/ring-ref, rec/event-channel   a libxenvchan server for records,
 *                                     agent -> monitor (the stream below)
 *   agent                             "xflow-agent <XFLOW_XEN_VERSION> <pid>",
 *                                     written last: the offer is complete
 *
 * and removes the directory when it stops.  The monitor watches
 * /local/domain (and @releaseDomain) and connects to every complete offer.
 * It trusts nothing an offer says about its domain: the domain's id is the
 * one in the path, its name the toolstack's /local/domain/<id>/name, and
 * every value is parsed with xflow_xs_parse_uint() (digits only, bounded).
 * The vchans are offered to domain 0 only (libxenvchan's grants and event
 * channel name the peer) and each takes one client; a monitor that finds
 * an offer already taken (the agent refuses it with a REPLY of -EBUSY on
 * the control vchan) leaves it alone.
 *
 * ---- the control vchan ---------------------------------------------------
 *
 * The byte stream of xflow/control.h, unchanged, except that HELLO says
 * ring_offer XFLOW_CTL_RING_VCHAN: no descriptors; records come on the rec
 * vchan.  slot_size is XFLOW_RECORD_SIZE, nslots the records the rec vchan
 * holds, region_size its size in bytes.  With a CLOCK_MONOTONIC clock,
 * base_ns is the agent's clock when it sent the HELLO, so the monitor can
 * place the guest's clock on its own (a domain's CLOCK_MONOTONIC starts at
 * its own boot).  When the monitor goes (its vchan end closes, or it sends
 * DETACH) the agent withdraws both vchans and, if it stays, offers fresh
 * ones: a vchan server serves one client in its life.
 *
 * ---- the record stream (rec vchan, agent -> monitor) -------------------
 *
 * Records back to back, XFLOW_RECORD_SIZE bytes each, in xflow/record.h's
 * wire encoding; nothing else.  The agent writes whole records only and,
 * when the vchan is full, leaves them in its local ring (which counts what
 * it drops when full).  The monitor reads only what is there, decodes each
 * record with xflow_record_decode() out of private memory, counts bad ones
 * and gives the peer up after XFLOW_XEN_MAX_BAD_RUN bad records in a row
 * (a stream out of step never gets back in step: it is garbage).
 */
#ifndef XFLOW_XEN_H
#define XFLOW_XEN_H

#include <stddef.h>
#include <stdint.h>

#include "xflow/record.h"

#define XFLOW_XEN_VERSION 1
#define XFLOW_XEN_DIR "data/xflow"          /* relative to /local/domain/<id> */
#define XFLOW_XEN_CTL_RING (64u << 10)      /* each way */
#define XFLOW_XEN_REC_RING (1u << 20)       /* agent -> monitor (libxenvchan's maximum) */
#define XFLOW_XEN_MAX_BAD_RUN 64
/* Xen's own limit for domain ids that name real domains (DOMID_FIRST_RESERVED). */
#define XFLOW_XEN_MAX_DOMID 0x7fefu

struct libxenvchan;
struct xs_handle;

/*
 * Parse a xenstore value that must be a decimal number in [0, max]: digits
 * only (no sign, space, or leading zeros other than "0"), at most 10 of
 * them, no NUL before @len.  Returns 0 and *out, or -EINVAL.
 */
int xflow_xs_parse_uint(const char *s, size_t len, uint32_t max, uint32_t *out);

/*
 * Read and check @path: a value of at most @max bytes without control
 * characters or NUL.  Returns a malloc'd NUL-terminated copy, or NULL with
 * errno (ENOENT: no such node; EINVAL: it breaks the rules; others from
 * xs_read).
 */
char *xflow_xs_read_checked(struct xs_handle *xs, const char *path, size_t max);

/*
 * Which transport should a program use here?  Xen when xenstore answers
 * (a domain of a Xen host, or dom0); otherwise local.  @why gets a sentence
 * for the log either way ("xenstore reachable, domain 3 'linuxU'",
 * "no xenstore: /dev/xen/xenbus: No such file or directory").  When Xen is
 * usable, *domid and @name (if not NULL) get this domain's id and name.
 */
int xflow_xen_probe(uint32_t *domid, char *name, size_t namelen, char *why, size_t whylen);

/* ---- the record stream ------------------------------------------------------ */

/* What the monitor keeps between reads of one peer's stream. */
struct xflow_xen_rstream {
	unsigned char part[XFLOW_RECORD_SIZE]; /* a record not yet whole */
	size_t have;
	uint64_t records, bad, bad_run;
	const char *why;                       /* the last bad record's fault */
};

/*
 * Read up to @max whole records that are ready on @v, without blocking,
 * decoded into @out.  Bad records are counted and skipped.  Returns the
 * number decoded (0: nothing ready), or -EBADMSG once the peer sent
 * XFLOW_XEN_MAX_BAD_RUN bad records in a row (s->why says why), or -EPIPE
 * when the vchan is closed and drained.
 */
long xflow_xen_rstream_read(struct libxenvchan *v, struct xflow_xen_rstream *s, struct xflow_record *out,
			    size_t max);

/*
 * Write @n records to @v if all of them fit now (whole records only, never
 * blocking).  Returns @n, 0 when there is no room for all of them (nothing
 * written), or -EPIPE when the peer is gone.
 */
long xflow_xen_rstream_write(struct libxenvchan *v, const struct xflow_record *r, size_t n);

/* Consume the vchan's pending event if there is one, without blocking (the
 * event channel's descriptor is blocking; libxenvchan_wait() would wait). */
void xflow_xen_vchan_ack(struct libxenvchan *v);

/* ---- control frames over a vchan ------------------------------------------ */

struct xflow_ctl_conn;

/* A control connection over @v (taken over: closed by xflow_ctl_conn_close).
 * The connection's fd is the vchan's event channel, to poll. */
int xflow_ctl_conn_init_vchan(struct xflow_ctl_conn *c, struct libxenvchan *v);

#endif
