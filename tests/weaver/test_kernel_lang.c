/*
 * The language's additions for kernel flows (xflow(5)): tracepoint(c:n),
 * whose instance target() binds, and the passing <transit> (a <select>
 * and no operation).  Compile-time only: no kernel needed.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tests/weaver/wtest.h"
#include "xflow/bytecode.h"
#include "xflow/record.h"

Test(kernel_lang, tracepoint_parses_and_binds_its_instance)
{
	int rc;
	struct xflow_unit *u = wt_compile("<flows><xflow name='f'><quit>"
					  "<pointcut>tracepoint(skb:consume_skb@linux0) OR tracepoint(skb:kfree_skb)"
					  "</pointcut></quit></xflow></flows>", &rc);
	char *d = wt_diags(u);
	cr_assert_eq(rc, 0, "%s", d);
	free(d);
	cr_assert_eq(xflow_unit_advice_count(u), 1);
	struct xflow_advice_info ai;
	cr_assert_eq(xflow_unit_advice(u, 0, &ai), 0);
	cr_expect_eq(ai.origin, XFLOW_ADVICE_QUIT);
	cr_assert_eq(ai.prog->ninputs, 1);
	cr_expect_eq(ai.prog->inputs[0].kind, XFLOW_IN_TARGET, "a quit without <select> keys by target()");
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	xflow_unit_dump(u, f, false);
	fclose(f);
	cr_expect(strstr(buf, "tracepoint(skb:consume_skb@linux0)") != NULL, "%s", buf);
	free(buf);
	xflow_unit_free(u);
}

Test(kernel_lang, tracepoint_errors_say_what_to_write)
{
	wt_expect_error("<flows><xflow name='f'><quit><pointcut>tracepoint(consume_skb)</pointcut></quit></xflow></flows>",
			"':' between the category and the name");
	wt_expect_error("<flows><xflow name='f'><quit><pointcut>tracepoint(skb:)</pointcut></quit></xflow></flows>",
			"a tracepoint name");
	/* target() elsewhere still needs an access(). */
	wt_expect_error("<flows><xflow name='f'><quit><pointcut>call(consume_skb)</pointcut></quit></xflow></flows>",
			"needs an access() in the pointcut");
}

Test(kernel_lang, a_passing_transit_gets_and_records)
{
	int rc;
	struct xflow_unit *u = wt_compile("<flows><xflow name='f'><transit>"
					  "<pointcut>call(dev_hard_start_xmit)</pointcut><select local_var='first'/>"
					  "</transit></xflow></flows>", &rc);
	cr_assert_eq(rc, 0);
	cr_assert_eq(xflow_unit_advice_count(u), 1);
	struct xflow_advice_info ai;
	cr_assert_eq(xflow_unit_advice(u, 0, &ai), 0);
	cr_expect_eq(ai.origin, XFLOW_ADVICE_TRANSIT);
	cr_expect_eq(ai.rec_flags, XFLOW_REC_TRANSIT);
	cr_assert_eq(ai.prog->ninputs, 1);
	cr_expect_eq(ai.prog->inputs[0].kind, XFLOW_IN_LOCAL_VAR);
	cr_expect_str_eq(ai.prog->inputs[0].local, "first");
	/* One get and nothing that changes the table. */
	unsigned gets = 0, others = 0;
	for (uint32_t i = 0; i < ai.prog->ninsns; i++) {
		uint8_t op = ai.prog->insns[i].op;
		gets += op == XFLOW_OP_FLOW_GET;
		others += op == XFLOW_OP_FLOW_REG || op == XFLOW_OP_FLOW_DEL || op == XFLOW_OP_FLOW_NEW ||
			  op == XFLOW_OP_STORE;
	}
	cr_expect_eq(gets, 1);
	cr_expect_eq(others, 0);
	xflow_unit_free(u);
}

Test(kernel_lang, a_transit_says_something)
{
	wt_expect_error("<flows><xflow name='f'><transit><pointcut>call(a)</pointcut></transit></xflow></flows>",
			"or <select local_var=\"v\"/> where the flow only passes");
	wt_expect_error("<flows><xflow name='f'><transit><pointcut>call(a)</pointcut><select local_var='p'/>"
			"<move from='p' to='q'/></transit></xflow></flows>",
			"<select> in a <transit> marks a pass without an operation");
}
