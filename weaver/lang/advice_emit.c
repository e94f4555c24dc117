/*
 * Pass: checked advice → bytecode (xflow/bytecode.h), then the verifier.
 *
 * A plain one-pass stack code generator.  Conditions branch forward only;
 * statement-level assignments store without keeping a copy of the value.
 * Inputs and locals keep the slots the checker gave them; fields and flows
 * are the unit's table indices.
 */
#include "weaver/lang/advice.h"

#include <errno.h>
#include <string.h>

struct em {
	struct xflow_unit *u;
	struct fl_advice *a;
	struct xflow_bc_insn *code;
	size_t n, cap;
	uint64_t *consts;
	size_t nconsts, consts_cap;
	bool bad;
};

static size_t op(struct em *m, unsigned o, unsigned a, unsigned b, int32_t k)
{
	struct xflow_bc_insn i = { .op = (uint8_t)o, .a = (uint8_t)a, .b = (uint16_t)b, .k = k };
	if (m->n >= XFLOW_BC_MAX_INSNS) {
		if (!m->bad)
			fl_error(&m->u->diag, m->a->loc, "split the advice",
				 "advice compiles to more than %d instructions", XFLOW_BC_MAX_INSNS);
		m->bad = true;
		return m->n;
	}
	FL_PUSH(&m->u->arena, m->code, m->n, m->cap, i);
	return m->n - 1;
}

/* Point the jump at @at to the next instruction to be emitted. */
static void patch(struct em *m, size_t at)
{
	if (at < m->n)
		m->code[at].k = (int32_t)(m->n - at - 1);
}

static void push_num(struct em *m, uint64_t v)
{
	if ((int64_t)v >= INT32_MIN && (int64_t)v <= INT32_MAX) {
		op(m, XFLOW_OP_PUSHI, 0, 0, (int32_t)(int64_t)v);
		return;
	}
	size_t k;
	for (k = 0; k < m->nconsts; k++)
		if (m->consts[k] == v)
			break;
	if (k == m->nconsts) {
		if (m->nconsts >= XFLOW_BC_MAX_CONSTS) {
			m->bad = true;
			return;
		}
		FL_PUSH(&m->u->arena, m->consts, m->nconsts, m->consts_cap, v);
	}
	op(m, XFLOW_OP_PUSHK, 0, (unsigned)k, 0);
}

static bool ptr_t(const struct fl_type *t)
{
	return t->ptr > 0;
}

/* Retype the top of the stack from @from to @to (no code when equal). */
static void convert(struct em *m, const struct fl_type *from, const struct fl_type *to)
{
	bool fp = ptr_t(from) && !from->member, tp = ptr_t(to);
	if (tp && !fp)
		op(m, XFLOW_OP_TOPTR, 0, 0, 0);
	else if (!tp && fp)
		op(m, XFLOW_OP_TOINT, 0, 0, 0);
}

static void expr(struct em *m, const struct fl_expr *e);

static unsigned bin_op(int o, bool uns)
{
	switch (o) {
	case '+': return XFLOW_OP_ADD;
	case '-': return XFLOW_OP_SUB;
	case '*': return XFLOW_OP_MUL;
	case '/': return uns ? XFLOW_OP_DIVU : XFLOW_OP_DIV;
	case '%': return uns ? XFLOW_OP_MODU : XFLOW_OP_MOD;
	case '&': return XFLOW_OP_AND;
	case '|': return XFLOW_OP_OR;
	case '^': return XFLOW_OP_XOR;
	case FL_T_SHL: return XFLOW_OP_SHL;
	case FL_T_SHR: return uns ? XFLOW_OP_SHR : XFLOW_OP_SAR;
	case FL_T_EQ: return XFLOW_OP_EQ;
	case FL_T_NE: return XFLOW_OP_NE;
	case '<': return uns ? XFLOW_OP_LTU : XFLOW_OP_LT;
	case '>': return uns ? XFLOW_OP_GTU : XFLOW_OP_GT;
	case FL_T_LE: return uns ? XFLOW_OP_LEU : XFLOW_OP_LE;
	case FL_T_GE: return uns ? XFLOW_OP_GEU : XFLOW_OP_GE;
	}
	return XFLOW_OP_NOP;
}

static unsigned elem_size(const struct fl_type *t)
{
	if (t->ptr > 1)
		return 8;
	if (t->base == FL_T_INT)
		return t->size ? t->size : 8;
	return 1;
}

