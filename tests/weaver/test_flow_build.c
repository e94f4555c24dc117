/*
 * Flow files → definitions: element rules, <field> placement, includes.
 */
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wtest.h"

static const char fig4_sibling[] =
	"<xflow name='n'><transit><pointcut>access(netif_tx_request.flags)</pointcut>"
	"<xin_move name='netin' from='skb' to='tx'/><field name='flags' offset='4' size='12'/>"
	"</transit></xflow>";
static const char fig4_child[] =
	"<xflow name='n'><transit><pointcut>access(netif_tx_request.flags)</pointcut>"
	"<xin_move name='netin' from='skb' to='tx'><field name='flags' offset='4' size='12'/></xin_move>"
	"</transit></xflow>";

Test(flow_build, field_as_sibling_or_child_compiles_the_same)
{
	int rc1, rc2;
	struct xflow_unit *a = wt_compile(fig4_sibling, &rc1), *b = wt_compile(fig4_child, &rc2);
	cr_assert_eq(rc1, 0);
	cr_assert_eq(rc2, 0);
	char why[128];
	cr_expect(wt_prog_equiv(a, wt_prog(a, 0), b, wt_prog(b, 0), why, sizeof(why)), "%s", why);
	xflow_unit_free(a);
	xflow_unit_free(b);
}

/* The paper names no root: <aspects> is taken as <flows> (xflow(5)), and
 * only as the root. */
Test(flow_build, aspects_root_is_flows)
{
	static const char body[] = "<advice><pointcut>call(f)</pointcut><before>STORE_DATA1(1);</before></advice>"
				   "<xflow name='n'><start><pointcut>access(s.m)</pointcut></start></xflow>";
	char a[512], b[512];
	snprintf(a, sizeof(a), "<flows>%s</flows>", body);
	snprintf(b, sizeof(b), "<aspects>%s</aspects>", body);
	int rca, rcb;
	struct xflow_unit *ua = wt_compile(a, &rca), *ub = wt_compile(b, &rcb);
	cr_assert_eq(rca, 0);
	cr_assert_eq(rcb, 0);
	cr_assert_eq(xflow_unit_advice_count(ub), xflow_unit_advice_count(ua));
	cr_assert_eq(xflow_unit_flow_count(ub), 1);
	char why[128];
	for (size_t i = 0; i < xflow_unit_advice_count(ua); i++)
		cr_expect(wt_prog_equiv(ua, wt_prog(ua, i), ub, wt_prog(ub, i), why, sizeof(why)), "%s", why);
	xflow_unit_free(ua);
	xflow_unit_free(ub);
	wt_expect_error("<flows><aspects/></flows>", "<aspects> is not allowed at the top level");
	wt_expect_error("<aspects x='1'/>", "unknown attribute 'x' on <aspects>");
	wt_expect_error("<xflows/>", "unknown element <xflows>");
}

/* Issue 24: notify is yes or no, and a hop begins at a <start> or a
 * <transit>, never at a <quit>; each error names where it is. */
Test(flow_build, notify_where_a_hop_begins)
{
	wt_expect_error("<xflow name='f'><start notify='1'><pointcut>access(s.a)</pointcut></start></xflow>",
			"t.xml:1:32: error: '1' is not a valid notify (yes or no)");
	wt_expect_error("<xflow name='f'><quit notify='yes'><pointcut>access(s.a)</pointcut></quit></xflow>",
			"t.xml:1:23: error: notify on a <quit>: the flow ends there, so no hop begins there to cross");
	int rc;
	struct xflow_unit *u =
		wt_compile("<xflow name='f'><start notify='yes'><pointcut>access(s.a)</pointcut></start>"
			   "<quit notify='no'><pointcut>access(s.b)</pointcut></quit></xflow>", &rc);
	cr_expect_eq(rc, 0, "notify on a <start>, and notify='no' on a <quit>");
	xflow_unit_free(u);
	wt_expect_error("<xflow name='f'><start><pointcut notify='yes'>access(s.a)</pointcut></start></xflow>",
			"unknown attribute 'notify' on <pointcut>");
}

Test(flow_build, element_rules)
{
	wt_expect_error("<flows><nonsense/></flows>", "t.xml:1:8: error: unknown element <nonsense>");
	wt_expect_error("<flows><start/></flows>", "<start> is not allowed at the top level");
	wt_expect_error("<flows><advice><before>x;</before></advice></flows>", "<advice> has no <pointcut>");
	wt_expect_error("<flows><advice><pointcut>call(f)</pointcut></advice></flows>",
			"<advice> has no <before> or <after> code");
	wt_expect_error("<flows><advice><pointcut>call(f)</pointcut><pointcut>call(g)</pointcut>"
			"<before>;</before></advice></flows>", "<advice> has more than one <pointcut>");
	wt_expect_error("<flows><advice x='1'><pointcut>call(f)</pointcut><before>;</before></advice></flows>",
			"unknown attribute 'x' on <advice>");
	wt_expect_error("<flows>junk<advice><pointcut>call(f)</pointcut><before>;</before></advice></flows>",
			"unexpected text inside <flows>");
	wt_expect_error("<xflow name='1x'/>", "'1x' is not a valid name for name");
	wt_expect_error("<xflow name='f'><transit><pointcut>call(f)</pointcut><move from='a' to='a'/></transit></xflow>",
			"'from' and 'to' are the same variable 'a'");
	wt_expect_error("<xflow name='f'><transit><pointcut>call(f)</pointcut></transit></xflow>",
			"<transit> says nothing about where the flow id goes");
	wt_expect_error("<xflow name='f'><start><pointcut>call(f)</pointcut><select local_var='a'/>"
			"<select local_var='b'/></start></xflow>", "<start> has more than one <select>");
	wt_expect_error("<xflow name='f'><start><pointcut>call(f)</pointcut><move from='a' to='b'/></start></xflow>",
			"<move> is not allowed inside <start>");
	wt_expect_error("<xflow name='n'><transit><pointcut>access(s.flags)</pointcut>"
			"<xin_move name='i' from='a' to='b'/><field name='flags' offset='x' size='12'/></transit></xflow>",
			"'x' is not a valid offset");
	wt_expect_error("<xflow name='n'><transit><pointcut>access(s.flags)</pointcut>"
			"<xin_move name='i' from='a' to='b'><field name='flags' offset='1' size='2'/><key member='id'/></xin_move>"
			"</transit></xflow>", "has more than one <field> or <key>");
}

