/*
 * Finding xflow-agents through xenstore (collectors/xen_discover.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xenstore.h>

#include "collectors/xen_discover.h"
#include "xflow/xen.h"

#define TOKEN "xflowtop"
#define EVENTS_PER_CALL 256 /* a guest writing in a loop cannot keep us here */
#define AGENT_NODE_MAX 63

struct xen_discover {
	struct xs_handle *xs;
	bool dirty;          /* a watch fired since the last scan */
	uint64_t last_scan;
	uint64_t again_ns;   /* a scan is due then, changed or not (0: none) */
};

int xen_discover_open(struct xen_discover **out, char *err, size_t errlen)
{
	*out = NULL;
	struct xen_discover *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->xs = xs_open(0);
	if (!d->xs) {
		int e = errno ? errno : ENOENT;
		snprintf(err, errlen, "agent:xen: no xenstore (%s); run it in dom0 of a Xen host", strerror(e));
		free(d);
		return -e;
	}
	if (!xs_watch(d->xs, "/local/domain", TOKEN) || !xs_watch(d->xs, "@releaseDomain", TOKEN)) {
		int e = errno ? errno : EIO;
		snprintf(err, errlen, "cannot watch xenstore: %s", strerror(e));
		xs_close(d->xs);
		free(d);
		return -e;
	}
	d->dirty = true;
	*out = d;
	return 0;
}

void xen_discover_close(struct xen_discover *d)
{
	if (!d)
		return;
	xs_unwatch(d->xs, "/local/domain", TOKEN);
	xs_unwatch(d->xs, "@releaseDomain", TOKEN);
	xs_close(d->xs);
	free(d);
}

int xen_discover_fd(const struct xen_discover *d)
{
	return xs_fileno(d->xs);
}

bool xen_discover_due(struct xen_discover *d, uint64_t now_ns)
{
	char **ev;
	for (int i = 0; i < EVENTS_PER_CALL && (ev = xs_check_watch(d->xs)); i++) {
		d->dirty = true;
		free(ev);
	}
	if (d->again_ns && now_ns >= d->again_ns) {
		d->dirty = true;
		d->again_ns = 0;
	}
	if (!d->dirty || now_ns - d->last_scan < XEN_DISCOVER_MIN_GAP_NS)
		return false;
	d->last_scan = now_ns;
	return true;
}

void xen_discover_again_at(struct xen_discover *d, uint64_t at_ns)
{
	if (!d->again_ns || at_ns < d->again_ns)
		d->again_ns = at_ns;
}

int xen_offer_parse(const char *value, uint32_t *pid, bool *busy)
{
	/* "xflow-agent <version> <pid> ready|busy", one space each. */
	static const char magic[] = "xflow-agent ";
	if (strncmp(value, magic, sizeof(magic) - 1) != 0)
		return -EINVAL;
	const char *p = value + sizeof(magic) - 1, *sp = strchr(p, ' ');
	uint32_t version;
	if (!sp || xflow_xs_parse_uint(p, (size_t)(sp - p), 1000, &version))
		return -EINVAL;
	if (version != XFLOW_XEN_VERSION)
		return -EPROTO;
	p = sp + 1;
	if (!(sp = strchr(p, ' ')) || xflow_xs_parse_uint(p, (size_t)(sp - p), 0x7fffffff, pid))
		return -EINVAL;
	p = sp + 1;
	if (!strcmp(p, "ready"))
		*busy = false;
	else if (!strcmp(p, "busy"))
		*busy = true;
	else
		return -EINVAL;
	return 0;
}

/* The offer of domain @domid, if it has a complete and well-formed one:
 * 1, 0 (none), or -EINVAL (malformed). */
static int read_offer(struct xen_discover *d, uint32_t domid, struct xen_offer *o)
{
	char path[128];
	memset(o, 0, sizeof(*o));
	o->domid = domid;
	snprintf(o->path, sizeof(o->path), "/local/domain/%u/" XFLOW_XEN_DIR, (unsigned)domid);
	snprintf(path, sizeof(path), "%s/agent", o->path);
	char *v = xflow_xs_read_checked(d->xs, path, AGENT_NODE_MAX);
	if (!v)
		return errno == EINVAL ? -EINVAL : 0;
	int rc = xen_offer_parse(v, &o->agent_pid, &o->busy);
	snprintf(o->tag, sizeof(o->tag), "%s", v);
	free(v);
	if (rc)
		return -EINVAL;
	snprintf(path, sizeof(path), "/local/domain/%u/name", (unsigned)domid);
	char *name = xflow_xs_read_checked(d->xs, path, sizeof(o->name) - 1);
	if (!name)
		return -EINVAL; /* an offer in a domain without a name: not one the toolstack made */
	snprintf(o->name, sizeof(o->name), "%s", name);
	free(name);
	return 1;
}

int xen_discover_scan(struct xen_discover *d, void (*found)(void *ctx, const struct xen_offer *o), void *ctx,
		      unsigned *malformed)
{
	unsigned n = 0, bad = 0;
	char **ids = xs_directory(d->xs, XBT_NULL, "/local/domain", &n);
	d->dirty = false;
	if (!ids)
		return -(errno ? errno : EIO);
	int offers = 0;
	for (unsigned i = 0; i < n && i < XEN_DISCOVER_MAX_DOMAINS; i++) {
		uint32_t domid;
		if (xflow_xs_parse_uint(ids[i], strlen(ids[i]), XFLOW_XEN_MAX_DOMID, &domid))
			continue; /* not a domain */
		struct xen_offer o;
		int rc = read_offer(d, domid, &o);
		if (rc < 0)
			bad++;
		if (rc == 1) {
			offers++;
			found(ctx, &o);
		}
	}
	if (n > XEN_DISCOVER_MAX_DOMAINS)
		d->dirty = true; /* look at the rest next time */
	free(ids);
	if (malformed)
		*malformed = bad;
	return offers;
}

bool xen_discover_domain_alive(struct xen_discover *d, uint32_t domid)
{
	char path[64];
	snprintf(path, sizeof(path), "/local/domain/%u/name", (unsigned)domid);
	char *v = xflow_xs_read_checked(d->xs, path, 255);
	free(v);
	return v != NULL;
}

bool xen_discover_offer_present(struct xen_discover *d, uint32_t domid, const char *tag)
{
	char path[96];
	snprintf(path, sizeof(path), "/local/domain/%u/" XFLOW_XEN_DIR "/agent", (unsigned)domid);
	char *v = xflow_xs_read_checked(d->xs, path, AGENT_NODE_MAX);
	if (!v)
		return false;
	/* The same agent (its pid), whether it is still ready or now busy
	 * with us. */
	uint32_t pid, then;
	bool busy;
	bool same = xen_offer_parse(v, &pid, &busy) == 0 && xen_offer_parse(tag, &then, &busy) == 0 && pid == then;
	free(v);
	return same;
}
