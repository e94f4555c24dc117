/*
 * Code generation, checked by running the compiled advice in the tests'
 * reference evaluator (bceval.h).
 */
#include "bceval.h"
#include "wtest.h"

/* Compile one advice whose pointcut binds v (target) and run it with v
 * pointing at @mem; the field table gets 8-byte members at 0, 8, 16. */
static struct ev_env run_code(const char *body, void *mem, int *steps)
{
	char xml[4096];
	snprintf(xml, sizeof(xml),
		 "<flows><xflow name='f'/><advice><pointcut>access(s.a) AND target(v)</pointcut>"
		 "<before>%s</before></advice></flows>", body);
	int rc;
	struct xflow_unit *u = wt_compile(xml, &rc);
	char *d = wt_diags(u);
	cr_assert_eq(rc, 0, "%s\n%s", body, d);
	free(d);
	struct ev_env e = { .pc = 0x1000, .tsc = 777 };
	e.in[0] = (uintptr_t)mem;
	for (size_t i = 0; i < xflow_unit_field_count(u); i++) {
		const char *s, *m;
		xflow_unit_field(u, i, &s, &m, NULL);
		e.field_off[i] = (unsigned)(m[0] - 'a') * 8;
		e.field_size[i] = 8;
	}
	*steps = ev_run(wt_prog(u, 0), &e);
	cr_assert_geq(*steps, 1, "evaluator refused %s", body);
	xflow_unit_free(u);
	return e;
}

static uint64_t eval(const char *expr)
{
	char body[512];
	snprintf(body, sizeof(body), "STORE_DATA1(%s);", expr);
	uint64_t mem[3] = { 0 };
	int steps;
	struct ev_env e = run_code(body, mem, &steps);
	cr_assert_eq(e.nrec, 1);
	return e.rec[0].data[0];
}

Test(advice_emit, arithmetic_follows_c)
{
	cr_expect_eq(eval("1 + 2 * 3"), 7);
	cr_expect_eq(eval("(1 + 2) * 3"), 9);
	cr_expect_eq(eval("7 / 2"), 3);
	cr_expect_eq(eval("-7 / 2"), (uint64_t)-3);
	cr_expect_eq(eval("-7 % 3"), (uint64_t)-1);
	cr_expect_eq(eval("1 &lt;&lt; 40"), UINT64_C(1) << 40);
	cr_expect_eq(eval("-16 &gt;&gt; 2"), (uint64_t)-4);      /* signed: arithmetic */
	cr_expect_eq(eval("0xfffffffffffffff0 &gt;&gt; 60"), 15); /* unsigned: logical */
	cr_expect_eq(eval("~0 ^ 0xff"), ~UINT64_C(0xff));
	cr_expect_eq(eval("5 / 0"), 0);                          /* no trap */
	cr_expect_eq(eval("3 &lt; 4"), 1);
	cr_expect_eq(eval("-1 &lt; 1"), 1);
	cr_expect_eq(eval("-1 &lt; 1u"), 0);                       /* C's conversion */
	cr_expect_eq(eval("!5 + !0"), 1);
}

Test(advice_emit, logic_short_circuits)
{
	/* The right side would divide by zero... which gives 0 here, so use a
	 * side effect instead: the store only happens if evaluated. */
	uint64_t mem[3] = { 0 };
	int steps;
	struct ev_env e = run_code("if (0 &amp;&amp; (v-&gt;a = 5)) STORE_DATA1(1); "
				   "if (1 || (v-&gt;b = 6)) STORE_DATA1(2);", mem, &steps);
	cr_expect_eq(mem[0], 0);
	cr_expect_eq(mem[1], 0);
	cr_expect_eq(e.nrec, 1);
	cr_expect_eq(e.rec[0].data[0], 2);
	cr_expect_eq(eval("2 &amp;&amp; 3"), 1);
	cr_expect_eq(eval("0 || 0"), 0);
}

Test(advice_emit, members_read_and_write)
{
	uint64_t mem[3] = { 5, 0x10, 0 };
	int steps;
	run_code("v-&gt;c = v-&gt;a + 1; v-&gt;b |= 3 &lt;&lt; 4; v-&gt;a -= 2;", mem, &steps);
	cr_expect_eq(mem[2], 6);
	cr_expect_eq(mem[1], 0x30);
	cr_expect_eq(mem[0], 3);
}

Test(advice_emit, if_else_and_locals)
{
	uint64_t mem[3] = { 10, 0, 0 };
	int steps;
	struct ev_env e = run_code("int x = v-&gt;a; unsigned long y; "
				   "if (x &gt; 5) { y = 1; x *= 3; } else y = 2; "
				   "STORE_DATA2(x, y);", mem, &steps);
	cr_expect_eq(e.rec[0].data[0], 30);
	cr_expect_eq(e.rec[0].data[1], 1);
	mem[0] = 1;
	e = run_code("int x = v-&gt;a; int y; if (x &gt; 5) y = 1; else y = 2; STORE_DATA2(x, y);",
		     mem, &steps);
	cr_expect_eq(e.rec[0].data[1], 2);
}

Test(advice_emit, pointer_reads_and_casts)
{
	uint32_t words[2] = { 0xfffffffe, 7 };
	void *box = words;
	uint64_t mem[3] = { (uintptr_t)&box, 0, 0 };
	int steps;
	/* *(void**) reads a pointer; int * arithmetic scales by 4; a signed
	 * 4-byte load sign-extends, an unsigned one does not. */
	struct ev_env e = run_code("void *p = *(void**)v-&gt;a; "
				   "STORE_DATA3(*(int *)p, *(unsigned int *)p, *((int *)p + 1));",
				   mem, &steps);
	cr_expect_eq(e.rec[0].data[0], (uint64_t)-2);
	cr_expect_eq(e.rec[0].data[1], 0xfffffffe);
	cr_expect_eq(e.rec[0].data[2], 7);
}

Test(advice_emit, builtins)
{
	uint64_t mem[3] = { 0 };
	int steps;
	struct ev_env e = run_code("long long t; DO_RDTSC(t); register_flowid(f, v, get_new_flowid()); "
				   "int id = get_flowid(f, v); STORE_DATA3($pc$, t, id); remove_flowid(f, v);",
				   mem, &steps);
	cr_expect_eq(e.rec[0].data[0], 0x1000);
	cr_expect_eq(e.rec[0].data[1], 777);
	cr_expect_eq(e.rec[0].data[2], 1);
	cr_expect_eq(e.rec[0].flow_id, 1);   /* the record carries the flow it saw */
	cr_expect_eq(e.ntab, 0);
}

Test(advice_emit, large_constants_use_the_pool)
{
	cr_expect_eq(eval("0x123456789abc"), UINT64_C(0x123456789abc));
	cr_expect_eq(eval("0x123456789abc + 0x123456789abc"), UINT64_C(0x2468acf13578));
}

Test(advice_emit, every_advice_terminates_in_bounded_steps)
{
	uint64_t mem[3] = { 0 };
	int steps;
	run_code("int x = 0; if (x) { x = 1; } else { if (!x) x = 2; else x = 3; } STORE_DATA1(x);",
		 mem, &steps);
	cr_expect_leq(steps, 30);
}