Test(flow_build, advice_and_aspect_with_before_and_after)
{
	int rc;
	struct xflow_unit *u = wt_compile("<flows><aspect><pointcut>call(f)</pointcut><before>STORE_DATA1(1);</before>"
					  "<after>STORE_DATA1(2);</after></aspect></flows>", &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(xflow_unit_advice_count(u), 2);
	struct xflow_advice_info a, b;
	xflow_unit_advice(u, 0, &a);
	xflow_unit_advice(u, 1, &b);
	cr_expect_eq(a.flags & XFLOW_ADVICE_AFTER, 0);
	cr_expect_eq(b.flags & XFLOW_ADVICE_AFTER, XFLOW_ADVICE_AFTER);
	xflow_unit_free(u);
}

static char tmpdir[PATH_MAX];

static void write_file(const char *name, const char *text)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

static void setup(void)
{
	strcpy(tmpdir, "/tmp/xflowc-test-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	mkdir(strcat(strcpy((char[PATH_MAX + 8]){ 0 }, tmpdir), "/sub"), 0700);
}

static void teardown(void)
{
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	cr_expect_eq(system(cmd), 0);
}

static struct xflow_unit *compile_path(const char *name, int *rc)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	struct xflow_unit *u;
	xflow_unit_new(&u, NULL);
	xflow_unit_add_file(u, path);
	*rc = xflow_unit_compile(u);
	return u;
}

Test(flow_build, includes_are_relative_and_loaded_once, .init = setup, .fini = teardown)
{
	write_file("sub/flow.xml", "<xflow name='f'><start><pointcut>access(s.m)</pointcut></start></xflow>");
	write_file("sub/both.xml", "<flows><include file='flow.xml'/><include file='flow.xml'/></flows>");
	write_file("main.xml", "<flows><include file='sub/flow.xml'/><include file='sub/both.xml'/>"
			       "<advice><pointcut>access(s.m) AND target(v) AND xflow(f, v)</pointcut>"
			       "<before>STORE_DATA1(1);</before></advice></flows>");
	int rc;
	struct xflow_unit *u = compile_path("main.xml", &rc);
	char *d = wt_diags(u);
	cr_expect_eq(rc, 0, "%s", d);
	/* Included three times, defined once: no "defined twice". */
	cr_expect_eq(xflow_unit_flow_count(u), 1);
	cr_expect_eq(xflow_unit_advice_count(u), 2);
	free(d);
	xflow_unit_free(u);
}

Test(flow_build, include_cycles_end, .init = setup, .fini = teardown)
{
	write_file("a.xml", "<flows><include file='b.xml'/><xflow name='a'/></flows>");
	write_file("b.xml", "<flows><include file='a.xml'/><xflow name='b'/></flows>");
	int rc;
	struct xflow_unit *u = compile_path("a.xml", &rc);
	cr_expect_eq(rc, 0);
	cr_expect_eq(xflow_unit_flow_count(u), 2);
	xflow_unit_free(u);
}

Test(flow_build, include_errors, .init = setup, .fini = teardown)
{
	write_file("m.xml", "<flows>\n  <include file='nope.xml'/>\n</flows>");
	int rc;
	struct xflow_unit *u = compile_path("m.xml", &rc);
	char *d = wt_diags(u);
	cr_expect_neq(rc, 0);
	cr_expect(strstr(d, "m.xml:2:18: error: cannot read '"), "%s", d);
	cr_expect(strstr(d, "No such file or directory"), "%s", d);
	free(d);
	xflow_unit_free(u);
	/* Buffers (fuzzing, untrusted input) may refuse includes. */
	wt_expect_error("<flows><include file='/etc/passwd'/></flows>", "cannot include '/etc/passwd'");
}

Test(flow_build, include_depth_is_bounded, .init = setup, .fini = teardown)
{
	for (int i = 0; i < 12; i++) {
		char name[32], text[128];
		snprintf(name, sizeof(name), "d%d.xml", i);
		snprintf(text, sizeof(text), "<flows><include file='d%d.xml'/></flows>", i + 1);
		write_file(name, text);
	}
	write_file("d12.xml", "<flows/>");
	int rc;
	struct xflow_unit *u = compile_path("d0.xml", &rc);
	char *d = wt_diags(u);
	cr_expect(strstr(d, "includes nested deeper than 8"), "%s", d);
	free(d);
	xflow_unit_free(u);
}

Test(flow_build, names_must_not_be_advice_keywords)
{
	wt_expect_error("<xflow name='f'><transit><pointcut>call(g)</pointcut><move from='if' to='n'/></transit></xflow>",
			"'if' is a keyword of the advice language");
	wt_expect_error("<xflow name='u8'/>", "'u8' is a keyword of the advice language");
	/* Names the templates use themselves are renamed, not refused. */
	wt_expect_clean("<xflow name='f'><transit><pointcut>call(g)</pointcut><split from='id' to='child'/></transit></xflow>");
}
