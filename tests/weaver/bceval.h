/*
 * A reference evaluator of xflow bytecode, for the tests only: it pins down
 * what each opcode means (xflow/bytecode.h) so the tests can check what
 * compiled advice does, not just what it looks like.  Pointers are host
 * addresses of buffers the test owns; fields are given offsets and sizes,
 * as the weave plan will give them.  The guest runtime has its own
 * interpreter.
 */
#ifndef TESTS_WEAVER_BCEVAL_H
#define TESTS_WEAVER_BCEVAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "xflow/bytecode.h"

struct ev_rec {
	uint64_t flow_id;
	unsigned flow, flags, n;
	uint64_t data[6];
};

struct ev_env {
	uint64_t in[XFLOW_BC_MAX_INPUTS];
	unsigned field_off[16], field_size[16];
	struct { unsigned flow; uint64_t key, id; } tab[32];
	unsigned ntab;
	uint64_t next_id, pc, tsc;
	struct ev_rec rec[8];
	unsigned nrec;
};

static inline uint64_t ev_get(struct ev_env *e, unsigned flow, uint64_t key)
{
	for (unsigned i = 0; i < e->ntab; i++)
		if (e->tab[i].flow == flow && e->tab[i].key == key)
			return e->tab[i].id;
	return 0;
}

static inline void ev_del(struct ev_env *e, unsigned flow, uint64_t key)
{
	for (unsigned i = 0; i < e->ntab; i++)
		if (e->tab[i].flow == flow && e->tab[i].key == key) {
			e->tab[i] = e->tab[--e->ntab];
			return;
		}
}

static inline void ev_reg(struct ev_env *e, unsigned flow, uint64_t key, uint64_t id)
{
	if (id == 0)
		return;
	ev_del(e, flow, key);
	if (e->ntab < 32)
		e->tab[e->ntab++] = (__typeof__(e->tab[0])){ flow, key, id };
}

static inline uint64_t ev_load(uint64_t addr, unsigned size, bool sign)
{
	uint64_t v = 0;
	memcpy(&v, (const void *)(uintptr_t)addr, size);   /* little-endian host */
	if (sign && size < 8 && (v >> (size * 8 - 1)) & 1)
		v |= ~UINT64_C(0) << (size * 8);
	return v;
}

/* Run @p; returns the number of instructions executed, or -1 on a bad
 * program (which the verifier should have refused). */
