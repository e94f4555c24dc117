/*
 * A plan's domain → the kernel backend's slot table (guestrt/hook/kernel/klower.h).
 */
#include "guestrt/hook/kernel/klower.h"
#include "guestrt/hook/kernel/ksite_name.h"

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

enum tag_kind { T_OTHER = 0, T_CONST, T_ADDR, T_VAL, T_ID, T_NEW, T_KEY };

/* A value read from input @in through @n member loads (field table
 * indexes): n = 0 is the input's pointer itself. */
struct chain {
	uint8_t in, n;
	uint16_t field[XK_MAX_DEREF];
	bool indexed;            /* an array element after @istep loads: */
	uint8_t istep, iin;      /* the index, input @iin's value; */
	uint16_t ifield;         /* the element's field ("a[]", "a[].m") */
};

/* A key member: chain c (its last field the member), its low @bits (0:
 * the whole member) at @shift. */
struct part {
	struct chain c;
	uint8_t bits, shift;
};

struct tag {
	uint8_t t;
	uint8_t np;              /* T_KEY: parts */
	struct chain c;          /* T_ADDR (in), T_VAL, T_ID: the object */
	uint64_t k;              /* T_CONST */
	struct part p[XK_MAX_KEYS];
};

struct ev {
	uint8_t op;              /* XFLOW_OP_FLOW_GET, _REG, _DEL, _HANDOFF */
	uint8_t side;            /* HANDOFF: 0 sending, 1 receiving, 2 receiving
	                          * with the sender's domain id */
	uint16_t flow;
	struct tag key, id, peer;
};

struct shape {
	struct ev ev[16];
	unsigned nev;
};

static bool chain_eq(const struct chain *a, const struct chain *b)
{
	if (a->in != b->in || a->n != b->n || a->indexed != b->indexed ||
	    (a->indexed && (a->istep != b->istep || a->iin != b->iin || a->ifield != b->ifield)))
		return false;
	for (unsigned i = 0; i < a->n; i++)
		if (a->field[i] != b->field[i])
			return false;
	return true;
}

static const char *refusal(uint8_t op)
{
	switch (op) {
	case XFLOW_OP_LDF: return "reads a struct member (p->m) other than through a bound variable's member chain";
	case XFLOW_OP_STF: return "writes a struct member: a kernel advice never writes kernel memory";
	case XFLOW_OP_STORE: return "writes data records (STORE_DATAn)";
	case XFLOW_OP_HANDOFF: return "hands an id across domains with a key that is not members of a bound struct";
	case XFLOW_OP_SPLIT: return "splits a flow (<split>)";
	case XFLOW_OP_RDTSC: return "reads the clock (DO_RDTSC)";
	case XFLOW_OP_PC: return "reads $pc$";
	case XFLOW_OP_LDM: return "reads memory through a pointer other than a bound variable's";
	case XFLOW_OP_ELEM: return "takes an array element other than of a member chain's struct, indexed by a bound variable";
	default: return "computes with its values (arithmetic other than packing a key's members)";
	}
}

/* Is @k a mask of the low bits (1..64)?  Their count, or 0. */
static unsigned low_mask_bits(uint64_t k)
{
	if (!k || (k & (k + 1)))
		return 0;
	unsigned n = 0;
	while (k) {
		n++;
		k >>= 1;
	}
	return n;
}

