/*
 * Listings of compiled advice and of the expanded unit.
 */
#include "wtest.h"

static char *dump(const char *xml, bool bytecode)
{
	int rc;
	struct xflow_unit *u = wt_compile(xml, &rc);
	cr_assert_eq(rc, 0);
	char *buf = NULL;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	xflow_unit_dump(u, f, bytecode);
	fclose(f);
	xflow_unit_free(u);
	return buf;
}

Test(bytecode_dump, listing_names_fields_flows_and_targets)
{
	char *out = dump("<flows><xflow name='f'/><advice><pointcut>access(s.m) AND target(v) AND xflow(f, v, id)"
			 "</pointcut><after>v-&gt;m = 0x123456789; if (id &gt; 1) STORE_DATA1(id);</after></advice></flows>",
			 true);
	cr_expect(strstr(out, "in0 = target (struct s *)"), "%s", out);
	cr_expect(strstr(out, "FLOW_GET  flow 0 (f)"), "%s", out);
	cr_expect(strstr(out, "PUSHK     0x123456789"), "%s", out);
	cr_expect(strstr(out, "STF       #0 (s.m)"), "%s", out);
	cr_expect(strstr(out, "JZ        00"), "%s", out);
	cr_expect(strstr(out, "<after>\n"), "%s", out);
	free(out);
}

Test(bytecode_dump, code_is_escaped_back_to_xml)
{
	char *out = dump("<advice><pointcut>call(f)</pointcut><before>int a = 1 &lt;&lt; 2 &amp; 3;</before></advice>", false);
	cr_expect(strstr(out, "int a = 1 &lt;&lt; 2 &amp; 3;"), "%s", out);
	cr_expect_null(strstr(out, "bytecode v1"));
	free(out);
}
