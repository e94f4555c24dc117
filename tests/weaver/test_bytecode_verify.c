/*
 * The verifier refuses every way a program could be unsafe to run.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "xflow/bytecode.h"

#define I(o, a_, b_, k_) { .op = XFLOW_OP_##o, .a = (a_), .b = (b_), .k = (k_) }

static const uint8_t local_types[] = { XFLOW_BC_INT, XFLOW_BC_PTR };
static const struct xflow_bc_input inputs[] = { { XFLOW_IN_TARGET, XFLOW_BC_PTR, NULL, "sk_buff" } };
static const uint64_t consts[] = { 0x123456789ull };

static int verify(const struct xflow_bc_insn *code, size_t n, const char **why)
{
	struct xflow_bc_prog p = {
		.version = XFLOW_BC_VERSION, .ninsns = (uint32_t)n, .insns = code,
		.nconsts = 1, .consts = consts, .nlocals = 2, .local_types = local_types,
		.ninputs = 1, .inputs = inputs, .nfields = 1, .nflows = 1,
	};
	uint32_t at;
	return xflow_bc_verify(&p, why, &at);
}

#define EXPECT_BAD(code, msg)                                                      \
	do {                                                                       \
		const char *why = NULL;                                            \
		cr_expect_eq(verify(code, sizeof(code) / sizeof(code[0]), &why), -EINVAL); \
		cr_expect(why && strstr(why, msg), "why = %s, want %s", why, msg); \
	} while (0)

Test(bytecode_verify, accepts_a_figure8_program)
{
	static const struct xflow_bc_insn code[] = {
		I(LDIN, 0, 0, 0), I(FLOW_GET, 0, 0, 0), I(STL, 0, 0, 0),
		I(LDL, 0, 0, 0), I(PUSHI, 0, 0, 0), I(NE, 0, 0, 0), I(JZ, 0, 0, 4),
		I(PC, 0, 0, 0), I(RDTSC, 0, 0, 0), I(LDL, 0, 0, 0), I(STORE, 3, 0, 0),
		I(RET, 0, 0, 0),
	};
	struct xflow_bc_prog p = {
		.version = XFLOW_BC_VERSION, .ninsns = 12, .insns = code,
		.nlocals = 2, .local_types = local_types, .ninputs = 1, .inputs = inputs,
		.nfields = 1, .nflows = 1,
	};
	const char *why = NULL;
	cr_expect_eq(xflow_bc_verify(&p, &why, NULL), 0, "%s", why);
	cr_expect_eq(p.max_stack, 3);
}

Test(bytecode_verify, refuses_backward_and_zero_jumps)
{
	static const struct xflow_bc_insn back[] = { I(NOP, 0, 0, 0), I(JMP, 0, 0, -2), I(RET, 0, 0, 0) };
	static const struct xflow_bc_insn zero[] = { I(JMP, 0, 0, 0), I(RET, 0, 0, 0) };
	EXPECT_BAD(back, "forward");
	EXPECT_BAD(zero, "forward");
}

Test(bytecode_verify, refuses_jumps_out_of_the_program)
{
	static const struct xflow_bc_insn code[] = { I(PUSHI, 0, 0, 1), I(JZ, 0, 0, 5), I(RET, 0, 0, 0) };
	EXPECT_BAD(code, "out of the program");
}

Test(bytecode_verify, refuses_stack_underflow_and_overflow)
{
	static const struct xflow_bc_insn under[] = { I(ADD, 0, 0, 0), I(RET, 0, 0, 0) };
	EXPECT_BAD(under, "underflow");
	struct xflow_bc_insn over[XFLOW_BC_MAX_STACK + 2];
	for (int i = 0; i <= XFLOW_BC_MAX_STACK; i++)
		over[i] = (struct xflow_bc_insn)I(PUSHI, 0, 0, i);
	over[XFLOW_BC_MAX_STACK + 1] = (struct xflow_bc_insn)I(RET, 0, 0, 0);
	EXPECT_BAD(over, "overflow");
}

Test(bytecode_verify, refuses_out_of_range_indices)
{
	static const struct xflow_bc_insn local[] = { I(LDL, 2, 0, 0), I(DROP, 0, 0, 0), I(RET, 0, 0, 0) };
	static const struct xflow_bc_insn input[] = { I(LDIN, 1, 0, 0), I(DROP, 0, 0, 0), I(RET, 0, 0, 0) };
	static const struct xflow_bc_insn field[] = { I(LDIN, 0, 0, 0), I(LDF, 0, 1, 0), I(DROP, 0, 0, 0), I(RET, 0, 0, 0) };
	static const struct xflow_bc_insn flow[] = { I(LDIN, 0, 0, 0), I(FLOW_DEL, 0, 1, 0), I(RET, 0, 0, 0) };
	static const struct xflow_bc_insn cst[] = { I(PUSHK, 0, 1, 0), I(DROP, 0, 0, 0), I(RET, 0, 0, 0) };
	static const struct xflow_bc_insn store[] = { I(PUSHI, 0, 0, 0), I(STORE, 7, 0, 0), I(RET, 0, 0, 0) };
	static const struct xflow_bc_insn flags[] = { I(PUSHI, 0, 0, 0), I(STORE, 1, 0x8000, 0), I(RET, 0, 0, 0) };
	static const struct xflow_bc_insn op[] = { { .op = 200 }, I(RET, 0, 0, 0) };
	EXPECT_BAD(local, "local slot");
	EXPECT_BAD(input, "input slot");
	EXPECT_BAD(field, "field index");
	EXPECT_BAD(flow, "flow index");
	EXPECT_BAD(cst, "constant index");
	EXPECT_BAD(store, "1 to 6");
	EXPECT_BAD(flags, "record flags");
	EXPECT_BAD(op, "unknown opcode");
}

Test(bytecode_verify, checks_types)
{
	/* Memory and flow keys need pointers; locals keep their type. */
	static const struct xflow_bc_insn ldf[] = { I(PUSHI, 0, 0, 64), I(LDF, 0, 0, 0), I(DROP, 0, 0, 0), I(RET, 0, 0, 0) };
	static const struct xflow_bc_insn key[] = { I(PUSHI, 0, 0, 64), I(FLOW_GET, 0, 0, 0), I(DROP, 0, 0, 0), I(RET, 0, 0, 0) };
	static const struct xflow_bc_insn stl[] = { I(LDIN, 0, 0, 0), I(STL, 0, 0, 0), I(RET, 0, 0, 0) };
	static const struct xflow_bc_insn ok[] = { I(PUSHI, 0, 0, 64), I(TOPTR, 0, 0, 0), I(STL, 1, 0, 0), I(RET, 0, 0, 0) };
	EXPECT_BAD(ldf, "LDF needs a pointer");
	EXPECT_BAD(key, "pointers");
	EXPECT_BAD(stl, "local's");
	cr_expect_eq(verify(ok, 4, NULL), 0);
}

