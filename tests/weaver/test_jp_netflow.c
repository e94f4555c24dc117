/*
 * flows/netflow.xml against the simulated Xen host's binaries (sim/): with
 * --strict semantics every pointcut matches, and the plan has each site the
 * flow needs — its start in the guest's allocator, the clone transit, the
 * xin_move placed after netfront's own store to tx->flags, the xout in
 * netback, and the quit in __kfree_skb (with skb_release_data inlined).
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "weaver/jp/joinpoint.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"

static const char *sim_bin(const char *name, char *buf, size_t len)
{
	const char *build = getenv("BUILD");
	const char *trees[] = { build ? build : "build", "build", "build-san" };
	for (size_t i = 0; i < 3; i++) {
		snprintf(buf, len, "%s/sim/%s", trees[i], name);
		if (access(buf, R_OK) == 0)
			return buf;
	}
	return NULL;
}

/* The bindings of advice @a in domain @d whose site is in function @fn. */
static unsigned count(const struct xflow_plan *p, const char *d, uint32_t a, const char *fn,
		      const char *member, int when)
{
	unsigned n = 0;
	for (uint32_t k = 0; k < p->ndomains; k++) {
		const struct xflow_plan_domain *dm = &p->domains[k];
		if (strcmp(dm->name, d) != 0)
			continue;
		for (uint32_t i = 0; i < dm->nbindings; i++) {
			const struct xflow_plan_binding *b = &dm->bindings[i];
			const struct xflow_plan_site *s = &dm->sites[b->site];
			if (b->advice != a || !s->func)
				continue;
			bool in_fn = strcmp(s->func, fn) == 0 || (s->inlined_into && strcmp(s->inlined_into, fn) == 0);
			if (in_fn && (!member || (s->member && strcmp(s->member, member) == 0)) &&
			    (when < 0 || b->when == when))
				n++;
		}
	}
	return n;
}

Test(jp_netflow, sim_host_sites, .timeout = 120)
{
	char b0[512], bU[512];
	const char *l0 = sim_bin("linux0", b0, sizeof(b0)), *lU = sim_bin("linuxU", bU, sizeof(bU));
	if (!l0 || !lU)
		cr_skip_test("the simulated host is not built (make sim binaries first)");
	struct xflow_unit *u;
	cr_assert_eq(xflow_unit_new(&u, NULL), 0);
	cr_assert_eq(xflow_unit_add_file(u, "flows/netflow.xml"), 0);
	cr_assert_eq(xflow_unit_compile(u), 0);
	const char *bins0[] = { l0 }, *binsU[] = { lU };
	struct jp_domain_spec d[] = { { "linux0", bins0, 1 }, { "linuxU", binsU, 1 } };
	char *diag = NULL;
	size_t dlen = 0;
	FILE *df = open_memstream(&diag, &dlen);
	struct jp_plan_opts o = { .strict = true, .diag = df };
	struct xflow_plan *p;
	int rc = jp_plan_build(u, d, 2, &o, &p);
	fclose(df);
	cr_assert_eq(rc, 0, "%s", diag);
	cr_expect_eq(o.warnings, 0, "%s", diag);
	/* Advice in weave order: start, clone transit, xin (netfront), xout
	 * (netback), quit, then the recording advice of Figure 2. */
	cr_assert_eq(p->nadvice, 6);
	cr_expect_gt(count(p, "linuxU", 0, "alloc_skb_from_cache", "data", -1), 0);
	cr_expect_eq(count(p, "linux0", 0, "alloc_skb_from_cache", NULL, -1), 0, "starts only in the guest");
	cr_expect_gt(count(p, "linuxU", 1, "skb_clone", "head", -1), 0);
	cr_expect_gt(count(p, "linuxU", 2, "network_start_xmit", "flags", XFLOW_WHEN_AFTER), 0,
		     "the xin_move runs after netfront's store to tx->flags");
	cr_expect_eq(count(p, "linux0", 2, "network_start_xmit", NULL, -1), 0);
	cr_expect_gt(count(p, "linux0", 3, "netbk_fill_frags", "flags", -1) +
			     count(p, "linux0", 3, "net_tx_action", "flags", -1), 0,
		     "the xout in netback");
	cr_expect_gt(count(p, "linuxU", 4, "__kfree_skb", NULL, -1), 0);
	cr_expect_gt(count(p, "linux0", 4, "__kfree_skb", NULL, -1), 0);
	cr_expect_gt(count(p, "linuxU", 5, "alloc_skb_from_cache", NULL, -1), 0);
	/* The field the xin writes, laid out from each domain's DWARF. */
	for (uint32_t k = 0; k < p->ndomains; k++)
		cr_expect_eq(p->domains[k].layouts[0].offset, 6);
	void *buf;
	size_t len;
	char why[256];
	cr_assert_eq(xflow_plan_write(p, &buf, &len, why, sizeof(why)), 0, "%s", why);
	struct xflow_plan *q;
	cr_assert_eq(xflow_plan_read(buf, len, &q, why, sizeof(why)), 0, "%s", why);
	xflow_plan_free(q);
	free(buf);
	free(diag);
	xflow_plan_free(p);
	xflow_unit_free(u);
}
