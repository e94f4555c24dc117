/*
 * A plan's domain → the kernel backend's slot table (kernel/klower.h).
 */
#include "kernel/klower.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xflow/bytecode.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"
#include "xflow/record.h"

/* ---- what a program does to the flow-id table --------------------------- */

enum tag_kind { T_OTHER = 0, T_CONST, T_ADDR, T_VAL, T_ID, T_NEW, T_FIELD };

struct tag {
	uint8_t t;
	uint8_t in;              /* T_ADDR, T_VAL, T_ID, T_FIELD: the input */
	uint16_t field;          /* T_FIELD: the member read (field table index) */
};

struct ev {
	uint8_t op;              /* XFLOW_OP_FLOW_GET, _REG, _DEL, _HANDOFF */
	uint8_t side;            /* HANDOFF: 0 sending, 1 receiving */
	uint16_t flow;
	struct tag key, id;
};

struct shape {
	struct ev ev[16];
	unsigned nev;
};

static const char *refusal(uint8_t op)
{
	switch (op) {
	case XFLOW_OP_LDF: return "reads a struct member (p->m) other than a keyed handoff's key";
	case XFLOW_OP_STF: return "writes a struct member: a kernel advice never writes kernel memory";
	case XFLOW_OP_STORE: return "writes data records (STORE_DATAn)";
	case XFLOW_OP_HANDOFF: return "hands an id across domains with a key that is not a member of a bound struct";
	case XFLOW_OP_SPLIT: return "splits a flow (<split>)";
	case XFLOW_OP_RDTSC: return "reads the clock (DO_RDTSC)";
	case XFLOW_OP_PC: return "reads $pc$";
	case XFLOW_OP_LDM: return "reads memory through a pointer other than a bound variable's";
	default: return "computes with its values (arithmetic)";
	}
}

/* Follow @p's stack abstractly in program order.  Jumps go forward and the
 * verifier made every join agree on the stack's depth, so one pass sees
 * every flow operation the program can do, on whichever path. */