Test(bytecode_verify, paths_must_agree)
{
	/* One path pushes a value, the other does not. */
	static const struct xflow_bc_insn depth[] = {
		I(PUSHI, 0, 0, 1), I(JZ, 0, 0, 1), I(PUSHI, 0, 0, 2), I(DROP, 0, 0, 0), I(RET, 0, 0, 0),
	};
	/* Same depth, but an INT on one path and a PTR on the other. */
	static const struct xflow_bc_insn type[] = {
		I(PUSHI, 0, 0, 1), I(JZ, 0, 0, 2), I(LDIN, 0, 0, 0), I(JMP, 0, 0, 1),
		I(PUSHI, 0, 0, 0), I(DROP, 0, 0, 0), I(RET, 0, 0, 0),
	};
	EXPECT_BAD(depth, "depth differs");
	EXPECT_BAD(type, "types differ");
}

Test(bytecode_verify, must_end_in_ret_with_an_empty_stack)
{
	static const struct xflow_bc_insn noret[] = { I(NOP, 0, 0, 0) };
	static const struct xflow_bc_insn left[] = { I(PUSHI, 0, 0, 0), I(RET, 0, 0, 0) };
	EXPECT_BAD(noret, "without RET");
	EXPECT_BAD(left, "left on the stack");
}

Test(bytecode_verify, refuses_bad_headers)
{
	struct xflow_bc_insn ret = I(RET, 0, 0, 0);
	struct xflow_bc_prog p = { .version = 99, .ninsns = 1, .insns = &ret };
	cr_expect_eq(xflow_bc_verify(&p, NULL, NULL), -EINVAL);
	p.version = XFLOW_BC_VERSION;
	p.ninsns = 0;
	cr_expect_eq(xflow_bc_verify(&p, NULL, NULL), -EINVAL);
	p.ninsns = 1;
	cr_expect_eq(xflow_bc_verify(&p, NULL, NULL), 0);
}