/* Both operands on the stack as the operator wants them. */
static void binary(struct em *m, const struct fl_expr *e)
{
	const struct fl_type *l = &e->l->type, *r = &e->r->type;
	bool lp = ptr_t(l) && !l->member, rp = ptr_t(r) && !r->member;
	bool cmp = e->op == FL_T_EQ || e->op == FL_T_NE || e->op == '<' || e->op == '>' ||
		   e->op == FL_T_LE || e->op == FL_T_GE;
	expr(m, e->l);
	if ((e->op == '+' || e->op == '-') && rp && !lp) {
		/* n + p: scale n, then let ADD see the pointer on the left. */
		unsigned s = elem_size(r);
		if (s != 1) {
			push_num(m, s);
			op(m, XFLOW_OP_MUL, 0, 0, 0);
		}
		expr(m, e->r);
		op(m, XFLOW_OP_TOINT, 0, 0, 0);
		op(m, XFLOW_OP_ADD, 0, 0, 0);
		op(m, XFLOW_OP_TOPTR, 0, 0, 0);
		return;
	}
	if (cmp && lp)
		op(m, XFLOW_OP_TOINT, 0, 0, 0);
	expr(m, e->r);
	if (cmp && rp)
		op(m, XFLOW_OP_TOINT, 0, 0, 0);
	if ((e->op == '+' || e->op == '-') && lp) {
		unsigned s = elem_size(l);
		if (s != 1) {
			push_num(m, s);
			op(m, XFLOW_OP_MUL, 0, 0, 0);
		}
		op(m, e->op == '+' ? XFLOW_OP_ADD : XFLOW_OP_SUB, 0, 0, 0);
		if (e->op == '-')
			op(m, XFLOW_OP_TOPTR, 0, 0, 0);
		return;
	}
	bool uns = cmp ? (l->is_unsigned || r->is_unsigned || lp || rp || l->member || r->member)
		       : e->type.is_unsigned;
	op(m, bin_op(e->op, uns), 0, 0, 0);
}

static void call(struct em *m, const struct fl_expr *e)
{
	switch ((enum fl_builtin)e->builtin) {
	case FL_B_GET_NEW_FLOWID:
		op(m, XFLOW_OP_FLOW_NEW, 0, 0, 0);
		break;
	case FL_B_GET_FLOWID:
		expr(m, e->args[1]);
		convert(m, &e->args[1]->type, &(struct fl_type){ .ptr = 1 });
		op(m, XFLOW_OP_FLOW_GET, 0, (unsigned)e->flow, 0);
		break;
	case FL_B_REGISTER_FLOWID:
		expr(m, e->args[1]);
		convert(m, &e->args[1]->type, &(struct fl_type){ .ptr = 1 });
		expr(m, e->args[2]);
		op(m, XFLOW_OP_FLOW_REG, 0, (unsigned)e->flow, 0);
		break;
	case FL_B_REMOVE_FLOWID:
		expr(m, e->args[1]);
		convert(m, &e->args[1]->type, &(struct fl_type){ .ptr = 1 });
		op(m, XFLOW_OP_FLOW_DEL, 0, (unsigned)e->flow, 0);
		break;
	case FL_B_DO_RDTSC:
		op(m, XFLOW_OP_RDTSC, 0, 0, 0);
		op(m, XFLOW_OP_STL, e->args[0]->sym->slot, 0, 0);
		break;
	case FL_B_STORE_DATA:
		for (size_t i = 0; i < e->nargs; i++) {
			expr(m, e->args[i]);
			convert(m, &e->args[i]->type, &(struct fl_type){ .base = FL_T_INT });
		}
		/* Records of user advice carry no flag of their own: they say
		 * where a flow is, not what happened to it. */
		op(m, XFLOW_OP_STORE, (unsigned)e->nargs, 0, 0);
		break;
	case FL_B_STORE_HANDOFF_OUT:
	case FL_B_STORE_HANDOFF_IN:
		expr(m, e->args[1]);
		expr(m, e->args[2]);
		op(m, XFLOW_OP_HANDOFF, e->builtin == FL_B_STORE_HANDOFF_IN, (unsigned)e->flow, 0);
		break;
	case FL_B_STORE_HANDOFF_IN_FROM:
		for (int i = 1; i <= 3; i++) {
			expr(m, e->args[i]);
			convert(m, &e->args[i]->type, &(struct fl_type){ .base = FL_T_INT });
		}
		op(m, XFLOW_OP_HANDOFF, 2, (unsigned)e->flow, 0);
		break;
	case FL_B_STORE_SPLIT:
		expr(m, e->args[1]);
		expr(m, e->args[2]);
		op(m, XFLOW_OP_SPLIT, 0, (unsigned)e->flow, 0);
		break;
	}
}

