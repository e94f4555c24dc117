/*
 * The advice interpreter.  See guestrt/interp/interp.h.
 */
#include <errno.h>
#include <string.h>

#include "guestrt/interp/interp.h"

static uint64_t sign_extend(uint64_t v, unsigned bits)
{
	if (bits >= 64)
		return v;
	uint64_t m = UINT64_C(1) << (bits - 1);
	v &= (UINT64_C(1) << bits) - 1;
	return (v ^ m) - m;
}

static int read_field(const struct xflow_interp_env *e, const struct xflow_field_rt *f,
		      uint64_t base, uint64_t *out)
{
	uint64_t v = 0;
	int rc = e->mem->read(e->mem_ctx, base + f->offset, &v, f->size);
	if (rc)
		return rc;
	unsigned bits = f->size * 8u;
	if (f->bit_size) {
		v = (v >> f->bit_offset) & (f->bit_size >= 64 ? UINT64_MAX : (UINT64_C(1) << f->bit_size) - 1);
		bits = f->bit_size;
	}
	*out = f->is_signed ? sign_extend(v, bits) : v;
	return 0;
}

static int write_field(const struct xflow_interp_env *e, const struct xflow_field_rt *f,
		       uint64_t base, uint64_t v)
{
	if (f->bit_size) {
		/* Read-modify-write of the bytes holding the bitfield. */
		uint64_t old = 0;
		int rc = e->mem->read(e->mem_ctx, base + f->offset, &old, f->size);
		if (rc)
			return rc;
		uint64_t m = (f->bit_size >= 64 ? UINT64_MAX : (UINT64_C(1) << f->bit_size) - 1)
			     << f->bit_offset;
		v = (old & ~m) | ((v << f->bit_offset) & m);
	}
	return e->mem->write(e->mem_ctx, base + f->offset, &v, f->size);
}

static void emit(const struct xflow_interp_env *e, struct xflow_interp_result *res,
		 uint16_t kind, uint64_t id, unsigned flags, const uint64_t *data, unsigned n)
{
	struct xflow_record r = *e->tmpl;
	r.version = XFLOW_RECORD_VERSION;
	r.timestamp = e->clock(e->clock_ctx);
	r.flow_kind = id ? kind : XFLOW_FLOW_KIND_NONE;
	r.flow_id = id & XFLOW_FLOWID_MAX;
	r.flags = (uint16_t)flags;
	r.ndata = (uint8_t)n;
	/* cpu_plus1 is the template's: the producer's CPU at the hit. */
	memset(r.data, 0, sizeof(r.data));
	if (n) /* markers have no data (and no array: memcpy's NULL is UB) */
		memcpy(r.data, data, n * sizeof(*data));
	if (e->sink(e->sink_ctx, &r) == 0)
		res->records++;
	else
		res->dropped++;
}

/* Whether the run's marker is due (see marker_flags in guestrt/interp/interp.h).
 * A run that wrote its operation's own record (SPLIT, HANDOFF) said it
 * already: a second record would count the flow twice.  A START claims
 * the run created the flow, which only a run whose last flow operation
 * registered the id did: a start that found the object's id in place kept
 * it (xflow(5), "a start on a live object"). */
static int marker_due(const struct xflow_interp_env *e, uint64_t last_id, int last_registered,
		      int op_recorded)
{
	if (!e->marker_flags || !last_id || op_recorded)
		return 0;
	return last_registered || !(e->marker_flags & XFLOW_REC_START);
}