Test(bytecode_verify, op_names)
{
	cr_expect_str_eq(xflow_bc_op_name(XFLOW_OP_HANDOFF), "HANDOFF");
	cr_expect_null(xflow_bc_op_name(XFLOW_OP_COUNT));
	for (unsigned i = 0; i < XFLOW_OP_COUNT; i++)
		cr_expect_not_null(xflow_bc_op_name(i), "opcode %u has no name", i);
}

/* HANDOFF's receiving side with the sender (side 2) takes three values:
 * two on the stack are too few, and there is no side 3. */
Test(bytecode_verify, handoff_side_two_takes_the_sender)
{
	static const struct xflow_bc_insn ok[] = { I(PUSHI, 0, 0, 1), I(PUSHI, 0, 0, 3), I(PUSHI, 0, 0, 7),
						   I(HANDOFF, 2, 0, 0), I(RET, 0, 0, 0) };
	const char *okwhy = NULL;
	cr_expect_eq(verify(ok, sizeof(ok) / sizeof(ok[0]), &okwhy), 0, "%s", okwhy);
	static const struct xflow_bc_insn few[] = { I(PUSHI, 0, 0, 1), I(PUSHI, 0, 0, 3), I(HANDOFF, 2, 0, 0),
						    I(RET, 0, 0, 0) };
	EXPECT_BAD(few, "underflow");
	static const struct xflow_bc_insn side3[] = { I(PUSHI, 0, 0, 1), I(PUSHI, 0, 0, 3), I(PUSHI, 0, 0, 7),
						      I(HANDOFF, 3, 0, 0), I(RET, 0, 0, 0) };
	EXPECT_BAD(side3, "side must be 0, 1 or 2");
	/* Side 1 leaves the third value: a program ending with it is fine,
	 * but the stack after shows two were taken, not three. */
	static const struct xflow_bc_insn one[] = { I(PUSHI, 0, 0, 1), I(PUSHI, 0, 0, 3), I(HANDOFF, 1, 0, 0),
						    I(DROP, 0, 0, 0), I(RET, 0, 0, 0) };
	EXPECT_BAD(one, "underflow");
}

/* ELEM takes a pointer and an integer and gives a pointer, which LDF and
 * FLOW_GET take; its field is in range. */
Test(bytecode_verify, elem_takes_a_pointer_and_an_index)
{
	static const struct xflow_bc_insn ok[] = { I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, 3), I(ELEM, 0, 0, 0),
						   I(DUP, 0, 0, 0), I(LDF, 0, 0, 0), I(DROP, 0, 0, 0),
						   I(FLOW_GET, 0, 0, 0), I(DROP, 0, 0, 0), I(RET, 0, 0, 0) };
	const char *okwhy = NULL;
	cr_expect_eq(verify(ok, sizeof(ok) / sizeof(ok[0]), &okwhy), 0, "%s", okwhy);
	static const struct xflow_bc_insn intbase[] = { I(PUSHI, 0, 0, 64), I(PUSHI, 0, 0, 3), I(ELEM, 0, 0, 0),
							I(DROP, 0, 0, 0), I(RET, 0, 0, 0) };
	EXPECT_BAD(intbase, "ELEM needs a pointer and an integer");
	static const struct xflow_bc_insn ptridx[] = { I(LDIN, 0, 0, 0), I(LDIN, 0, 0, 0), I(ELEM, 0, 0, 0),
						       I(DROP, 0, 0, 0), I(RET, 0, 0, 0) };
	EXPECT_BAD(ptridx, "ELEM needs a pointer and an integer");
	static const struct xflow_bc_insn one[] = { I(LDIN, 0, 0, 0), I(ELEM, 0, 0, 0), I(DROP, 0, 0, 0),
						    I(RET, 0, 0, 0) };
	EXPECT_BAD(one, "ELEM needs a pointer and an integer");
	static const struct xflow_bc_insn field[] = { I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, 3), I(ELEM, 0, 1, 0),
						      I(DROP, 0, 0, 0), I(RET, 0, 0, 0) };
	EXPECT_BAD(field, "field index");
	/* What it gives is a pointer: an integer local cannot hold it. */
	static const struct xflow_bc_insn stl[] = { I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, 3), I(ELEM, 0, 0, 0),
						    I(STL, 0, 0, 0), I(RET, 0, 0, 0) };
	EXPECT_BAD(stl, "local's");
}