/* An assignment; @keep leaves its value on the stack. */
static void assign(struct em *m, const struct fl_expr *e, bool keep)
{
	const struct fl_expr *l = e->l;
	if (l->kind == FL_E_MEMBER) {
		expr(m, l->l);
		if (e->op != '=') {
			op(m, XFLOW_OP_DUP, 0, 0, 0);
			op(m, XFLOW_OP_LDF, 0, (unsigned)l->field, 0);
			expr(m, e->r);
			op(m, bin_op(e->op, true), 0, 0, 0);
		} else {
			expr(m, e->r);
			convert(m, &e->r->type, &(struct fl_type){ .base = FL_T_INT });
		}
		op(m, XFLOW_OP_STF, 0, (unsigned)l->field, 0);
		if (keep) {
			/* The stored value, read back: the field may be narrower. */
			expr(m, l);
		}
		return;
	}
	unsigned slot = l->sym->slot;
	if (e->op != '=') {
		op(m, XFLOW_OP_LDL, slot, 0, 0);
		expr(m, e->r);
		op(m, bin_op(e->op, l->type.is_unsigned), 0, 0, 0);
	} else {
		expr(m, e->r);
		convert(m, &e->r->type, &l->type);
	}
	if (keep)
		op(m, XFLOW_OP_DUP, 0, 0, 0);
	op(m, XFLOW_OP_STL, slot, 0, 0);
}

static void expr(struct em *m, const struct fl_expr *e)
{
	switch (e->kind) {
	case FL_E_NUM:
		push_num(m, e->num);
		break;
	case FL_E_PC:
		op(m, XFLOW_OP_PC, 0, 0, 0);
		break;
	case FL_E_VAR:
		op(m, e->sym->kind == FL_SYM_INPUT ? XFLOW_OP_LDIN : XFLOW_OP_LDL, e->sym->slot, 0, 0);
		break;
	case FL_E_UNARY:
		expr(m, e->l);
		if (e->op == '-')
			op(m, XFLOW_OP_NEG, 0, 0, 0);
		else if (e->op == '~')
			op(m, XFLOW_OP_NOT, 0, 0, 0);
		else if (e->op == '!')
			op(m, XFLOW_OP_LNOT, 0, 0, 0);
		break;
	case FL_E_DEREF: {
		expr(m, e->l);
		bool p = e->type.ptr > 0;
		unsigned size = p ? 8 : (e->type.size ? e->type.size : 8);
		unsigned b = (p ? XFLOW_LDM_PTR : 0) | (!p && !e->type.is_unsigned ? XFLOW_LDM_SIGNED : 0);
		op(m, XFLOW_OP_LDM, size, b, 0);
		break;
	}
	case FL_E_MEMBER:
		expr(m, e->l);
		op(m, XFLOW_OP_LDF, 0, (unsigned)e->field, 0);
		break;
	case FL_E_ELEM:
		expr(m, e->l);
		expr(m, e->r);
		convert(m, &e->r->type, &(struct fl_type){ .base = FL_T_INT });
		op(m, XFLOW_OP_ELEM, 0, (unsigned)e->field, 0);
		break;
	case FL_E_CALL:
		call(m, e);
		break;
	case FL_E_CAST:
		expr(m, e->l);
		if (e->cast.ptr == 0 && e->cast.base == FL_T_VOID) {
			if (!(e->l->type.ptr == 0 && e->l->type.base == FL_T_VOID))
				op(m, XFLOW_OP_DROP, 0, 0, 0);
		} else {
			convert(m, &e->l->type, &e->cast);
		}
		break;
	case FL_E_BINARY:
		binary(m, e);
		break;
	case FL_E_LAND:
	case FL_E_LOR: {
		/* l; Jx short; r; Jx short; PUSHI !short; JMP end; short: PUSHI short */
		unsigned j = e->kind == FL_E_LAND ? XFLOW_OP_JZ : XFLOW_OP_JNZ;
		expr(m, e->l);
		size_t j1 = op(m, j, 0, 0, 0);
		expr(m, e->r);
		size_t j2 = op(m, j, 0, 0, 0);
		op(m, XFLOW_OP_PUSHI, 0, 0, e->kind == FL_E_LAND ? 1 : 0);
		size_t j3 = op(m, XFLOW_OP_JMP, 0, 0, 0);
		patch(m, j1);
		patch(m, j2);
		op(m, XFLOW_OP_PUSHI, 0, 0, e->kind == FL_E_LAND ? 0 : 1);
		patch(m, j3);
		break;
	}
	case FL_E_ASSIGN:
		assign(m, e, true);
		break;
	}
}