void xflow_interp_run(const struct xflow_interp_env *e, struct xflow_interp_result *res)
{
	const struct xflow_bc_prog *p = e->prog;
	uint64_t st[XFLOW_BC_MAX_STACK], loc[XFLOW_BC_MAX_LOCALS];
	unsigned sp = 0;
	/* The flow the records of this run belong to: the last lookup,
	 * creation or removal that gave a non-zero id. */
	uint64_t last_id = 0;
	uint16_t last_kind = XFLOW_FLOW_KIND_NONE;
	int last_registered = 0, op_recorded = 0;

	uint32_t pc;

	memset(res, 0, sizeof(*res));
	memset(loc, 0, p->nlocals * sizeof(loc[0]));
	for (pc = 0; pc < p->ninsns; pc++) {
		const struct xflow_bc_insn *in = &p->insns[pc];
		uint64_t x, y, v;
		int rc;
		switch ((enum xflow_bc_op)in->op) {
		case XFLOW_OP_NOP:
		case XFLOW_OP_TOPTR:
		case XFLOW_OP_TOINT:
			break;
		case XFLOW_OP_PUSHI: st[sp++] = (uint64_t)(int64_t)in->k; break;
		case XFLOW_OP_PUSHK: st[sp++] = p->consts[in->b]; break;
		case XFLOW_OP_LDIN: st[sp++] = e->inputs[in->a]; break;
		case XFLOW_OP_LDL: st[sp++] = loc[in->a]; break;
		case XFLOW_OP_STL: loc[in->a] = st[--sp]; break;
		case XFLOW_OP_DUP: st[sp] = st[sp - 1]; sp++; break;
		case XFLOW_OP_DROP: sp--; break;
		case XFLOW_OP_LDF:
			rc = read_field(e, &e->fields[in->b], st[sp - 1], &v);
			if (rc)
				goto fault;
			st[sp - 1] = v;
			break;
		case XFLOW_OP_ELEM: {
			const struct xflow_field_rt *f = &e->fields[in->b];
			x = st[--sp];
			if (x >= f->nelems)
				goto fault;
			st[sp - 1] += f->offset + x * f->stride;
			break;
		}
		case XFLOW_OP_STF:
			v = st[--sp];
			x = st[--sp];
			rc = write_field(e, &e->fields[in->b], x, v);
			if (rc)
				goto fault;
			break;
		case XFLOW_OP_LDM:
			v = 0;
			rc = e->mem->read(e->mem_ctx, st[sp - 1], &v, in->a);
			if (rc)
				goto fault;
			st[sp - 1] = (in->b & XFLOW_LDM_SIGNED) ? sign_extend(v, in->a * 8u) : v;
			break;
#define BIN(OP, EXPR) case OP: y = st[--sp]; x = st[sp - 1]; st[sp - 1] = (EXPR); break
		BIN(XFLOW_OP_ADD, x + y);
		BIN(XFLOW_OP_SUB, x - y);
		BIN(XFLOW_OP_MUL, x * y);
		/* Division never traps: the verifier cannot know y. */
		BIN(XFLOW_OP_DIV, y == 0 ? 0 : ((int64_t)x == INT64_MIN && (int64_t)y == -1)
					    ? x : (uint64_t)((int64_t)x / (int64_t)y));
		BIN(XFLOW_OP_DIVU, y == 0 ? 0 : x / y);
		BIN(XFLOW_OP_MOD, y == 0 ? x : ((int64_t)y == -1 ? 0 : (uint64_t)((int64_t)x % (int64_t)y)));
		BIN(XFLOW_OP_MODU, y == 0 ? x : x % y);
		BIN(XFLOW_OP_AND, x & y);
		BIN(XFLOW_OP_OR, x | y);
		BIN(XFLOW_OP_XOR, x ^ y);
		BIN(XFLOW_OP_SHL, x << (y & 63));
		BIN(XFLOW_OP_SHR, x >> (y & 63));
		BIN(XFLOW_OP_SAR, (uint64_t)((int64_t)x >> (y & 63)));
		BIN(XFLOW_OP_EQ, x == y);
		BIN(XFLOW_OP_NE, x != y);
		BIN(XFLOW_OP_LT, (int64_t)x < (int64_t)y);
		BIN(XFLOW_OP_LE, (int64_t)x <= (int64_t)y);
		BIN(XFLOW_OP_GT, (int64_t)x > (int64_t)y);
		BIN(XFLOW_OP_GE, (int64_t)x >= (int64_t)y);
		BIN(XFLOW_OP_LTU, x < y);
		BIN(XFLOW_OP_LEU, x <= y);
		BIN(XFLOW_OP_GTU, x > y);
		BIN(XFLOW_OP_GEU, x >= y);
#undef BIN
		case XFLOW_OP_NEG: st[sp - 1] = 0 - st[sp - 1]; break;
		case XFLOW_OP_NOT: st[sp - 1] = ~st[sp - 1]; break;
		case XFLOW_OP_LNOT: st[sp - 1] = st[sp - 1] == 0; break;
		case XFLOW_OP_JMP: pc += (uint32_t)in->k; break;
		case XFLOW_OP_JZ:
			if (st[--sp] == 0)
				pc += (uint32_t)in->k;
			break;
		case XFLOW_OP_JNZ:
			if (st[--sp] != 0)
				pc += (uint32_t)in->k;
			break;
		case XFLOW_OP_RET:
			goto done;
		case XFLOW_OP_RDTSC: st[sp++] = e->clock(e->clock_ctx); break;
		case XFLOW_OP_PC: st[sp++] = e->pc; break;
		case XFLOW_OP_FLOW_NEW:
			st[sp++] = e->new_id ? e->new_id(e->new_id_ctx) : xflow_flowtab_new_id(e->flows);
			break;
		case XFLOW_OP_FLOW_GET:
			v = xflow_flowtab_get(e->flows, in->b, st[sp - 1]);
			st[sp - 1] = v;
			if (v)
				last_id = v, last_kind = in->b, last_registered = 0;
			break;
		case XFLOW_OP_FLOW_REG:
			v = st[--sp];
			x = st[--sp];
			/* Ids wider than the table's 48 bits come only from
			 * advice arithmetic; they are cut, as a header field
			 * would cut them. */
			v &= XFLOW_FLOWID_MAX;
			if (v && xflow_flowtab_register(e->flows, in->b, x, v) == 0)
				last_id = v, last_kind = in->b, last_registered = 1;
			break;
		case XFLOW_OP_FLOW_DEL:
			x = st[--sp];
			v = xflow_flowtab_get(e->flows, in->b, x);
			if (v) {
				xflow_flowtab_remove(e->flows, in->b, x);
				last_id = v, last_kind = in->b, last_registered = 0;
			}
			break;
		case XFLOW_OP_STORE: {
			uint64_t d[XFLOW_RECORD_MAX_DATA];
			sp -= in->a;
			memcpy(d, &st[sp], in->a * sizeof(d[0]));
			emit(e, res, last_kind, last_id, in->b, d, in->a);
			break;
		}
		case XFLOW_OP_HANDOFF: {
			uint64_t d[3];
			/* a == 2: the receiving side that knows the sender. */
			d[2] = in->a == 2 ? st[--sp] + 1 : 0;
			v = st[--sp];
			d[0] = st[--sp];
			d[1] = in->a != 0;
			emit(e, res, in->b, v,
			     XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_KEYED |
				     (in->a ? XFLOW_REC_START : 0),
			     d, in->a == 2 ? 3 : 2);
			op_recorded = 1;
			break;
		}
		case XFLOW_OP_SPLIT: {
			uint64_t d[1];
			d[0] = st[--sp];
			v = st[--sp];
			emit(e, res, in->b, v, XFLOW_REC_START | XFLOW_REC_TRANSIT | XFLOW_REC_SPLIT, d, 1);
			op_recorded = 1;
			break;
		}
		case XFLOW_OP_COUNT:
		default:
			/* The verifier refuses unknown opcodes; never here. */
			res->rc = -EINVAL;
			res->at = pc;
			return;
		}
	}
done:
	if (marker_due(e, last_id, last_registered, op_recorded))
		emit(e, res, last_kind, last_id, e->marker_flags, NULL, 0);
	return;
fault:
	/* The advice stops here; records it already appended stand. */
	res->rc = -EFAULT;
	res->at = pc;
}