static inline int ev_run(const struct xflow_bc_prog *p, struct ev_env *e)
{
	uint64_t st[XFLOW_BC_MAX_STACK], loc[XFLOW_BC_MAX_LOCALS] = { 0 };
	int sp = 0, steps = 0;
	uint64_t cur_id = 0;
	unsigned cur_flow = 0xffff;
	for (uint32_t pc = 0; pc < p->ninsns; pc++, steps++) {
		const struct xflow_bc_insn *i = &p->insns[pc];
		uint64_t x, y;
#define POP() st[--sp]
#define PUSH(v) (st[sp++] = (v))
		switch ((enum xflow_bc_op)i->op) {
		case XFLOW_OP_NOP: case XFLOW_OP_TOPTR: case XFLOW_OP_TOINT: break;
		case XFLOW_OP_PUSHI: PUSH((uint64_t)(int64_t)i->k); break;
		case XFLOW_OP_PUSHK: PUSH(p->consts[i->b]); break;
		case XFLOW_OP_LDIN: PUSH(e->in[i->a]); break;
		case XFLOW_OP_LDL: PUSH(loc[i->a]); break;
		case XFLOW_OP_STL: loc[i->a] = POP(); break;
		case XFLOW_OP_DUP: x = st[sp - 1]; PUSH(x); break;
		case XFLOW_OP_DROP: sp--; break;
		case XFLOW_OP_LDF:
			x = POP();
			PUSH(ev_load(x + e->field_off[i->b], e->field_size[i->b], false));
			break;
		case XFLOW_OP_STF:
			y = POP(); x = POP();
			memcpy((void *)(uintptr_t)(x + e->field_off[i->b]), &y, e->field_size[i->b]);
			break;
		case XFLOW_OP_LDM:
			x = POP();
			PUSH(ev_load(x, i->a, i->b & XFLOW_LDM_SIGNED));
			break;
		case XFLOW_OP_ADD: y = POP(); x = POP(); PUSH(x + y); break;
		case XFLOW_OP_SUB: y = POP(); x = POP(); PUSH(x - y); break;
		case XFLOW_OP_MUL: y = POP(); x = POP(); PUSH(x * y); break;
		case XFLOW_OP_DIV:
			y = POP(); x = POP();
			PUSH(y == 0 ? 0 : ((int64_t)x == INT64_MIN && (int64_t)y == -1) ? x
			     : (uint64_t)((int64_t)x / (int64_t)y));
			break;
		case XFLOW_OP_DIVU: y = POP(); x = POP(); PUSH(y ? x / y : 0); break;
		case XFLOW_OP_MOD:
			y = POP(); x = POP();
			PUSH(y == 0 ? x : ((int64_t)y == -1) ? 0 : (uint64_t)((int64_t)x % (int64_t)y));
			break;
		case XFLOW_OP_MODU: y = POP(); x = POP(); PUSH(y ? x % y : x); break;
		case XFLOW_OP_AND: y = POP(); x = POP(); PUSH(x & y); break;
		case XFLOW_OP_OR: y = POP(); x = POP(); PUSH(x | y); break;
		case XFLOW_OP_XOR: y = POP(); x = POP(); PUSH(x ^ y); break;
		case XFLOW_OP_SHL: y = POP(); x = POP(); PUSH(x << (y & 63)); break;
		case XFLOW_OP_SHR: y = POP(); x = POP(); PUSH(x >> (y & 63)); break;
		case XFLOW_OP_SAR: y = POP(); x = POP(); PUSH((uint64_t)((int64_t)x >> (y & 63))); break;
		case XFLOW_OP_NEG: x = POP(); PUSH(-x); break;
		case XFLOW_OP_NOT: x = POP(); PUSH(~x); break;
		case XFLOW_OP_LNOT: x = POP(); PUSH(x == 0); break;
		case XFLOW_OP_EQ: y = POP(); x = POP(); PUSH(x == y); break;
		case XFLOW_OP_NE: y = POP(); x = POP(); PUSH(x != y); break;
		case XFLOW_OP_LT: y = POP(); x = POP(); PUSH((int64_t)x < (int64_t)y); break;
		case XFLOW_OP_LE: y = POP(); x = POP(); PUSH((int64_t)x <= (int64_t)y); break;
		case XFLOW_OP_GT: y = POP(); x = POP(); PUSH((int64_t)x > (int64_t)y); break;
		case XFLOW_OP_GE: y = POP(); x = POP(); PUSH((int64_t)x >= (int64_t)y); break;
		case XFLOW_OP_LTU: y = POP(); x = POP(); PUSH(x < y); break;
		case XFLOW_OP_LEU: y = POP(); x = POP(); PUSH(x <= y); break;
		case XFLOW_OP_GTU: y = POP(); x = POP(); PUSH(x > y); break;
		case XFLOW_OP_GEU: y = POP(); x = POP(); PUSH(x >= y); break;
		case XFLOW_OP_JMP: pc += (uint32_t)i->k; break;
		case XFLOW_OP_JZ: if (POP() == 0) pc += (uint32_t)i->k; break;
		case XFLOW_OP_JNZ: if (POP() != 0) pc += (uint32_t)i->k; break;
		case XFLOW_OP_RET: return steps + 1;
		case XFLOW_OP_RDTSC: PUSH(e->tsc); break;
		case XFLOW_OP_PC: PUSH(e->pc); break;
		case XFLOW_OP_FLOW_NEW:
			x = ++e->next_id;
			cur_id = x;
			PUSH(x);
			break;
		case XFLOW_OP_FLOW_GET:
			x = ev_get(e, i->b, POP());
			if (x) {
				cur_id = x;
				cur_flow = i->b;
			}
			PUSH(x);
			break;
		case XFLOW_OP_FLOW_REG: y = POP(); x = POP(); ev_reg(e, i->b, x, y); break;
		case XFLOW_OP_FLOW_DEL: ev_del(e, i->b, POP()); break;
		case XFLOW_OP_STORE: {
			struct ev_rec *r = &e->rec[e->nrec < 8 ? e->nrec++ : 7];
			r->n = i->a;
			r->flags = i->b;
			r->flow_id = cur_id;
			r->flow = cur_flow;
			for (int k = i->a - 1; k >= 0; k--)
				r->data[k] = POP();
			break;
		}
		case XFLOW_OP_HANDOFF:
		case XFLOW_OP_SPLIT: {
			y = POP(); x = POP();
			struct ev_rec *r = &e->rec[e->nrec < 8 ? e->nrec++ : 7];
			r->flow = i->b;
			r->n = i->op == XFLOW_OP_HANDOFF ? 2 : 1;
			r->flow_id = i->op == XFLOW_OP_HANDOFF ? y : x;
			r->data[0] = i->op == XFLOW_OP_HANDOFF ? x : y;
			r->data[1] = i->a;
			r->flags = i->op;   /* the tests look at data, not flags */
			break;
		}
		default:
			return -1;
		}
#undef POP
#undef PUSH
	}
	return -1;
}

#endif /* TESTS_WEAVER_BCEVAL_H */
