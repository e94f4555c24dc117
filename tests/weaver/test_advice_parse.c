/*
 * The advice language parser: the C subset it takes and what it refuses.
 */
#include "wtest.h"

static char body_xml[8192];

static const char *advice(const char *body)
{
	snprintf(body_xml, sizeof(body_xml),
		 "<flows><xflow name='f'/><advice><pointcut>access(s.m) AND target(v)</pointcut>"
		 "<before>%s</before></advice></flows>", body);
	return body_xml;
}

Test(advice_parse, takes_the_papers_subset)
{
	wt_expect_clean(advice("long long tsc; DO_RDTSC(tsc); STORE_DATA3($pc$, tsc, 1);"));
	wt_expect_clean(advice("void *p = *(void**)v; struct s *q = (struct s *)p; q-&gt;m |= 1 &lt;&lt; 4;"));
	wt_expect_clean(advice("int a = 1, *b = 0, c; unsigned long d = 0x10UL; a += 2; a -= 1; a *= 3; "
			       "a /= 2; a %= 5; a &amp;= 7; a |= 8; a ^= 1; a &lt;&lt;= 2; a &gt;&gt;= 1;"));
	wt_expect_clean(advice("if (v) { ; } else if (!v) {} else { int x = 0; }"));
	wt_expect_clean(advice("/* comment */ int x = 1; // another\nuint64_t y = (uint64_t)x;"));
	wt_expect_clean(advice("const int x = 010 + 0x1f; (void)x;"));
	wt_expect_clean(advice(""));
}

Test(advice_parse, refuses_what_could_loop_or_escape)
{
	wt_expect_error(advice("while (1) ;"), "loops are not allowed in advice");
	wt_expect_error(advice("for (;;) ;"), "loops are not allowed in advice");
	wt_expect_error(advice("int i = 0; i++;"), "'++' and '--' are not part of the advice language");
	wt_expect_error(advice("return;"), "'return' is not supported");
	wt_expect_error(advice("int x = &amp;v;"), "'&' (address of) is not supported");
	wt_expect_error(advice("int x = v ? 1 : 2;"), "'?:' is not supported");
	wt_expect_error(advice("int x = v[1];"), "array subscripts are not supported");
	wt_expect_error(advice("int x = 1, 2;"), "expected a variable name");
}

Test(advice_parse, syntax_errors_point_into_the_file)
{
	int rc;
	struct xflow_unit *u = wt_compile("<advice><pointcut>call(f)</pointcut><before>\n"
					  "  int x = 1\n"
					  "  STORE_DATA1(x);\n"
					  "</before></advice>", &rc);
	char *d = wt_diags(u);
	/* The ';' is missing at the end of line 2, where the caret goes. */
	cr_expect(strstr(d, "t.xml:2:12: error: expected ';' before 'STORE_DATA1'"), "%s", d);
	cr_expect(strstr(d, "    2 |   int x = 1\n       |            ^\n"), "%s", d);
	free(d);
	xflow_unit_free(u);
}

Test(advice_parse, bad_tokens)
{
	wt_expect_error(advice("int x = 12abc;"), "stray '12abc'");
	wt_expect_error(advice("int x = 0x;"), "too large");
	wt_expect_error(advice("int x = 99999999999999999999;"), "number '99999999999999999999' is too large");
	wt_expect_error(advice("int x = @;"), "stray '@'");
	wt_expect_error(advice("int x = $pd$;"), "stray '$'");
	wt_expect_error(advice("{ int x = 1;"), "expected '}' before end of code");
	wt_expect_error(advice("else x = 1;"), "'else' without a previous 'if'");
}

Test(advice_parse, depth_and_size_are_bounded)
{
	static char b[6000];
	strcpy(b, "int x = ");
	for (int i = 0; i < 100; i++)
		strcat(b, "(");
	strcat(b, "1");
	for (int i = 0; i < 100; i++)
		strcat(b, ")");
	strcat(b, ";");
	wt_expect_error(advice(b), "nested deeper than 64 levels");
	strcpy(b, "int x = 1");
	for (int i = 0; i < 1100; i++)
		strcat(b, "+1");
	strcat(b, ";");
	wt_expect_error(advice(b), "advice code longer than 2048 operations");
}

Test(advice_parse, one_error_per_body_but_every_body)
{
	int rc;
	struct xflow_unit *u = wt_compile(
		"<flows><advice><pointcut>call(f)</pointcut><before>int x = ;  int y = ;</before>"
		"<after>int z = ;</after></advice></flows>", &rc);
	cr_expect_eq(xflow_unit_errors(u), 2);
	xflow_unit_free(u);
}

Test(advice_parse, typedef_words_are_fine_struct_tags)
{
	wt_expect_clean(advice("struct u8 *a = 0; struct size_t *b = 0; struct s64 *c = 0;"));
	wt_expect_error(advice("struct int *a = 0;"), "expected a struct name before 'int'");
}

Test(advice_parse, reasonable_nesting_is_fine_and_deep_stacks_are_reported)
{
	static char b[4096];
	strcpy(b, "long x = 1; STORE_DATA1(");
	for (int i = 0; i < 20; i++)
		strcat(b, "(x + ");
	strcat(b, "1");
	for (int i = 0; i < 20; i++)
		strcat(b, ")");
	strcat(b, ");");
	wt_expect_clean(advice(b));
	/* Right-nested, every level keeps a value on the stack. */
	strcpy(b, "long x = 1; STORE_DATA1(");
	for (int i = 0; i < 40; i++)
		strcat(b, "x * (");
	strcat(b, "1");
	for (int i = 0; i < 40; i++)
		strcat(b, ")");
	strcat(b, ");");
	wt_expect_error(advice(b), "advice needs more than 32 stack cells");
}
