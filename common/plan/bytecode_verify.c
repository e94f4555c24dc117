/*
 * The bytecode verifier (xflow/bytecode.h).  Jumps go forward only, so one
 * pass in program order sees every path into an instruction before the
 * instruction itself: each instruction's entry state (stack depth and the
 * INT/PTR type of every cell, as a bit mask) is merged from its
 * predecessors and must agree on every path.  Linear in the program size.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "xflow/bytecode.h"
#include "xflow/record.h"

struct state {
	int16_t depth;          /* -1: not reached yet */
	uint32_t ptrs;          /* bit i: cell i (from the bottom) is PTR */
};

static const char *const names[XFLOW_OP_COUNT] = {
	[XFLOW_OP_NOP] = "NOP", [XFLOW_OP_PUSHI] = "PUSHI", [XFLOW_OP_PUSHK] = "PUSHK",
	[XFLOW_OP_LDIN] = "LDIN", [XFLOW_OP_LDL] = "LDL", [XFLOW_OP_STL] = "STL",
	[XFLOW_OP_DUP] = "DUP", [XFLOW_OP_DROP] = "DROP", [XFLOW_OP_LDF] = "LDF",
	[XFLOW_OP_STF] = "STF", [XFLOW_OP_LDM] = "LDM", [XFLOW_OP_TOPTR] = "TOPTR",
	[XFLOW_OP_TOINT] = "TOINT", [XFLOW_OP_ADD] = "ADD", [XFLOW_OP_SUB] = "SUB",
	[XFLOW_OP_MUL] = "MUL", [XFLOW_OP_DIV] = "DIV", [XFLOW_OP_DIVU] = "DIVU",
	[XFLOW_OP_MOD] = "MOD", [XFLOW_OP_MODU] = "MODU", [XFLOW_OP_AND] = "AND",
	[XFLOW_OP_OR] = "OR", [XFLOW_OP_XOR] = "XOR", [XFLOW_OP_SHL] = "SHL",
	[XFLOW_OP_SHR] = "SHR", [XFLOW_OP_SAR] = "SAR", [XFLOW_OP_NEG] = "NEG",
	[XFLOW_OP_NOT] = "NOT", [XFLOW_OP_LNOT] = "LNOT", [XFLOW_OP_EQ] = "EQ",
	[XFLOW_OP_NE] = "NE", [XFLOW_OP_LT] = "LT", [XFLOW_OP_LE] = "LE",
	[XFLOW_OP_GT] = "GT", [XFLOW_OP_GE] = "GE", [XFLOW_OP_LTU] = "LTU",
	[XFLOW_OP_LEU] = "LEU", [XFLOW_OP_GTU] = "GTU", [XFLOW_OP_GEU] = "GEU",
	[XFLOW_OP_JMP] = "JMP", [XFLOW_OP_JZ] = "JZ", [XFLOW_OP_JNZ] = "JNZ",
	[XFLOW_OP_RET] = "RET", [XFLOW_OP_RDTSC] = "RDTSC", [XFLOW_OP_PC] = "PC",
	[XFLOW_OP_FLOW_NEW] = "FLOW_NEW", [XFLOW_OP_FLOW_GET] = "FLOW_GET",
	[XFLOW_OP_FLOW_REG] = "FLOW_REG", [XFLOW_OP_FLOW_DEL] = "FLOW_DEL",
	[XFLOW_OP_STORE] = "STORE", [XFLOW_OP_HANDOFF] = "HANDOFF", [XFLOW_OP_SPLIT] = "SPLIT",
	[XFLOW_OP_ELEM] = "ELEM",
};

const char *xflow_bc_op_name(unsigned op)
{
	return op < XFLOW_OP_COUNT ? names[op] : NULL;
}

#define FAIL(msg)                \
	do {                     \
		*why = (msg);    \
		goto out;        \
	} while (0)

static bool is_ptr(const struct state *s, int from_top)
{
	return (s->ptrs >> (s->depth - 1 - from_top)) & 1u;
}

/* Merge @s into the entry state of instruction @to. */
static const char *flow_into(struct state *st, uint32_t to, const struct state *s)
{
	if (st[to].depth < 0) {
		st[to] = *s;
		return NULL;
	}
	if (st[to].depth != s->depth)
		return "stack depth differs between paths";
	uint32_t mask = s->depth >= 32 ? UINT32_MAX : ((1u << s->depth) - 1);
	if ((st[to].ptrs & mask) != (s->ptrs & mask))
		return "stack types differ between paths";
	return NULL;
}

