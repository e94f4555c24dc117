/*
 * The library API: accessors, ordering, errors, repeat compiles.
 */
#include "wtest.h"

#include "weaver/util.h"
#include "xflow/plan.h"
#include "xflow/record.h"

Test(unit, netflow_xml_compiles_in_weave_order)
{
	struct xflow_unit *u = wt_compile_file("flows/netflow.xml");
	cr_assert_eq(xflow_unit_advice_count(u), 6);
	static const enum xflow_advice_origin want[] = {
		XFLOW_ADVICE_START, XFLOW_ADVICE_TRANSIT, XFLOW_ADVICE_TRANSIT,
		XFLOW_ADVICE_TRANSIT, XFLOW_ADVICE_QUIT, XFLOW_ADVICE_USER,
	};
	for (size_t i = 0; i < 6; i++) {
		struct xflow_advice_info a;
		cr_assert_eq(xflow_unit_advice(u, i, &a), 0);
		cr_expect_eq(a.origin, want[i], "advice %zu", i);
		cr_expect_eq(a.flow, want[i] == XFLOW_ADVICE_USER ? -1 : 0);
		cr_expect_str_eq(a.file, "flows/netflow.xml");
		cr_expect_gt(a.line, 0);
		cr_expect_not_null(a.prog);
	}
	struct xflow_advice_info a;
	cr_expect_eq(xflow_unit_advice(u, 6, &a), -ERANGE);
	cr_expect_eq(xflow_unit_flow_count(u), 1);
	cr_expect_str_eq(xflow_unit_flow_name(u, 0), "netflow");
	cr_expect_null(xflow_unit_flow_name(u, 1));
	cr_expect_eq(xflow_unit_errors(u), 0);
	cr_expect_eq(xflow_unit_compile(u), 0, "compiling twice is harmless");
	xflow_unit_free(u);
}

Test(unit, errors_leave_no_programs)
{
	int rc;
	struct xflow_unit *u = wt_compile("<flows><advice><pointcut>call(f)</pointcut><before>STORE_DATA1(1);</before></advice>"
					  "<advice><pointcut>call(g)</pointcut><before>nope(1);</before></advice></flows>", &rc);
	cr_expect_eq(rc, -EINVAL);
	cr_expect_eq(xflow_unit_errors(u), 1);
	struct xflow_advice_info a;
	cr_assert_eq(xflow_unit_advice(u, 0, &a), 0);
	cr_expect_null(a.prog, "a unit with errors is not emitted");
	cr_expect_eq(xflow_unit_compile(u), -EINVAL);
	xflow_unit_free(u);
	xflow_unit_free(NULL);
}

Test(unit, missing_files_are_errors)
{
	struct xflow_unit *u;
	xflow_unit_new(&u, NULL);
	cr_expect_eq(xflow_unit_add_file(u, "/nonexistent/x.xml"), -ENOENT);
	cr_expect_eq(xflow_unit_add_file(u, "flows"), -EISDIR);
	cr_expect_eq(xflow_unit_compile(u), -EINVAL);
	char *d = wt_diags(u);
	cr_expect(strstr(d, "xflowc: error: cannot read '/nonexistent/x.xml': No such file or directory"), "%s", d);
	free(d);
	xflow_unit_free(u);
}

Test(unit, max_errors_option)
{
	struct xflow_unit *u;
	struct xflow_unit_opts o = { .max_errors = 2 };
	xflow_unit_new(&u, &o);
	const char *x = "<flows><xflow name='1'/><xflow name='2'/><xflow name='3'/></flows>";
	xflow_unit_add_buffer(u, "t.xml", x, strlen(x));
	xflow_unit_compile(u);
	cr_expect_eq(xflow_unit_errors(u), 2);
	char *d = wt_diags(u);
	cr_expect(strstr(d, "too many errors (2)"), "%s", d);
	free(d);
	xflow_unit_free(u);
}

/* A unit of @n copies of @item, one a line from line 2, each with its
 * number wherever @item has a '#'. */
static char *many(const char *item, unsigned n)
{
	struct fl_buf b = { 0 };
	fl_buf_puts(&b, "<flows>\n");
	for (unsigned i = 0; i < n; i++) {
		for (const char *c = item; *c; c++)
			if (*c == '#')
				fl_buf_printf(&b, "%u", i);
			else
				fl_buf_putc(&b, *c);
		fl_buf_putc(&b, '\n');
	}
	fl_buf_puts(&b, "</flows>\n");
	return b.s;
}

/* What a weave plan holds (xflow/plan.h), checked by `xflowc check`: the
 * error names the limit, the count and the first item past it. */
Test(unit, plan_limits_are_checked, .timeout = 60)
{
	struct {
		const char *item;
		unsigned n;
		const char *want;
	} cases[] = {
		{ "<advice><pointcut>call(f#)</pointcut><before>STORE_DATA1(1);</before></advice>",
		  XFLOW_PLAN_MAX_ADVICE + 1,
		  "t.xml:65538:1: error: 65537 advice after expansion, more than the 65536 a weave plan holds "
		  "(XFLOW_PLAN_MAX_ADVICE); this is advice 65537" },
		{ "<xflow name=\"f#\"/>", XFLOW_PLAN_MAX_FLOWS + 1,
		  "t.xml:65537:14: error: 65536 xflows, more than the 65535 a weave plan holds "
		  "(XFLOW_PLAN_MAX_FLOWS); this is xflow 65536" },
		{ "<advice><pointcut>access(s.m#) AND target(p)</pointcut><before>STORE_DATA1(p->m#);</before></advice>",
		  XFLOW_PLAN_MAX_FIELDS + 1,
		  "error: 65536 struct members used, more than the 65535 a weave plan holds "
		  "(XFLOW_PLAN_MAX_FIELDS); this is member 65536 (s.m65535)" },
	};
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char *xml = many(cases[k].item, cases[k].n);
		int rc;
		struct xflow_unit *u = wt_compile(xml, &rc);
		char *d = wt_diags(u);
		cr_expect_eq(rc, -EINVAL, "case %zu compiled", k);
		cr_expect(strstr(d, cases[k].want), "want \"%s\" in:\n%.2000s", cases[k].want, d);
		free(d);
		xflow_unit_free(u);
		/* One less is within the limit. */
		char *ok = many(cases[k].item, cases[k].n - 1);
		u = wt_compile(ok, &rc);
		cr_expect_eq(rc, 0, "case %zu at the limit", k);
		xflow_unit_free(u);
		free(ok);
		free(xml);
	}
}