static int shape_of(const struct xflow_bc_prog *p, struct shape *sh, const char **why)
{
	struct tag st[XFLOW_BC_MAX_STACK + 2], loc[XFLOW_BC_MAX_LOCALS];
	unsigned sp = 0;
	memset(loc, 0, sizeof(loc));
	sh->nev = 0;
	/* A write is the refusal that matters most: say it first. */
	for (uint32_t pc = 0; pc < p->ninsns; pc++)
		if (p->insns[pc].op == XFLOW_OP_STF) {
			*why = refusal(XFLOW_OP_STF);
			return -EINVAL;
		}
	for (uint32_t pc = 0; pc < p->ninsns; pc++) {
		const struct xflow_bc_insn *in = &p->insns[pc];
		struct tag x = { T_OTHER, 0 };
		/* The verifier bounds the stack; these checks keep a plan that
		 * skipped it from writing out of the arrays. */
		switch (in->op) {
		case XFLOW_OP_NOP:
		case XFLOW_OP_JMP:
		case XFLOW_OP_RET:
			break;
		case XFLOW_OP_PUSHI:
		case XFLOW_OP_PUSHK:
			if (sp > XFLOW_BC_MAX_STACK)
				goto bad;
			st[sp++] = (struct tag){ T_CONST, 0 };
			break;
		case XFLOW_OP_LDIN:
			if (sp > XFLOW_BC_MAX_STACK || in->a >= p->ninputs)
				goto bad;
			/* target(v) is the pointer itself; local_var() its
			 * variable's address, whose value an LDM reads. */
			st[sp++] = (struct tag){ p->inputs[in->a].kind == XFLOW_IN_TARGET ? T_VAL : T_ADDR, in->a };
			break;
		case XFLOW_OP_LDL:
			if (sp > XFLOW_BC_MAX_STACK || in->a >= XFLOW_BC_MAX_LOCALS)
				goto bad;
			st[sp++] = loc[in->a];
			break;
		case XFLOW_OP_STL:
			if (!sp || in->a >= XFLOW_BC_MAX_LOCALS)
				goto bad;
			loc[in->a] = st[--sp];
			break;
		case XFLOW_OP_DUP:
			if (!sp || sp > XFLOW_BC_MAX_STACK)
				goto bad;
			st[sp] = st[sp - 1];
			sp++;
			break;
		case XFLOW_OP_DROP:
		case XFLOW_OP_JZ:
		case XFLOW_OP_JNZ:
			if (!sp)
				goto bad;
			sp--;
			break;
		case XFLOW_OP_TOPTR:
		case XFLOW_OP_TOINT:
			if (!sp)
				goto bad;
			break;
		case XFLOW_OP_LDF:
			/* Only as the key of a keyed handoff (checked there). */
			if (!sp)
				goto bad;
			if (st[sp - 1].t != T_VAL) {
				*why = refusal(in->op);
				return -EINVAL;
			}
			st[sp - 1] = (struct tag){ T_FIELD, st[sp - 1].in, in->b };
			break;
		case XFLOW_OP_HANDOFF: {
			if (sp < 2 || sh->nev == sizeof(sh->ev) / sizeof(sh->ev[0]))
				goto bad;
			struct ev e = { .op = in->op, .side = in->a, .flow = in->b };
			e.id = st[--sp];
			e.key = st[--sp];
			if (e.key.t != T_FIELD) {
				*why = refusal(in->op);
				return -EINVAL;
			}
			sh->ev[sh->nev++] = e;
			break;
		}
		case XFLOW_OP_LDM:
			if (!sp)
				goto bad;
			if (in->a != 8 || st[sp - 1].t != T_ADDR) {
				*why = refusal(in->op);
				return -EINVAL;
			}
			st[sp - 1].t = T_VAL;
			break;
		case XFLOW_OP_EQ:
		case XFLOW_OP_NE:
			/* The guards the expansion writes: id == 0, id != 0. */
			if (sp < 2)
				goto bad;
			sp--;
			st[sp - 1] = x;
			break;
		case XFLOW_OP_LNOT:
			if (!sp)
				goto bad;
			st[sp - 1] = x;
			break;
		case XFLOW_OP_FLOW_NEW:
			if (sp > XFLOW_BC_MAX_STACK)
				goto bad;
			st[sp++] = (struct tag){ T_NEW, 0 };
			break;
		case XFLOW_OP_FLOW_GET:
		case XFLOW_OP_FLOW_REG:
		case XFLOW_OP_FLOW_DEL: {
			struct ev e = { .op = in->op, .flow = in->b };
			if (in->op == XFLOW_OP_FLOW_REG) {
				if (sp < 2)
					goto bad;
				e.id = st[--sp];
			}
			if (!sp || sh->nev == sizeof(sh->ev) / sizeof(sh->ev[0]))
				goto bad;
			e.key = st[--sp];
			if (e.key.t != T_VAL) {
				*why = "keys the flow-id table by a computed pointer, not by a bound variable";
				return -EINVAL;
			}
			sh->ev[sh->nev++] = e;
			if (in->op == XFLOW_OP_FLOW_GET) {
				if (sp > XFLOW_BC_MAX_STACK)
					goto bad;
				st[sp++] = (struct tag){ T_ID, e.key.in };
			}
			break;
		}
		default:
			*why = refusal(in->op);
			return -EINVAL;
		}
	}
	return 0;
bad:
	*why = "is not a program the verifier accepts";
	return -EINVAL;
}

/* The one flow operation @sh is, into @op (kind, flow; from/to as input
 * indexes, turned into arguments by the caller; the key's field). */
struct lop {
	uint8_t kind, from, to, move;
	uint16_t flow;
	int32_t field;           /* HAND_*: the key member, field table index */
};