int xflow_bc_verify(struct xflow_bc_prog *p, const char **why_out, uint32_t *at_out)
{
	const char *dummy;
	const char **why = why_out ? why_out : &dummy;
	uint32_t at = 0;
	*why = NULL;
	if (p->version != XFLOW_BC_VERSION) {
		*why = "unknown bytecode version";
		goto done;
	}
	if (p->ninsns == 0 || p->ninsns > XFLOW_BC_MAX_INSNS || !p->insns) {
		*why = "program empty or too long";
		goto done;
	}
	if (p->nlocals > XFLOW_BC_MAX_LOCALS || p->ninputs > XFLOW_BC_MAX_INPUTS ||
	    p->nconsts > XFLOW_BC_MAX_CONSTS) {
		*why = "too many locals, inputs or constants";
		goto done;
	}
	for (uint32_t i = 0; i < p->nlocals; i++)
		if (p->local_types[i] != XFLOW_BC_INT && p->local_types[i] != XFLOW_BC_PTR) {
			*why = "bad local type";
			goto done;
		}
	for (uint32_t i = 0; i < p->ninputs; i++)
		if (p->inputs[i].type != XFLOW_BC_INT && p->inputs[i].type != XFLOW_BC_PTR) {
			*why = "bad input type";
			goto done;
		}

	struct state *st = malloc(p->ninsns * sizeof(*st));
	if (!st)
		return -ENOMEM;
	for (uint32_t i = 0; i < p->ninsns; i++)
		st[i].depth = -1;
	st[0].depth = 0;
	st[0].ptrs = 0;
	uint32_t max = 0;

	for (at = 0; at < p->ninsns; at++) {
		const struct xflow_bc_insn *in = &p->insns[at];
		struct state s = st[at];
		if (s.depth < 0)
			continue;   /* unreachable: never runs */
		int pop = 0, push = 0;
		bool push_ptr = false, ends = false;
		const char *bad = NULL;
		switch ((enum xflow_bc_op)in->op) {
		case XFLOW_OP_NOP:
			break;
		case XFLOW_OP_PUSHI:
			push = 1;
			break;
		case XFLOW_OP_PUSHK:
			if (in->b >= p->nconsts)
				FAIL("constant index out of range");
			push = 1;
			break;
		case XFLOW_OP_LDIN:
			if (in->a >= p->ninputs)
				FAIL("input slot out of range");
			push = 1;
			push_ptr = p->inputs[in->a].type == XFLOW_BC_PTR;
			break;
		case XFLOW_OP_LDL:
			if (in->a >= p->nlocals)
				FAIL("local slot out of range");
			push = 1;
			push_ptr = p->local_types[in->a] == XFLOW_BC_PTR;
			break;
		case XFLOW_OP_STL:
			if (in->a >= p->nlocals)
				FAIL("local slot out of range");
			if (s.depth < 1)
				FAIL("stack underflow");
			if (is_ptr(&s, 0) != (p->local_types[in->a] == XFLOW_BC_PTR))
				FAIL("value type does not match the local's");
			pop = 1;
			break;
		case XFLOW_OP_DUP:
			if (s.depth < 1)
				FAIL("stack underflow");
			push = 1;
			push_ptr = is_ptr(&s, 0);
			break;
		case XFLOW_OP_DROP:
			pop = 1;
			break;
		case XFLOW_OP_LDF:
			if (in->b >= p->nfields)
				FAIL("field index out of range");
			if (s.depth < 1 || !is_ptr(&s, 0))
				bad = "LDF needs a pointer";
			pop = push = 1;
			break;
		case XFLOW_OP_ELEM:
			if (in->b >= p->nfields)
				FAIL("field index out of range");
			if (s.depth < 2 || !is_ptr(&s, 1) || is_ptr(&s, 0))
				bad = "ELEM needs a pointer and an integer";
			pop = 2;
			push = 1;
			push_ptr = true;
			break;
		case XFLOW_OP_STF:
			if (in->b >= p->nfields)
				FAIL("field index out of range");
			if (s.depth < 2 || !is_ptr(&s, 1) || is_ptr(&s, 0))
				bad = "STF needs a pointer and an integer";
			pop = 2;
			break;
		case XFLOW_OP_LDM:
			if (in->a != 1 && in->a != 2 && in->a != 4 && in->a != 8)
				FAIL("LDM size must be 1, 2, 4 or 8");
			if (in->b & ~(XFLOW_LDM_SIGNED | XFLOW_LDM_PTR) ||
			    ((in->b & XFLOW_LDM_PTR) && in->a != 8))
				FAIL("bad LDM flags");
			if (s.depth < 1 || !is_ptr(&s, 0))
				bad = "LDM needs a pointer";
			pop = push = 1;
			push_ptr = in->b & XFLOW_LDM_PTR;
			break;
		case XFLOW_OP_TOPTR:
		case XFLOW_OP_TOINT:
			pop = push = 1;
			push_ptr = in->op == XFLOW_OP_TOPTR;
			break;
		case XFLOW_OP_ADD:
			if (s.depth >= 2 && is_ptr(&s, 0))
				bad = "ADD takes the pointer on the left";
			pop = 2;
			push = 1;
			push_ptr = s.depth >= 2 && is_ptr(&s, 1);
			break;
		case XFLOW_OP_SUB: case XFLOW_OP_MUL: case XFLOW_OP_DIV: case XFLOW_OP_DIVU:
		case XFLOW_OP_MOD: case XFLOW_OP_MODU: case XFLOW_OP_AND: case XFLOW_OP_OR:
		case XFLOW_OP_XOR: case XFLOW_OP_SHL: case XFLOW_OP_SHR: case XFLOW_OP_SAR:
		case XFLOW_OP_EQ: case XFLOW_OP_NE: case XFLOW_OP_LT: case XFLOW_OP_LE:
		case XFLOW_OP_GT: case XFLOW_OP_GE: case XFLOW_OP_LTU: case XFLOW_OP_LEU:
		case XFLOW_OP_GTU: case XFLOW_OP_GEU:
			pop = 2;
			push = 1;
			break;
		case XFLOW_OP_NEG: case XFLOW_OP_NOT: case XFLOW_OP_LNOT:
			pop = push = 1;
			break;
		case XFLOW_OP_JMP:
		case XFLOW_OP_JZ:
		case XFLOW_OP_JNZ: {
			if (in->k <= 0)
				FAIL("jumps must go forward");
			if ((uint64_t)at + 1 + (uint32_t)in->k >= p->ninsns)
				FAIL("jump out of the program");
			if (in->op != XFLOW_OP_JMP) {
				if (s.depth < 1)
					FAIL("stack underflow");
				s.depth--;
			}
			const char *m = flow_into(st, at + 1 + (uint32_t)in->k, &s);
			if (m)
				FAIL(m);
			if (in->op == XFLOW_OP_JMP)
				ends = true;
			else
				goto fallthrough;
			break;
		}
		case XFLOW_OP_RET:
			if (s.depth != 0)
				FAIL("RET with values left on the stack");
			ends = true;
			break;
		case XFLOW_OP_RDTSC:
		case XFLOW_OP_PC:
		case XFLOW_OP_FLOW_NEW:
			push = 1;
			break;
		case XFLOW_OP_FLOW_GET:
			if (in->b >= p->nflows)
				FAIL("flow index out of range");
			if (s.depth < 1 || !is_ptr(&s, 0))
				bad = "flow keys are pointers";
			pop = push = 1;
			break;
		case XFLOW_OP_FLOW_REG:
			if (in->b >= p->nflows)
				FAIL("flow index out of range");
			if (s.depth < 2 || !is_ptr(&s, 1) || is_ptr(&s, 0))
				bad = "FLOW_REG needs a pointer key and an integer id";
			pop = 2;
			break;
		case XFLOW_OP_FLOW_DEL:
			if (in->b >= p->nflows)
				FAIL("flow index out of range");
			if (s.depth < 1 || !is_ptr(&s, 0))
				bad = "flow keys are pointers";
			pop = 1;
			break;
		case XFLOW_OP_STORE:
			if (in->a < 1 || in->a > XFLOW_RECORD_MAX_DATA)
				FAIL("STORE takes 1 to 6 values");
			if (in->b & ~XFLOW_REC_OP_FLAGS)
				FAIL("unknown record flags");
			pop = in->a;
			break;
		case XFLOW_OP_HANDOFF:
			if (in->b >= p->nflows)
				FAIL("flow index out of range");
			if (in->a > 2)
				FAIL("HANDOFF side must be 0, 1 or 2");
			pop = in->a == 2 ? 3 : 2;
			break;
		case XFLOW_OP_SPLIT:
			if (in->b >= p->nflows)
				FAIL("flow index out of range");
			pop = 2;
			break;
		default:
			FAIL("unknown opcode");
		}
		if (bad)
			FAIL(bad);
		if (s.depth < pop)
			FAIL("stack underflow");
		s.depth = (int16_t)(s.depth - pop);
		if (s.depth + push > XFLOW_BC_MAX_STACK)
			FAIL("stack overflow");
		if (push) {
			uint32_t bit = 1u << s.depth;
			s.ptrs = push_ptr ? (s.ptrs | bit) : (s.ptrs & ~bit);
			s.depth = (int16_t)(s.depth + push);
		}
		if ((uint32_t)s.depth > max)
			max = (uint32_t)s.depth;
	fallthrough:
		if (ends)
			continue;
		if (at + 1 >= p->ninsns)
			FAIL("execution runs past the end without RET");
		const char *m = flow_into(st, at + 1, &s);
		if (m)
			FAIL(m);
	}
	p->max_stack = max;
out:
	free(st);
done:
	if (at_out)
		*at_out = at;
	return *why ? -EINVAL : 0;
}