/* The packing a key expression does: member & mask, << const, |. */
static int key_arith(uint8_t op, const struct tag *x, const struct tag *y, struct tag *r)
{
	memset(r, 0, sizeof(*r));
	if (op == XFLOW_OP_AND) {
		const struct tag *m = x->t == T_CONST ? x : y, *v = x->t == T_CONST ? y : x;
		unsigned bits = m->t == T_CONST ? low_mask_bits(m->k) : 0;
		if (v->t != T_VAL || v->c.n == 0 || !bits)
			return -1;
		r->t = T_KEY;
		r->np = 1;
		r->p[0] = (struct part){ v->c, (uint8_t)bits, 0 };
		return 0;
	}
	if (op == XFLOW_OP_SHL) {
		if (x->t != T_KEY || y->t != T_CONST || y->k >= 64)
			return -1;
		*r = *x;
		for (unsigned i = 0; i < r->np; i++) {
			if (r->p[i].shift + y->k + r->p[i].bits > 64)
				return -1;
			r->p[i].shift = (uint8_t)(r->p[i].shift + y->k);
		}
		return 0;
	}
	if (op == XFLOW_OP_OR) {
		if (x->t != T_KEY || y->t != T_KEY || x->np + y->np > XK_MAX_KEYS)
			return -1;
		*r = *x;
		for (unsigned i = 0; i < y->np; i++)
			r->p[r->np++] = y->p[i];
		return 0;
	}
	return -1;
}