static int op_of(const struct shape *sh, struct lop *op, const char **why)
{
	const struct ev *get = NULL, *reg = NULL, *del = NULL, *ho = NULL;
	unsigned ng = 0, nr = 0, nd = 0, nh = 0;
	for (unsigned i = 0; i < sh->nev; i++) {
		const struct ev *e = &sh->ev[i];
		if (e->flow != sh->ev[0].flow) {
			*why = "acts on two flows";
			return -EINVAL;
		}
		if (e->op == XFLOW_OP_FLOW_GET)
			get = e, ng++;
		else if (e->op == XFLOW_OP_FLOW_REG)
			reg = e, nr++;
		else if (e->op == XFLOW_OP_HANDOFF)
			ho = e, nh++;
		else
			del = e, nd++;
	}
	if (!sh->nev) {
		*why = "does no flow operation";
		return -EINVAL;
	}
	op->flow = sh->ev[0].flow;
	op->to = XK_ARG_NONE;
	op->move = 0;
	op->field = -1;
	if (nh == 0 && ng == 1 && nr == 1 && nd == 0 && reg->id.t == T_NEW && reg->key.in == get->key.in) {
		op->kind = XK_OP_START;
		op->from = reg->key.in;
		return 0;
	}
	if (nh > 1) {
		*why = "hands an id across domains twice";
		return -EINVAL;
	}
	if (nh == 1) {
		/* The sending side: the object's id leaves, keyed by the
		 * request's member (xflow(5), CROSS-DOMAIN TRANSIT WITHOUT FREE
		 * BITS); the receiving side: a new id under the object. */
		if (ho->side == 0 && ng == 1 && nr == 0 && nd <= 1 && ho->id.t == T_ID && ho->id.in == get->key.in &&
		    (!del || del->key.in == get->key.in)) {
			op->kind = XK_OP_HAND_OUT;
			op->from = get->key.in;
			op->to = ho->key.in;
			op->move = del != NULL;
			op->field = ho->key.field;
			return 0;
		}
		if (ho->side == 1 && ng == 1 && nr == 1 && nd == 0 && reg->id.t == T_NEW && ho->id.t == T_NEW &&
		    reg->key.in == get->key.in) {
			op->kind = XK_OP_HAND_IN;
			op->from = reg->key.in;
			op->to = ho->key.in;
			op->field = ho->key.field;
			return 0;
		}
		*why = "hands an id across domains in a way no keyed <xin_*> or <xout_*> does";
		return -EINVAL;
	}
	if (ng == 1 && nr == 0 && nd == 0) {
		op->kind = XK_OP_PASS;
		op->from = get->key.in;
		return 0;
	}
	if (ng == 0 && nr == 0 && nd == 1) {
		op->kind = XK_OP_END;
		op->from = del->key.in;
		return 0;
	}
	if (ng == 1 && nr == 1 && nd <= 1 && reg->id.t == T_ID && reg->id.in == get->key.in &&
	    (!del || del->key.in == get->key.in)) {
		op->kind = del ? XK_OP_MOVE : XK_OP_COPY;
		op->from = get->key.in;
		op->to = reg->key.in;
		return 0;
	}
	*why = "combines flow operations in a way no <start>, <quit>, <move>, <copy> or passing <transit> does";
	return -EINVAL;
}

/* An input's fetch recipe → argument index, or -1. */
static int arg_of(const struct xflow_plan_fetch *f, unsigned site_kind)
{
	static const uint8_t abi[6] = { 5, 4, 1, 2, 8, 9 }; /* rdi rsi rdx rcx r8 r9 */
	if (f->kind != XFLOW_FETCH_REG || f->off != 0)
		return -1;
	for (int i = 0; i < 6; i++)
		if (f->reg == abi[i])
			return i;
	if (f->reg == 0 && site_kind == XFLOW_SITE_RETURN)
		return XK_ARG_RET;
	return -1;
}

void xk_slot_prog_name(uint32_t slot, char *buf, size_t len)
{
	if (slot < XK_NSLOTS)
		snprintf(buf, len, "xk_entry_%u", slot);
	else if (slot < 2 * XK_NSLOTS)
		snprintf(buf, len, "xk_exit_%u", slot - XK_NSLOTS);
	else
		snprintf(buf, len, "xk_tp_%u", slot - 2 * XK_NSLOTS);
}

static int fail(char *why, size_t whylen, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *why, size_t whylen, int rc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (why && whylen)
		vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return rc;
}

void xk_lowered_fini(struct xk_lowered *l)
{
	free(l->slot_of_site);
	memset(l, 0, sizeof(*l));
}

