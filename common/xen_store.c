/*
 * xenstore for the Xen transport (xflow/xen.h): values a guest wrote,
 * parsed as hostile input, and the probe that decides between the Xen and
 * the local transport.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xenstore.h>

#include "xflow/xen.h"

int xflow_xs_parse_uint(const char *s, size_t len, uint32_t max, uint32_t *out)
{
	if (!s || len == 0 || len > 10)
		return -EINVAL;
	if (s[0] == '0' && len > 1)
		return -EINVAL; /* one spelling per number */
	uint64_t v = 0;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > max)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

char *xflow_xs_read_checked(struct xs_handle *xs, const char *path, size_t max)
{
	unsigned int len = 0;
	char *v = xs_read(xs, XBT_NULL, path, &len);
	if (!v)
		return NULL;
	/* xs_read NUL-terminates, but the value itself may hold a NUL, or
	 * anything a terminal or a log would take for a command. */
	int bad = len > max;
	for (unsigned int i = 0; i < len && !bad; i++)
		bad = (unsigned char)v[i] < 0x20 || v[i] == 0x7f;
	if (bad) {
		free(v);
		errno = EINVAL;
		return NULL;
	}
	return v;
}

int xflow_xen_probe(uint32_t *domid, char *name, size_t namelen, char *why, size_t whylen)
{
	struct xs_handle *xs = xs_open(0);
	if (!xs) {
		int e = errno ? errno : ENOENT;
		snprintf(why, whylen, "no xenstore (%s): not a Xen domain", strerror(e));
		return -e;
	}
	/* Relative paths are this domain's own: /local/domain/<id>/... */
	char *id = xflow_xs_read_checked(xs, "domid", 16);
	uint32_t d;
	int rc = 0;
	if (!id || xflow_xs_parse_uint(id, strlen(id), XFLOW_XEN_MAX_DOMID, &d)) {
		rc = id ? -EINVAL : -(errno ? errno : ENOENT);
		snprintf(why, whylen, "xenstore answers but gives no domain id (%s)",
			 id ? "not a number" : strerror(-rc));
		free(id);
		xs_close(xs);
		return rc;
	}
	free(id);
	char *nm = xflow_xs_read_checked(xs, "name", 255);
	snprintf(why, whylen, "xenstore reachable: domain %u '%s'", (unsigned)d, nm ? nm : "(no name)");
	if (domid)
		*domid = d;
	if (name && namelen)
		snprintf(name, namelen, "%s", nm ? nm : "");
	free(nm);
	xs_close(xs);
	return 0;
}
