/*
 * collectors/xen_discover.h — finding xflow-agents on a Xen host: the
 * offers they make in xenstore (xflow/xen.h), watched for agents and
 * domains that come and go.
 *
 * Everything under /local/domain/<id>/data is written by the guest and
 * read here as hostile: values are bounded, checked for control bytes and
 * parsed strictly; a domain's id is the one in the path and its name the
 * toolstack's /local/domain/<id>/name, never what the guest says.
 */
#ifndef XFLOW_COLLECTORS_XEN_DISCOVER_H
#define XFLOW_COLLECTORS_XEN_DISCOVER_H

#include <stdbool.h>
#include <stdint.h>

/* Domains looked at per scan at most (more are left for the next scan and
 * counted). */
#define XEN_DISCOVER_MAX_DOMAINS 1024
/* Rescans after watch events at most this often. */
#define XEN_DISCOVER_MIN_GAP_NS 100000000u

struct xen_discover;

/* One complete offer found by a scan. */
struct xen_offer {
	uint32_t domid;
	char name[64];       /* the toolstack's name of the domain */
	uint32_t agent_pid;  /* in the guest: for messages only */
	bool busy;           /* already serving a monitor */
	char tag[64];        /* the agent node's value, to tell offers apart */
	char path[80];       /* /local/domain/<id>/data/xflow */
};

/* Open xenstore and watch /local/domain and @releaseDomain.  0, or a
 * negative errno with @err saying why (no xenstore: not dom0 of a Xen
 * host). */
int xen_discover_open(struct xen_discover **out, char *err, size_t errlen);
void xen_discover_close(struct xen_discover *d);

/* The descriptor that becomes readable when a watch fires. */
int xen_discover_fd(const struct xen_discover *d);

/* Take the watch events that are there (at most a bounded number) and say
 * whether a scan is due at @now_ns: something changed, and the last scan
 * was at least XEN_DISCOVER_MIN_GAP_NS ago. */
bool xen_discover_due(struct xen_discover *d, uint64_t now_ns);

/* A scan is due at @at_ns even if nothing changes: an offer seen was left
 * alone until then (an agent that offered again at once, while we backed
 * off, changes nothing after, and was never tried again). */
void xen_discover_again_at(struct xen_discover *d, uint64_t at_ns);

/* Scan every domain for an offer; @found is called for each complete one.
 * Offers with unreadable or malformed values are skipped and counted in
 * *malformed (if not NULL).  Returns the number of offers, or a negative
 * errno when xenstore cannot be read. */
int xen_discover_scan(struct xen_discover *d, void (*found)(void *ctx, const struct xen_offer *o), void *ctx,
		      unsigned *malformed);

/* Does domain @domid still exist, and is its offer tagged @tag still
 * there?  (Both answered from xenstore.) */
bool xen_discover_domain_alive(struct xen_discover *d, uint32_t domid);
bool xen_discover_offer_present(struct xen_discover *d, uint32_t domid, const char *tag);

/* Parse an agent node's value "xflow-agent <version> <pid> ready|busy".
 * 0, -EPROTO for another version, or -EINVAL. */
int xen_offer_parse(const char *value, uint32_t *pid, bool *busy);

#endif