int xk_lower(const struct xflow_plan *plan, const struct xflow_plan_domain *dom, struct xk_lowered *out,
	     char *why, size_t whylen)
{
	memset(out, 0, sizeof(*out));
	out->slot_of_site = malloc(((size_t)dom->nsites + 1) * sizeof(int32_t));
	if (!out->slot_of_site)
		return -ENOMEM;
	out->nsites = dom->nsites;
	unsigned next[3] = { 0, XK_NSLOTS, 2 * XK_NSLOTS };
	const unsigned end[3] = { XK_NSLOTS, 2 * XK_NSLOTS, XK_SLOTS };
	static const char *const kname[3] = { "function entries", "function returns", "tracepoints" };
	int rc = 0;
	for (uint32_t s = 0; s < dom->nsites; s++) {
		const struct xflow_plan_site *ps = &dom->sites[s];
		out->slot_of_site[s] = -1;
		unsigned k;
		if (ps->kind == XFLOW_SITE_ENTRY)
			k = XK_SLOT_ENTRY;
		else if (ps->kind == XFLOW_SITE_RETURN)
			k = XK_SLOT_EXIT;
		else if (ps->kind == XFLOW_SITE_TRACEPOINT)
			k = XK_SLOT_TP;
		else {
			rc = fail(why, whylen, -EINVAL,
				  "site %u (%s, in %s) is an instruction (%s); the kernel backend attaches at function "
				  "entries, returns and tracepoints only",
				  s, ps->insn ? ps->insn : "?", ps->func ? ps->func : "?", xflow_plan_site_kind_name(ps->kind));
			goto out;
		}
		if (!ps->func || !ps->func[0]) {
			rc = fail(why, whylen, -EINVAL, "site %u has no function or tracepoint name", s);
			goto out;
		}
		struct xk_slot_info *si = NULL;
		for (uint32_t b = 0; b < dom->nbindings; b++) {
			const struct xflow_plan_binding *bd = &dom->bindings[b];
			if (bd->site != s)
				continue;
			const struct xflow_plan_advice *adv = &plan->advice[bd->advice];
			const char *w = NULL;
			struct shape sh;
			struct lop lo = { 0 };
			struct xk_op op = { 0 };
			if (shape_of(&adv->prog, &sh, &w) || op_of(&sh, &lo, &w)) {
				rc = fail(why, whylen, -EINVAL, "%s:%u:%u: this advice %s (at %s); the kernel backend "
					  "runs <start>, <quit>, <move>, <copy>, passing <transit> and keyed handoffs only (xflow-agent(8))",
					  adv->file ? adv->file : "?", adv->line, adv->col, w, ps->func);
				goto out;
			}
			op.kind = lo.kind;
			op.from = lo.from;
			op.to = lo.to;
			op.move = lo.move;
			op.flow = lo.flow;
			if (lo.field >= 0) {
				/* The key member's place in this kernel, from its
				 * BTF at plan time. */
				const struct xflow_plan_layout *ly =
					dom->layouts && (uint32_t)lo.field < plan->nfields ? &dom->layouts[lo.field] : NULL;
				const char *fs = ly && (uint32_t)lo.field < plan->nfields && plan->fields
							 ? plan->fields[lo.field].sname : "?";
				const char *fm = ly && plan->fields ? plan->fields[lo.field].member : "?";
				if (!ly || ly->offset < 0 || ly->offset > 0xffff || ly->bit_size ||
				    (ly->size != 1 && ly->size != 2 && ly->size != 4 && ly->size != 8)) {
					rc = fail(why, whylen, -EINVAL, "%s:%u:%u: the key %s.%s is not a whole integer "
						  "member of 1, 2, 4 or 8 bytes in this kernel's BTF (at %s)",
						  adv->file ? adv->file : "?", adv->line, adv->col, fs, fm, ps->func);
					goto out;
				}
				op.foff = (uint16_t)ly->offset;
				op.fsize = (uint8_t)ly->size;
			}
			int from = -1, to = XK_ARG_NONE;
			if (op.from < bd->ninputs)
				from = arg_of(&dom->fetches[bd->first_fetch + op.from], ps->kind);
			if (op.to != XK_ARG_NONE)
				to = op.to < bd->ninputs ? arg_of(&dom->fetches[bd->first_fetch + op.to], ps->kind) : -1;
			if (from < 0 || to < 0) {
				rc = fail(why, whylen, -EINVAL, "%s:%u:%u: at %s, a variable is not an argument of the "
					  "function nor its return value, which is all a kernel site can read",
					  adv->file ? adv->file : "?", adv->line, adv->col, ps->func);
				goto out;
			}
			if (k == XK_SLOT_TP && (from != 0 || (to != XK_ARG_NONE && to != 0))) {
				rc = fail(why, whylen, -EINVAL, "%s:%u:%u: at tracepoint %s, only the first argument "
					  "can be read", adv->file ? adv->file : "?", adv->line, adv->col, ps->func);
				goto out;
			}
			op.from = (uint8_t)from;
			op.to = (uint8_t)to;
			op.rec_flags = (uint16_t)(adv->rec_flags & XFLOW_REC_ALL_FLAGS);
			op.advice = bd->advice;
			if (!si) {
				if (next[k] == end[k]) {
					rc = fail(why, whylen, -E2BIG, "more than %u %s in one plan (at %s)",
						  end[k] - (k ? end[k - 1] : 0), kname[k], ps->func);
					goto out;
				}
				out->slot_of_site[s] = (int32_t)next[k];
				si = &out->slots[next[k]++];
				si->kind = (uint8_t)k;
				si->used = 1;
				si->target = ps->func;
				si->site.plan_site = s;
				si->site.enabled = 1;
				out->nused++;
			}
			if (si->site.nops == XK_MAX_OPS) {
				rc = fail(why, whylen, -E2BIG, "more than %u flow operations at %s", XK_MAX_OPS, ps->func);
				goto out;
			}
			si->site.ops[si->site.nops++] = op;
		}
	}
out:
	if (rc)
		xk_lowered_fini(out);
	return rc;
}