/* A handoff's key as parts: one member as it is, or a packed key. */
static int key_parts(const struct tag *k, struct tag *out)
{
	if (k->t == T_KEY) {
		*out = *k;
		return 0;
	}
	if (k->t == T_VAL && k->c.n > 0) {
		memset(out, 0, sizeof(*out));
		out->t = T_KEY;
		out->np = 1;
		out->p[0].c = k->c;
		return 0;
	}
	return -1;
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
		struct tag x;
		memset(&x, 0, sizeof(x));
		/* The verifier bounds the stack; these checks keep a plan that
		 * skipped it from writing out of the arrays. */
		switch (in->op) {
		case XFLOW_OP_NOP:
		case XFLOW_OP_JMP:
		case XFLOW_OP_RET:
			break;
		case XFLOW_OP_PUSHI:
		case XFLOW_OP_PUSHK:
			if (sp > XFLOW_BC_MAX_STACK || (in->op == XFLOW_OP_PUSHK && in->b >= p->nconsts))
				goto bad;
			x.t = T_CONST;
			x.k = in->op == XFLOW_OP_PUSHI ? (uint64_t)(int64_t)in->k : p->consts[in->b];
			st[sp++] = x;
			break;
		case XFLOW_OP_LDIN:
			if (sp > XFLOW_BC_MAX_STACK || in->a >= p->ninputs)
				goto bad;
			/* target(v) is the pointer itself; local_var() its
			 * variable's address, whose value an LDM reads. */
			x.t = p->inputs[in->a].kind == XFLOW_IN_TARGET ? T_VAL : T_ADDR;
			x.c.in = in->a;
			st[sp++] = x;
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
			/* A member chain from a bound pointer: an operand the
			 * BPF program follows with fault-safe reads. */
			if (!sp)
				goto bad;
			if (st[sp - 1].t != T_VAL) {
				*why = refusal(in->op);
				return -EINVAL;
			}
			if (st[sp - 1].c.n == XK_MAX_DEREF) {
				*why = "follows a member chain of more than 4 loads";
				return -EINVAL;
			}
			st[sp - 1].c.field[st[sp - 1].c.n++] = in->b;
			break;
		case XFLOW_OP_ELEM: {
			/* q->a[i].m: a step of the chain, indexed by an
			 * input's value; one per chain. */
			if (sp < 2)
				goto bad;
			struct tag *base = &st[sp - 2], *ix = &st[sp - 1];
			if (base->t != T_VAL || ix->t != T_VAL || ix->c.n != 0 || ix->c.indexed) {
				*why = refusal(in->op);
				return -EINVAL;
			}
			if (base->c.indexed) {
				*why = "indexes two arrays in one member chain";
				return -EINVAL;
			}
			base->c.indexed = true;
			base->c.istep = base->c.n;
			base->c.iin = ix->c.in;
			base->c.ifield = in->b;
			sp--;
			break;
		}
		case XFLOW_OP_AND:
		case XFLOW_OP_SHL:
		case XFLOW_OP_OR:
			if (sp < 2)
				goto bad;
			if (key_arith(in->op, &st[sp - 2], &st[sp - 1], &x)) {
				*why = refusal(in->op);
				return -EINVAL;
			}
			sp--;
			st[sp - 1] = x;
			break;
		case XFLOW_OP_HANDOFF: {
			unsigned need = in->a == 2 ? 3 : 2;
			if (sp < need || in->a > 2 || sh->nev == sizeof(sh->ev) / sizeof(sh->ev[0]))
				goto bad;
			struct ev e = { .op = in->op, .side = in->a, .flow = in->b };
			if (in->a == 2) {
				e.peer = st[--sp];
				if (e.peer.t != T_VAL || e.peer.c.n == 0) {
					*why = "gives the sender's domain id other than as a member chain of a bound variable";
					return -EINVAL;
				}
			}
			e.id = st[--sp];
			struct tag k = st[--sp];
			if (key_parts(&k, &e.key)) {
				*why = refusal(in->op);
				return -EINVAL;
			}
			/* The BPF program reads every part from one request. */
			for (unsigned i = 0; i < e.key.np; i++) {
				struct chain a = e.key.p[i].c, b0 = e.key.p[0].c;
				a.n--;
				b0.n--;
				if (!chain_eq(&a, &b0)) {
					*why = "packs a key from members of two different structs";
					return -EINVAL;
				}
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
			x.t = T_NEW;
			st[sp++] = x;
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
				*why = "keys the flow-id table by a computed pointer, not by a bound variable or its member chain";
				return -EINVAL;
			}
			sh->ev[sh->nev++] = e;
			if (in->op == XFLOW_OP_FLOW_GET) {
				if (sp > XFLOW_BC_MAX_STACK)
					goto bad;
				x.t = T_ID;
				x.c = e.key.c;
				st[sp++] = x;
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

/* The one flow operation @sh is, into @op: its kind and flow, and its
 * operands as chains from inputs (turned into argument paths by the
 * caller). */
struct lop {
	uint8_t kind, move;
	uint16_t flow;
	struct chain from, to;
	bool has_to, has_peer;
	struct chain peer;
	struct tag key;          /* HAND_*: T_KEY */
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
	memset(op, 0, sizeof(*op));
	op->flow = sh->ev[0].flow;
	if (nh == 0 && ng == 1 && nr == 1 && nd == 0 && reg->id.t == T_NEW && chain_eq(&reg->key.c, &get->key.c)) {
		op->kind = XK_OP_START;
		op->from = reg->key.c;
		return 0;
	}
	if (nh > 1) {
		*why = "hands an id across domains twice";
		return -EINVAL;
	}
	if (nh == 1) {
		/* The request: the struct the key's members are read from. */
		struct chain req = ho->key.p[0].c;
		req.n--;
		/* The sending side: the object's id leaves, keyed by the
		 * request's members (xflow(5), CROSS-DOMAIN TRANSIT WITHOUT FREE
		 * BITS); the receiving side: a new id under the object. */
		if (ho->side == 0 && ng == 1 && nr == 0 && nd <= 1 && ho->id.t == T_ID &&
		    chain_eq(&ho->id.c, &get->key.c) && (!del || chain_eq(&del->key.c, &get->key.c))) {
			op->kind = XK_OP_HAND_OUT;
			op->from = get->key.c;
			op->move = del != NULL;
		} else if (ho->side >= 1 && ng == 1 && nr == 1 && nd == 0 && reg->id.t == T_NEW && ho->id.t == T_NEW &&
			   chain_eq(&reg->key.c, &get->key.c)) {
			op->kind = XK_OP_HAND_IN;
			op->from = reg->key.c;
			op->has_peer = ho->side == 2;
			op->peer = ho->peer.c;
		} else {
			*why = "hands an id across domains in a way no keyed <xin_*> or <xout_*> does";
			return -EINVAL;
		}
		op->to = req;
		op->has_to = true;
		op->key = ho->key;
		return 0;
	}
	if (ng == 1 && nr == 0 && nd == 0) {
		op->kind = XK_OP_PASS;
		op->from = get->key.c;
		return 0;
	}
	if (ng == 0 && nr == 0 && nd == 1) {
		op->kind = XK_OP_END;
		op->from = del->key.c;
		return 0;
	}
	if (ng == 1 && nr == 1 && nd <= 1 && reg->id.t == T_ID && chain_eq(&reg->id.c, &get->key.c) &&
	    (!del || chain_eq(&del->key.c, &get->key.c))) {
		op->kind = del ? XK_OP_MOVE : XK_OP_COPY;
		op->from = get->key.c;
		op->to = reg->key.c;
		op->has_to = true;
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

/* What one binding's operands are lowered against. */
struct lctx {
	const struct xflow_plan *plan;
	const struct xflow_plan_domain *dom;
	const struct xflow_plan_binding *bd;
	const struct xflow_plan_site *ps;
	const struct xflow_plan_advice *adv;
	char *why;
	size_t whylen;
};

#define AT(c) (c)->adv->file ? (c)->adv->file : "?", (c)->adv->line, (c)->adv->col

/* Field @f's layout in this kernel (from its BTF at plan time), with its
 * names for messages; NULL if the plan has none. */
static const struct xflow_plan_layout *layout_of(const struct lctx *c, uint16_t f, const char **sn, const char **mn)
{
	bool named = c->plan->fields && f < c->plan->nfields;
	*sn = named ? c->plan->fields[f].sname : "?";
	*mn = named ? c->plan->fields[f].member : "?";
	if (!c->dom->layouts || f >= c->plan->nfields || c->dom->layouts[f].offset < 0 ||
	    c->dom->layouts[f].offset > 0xffff || c->dom->layouts[f].bit_size)
		return NULL;
	return &c->dom->layouts[f];
}

static bool whole_int(const struct xflow_plan_layout *ly)
{
	return ly && !(ly->flags & XFLOW_LAYOUT_POINTER) &&
	       (ly->size == 1 || ly->size == 2 || ly->size == 4 || ly->size == 8);
}

/* The array element step of @ch into @out: the index's argument and
 * width, and the element's place and bound from the plan's BTF layout. */
static int index_of(const struct lctx *c, const struct chain *ch, struct xk_path *out)
{
	const struct xflow_plan_fetch *f =
		ch->iin < c->bd->ninputs ? &c->dom->fetches[c->bd->first_fetch + ch->iin] : NULL;
	int arg = f ? arg_of(f, c->ps->kind) : -1;
	if (arg < 0 || arg == XK_ARG_RET || (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8))
		return fail(c->why, c->whylen, -EINVAL, "%s:%u:%u: at %s, an array's index is not an integer "
			    "argument of the function", AT(c), c->ps->func);
	bool named = c->plan->fields && ch->ifield < c->plan->nfields;
	const struct xflow_plan_layout *ly = c->dom->layouts && ch->ifield < c->plan->nfields
						     ? &c->dom->layouts[ch->ifield] : NULL;
	if (!ly || ly->offset < 0 || ly->offset > UINT32_MAX || !ly->nelems || !ly->stride)
		return fail(c->why, c->whylen, -EINVAL, "%s:%u:%u: %s.%s is not an element of an array embedded "
			    "in its struct in this kernel's BTF (at %s)", AT(c), named ? c->plan->fields[ch->ifield].sname : "?",
			    named ? c->plan->fields[ch->ifield].member : "?", c->ps->func);
	out->iarg = (uint8_t)arg;
	out->isize = f->size;
	out->imask = f->size == 8 ? UINT64_MAX : (UINT64_C(1) << (f->size * 8)) - 1;
	out->nelems = ly->nelems;
	if (ch->istep < ch->n) {
		out->add[ch->istep] = (uint32_t)ly->offset;
		out->stride[ch->istep] = ly->stride;
	} else {
		out->tadd = (uint32_t)ly->offset;
		out->tstride = ly->stride;
	}
	return 0;
}

/* A chain from an input → an argument and its loads.  Every load reads a
 * pointer, but an @integer operand's last. */
static int path_of(const struct lctx *c, const struct chain *ch, bool integer, struct xk_path *out)
{
	memset(out, 0, sizeof(*out));
	out->iarg = XK_ARG_NONE;
	out->isize = 8;
	out->nelems = 1;
	int arg = ch->in < c->bd->ninputs ? arg_of(&c->dom->fetches[c->bd->first_fetch + ch->in], c->ps->kind) : -1;
	if (arg < 0)
		return fail(c->why, c->whylen, -EINVAL, "%s:%u:%u: at %s, a variable is not an argument of the "
			    "function nor its return value, which is all a kernel site can read", AT(c), c->ps->func);
	out->arg = (uint8_t)arg;
	out->n = ch->n;
	if (ch->indexed) {
		int rc = index_of(c, ch, out);
		if (rc)
			return rc;
	}
	for (unsigned i = 0; i < ch->n; i++) {
		const char *sn, *mn;
		const struct xflow_plan_layout *ly = layout_of(c, ch->field[i], &sn, &mn);
		bool last_int = integer && i + 1 == ch->n;
		if (last_int ? !whole_int(ly) : !(ly && (ly->flags & XFLOW_LAYOUT_POINTER) && ly->size == 8))
			return fail(c->why, c->whylen, -EINVAL, "%s:%u:%u: %s.%s is not %s in this kernel's BTF (at %s)",
				    AT(c), sn, mn, last_int ? "a whole integer member of 1, 2, 4 or 8 bytes" : "a pointer member",
				    c->ps->func);
		out->off[i] = (uint16_t)ly->offset;
		out->size[i] = (uint8_t)ly->size;
	}
	return 0;
}

/* A packed key → its members' places in the request, each checked to be
 * an integer at least as wide as the bits it gives. */
static int parts_of(const struct lctx *c, const struct tag *key, struct xk_op *op)
{
	op->nparts = key->np;
	for (unsigned i = 0; i < key->np; i++) {
		const struct part *pt = &key->p[i];
		const char *sn, *mn;
		const struct xflow_plan_layout *ly = layout_of(c, pt->c.field[pt->c.n - 1], &sn, &mn);
		if (!whole_int(ly))
			return fail(c->why, c->whylen, -EINVAL, "%s:%u:%u: the key %s.%s is not a whole integer "
				    "member of 1, 2, 4 or 8 bytes in this kernel's BTF (at %s)", AT(c), sn, mn, c->ps->func);
		if (pt->bits > ly->size * 8)
			return fail(c->why, c->whylen, -EINVAL, "%s:%u:%u: the key %s.%s gives bits=\"%u\", but the "
				    "member has %u bits in this kernel's BTF (at %s)", AT(c), sn, mn, pt->bits,
				    ly->size * 8, c->ps->func);
		op->part[i] = (struct xk_keypart){ .off = (uint16_t)ly->offset, .size = (uint8_t)ly->size,
						   .bits = pt->bits, .shift = pt->shift };
	}
	return 0;
}

/*
 * The bindings of each site, in weave order: @first[s] .. @first[s + 1]
 * index @order.  A stable counting sort, so that a plan of many sites and
 * many bindings costs their sum, not their product (a hostile plan may
 * give a million of each).  0, -ENOMEM, or -EINVAL with @why when a
 * binding names a site, advice or fetch the plan does not have.
 */
static int bindings_by_site(const struct xflow_plan *plan, const struct xflow_plan_domain *dom, uint32_t **first,
			    uint32_t **order, char *why, size_t whylen)
{
	*first = calloc((size_t)dom->nsites + 2, sizeof(**first));
	*order = malloc(((size_t)dom->nbindings + 1) * sizeof(**order));
	if (!*first || !*order)
		return -ENOMEM;
	for (uint32_t b = 0; b < dom->nbindings; b++) {
		const struct xflow_plan_binding *bd = &dom->bindings[b];
		if (bd->site >= dom->nsites || bd->advice >= plan->nadvice ||
		    (uint64_t)bd->first_fetch + bd->ninputs > dom->nfetches ||
		    bd->ninputs != plan->advice[bd->advice].prog.ninputs)
			return fail(why, whylen, -EINVAL, "binding %u names site %u (of %u), advice %u (of %u) and "
				    "fetches %u..%u (of %u): not this plan's", b, bd->site, dom->nsites, bd->advice,
				    plan->nadvice, bd->first_fetch, bd->first_fetch + bd->ninputs, dom->nfetches);
		(*first)[bd->site + 1]++;
	}
	for (uint32_t s = 0; s < dom->nsites; s++)
		(*first)[s + 1] += (*first)[s];
	uint32_t *at = calloc((size_t)dom->nsites + 1, sizeof(*at));
	if (!at)
		return -ENOMEM;
	for (uint32_t b = 0; b < dom->nbindings; b++) {
		uint32_t s = dom->bindings[b].site;
		(*order)[(*first)[s] + at[s]++] = b;
	}
	free(at);
	return 0;
}

int xk_lower(const struct xflow_plan *plan, const struct xflow_plan_domain *dom, struct xk_lowered *out,
	     char *why, size_t whylen)
{
	memset(out, 0, sizeof(*out));
	out->slot_of_site = malloc(((size_t)dom->nsites + 1) * sizeof(int32_t));
	if (!out->slot_of_site)
		return -ENOMEM;
	out->nsites = dom->nsites;
	uint32_t *first = NULL, *order = NULL;
	unsigned next[3] = { 0, XK_NSLOTS, 2 * XK_NSLOTS };
	const unsigned end[3] = { XK_NSLOTS, 2 * XK_NSLOTS, XK_SLOTS };
	static const char *const kname[3] = { "function entries", "function returns", "tracepoints" };
	int rc = bindings_by_site(plan, dom, &first, &order, why, whylen);
	if (rc)
		goto out;
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
		char nwhy[400];
		if (!xk_site_name_ok(ps->func, k == XK_SLOT_TP, nwhy, sizeof(nwhy))) {
			rc = fail(why, whylen, -EINVAL, "site %u (%s): %s", s, xflow_plan_site_kind_name(ps->kind), nwhy);
			goto out;
		}
		struct xk_slot_info *si = NULL;
		for (uint32_t j = first[s]; j < first[s + 1]; j++) {
			const struct xflow_plan_binding *bd = &dom->bindings[order[j]];
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
			op.move = lo.move;
			op.flow = lo.flow;
			struct lctx lc = { plan, dom, bd, ps, adv, why, whylen };
			op.to.arg = op.peer.arg = XK_ARG_NONE;
			op.from.iarg = op.to.iarg = op.peer.iarg = XK_ARG_NONE;
			op.from.nelems = op.to.nelems = op.peer.nelems = 1;
			if ((rc = path_of(&lc, &lo.from, false, &op.from)) ||
			    (lo.has_to && (rc = path_of(&lc, &lo.to, false, &op.to))) ||
			    (lo.has_peer && (rc = path_of(&lc, &lo.peer, true, &op.peer))) ||
			    (lo.key.np && (rc = parts_of(&lc, &lo.key, &op))))
				goto out;
			if (k == XK_SLOT_TP && (op.from.arg != 0 || (op.to.arg != XK_ARG_NONE && op.to.arg != 0) ||
						(op.peer.arg != XK_ARG_NONE && op.peer.arg != 0) ||
						(op.from.iarg != XK_ARG_NONE && op.from.iarg != 0) ||
						(op.to.iarg != XK_ARG_NONE && op.to.iarg != 0) ||
						(op.peer.iarg != XK_ARG_NONE && op.peer.iarg != 0))) {
				rc = fail(why, whylen, -EINVAL, "%s:%u:%u: at tracepoint %s, only the first argument "
					  "can be read", adv->file ? adv->file : "?", adv->line, adv->col, ps->func);
				goto out;
			}
			op.rec_flags = (uint16_t)(adv->rec_flags & XFLOW_REC_OP_FLAGS);
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
	if (rc == -ENOMEM)
		fail(why, whylen, rc, "out of memory lowering a plan of %u sites and %u bindings", dom->nsites,
		     dom->nbindings);
	free(first);
	free(order);
	if (rc)
		xk_lowered_fini(out);
	return rc;
}
