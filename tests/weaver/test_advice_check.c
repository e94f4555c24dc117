/*
 * Names, bindings and types.
 */
#include "wtest.h"

static char xml[8192];

static const char *adv(const char *pc, const char *body)
{
	snprintf(xml, sizeof(xml),
		 "<flows><xflow name='f'/><advice><pointcut>%s</pointcut><before>%s</before></advice></flows>",
		 pc, body);
	return xml;
}

Test(advice_check, bindings_follow_the_pointcut)
{
	wt_expect_clean(adv("access(s.m) AND target(v)", "STORE_DATA1(v);"));
	wt_expect_clean(adv("call(g) AND local_var(x, v)", "STORE_DATA1(*(long *)v);"));
	/* Bound on both sides of OR, the same way: fine. */
	wt_expect_clean(adv("access(s.m) AND (target(v) AND call(a) OR target(v) AND call(b))", "STORE_DATA1(v);"));
	wt_expect_error(adv("access(s.m) AND (target(v) OR call(a))", "STORE_DATA1(1);"),
			"'v' is bound on only one side of OR");
	wt_expect_error(adv("access(s.m) AND (call(a) OR local_var(x, v))", "STORE_DATA1(1);"),
			"'v' is bound on only one side of OR");
	wt_expect_error(adv("access(s.m) AND NOT target(v)", "STORE_DATA1(1);"), "NOT cannot bind 'v'");
	wt_expect_error(adv("access(s.m) AND target(v) AND local_var(x, v)", "STORE_DATA1(v);"),
			"'v' is bound twice");
	wt_expect_error(adv("call(g) AND target(v)", "STORE_DATA1(v);"), "target(v) needs an access()");
	wt_expect_error(adv("call(g)", "STORE_DATA1(w);"), "'w' is not bound by the pointcut or declared");
	wt_expect_error(adv("access(s.m) AND target(v)", "int v = 1;"), "'v' is already bound by the pointcut");
	wt_expect_error(adv("call(g)", "int a; int a;"), "redefinition of 'a'");
	/* A block scope ends with its block. */
	wt_expect_error(adv("call(g)", "if (1) { int a = 1; } STORE_DATA1(a);"), "'a' is not bound");
}

Test(advice_check, target_has_the_accessed_struct_type)
{
	wt_expect_clean(adv("access(sk_buff.len) AND target(skb)", "STORE_DATA1(skb-&gt;len);"));
	wt_expect_error(adv("call(g) AND local_var(skb, p)", "STORE_DATA1(p-&gt;len);"),
			"'->len' needs a struct pointer, not void *");
	wt_expect_error(adv("access(sk_buff.len) AND target(skb)", "struct other *o = skb;"),
			"cannot initialise struct other * 'o' with struct sk_buff *");
}

Test(advice_check, types)
{
	wt_expect_error(adv("call(g)", "void x;"), "variable 'x' declared void");
	wt_expect_error(adv("call(g)", "struct s x;"), "declared as a struct value");
	wt_expect_error(adv("access(s.m) AND target(v)", "long n = v;"), "cannot initialise integer 'n'");
	wt_expect_error(adv("access(s.m) AND target(v)", "void *p = 5;"), "cannot initialise void *");
	wt_expect_clean(adv("access(s.m) AND target(v)", "void *p = 0; void *q = (void *)5; long n = (long)v;"));
	wt_expect_error(adv("access(s.m) AND target(v)", "long n = v * 2;"), "invalid operands");
	wt_expect_error(adv("access(s.m) AND target(v)", "long n = -v;"), "unary '-' needs an integer");
	wt_expect_error(adv("access(s.m) AND target(v)", "long n = *v;"), "cannot dereference struct s *");
	wt_expect_error(adv("call(g) AND local_var(x, p)", "long n = *p;"), "cannot dereference void *");
	wt_expect_error(adv("access(s.m) AND target(v)", "void *p = v + 1;"), "needs the struct's size");
	wt_expect_error(adv("call(g)", "int a = 0; a-&gt;m = 1;"), "'->m' needs a struct pointer, not integer");
	wt_expect_error(adv("call(g)", "long x = (struct s)1;"), "cannot cast to a struct value");
	wt_expect_error(adv("call(g)", "1 = 2;"), "cannot assign to this expression");
	wt_expect_error(adv("access(s.m) AND target(v)", "v = 0;"), "cannot assign to 'v'");
	/* Member values take their C type at plan time: either way is fine. */
	wt_expect_clean(adv("access(s.m) AND target(v)", "void *p = v-&gt;m; long n = v-&gt;m; v-&gt;m = n;"));
}

Test(advice_check, builtins)
{
	wt_expect_clean(adv("access(s.m) AND target(v)",
			    "int id = get_flowid(f, v); register_flowid(f, v, get_new_flowid()); remove_flowid(f, v);"));
	wt_expect_error(adv("call(g)", "frobnicate(1);"), "unknown builtin 'frobnicate'");
	wt_expect_error(adv("call(g)", "STORE_DATA0();"), "unknown builtin 'STORE_DATA0'");
	wt_expect_error(adv("call(g)", "STORE_DATA2(1);"), "STORE_DATA2() takes 2 arguments, not 1");
	wt_expect_error(adv("access(s.m) AND target(v)", "get_flowid(g, v);"), "unknown flow 'g'");
	wt_expect_error(adv("access(s.m) AND target(v)", "get_flowid(1, v);"), "must be a flow name");
	wt_expect_error(adv("call(g)", "get_flowid(f, 1);"), "argument 2 of get_flowid() must be a pointer");
	wt_expect_error(adv("access(s.m) AND target(v)", "register_flowid(f, v, v);"),
			"argument 3 of register_flowid() must be an integer");
	wt_expect_error(adv("call(g)", "DO_RDTSC(1);"), "DO_RDTSC() needs an integer variable");
	wt_expect_error(adv("call(g)", "long x = remove_flowid(f, 0);"), "cannot initialise integer 'x' with void");
	wt_expect_error(adv("call(g)", "long x = f;"), "flow 'f' used as a value");
}

Test(advice_check, unused_bindings_warn_under_wall)
{
	int rc;
	struct xflow_unit *u;
	xflow_unit_new(&u, NULL);
	cr_assert_eq(xflow_unit_set_warning(u, "unused-binding"), 0);
	const char *x = adv("access(s.m) AND target(v)", "STORE_DATA1(1);");
	xflow_unit_add_buffer(u, "t.xml", x, strlen(x));
	rc = xflow_unit_compile(u);
	char *d = wt_diags(u);
	cr_expect_eq(rc, 0);
	cr_expect(strstr(d, "warning: 'v' is bound by the pointcut but never used [-Wunused-binding]"), "%s", d);
	free(d);
	xflow_unit_free(u);
}
