/*
 * `xflowc plan` (weaver/plan_cmd.c): options, the printed plan, -o, and
 * the exit statuses.
 */
#include <criterion/criterion.h>

#include "tests/weaver/fixtures/jp_fixture.h"
#include "weaver/jp/joinpoint.h"
#include "xflow/plan.h"

static char *dir, *bin, xml[512];

static void setup(void)
{
	dir = jpf_tmp_new();
	cr_assert(dir);
	bin = jpf_build(dir, "jp_netlike", "gcc", "-g -O2", "cmd");
	cr_assert(bin);
	snprintf(xml, sizeof(xml), "%s/t.xml", dir);
	FILE *f = fopen(xml, "w");
	fputs("<flows>\n"
	      "<advice><pointcut>access(sk_buff.len) AND target(b)</pointcut>\n"
	      "  <before>STORE_DATA2($pc$, b->len);</before></advice>\n"
	      "<advice><pointcut>call(skb_put@guest) AND local_var(n, np)</pointcut>\n"
	      "  <before>STORE_DATA1(*(int*)np);</before></advice>\n"
	      "</flows>\n", f);
	fclose(f);
}

static void teardown(void)
{
	free(bin);
	jpf_tmp_free(dir);
}

TestSuite(plan_cmd, .init = setup, .fini = teardown, .timeout = 60);

static int run(char **out, char **err, int argc, const char **argv)
{
	size_t ol = 0, el = 0;
	FILE *o = open_memstream(out, &ol), *e = open_memstream(err, &el);
	int rc = xflowc_plan_run(argc, (char **)argv, o, e);
	fclose(o);
	fclose(e);
	return rc;
}

Test(plan_cmd, prints_and_writes)
{
	char dom[1024], outp[600];
	snprintf(dom, sizeof(dom), "guest=%s", bin);
	snprintf(outp, sizeof(outp), "%s/t.plan", dir);
	const char *argv[] = { "xflowc", "plan", "--domain", dom, "-o", outp, "--bytecode", xml };
	char *out, *err;
	int rc = run(&out, &err, 8, argv);
	cr_assert_eq(rc, 0, "%s", err);
	cr_expect(strstr(out, "domain guest"), "%s", out);
	cr_expect(strstr(out, "skb_put"), "%s", out);
	cr_expect(strstr(out, "sk_buff.len"), "%s", out);
	struct xflow_plan *p;
	char why[256];
	cr_assert_eq(xflow_plan_read_file(outp, &p, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(p->ndomains, 1);
	cr_expect_gt(p->domains[0].nsites, 1);
	xflow_plan_free(p);
	free(out);
	free(err);
}

Test(plan_cmd, strict_and_usage)
{
	char dom[1024];
	/* No domain named guest: call(skb_put@guest) matches nothing. */
	snprintf(dom, sizeof(dom), "other=%s", bin);
	const char *argv[] = { "xflowc", "plan", "--domain", dom, "--strict", xml };
	char *out, *err;
	cr_assert_eq(run(&out, &err, 6, argv), 1);
	cr_expect(strstr(err, "error: pointcut 'call(skb_put@guest)") && strstr(err, "matches nothing"), "%s", err);
	free(out);
	free(err);
	argv[4] = "-q";
	cr_assert_eq(run(&out, &err, 6, argv), 0, "a warning without --strict: %s", err);
	cr_expect(strstr(err, "warning:"), "%s", err);
	cr_expect_eq(out[0], '\0', "-q prints no plan");
	free(out);
	free(err);
	const char *noarg[] = { "xflowc", "plan", xml };
	cr_assert_eq(run(&out, &err, 3, noarg), 2);
	cr_expect(strstr(err, "no --domain"), "%s", err);
	free(out);
	free(err);
	const char *bad[] = { "xflowc", "plan", "--domain", "justaname", xml };
	cr_assert_eq(run(&out, &err, 5, bad), 2);
	cr_expect(strstr(err, "NAME=BINARY"), "%s", err);
	free(out);
	free(err);
	const char *nobin[] = { "xflowc", "plan", "--domain", "d=/nonexistent/bin", xml };
	cr_assert_eq(run(&out, &err, 5, nobin), 1);
	cr_expect(strstr(err, "/nonexistent/bin"), "%s", err);
	free(out);
	free(err);
	const char *help[] = { "xflowc", "plan", "--help" };
	cr_assert_eq(run(&out, &err, 3, help), 0);
	cr_expect(strstr(out, "usage: xflowc plan"));
	free(out);
	free(err);
}

/* Issue 19 item 1: a binary named twice (the same path, a symbolic link to
 * it, a path through "..") is one binary: its sites are placed once, not
 * once per name, or every hit would run its advice twice. */
Test(plan_cmd, a_binary_named_twice_is_one_binary)
{
	char once[1024], thrice[3200], link[600], dotdot[600], outp[600];
	snprintf(link, sizeof(link), "%s/link-to-bin", dir);
	cr_assert_eq(symlink(bin, link), 0);
	const char *slash = strrchr(bin, '/');
	snprintf(dotdot, sizeof(dotdot), "%.*s/../%s%s", (int)(slash - bin), bin, strrchr(dir, '/') + 1, slash);
	snprintf(once, sizeof(once), "guest=%s", bin);
	snprintf(thrice, sizeof(thrice), "guest=%s,%s,%s", bin, link, dotdot);
	snprintf(outp, sizeof(outp), "%s/t.plan", dir);
	uint32_t nsites[2], nbindings[2];
	const char *doms[2] = { once, thrice };
	for (int k = 0; k < 2; k++) {
		const char *argv[] = { "xflowc", "plan", "--domain", doms[k], "-q", "-o", outp, xml };
		char *out, *err;
		cr_assert_eq(run(&out, &err, 8, argv), 0, "%s", err);
		free(out);
		free(err);
		struct xflow_plan *p;
		char why[256];
		cr_assert_eq(xflow_plan_read_file(outp, &p, why, sizeof(why)), 0, "%s", why);
		cr_expect_eq(p->domains[0].nbinaries, 1, "%s: %u binaries", doms[k], p->domains[0].nbinaries);
		nsites[k] = p->domains[0].nsites;
		nbindings[k] = p->domains[0].nbindings;
		xflow_plan_free(p);
	}
	cr_expect_gt(nsites[0], 1);
	cr_expect_eq(nsites[1], nsites[0], "sites: %u with one name, %u with three", nsites[0], nsites[1]);
	cr_expect_eq(nbindings[1], nbindings[0]);
}
