/*
 * Site names: cached copies, function groups, the bound, domain names.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "tui/sites.h"

static int lookups;

static int lookup(void *ctx, uint16_t domain, uint32_t site, struct xflow_site_info *out)
{
	static char fn[32];
	(void)ctx;
	lookups++;
	if (site >= 100)
		return -ENOENT;
	/* Sites 0-9 in f0, 10-19 in f1, ...: several sites per function. */
	snprintf(fn, sizeof(fn), "f%u", site / 10);
	out->function = fn; /* reused: the cache must copy */
	out->file = "x.c";
	out->line = site;
	out->domain = domain ? "guest" : "dom0name";
	out->what = NULL;
	return 0;
}

Test(sites, cache_groups_and_copies)
{
	struct xft_sites s;
	cr_assert_eq(xft_sites_init(&s, 64, lookup, NULL), 0);
	lookups = 0;
	const struct xft_site *a = xft_sites_get(&s, 1, 3);
	const struct xft_site *b = xft_sites_get(&s, 1, 7);
	const struct xft_site *c = xft_sites_get(&s, 1, 13);
	cr_assert_eq(lookups, 3);
	cr_assert_eq(xft_sites_get(&s, 1, 3), a, "cached");
	cr_assert_eq(lookups, 3);
	cr_assert_str_eq(a->function, "f0");
	cr_assert_str_eq(c->function, "f1");
	cr_assert_eq(a->group, b->group, "one point per function");
	cr_assert_neq(a->group, c->group);
	cr_assert_eq(xft_sites_group(&s, 1, 7), a->group);
	cr_assert_str_eq(xft_sites_group_name(&s, c->group), "f1");
	cr_assert_str_eq(xft_sites_group_name(&s, 9999), "(other)");
	cr_assert_eq(a->line, 3);
	cr_assert_str_eq(a->what, "");
	cr_assert_str_eq(xft_sites_domain(&s, 1), "guest");
	cr_assert_str_eq(xft_sites_domain(&s, 7), "dom7");
	xft_sites_set_domain(&s, 7, "renamed");
	cr_assert_str_eq(xft_sites_domain(&s, 7), "renamed");
	const struct xft_site *u = xft_sites_get(&s, 2, 500);
	cr_assert_str_eq(u->function, "site#500");
	cr_assert_str_eq(u->file, "?");
	xft_sites_fini(&s);
}

Test(sites, bounded_whatever_the_ids)
{
	struct xft_sites s;
	cr_assert_eq(xft_sites_init(&s, 16, lookup, NULL), 0);
	for (uint32_t i = 0; i < 1000; i++)
		cr_assert_not_null(xft_sites_get(&s, (uint16_t)(i % 3), i * 7919));
	cr_assert_eq(s.n, 16);
	cr_assert_gt(s.overflow, 0);
	cr_assert_str_eq(xft_sites_get(&s, 9, 123456)->function, "(other)");
	xft_sites_fini(&s);
	cr_assert_eq(xft_sites_init(&s, 4, NULL, NULL), 0);
	cr_assert_str_eq(xft_sites_get(&s, 0, 1)->function, "site#1");
	xft_sites_fini(&s);
}

static int role_lookup(void *ctx, uint16_t domain, uint32_t site, struct xflow_site_info *out)
{
	int rc = lookup(ctx, domain, site, out);
	/* Site 1 sends, 2 receives, 3 says a role without knowing. */
	if (rc == 0)
		out->roles = site == 1 ? XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_SENDS
			   : site == 2 ? XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_RECEIVES
			   : site == 3 ? XFLOW_SITE_RECEIVES : XFLOW_SITE_ROLES_KNOWN;
	return rc;
}

Test(sites, roles_are_cached_and_returned)
{
	struct xft_sites s;
	cr_assert_eq(xft_sites_init(&s, 5, role_lookup, NULL), 0);
	lookups = 0;
	cr_expect_eq(xft_sites_roles(&s, 1, 1), XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_SENDS);
	cr_expect_eq(xft_sites_roles(&s, 1, 2), XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_RECEIVES);
	cr_expect_eq(xft_sites_roles(&s, 1, 0), XFLOW_SITE_ROLES_KNOWN);
	cr_expect_eq(lookups, 3);
	cr_expect_eq(xft_sites_roles(&s, 1, 1), XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_SENDS, "cached");
	cr_expect_eq(xft_sites_get(&s, 1, 2)->roles, XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_RECEIVES);
	cr_expect_eq(lookups, 3, "the roles were looked up again");
	/* Not known: a role without ROLES_KNOWN, a site the collector does
	 * not name, and one past the cache's bound. */
	cr_expect_eq(xft_sites_roles(&s, 1, 3), 0);
	cr_expect_eq(xft_sites_roles(&s, 1, 500), 0);
	cr_expect_eq(xft_sites_get(&s, 1, 500)->function[0], 's', "cached as site#500");
	cr_expect_eq(xft_sites_roles(&s, 1, 4), 0, "past max_sites");
	cr_expect_eq(s.overflow, 1);
	xft_sites_fini(&s);
}
