/*
 * tui/sites.h — names of sites and domains, cached, and the grouping of
 * sites into points (one point per function) that the model asks for.
 *
 * Names come from the collectors' site_info/domain_info through a lookup
 * callback, are copied once, and stay valid until xft_sites_fini(), so rows,
 * snapshots and paused screens can keep pointers to them.  The cache holds
 * at most max_sites entries: sites past that (a hostile producer inventing
 * ids) share one "(other)" entry and are counted.
 */
#ifndef XFLOW_TUI_SITES_H
#define XFLOW_TUI_SITES_H

#include <stdint.h>

#include "xflow/collector.h"

/* Names for (domain, site): 0 or -ENOENT.  Strings need only last the call. */
typedef int (*xft_site_lookup_fn)(void *ctx, uint16_t domain, uint32_t site,
				  struct xflow_site_info *out);

struct xft_site {
	uint16_t domain;
	uint32_t site;
	uint32_t group;     /* interned function name */
	uint32_t line;
	const char *file;
	const char *function;
	const char *what;   /* may be "" */
	uint32_t roles;     /* enum xflow_site_roles; 0: not known */
	int used;
};

struct xft_domain_name {
	uint16_t id;
	char name[64];
};

#define XFT_MAX_DOMAIN_NAMES 256

struct xft_sites {
	xft_site_lookup_fn lookup;
	void *ctx;
	struct xft_site *tab;
	uint32_t mask, n, max;
	uint64_t overflow;              /* lookups past max */
	char **groups;                  /* group id -> function name */
	uint32_t *group_slots;          /* hash of function names: group + 1 */
	uint32_t ngroups, group_mask;
	struct xft_domain_name domains[XFT_MAX_DOMAIN_NAMES];
	unsigned ndomains;
	struct xft_site other;
};

int xft_sites_init(struct xft_sites *s, uint32_t max_sites, xft_site_lookup_fn lookup, void *ctx);
void xft_sites_fini(struct xft_sites *s);

/* The names of (domain, site); never NULL. */
const struct xft_site *xft_sites_get(struct xft_sites *s, uint16_t domain, uint32_t site);

/* An xft_group_fn for xft_agg_new(): @opaque is the struct xft_sites. */
uint32_t xft_sites_group(void *opaque, uint16_t domain, uint32_t site);
const char *xft_sites_group_name(const struct xft_sites *s, uint32_t group);
/* An xft_role_fn for xft_agg_set_roles(): the site's roles as its
 * collector gave them (enum xflow_site_roles), 0 when it did not, and for
 * the sites past max_sites (so the model treats those as it always did). */
unsigned xft_sites_roles(void *opaque, uint16_t domain, uint32_t site);

/* A domain's name: the one set, else "domN". */
void xft_sites_set_domain(struct xft_sites *s, uint16_t id, const char *name);
const char *xft_sites_domain(struct xft_sites *s, uint16_t id);

#endif
