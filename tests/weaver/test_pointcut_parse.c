/*
 * The pointcut language: grammar, printing, and carets at the exact column.
 */
#include "wtest.h"
#include "weaver/lang/unit.h"

static char *parse_print(const char *text, char **diags)
{
	struct xflow_unit *u;
	xflow_unit_new(&u, NULL);
	char *xml;
	cr_assert_geq(asprintf(&xml, "<pointcut>%s</pointcut>", text), 0);
	struct fl_xdoc doc;
	cr_assert_eq(fl_xml_load(&u->arena, &u->diag, "p.xml", xml, strlen(xml), &doc), 0);
	struct fl_pc *pc = fl_pointcut_parse(u, doc.root);
	char *r = NULL;
	if (pc) {
		struct fl_buf b = { 0 };
		fl_pc_print(&b, pc);
		r = strdup(b.s);
		fl_buf_free(&b);
	}
	*diags = wt_diags(u);
	xflow_unit_free(u);
	free(xml);
	return r;
}

static void expect_print(const char *in, const char *want)
{
	char *d;
	char *got = parse_print(in, &d);
	cr_expect(got && strcmp(got, want) == 0, "%s\n  got  %s\n  want %s\n%s", in, got, want, d);
	free(got);
	free(d);
}

static void expect_error(const char *in, const char *want)
{
	char *d;
	char *got = parse_print(in, &d);
	cr_expect_null(got, "%s parsed", in);
	cr_expect(strstr(d, want), "%s: want \"%s\" in\n%s", in, want, d);
	free(got);
	free(d);
}

Test(pointcut_parse, every_primitive)
{
	expect_print("access(sk_buff.data)", "access(sk_buff.data)");
	expect_print("access( sk_buff . % )", "access(sk_buff.%)");
	expect_print("within_function(skb_clone@linuxU)", "within_function(skb_clone@linuxU)");
	expect_print("within_file(drivers/.../netfront.c@linuxU)", "within_file(drivers/.../netfront.c@linuxU)");
	expect_print("call(netif_rx) OR return(netif_rx@linux0)", "call(netif_rx) OR return(netif_rx@linux0)");
	expect_print("target (skb)", "target(skb)");
	expect_print("local_var(skb,r1)", "local_var(skb, r1)");
	expect_print("xflow(netflow, skb)", "xflow(netflow, skb)");
	expect_print("xflow(netflow, skb, id)", "xflow(netflow, skb, id)");
}

Test(pointcut_parse, operators_and_precedence)
{
	/* AND binds tighter than OR; keywords in any case; C spellings too. */
	expect_print("call(a) or call(b) And call(c)", "call(a) OR call(b) AND call(c)");
	expect_print("(call(a) || call(b)) &amp;&amp; !call(c)", "(call(a) OR call(b)) AND NOT call(c)");
	expect_print("not not call(a)", "NOT NOT call(a)");
	/* The printed form keeps the tree's shape, so it parses back the same. */
	expect_print("call(a) AND (call(b) AND call(c))", "call(a) AND (call(b) AND call(c))");
	expect_print("(call(a) AND call(b)) AND call(c)", "call(a) AND call(b) AND call(c)");
	/* ANDroid is a name, not AND. */
	expect_error("call(a) ANDroid call(b)", "unexpected 'ANDroid'");
}

Test(pointcut_parse, errors_point_at_the_token)
{
	char *d;
	free(parse_print("access(sk_buff.) AND call(f)", &d));
	/* <pointcut> is 10 bytes: the ')' is byte 16 of the text, column 26. */
	cr_expect(strstr(d, "p.xml:1:26: error: expected a member name or '%' before ')'"), "%s", d);
	cr_expect(strstr(d, "^"), "no caret in %s", d);
	free(d);
	expect_error("acess(s.m)", "unknown pointcut 'acess'");
	expect_error("access(s.m) AND", "expected a pointcut before end of pointcut");
	expect_error("access(s.m", "expected ')' before end of pointcut");
	expect_error("access(s.m) call(f)", "unexpected 'call' after the pointcut");
	expect_error("within_function(f@)", "expected a domain name");
	expect_error("local_var(a)", "expected ','");
	expect_error("(call(a)", "expected ')'");
	expect_error("   ", "empty pointcut");
}

Test(pointcut_parse, entities_keep_file_columns)
{
	char *d;
	/* &amp;&amp; is two bytes decoded but ten in the file. */
	free(parse_print("call(a) &amp;&amp; call(", &d));
	cr_expect(strstr(d, "p.xml:1:35: error: expected a function name before end of pointcut"), "%s", d);
	free(d);
}

Test(pointcut_parse, nesting_and_length_are_bounded)
{
	char buf[4096] = "";
	for (int i = 0; i < 70; i++)
		strcat(buf, "(");
	strcat(buf, "call(a)");
	for (int i = 0; i < 70; i++)
		strcat(buf, ")");
	expect_error(buf, "nested deeper than");
	char *big = malloc(300 * 12 + 1);
	big[0] = '\0';
	for (int i = 0; i < 300; i++)
		strcat(big, i ? " OR call(a)" : "call(a)");
	char *d;
	char *got = parse_print(big, &d);
	cr_expect_null(got);
	cr_expect(strstr(d, "longer than 256 terms"), "%s", d);
	free(got);
	free(d);
	free(big);
}