static bool is_void_expr(const struct fl_expr *e)
{
	return e->type.ptr == 0 && e->type.base == FL_T_VOID;
}

static void stmts(struct em *m, const struct fl_stmt *s);

static void stmt(struct em *m, const struct fl_stmt *s)
{
	switch (s->kind) {
	case FL_S_EMPTY:
		break;
	case FL_S_EXPR:
		if (s->expr->kind == FL_E_ASSIGN) {
			assign(m, s->expr, false);
		} else {
			expr(m, s->expr);
			if (!is_void_expr(s->expr))
				op(m, XFLOW_OP_DROP, 0, 0, 0);
		}
		break;
	case FL_S_BLOCK:
		stmts(m, s->body);
		break;
	case FL_S_IF: {
		expr(m, s->expr);
		size_t jz = op(m, XFLOW_OP_JZ, 0, 0, 0);
		stmt(m, s->then);
		if (s->els) {
			size_t jmp = op(m, XFLOW_OP_JMP, 0, 0, 0);
			patch(m, jz);
			stmt(m, s->els);
			patch(m, jmp);
		} else {
			patch(m, jz);
		}
		break;
	}
	case FL_S_DECL:
		/* Locals start at 0, as C's would not: advice sees no garbage. */
		if (s->init) {
			expr(m, s->init);
			convert(m, &s->init->type, &s->type);
		} else {
			op(m, XFLOW_OP_PUSHI, 0, 0, 0);
			if (s->type.ptr)
				op(m, XFLOW_OP_TOPTR, 0, 0, 0);
		}
		op(m, XFLOW_OP_STL, s->sym->slot, 0, 0);
		break;
	}
}

static void stmts(struct em *m, const struct fl_stmt *s)
{
	for (; s; s = s->next)
		stmt(m, s);
}

int fl_advice_emit(struct xflow_unit *u, struct fl_advice *a)
{
	struct em m = { .u = u, .a = a };
	stmts(&m, a->body);
	op(&m, XFLOW_OP_RET, 0, 0, 0);
	if (m.bad)
		return -EINVAL;
	struct xflow_bc_prog *p = fl_arena_alloc(&u->arena, sizeof(*p));
	p->version = XFLOW_BC_VERSION;
	p->insns = m.code;
	p->ninsns = (uint32_t)m.n;
	p->consts = m.consts;
	p->nconsts = (uint32_t)m.nconsts;
	uint8_t *lt = fl_arena_alloc(&u->arena, a->nlocals + 1);
	for (size_t i = 0; i < a->nlocals; i++)
		lt[i] = a->locals[i]->type.ptr ? XFLOW_BC_PTR : XFLOW_BC_INT;
	p->local_types = lt;
	p->nlocals = (uint32_t)a->nlocals;
	struct xflow_bc_input *in = fl_arena_alloc(&u->arena, (a->ninputs + 1) * sizeof(*in));
	for (size_t i = 0; i < a->ninputs; i++) {
		const struct fl_sym *s = a->inputs[i];
		in[i].kind = (uint8_t)s->in_kind;
		in[i].type = XFLOW_BC_PTR;
		in[i].local = s->in_local;
		in[i].sname = s->type.base == FL_T_STRUCT ? s->type.sname : NULL;
	}
	p->inputs = in;
	p->ninputs = (uint32_t)a->ninputs;
	p->nfields = (uint32_t)u->nfields;
	p->nflows = (uint32_t)u->nflows;
	const char *why = NULL;
	uint32_t at = 0;
	if (xflow_bc_verify(p, &why, &at) < 0) {
		/* Deeply nested expressions can need more stack than the
		 * runtime gives; anything else is a bug here, not in the file. */
		if (why && strcmp(why, "stack overflow") == 0)
			fl_error(&u->diag, a->loc, "split the expression into statements with variables",
				 "advice needs more than %d stack cells", XFLOW_BC_MAX_STACK);
		else
			fl_error(&u->diag, a->loc, NULL,
				 "internal error: compiled advice fails verification at %u: %s", at, why);
		return -EINVAL;
	}
	a->prog = p;
	return 0;
}
