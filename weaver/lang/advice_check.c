/*
 * Pass: names, bindings and types of one advice.
 *
 * The pointcut binds the advice's inputs (target(v), local_var(name, v));
 * a variable bound on only one side of an OR, or under NOT, is not bound at
 * every join point, so it is refused.  The body is then checked with C's
 * rules cut down to what the bytecode can do: integers are 64-bit cells
 * whose type gives only their signedness (and their width when loaded
 * through a pointer), pointers are addresses, p->m values take their C type
 * from DWARF at plan time and so convert to either.
 */
#include "weaver/lang/advice.h"

#include <stdio.h>
#include <string.h>

#include "xflow/record.h"

struct scope {
	struct fl_sym **syms;
	size_t n, cap;
	struct scope *up;
};

struct ck {
	struct xflow_unit *u;
	struct fl_advice *a;
	struct scope *scope;
	bool bad;
};

static void error(struct ck *c, struct fl_loc loc, const char *hint, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void error(struct ck *c, struct fl_loc loc, const char *hint, const char *fmt, ...)
{
	struct fl_buf b = { 0 };
	va_list ap;
	va_start(ap, fmt);
	fl_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	fl_error_caret(&c->u->diag, loc, hint, "%s", b.s);
	fl_buf_free(&b);
	c->bad = true;
}

static const char *type_str(struct ck *c, const struct fl_type *t)
{
	struct fl_buf b = { 0 };
	if (t->member && t->ptr == 0)
		fl_buf_puts(&b, "member value");
	else if (t->base == FL_T_VOID)
		fl_buf_puts(&b, "void");
	else if (t->base == FL_T_STRUCT)
		fl_buf_printf(&b, "struct %s", t->sname);
	else
		fl_buf_puts(&b, t->is_unsigned ? "unsigned integer" : "integer");
	if (t->ptr)
		fl_buf_putc(&b, ' ');
	for (int i = 0; i < t->ptr; i++)
		fl_buf_putc(&b, '*');
	const char *r = fl_arena_strdup(&c->u->arena, b.s);
	fl_buf_free(&b);
	return r;
}

static bool is_ptr(const struct fl_type *t) { return t->ptr > 0; }
static bool is_int(const struct fl_type *t) { return t->ptr == 0 && t->base == FL_T_INT; }
static bool is_void(const struct fl_type *t) { return t->ptr == 0 && t->base == FL_T_VOID; }
static bool is_scalar(const struct fl_type *t) { return is_ptr(t) || is_int(t); }

static const struct fl_type int_type = { .base = FL_T_INT, .size = 8 };
static const struct fl_type uint_type = { .base = FL_T_INT, .size = 8, .is_unsigned = true };
static const struct fl_type void_type = { .base = FL_T_VOID };

/* ---- the pointcut's bindings ---- */

struct binding {
	const char *name;
	int kind;               /* XFLOW_IN_TARGET or XFLOW_IN_LOCAL_VAR */
	const struct fl_pc *pc;
};

struct bindset {
	struct binding b[32];
	size_t n;
};

static const struct binding *bind_find(const struct bindset *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->b[i].name, name) == 0)
			return &s->b[i];
	return NULL;
}

static void bind_add(struct ck *c, struct bindset *s, const char *name, int kind,
		     const struct fl_pc *pc, struct fl_loc loc)
{
	if (bind_find(s, name)) {
		error(c, loc, "bind each variable once", "'%s' is bound twice by the pointcut", name);
		return;
	}
	if (s->n == sizeof(s->b) / sizeof(s->b[0]) || s->n >= XFLOW_BC_MAX_INPUTS) {
		error(c, loc, "split the advice", "the pointcut binds more than %d variables",
		      XFLOW_BC_MAX_INPUTS);
		return;
	}
	s->b[s->n++] = (struct binding){ name, kind, pc };
}

static void bindings(struct ck *c, const struct fl_pc *pc, struct bindset *out, bool neg)
{
	switch (pc->kind) {
	case FL_PC_AND:
		bindings(c, pc->l, out, neg);
		bindings(c, pc->r, out, neg);
		break;
	case FL_PC_OR: {
		struct bindset l = { .n = 0 }, r = { .n = 0 };
		bindings(c, pc->l, &l, neg);
		bindings(c, pc->r, &r, neg);
		for (size_t i = 0; i < l.n; i++) {
			const struct binding *o = bind_find(&r, l.b[i].name);
			if (!o || o->kind != l.b[i].kind) {
				error(c, l.b[i].pc->loc, "bind it the same way on both sides of OR, or move it out of the OR",
				      "'%s' is bound on only one side of OR", l.b[i].name);
				continue;
			}
			bind_add(c, out, l.b[i].name, l.b[i].kind, l.b[i].pc, l.b[i].pc->loc);
		}
		for (size_t i = 0; i < r.n; i++)
			if (!bind_find(&l, r.b[i].name))
				error(c, r.b[i].pc->loc, "bind it the same way on both sides of OR, or move it out of the OR",
				      "'%s' is bound on only one side of OR", r.b[i].name);
		break;
	}
	case FL_PC_NOT:
		bindings(c, pc->l, out, true);
		break;
	case FL_PC_TARGET:
	case FL_PC_LOCAL_VAR: {
		const char *v = pc->kind == FL_PC_TARGET ? pc->a : pc->b;
		struct fl_loc vl = pc->kind == FL_PC_TARGET ? pc->aloc : pc->bloc;
		if (neg) {
			error(c, pc->loc, "bind variables outside NOT", "NOT cannot bind '%s'", v);
			break;
		}
		bind_add(c, out, v, pc->kind == FL_PC_TARGET ? XFLOW_IN_TARGET : XFLOW_IN_LOCAL_VAR,
			 pc, vl);
		break;
	}
	default:
		break;
	}
}

/* The struct of the access() conjuncts (for target's type), if they agree. */
static const char *target_struct(const struct fl_pc *pc, bool *any_access, bool *mixed)
{
	if (!pc)
		return NULL;
	if (pc->kind == FL_PC_AND || pc->kind == FL_PC_OR) {
		const char *l = target_struct(pc->l, any_access, mixed);
		const char *r = target_struct(pc->r, any_access, mixed);
		if (l && r && strcmp(l, r) != 0)
			*mixed = true;
		return l ? l : r;
	}
	if (pc->kind == FL_PC_ACCESS) {
		*any_access = true;
		return pc->a;
	}
	/* A kernel tracepoint's instance is its first argument (an skb, a
	 * bio): target() binds it, typed void * as the struct is not named. */
	if (pc->kind == FL_PC_TRACEPOINT)
		*any_access = true;
	return NULL;
}

static struct fl_sym *sym_new(struct ck *c, enum fl_sym_kind k, const char *name,
			      struct fl_type t, struct fl_loc loc)
{
	struct fl_sym *s = fl_arena_alloc(&c->u->arena, sizeof(*s));
	s->kind = k;
	s->name = name;
	s->type = t;
	s->loc = loc;
	return s;
}

static void scope_add(struct ck *c, struct fl_sym *s)
{
	FL_PUSH(&c->u->arena, c->scope->syms, c->scope->n, c->scope->cap, s);
}

static struct fl_sym *lookup(struct ck *c, const char *name)
{
	for (struct scope *sc = c->scope; sc; sc = sc->up)
		for (size_t i = sc->n; i-- > 0;)
			if (strcmp(sc->syms[i]->name, name) == 0)
				return sc->syms[i];
	return NULL;
}

static void check_pointcut(struct ck *c)
{
	struct fl_advice *a = c->a;
	struct bindset set = { .n = 0 };
	bindings(c, a->pc, &set, false);
	bool any_access = false, mixed = false;
	const char *sname = target_struct(a->pc, &any_access, &mixed);
	for (size_t i = 0; i < set.n; i++) {
		struct fl_type t = { .base = FL_T_VOID, .ptr = 1 };
		if (set.b[i].kind == XFLOW_IN_TARGET) {
			if (!any_access)
				error(c, set.b[i].pc->loc, "add access(struct.member) so the instance is known",
				      "target(%s) needs an access() in the pointcut", set.b[i].name);
			else if (!mixed) {
				t.base = FL_T_STRUCT;
				t.sname = sname;
			}
		}
		struct fl_sym *s = sym_new(c, FL_SYM_INPUT, set.b[i].name, t, set.b[i].pc->loc);
		s->slot = (unsigned)a->ninputs;
		s->in_kind = set.b[i].kind;
		s->in_local = set.b[i].kind == XFLOW_IN_LOCAL_VAR ? set.b[i].pc->a : NULL;
		FL_PUSH(&c->u->arena, a->inputs, a->ninputs, a->inputs_cap, s);
		scope_add(c, s);
	}
}

/* ---- expressions ---- */

static bool convertible(const struct fl_type *to, const struct fl_type *from,
			const struct fl_expr *e)
{
	if (is_int(to))
		return is_int(from) || (from->member && from->ptr == 0);
	if (is_ptr(to)) {
		if (from->member && from->ptr == 0)
			return true;
		if (is_int(from))
			return e && e->kind == FL_E_NUM && e->num == 0;
		if (!is_ptr(from))
			return false;
		/* void * converts to and from any pointer, as in C. */
		if ((to->ptr == 1 && to->base == FL_T_VOID) || (from->ptr == 1 && from->base == FL_T_VOID))
			return true;
		return to->ptr == from->ptr && to->base == from->base &&
		       (to->base != FL_T_STRUCT || strcmp(to->sname, from->sname) == 0);
	}
	return false;
}

static void expr(struct ck *c, struct fl_expr *e);

static bool need_scalar(struct ck *c, struct fl_expr *e, const char *what)
{
	if (is_scalar(&e->type) || e->type.member)
		return true;
	error(c, e->loc, "only numbers and pointers are values; some builtins return nothing",
	      "%s needs a number or a pointer, not %s", what, type_str(c, &e->type));
	return false;
}

static int flow_arg(struct ck *c, struct fl_expr *call, struct fl_expr *e)
{
	struct xflow_unit *u = c->u;
	if (e->kind != FL_E_VAR) {
		error(c, e->loc, "name a flow defined with <xflow name=\"...\">",
		      "the first argument of %s() must be a flow name", call->name);
		return -1;
	}
	struct fl_xflow *f = fl_unit_flow(u, e->name);
	if (!f) {
		struct fl_buf h = { 0 };
		fl_buf_puts(&h, "define it with <xflow name=\"...\">");
		if (u->flows) {
			fl_buf_puts(&h, "; the flows are:");
			for (struct fl_xflow *x = u->flows; x; x = x->next)
				fl_buf_printf(&h, " %s", x->name);
		}
		error(c, e->loc, h.s, "unknown flow '%s'", e->name);
		fl_buf_free(&h);
		return -1;
	}
	return f->index;
}

static const struct {
	const char *name;
	enum fl_builtin b;
	int nargs;              /* -1: STORE_DATAn, from the name */
	const char *args;       /* F flow, P pointer, I integer, V any scalar, L local lvalue */
	bool returns;
	const char *sig;
} builtins[] = {
	{ "get_new_flowid", FL_B_GET_NEW_FLOWID, 0, "", true, "get_new_flowid()" },
	{ "get_flowid", FL_B_GET_FLOWID, 2, "FP", true, "get_flowid(flow, key)" },
	{ "register_flowid", FL_B_REGISTER_FLOWID, 3, "FPI", false, "register_flowid(flow, key, id)" },
	{ "remove_flowid", FL_B_REMOVE_FLOWID, 2, "FP", false, "remove_flowid(flow, key)" },
	{ "DO_RDTSC", FL_B_DO_RDTSC, 1, "L", false, "DO_RDTSC(variable)" },
	{ "STORE_HANDOFF_OUT", FL_B_STORE_HANDOFF_OUT, 3, "FII", false, "STORE_HANDOFF_OUT(flow, key, id)" },
	{ "STORE_HANDOFF_IN", FL_B_STORE_HANDOFF_IN, 3, "FII", false, "STORE_HANDOFF_IN(flow, key, id)" },
	{ "STORE_HANDOFF_IN_FROM", FL_B_STORE_HANDOFF_IN_FROM, 4, "FIII", false,
	  "STORE_HANDOFF_IN_FROM(flow, key, id, sender_domid)" },
	{ "STORE_SPLIT", FL_B_STORE_SPLIT, 3, "FII", false, "STORE_SPLIT(flow, child, parent)" },
};

#define BUILTIN_LIST "get_new_flowid, get_flowid, register_flowid, remove_flowid, DO_RDTSC, " \
	"STORE_DATA1..STORE_DATA6, STORE_HANDOFF_OUT, STORE_HANDOFF_IN, " \
	"STORE_HANDOFF_IN_FROM, STORE_SPLIT"

static void call(struct ck *c, struct fl_expr *e)
{
	int nargs = -1;
	const char *args = NULL, *sig = NULL;
	bool returns = false;
	for (size_t i = 0; i < sizeof(builtins) / sizeof(builtins[0]); i++) {
		if (strcmp(builtins[i].name, e->name) == 0) {
			e->builtin = (int)builtins[i].b;
			nargs = builtins[i].nargs;
			args = builtins[i].args;
			returns = builtins[i].returns;
			sig = builtins[i].sig;
		}
	}
	if (strncmp(e->name, "STORE_DATA", 10) == 0 && e->name[10] >= '1' &&
	    e->name[10] <= '0' + XFLOW_RECORD_MAX_DATA && e->name[11] == '\0') {
		e->builtin = FL_B_STORE_DATA;
		nargs = e->name[10] - '0';
		args = "VVVVVV";
		sig = fl_arena_printf(&c->u->arena, "%s with %d value%s", e->name, nargs, nargs == 1 ? "" : "s");
	}
	e->type = returns ? int_type : void_type;
	if (e->builtin < 0) {
		error(c, e->loc, "the builtins are " BUILTIN_LIST,
		      strncmp(e->name, "STORE_DATA", 10) == 0 ? "unknown builtin '%s': a record holds 1 to 6 values"
							       : "unknown builtin '%s'", e->name);
		for (size_t i = 0; i < e->nargs; i++)
			expr(c, e->args[i]);
		return;
	}
	if ((int)e->nargs != nargs) {
		error(c, e->loc, fl_arena_printf(&c->u->arena, "write %s", sig),
		      "%s() takes %d argument%s, not %zu", e->name, nargs,
		      nargs == 1 ? "" : "s", e->nargs);
		return;
	}
	for (size_t i = 0; i < e->nargs; i++) {
		struct fl_expr *x = e->args[i];
		switch (args[i]) {
		case 'F':
			e->flow = flow_arg(c, e, x);
			if (e->flow < 0)
				c->bad = true;
			break;
		case 'L':
			expr(c, x);
			if (x->kind != FL_E_VAR || !x->sym || x->sym->kind != FL_SYM_LOCAL || !is_int(&x->type))
				error(c, x->loc, "declare it first: long long tsc; DO_RDTSC(tsc);",
				      "%s() needs an integer variable of the advice", e->name);
			break;
		case 'P':
			expr(c, x);
			if (!is_ptr(&x->type) && !x->type.member)
				error(c, x->loc, "cast it: (void *)x", "argument %zu of %s() must be a pointer, not %s",
				      i + 1, e->name, type_str(c, &x->type));
			break;
		case 'I':
			expr(c, x);
			if (!is_int(&x->type) && !x->type.member)
				error(c, x->loc, "cast it: (long)x", "argument %zu of %s() must be an integer, not %s",
				      i + 1, e->name, type_str(c, &x->type));
			break;
		default:
			expr(c, x);
			need_scalar(c, x, "a stored value");
		}
	}
}

static bool is_lvalue(struct ck *c, struct fl_expr *l)
{
	if (l->kind == FL_E_MEMBER)
		return true;
	if (l->kind == FL_E_VAR) {
		if (l->sym && l->sym->kind == FL_SYM_INPUT) {
			error(c, l->loc, "copy it into a variable of the advice first",
			      "cannot assign to '%s': it is bound by the pointcut", l->name);
			return false;
		}
		return true;
	}
	error(c, l->loc, "advice writes only its own variables and struct members (p->member)",
	      "cannot assign to this expression");
	return false;
}

static unsigned elem_size(const struct fl_type *t)
{
	if (t->ptr > 1)
		return 8;
	if (t->base == FL_T_VOID)
		return 1;
	if (t->base == FL_T_INT)
		return t->size ? t->size : 8;
	return 0;   /* struct: its size is known only at plan time */
}

static void binary(struct ck *c, struct fl_expr *e)
{
	struct fl_type *l = &e->l->type, *r = &e->r->type;
	if (!need_scalar(c, e->l, "an operand") || !need_scalar(c, e->r, "an operand"))
		return;
	bool lp = is_ptr(l) && !l->member, rp = is_ptr(r) && !r->member;
	bool uns = l->is_unsigned || r->is_unsigned || l->member || r->member;
	switch (e->op) {
	case FL_T_EQ: case FL_T_NE: case '<': case '>': case FL_T_LE: case FL_T_GE:
		if (lp != rp && !(e->l->kind == FL_E_NUM && e->l->num == 0) &&
		    !(e->r->kind == FL_E_NUM && e->r->num == 0))
			error(c, e->loc, "cast one side", "comparison between %s and %s",
			      type_str(c, l), type_str(c, r));
		e->type = int_type;
		return;
	case '+': case '-':
		if (lp && rp) {
			error(c, e->loc, "cast both to an integer type", "pointer arithmetic between two pointers");
			return;
		}
		if (lp || rp) {
			const struct fl_type *pt = lp ? l : r;
			if (e->op == '-' && rp) {
				error(c, e->loc, "write pointer - integer", "cannot subtract a pointer from an integer");
				return;
			}
			if (!elem_size(pt)) {
				error(c, e->loc, "cast to (char *) to count in bytes",
				      "pointer arithmetic on %s needs the struct's size", type_str(c, pt));
				return;
			}
			e->type = *pt;
			return;
		}
		break;
	default:
		if (lp || rp) {
			error(c, e->loc, "cast it to an integer type: (unsigned long)p",
			      "invalid operands to a binary operator (%s and %s)", type_str(c, l), type_str(c, r));
			return;
		}
	}
	e->type = uns ? uint_type : int_type;
	if (e->op == FL_T_SHL || e->op == FL_T_SHR)
		e->type = l->is_unsigned || l->member ? uint_type : int_type;
}

static void expr(struct ck *c, struct fl_expr *e)
{
	/* After an error the expression counts as an integer, so one mistake
	 * gives one message. */
	e->type = int_type;
	switch (e->kind) {
	case FL_E_NUM:
		e->type.is_unsigned = e->op || e->num > INT64_MAX;
		break;
	case FL_E_PC:
		e->type = uint_type;
		break;
	case FL_E_VAR:
		e->sym = lookup(c, e->name);
		if (!e->sym) {
			if (fl_unit_flow(c->u, e->name))
				error(c, e->loc, "flow names are arguments of the flow builtins",
				      "flow '%s' used as a value", e->name);
			else
				error(c, e->loc,
				      fl_arena_printf(&c->u->arena,
						      "bind it in the pointcut with target(%s) or local_var(NAME, %s), or declare it",
						      e->name, e->name),
				      "'%s' is not bound by the pointcut or declared", e->name);
			e->type = int_type;
			return;
		}
		e->sym->used = true;
		e->type = e->sym->type;
		break;
	case FL_E_UNARY:
		expr(c, e->l);
		if (e->op == '!') {
			need_scalar(c, e->l, "'!'");
			e->type = int_type;
		} else if (!is_int(&e->l->type) && !e->l->type.member) {
			error(c, e->loc, "cast it: (long)p", "unary '%c' needs an integer, not %s", e->op,
			      type_str(c, &e->l->type));
		} else {
			e->type = e->l->type.is_unsigned || e->l->type.member ? uint_type : int_type;
		}
		break;
	case FL_E_DEREF: {
		expr(c, e->l);
		struct fl_type t = e->l->type;
		if (!is_ptr(&t)) {
			error(c, e->loc, "cast it to a pointer first: *(void**)x", "cannot dereference %s",
			      type_str(c, &t));
			return;
		}
		t.ptr--;
		if (t.ptr == 0 && t.base != FL_T_INT) {
			error(c, e->loc, t.base == FL_T_VOID ? "cast it: *(void**)x reads a pointer" : "read one member: p->member",
			      "cannot dereference %s", type_str(c, &e->l->type));
			return;
		}
		e->type = t;
		break;
	}
	case FL_E_MEMBER:
		expr(c, e->l);
		if (e->l->type.ptr != 1 || e->l->type.base != FL_T_STRUCT) {
			error(c, e->loc, "declare or cast it as struct NAME *: struct netif_tx_request *tx = ...",
			      "'->%s' needs a struct pointer, not %s", e->name, type_str(c, &e->l->type));
			return;
		}
		e->field = fl_unit_field(c->u, e->l->type.sname, e->name, e->loc);
		e->type = uint_type;
		e->type.member = true;
		break;
	case FL_E_ELEM:
		/* &p->a[i]: a pointer to what the element's layout says. */
		expr(c, e->l);
		expr(c, e->r);
		e->type = (struct fl_type){ .base = FL_T_VOID, .ptr = 1 };
		if (e->l->type.ptr != 1 || e->l->type.base != FL_T_STRUCT) {
			error(c, e->loc, "declare or cast it as struct NAME *: &((struct NAME *)p)->member[i]",
			      "'&->%s' needs a struct pointer, not %s", e->name, type_str(c, &e->l->type));
			return;
		}
		if (!is_int(&e->r->type) && !e->r->type.member) {
			error(c, e->r->loc, "cast it: (unsigned long)i", "an array index must be an integer, not %s",
			      type_str(c, &e->r->type));
			return;
		}
		e->field = fl_unit_field(c->u, e->l->type.sname, e->name, e->loc);
		break;
	case FL_E_CALL:
		call(c, e);
		break;
	case FL_E_CAST:
		expr(c, e->l);
		e->type = e->cast;
		if (e->cast.ptr == 0 && e->cast.base == FL_T_STRUCT)
			error(c, e->loc, "cast to a pointer: (struct NAME *)", "cannot cast to a struct value");
		else if (!is_void(&e->cast))
			need_scalar(c, e->l, "a cast");
		break;
	case FL_E_BINARY:
		expr(c, e->l);
		expr(c, e->r);
		binary(c, e);
		break;
	case FL_E_LAND:
	case FL_E_LOR:
		expr(c, e->l);
		expr(c, e->r);
		need_scalar(c, e->l, "'&&' and '||'");
		need_scalar(c, e->r, "'&&' and '||'");
		e->type = int_type;
		break;
	case FL_E_ASSIGN:
		expr(c, e->l);
		expr(c, e->r);
		if (!is_lvalue(c, e->l))
			return;
		if (e->op != '=') {
			struct fl_expr tmp = *e;
			tmp.kind = FL_E_BINARY;
			binary(c, &tmp);
			if (is_ptr(&e->l->type) && !e->l->type.member) {
				error(c, e->loc, "write p = p + n", "compound assignment to a pointer is not supported");
				return;
			}
		} else if (!convertible(&e->l->type, &e->r->type, e->r)) {
			error(c, e->loc, is_ptr(&e->l->type) ? "cast it: (void *)x" : NULL,
			      "cannot assign %s to %s", type_str(c, &e->r->type), type_str(c, &e->l->type));
			return;
		}
		e->type = e->l->type;
		break;
	}
}

/* ---- statements ---- */

static void stmts(struct ck *c, struct fl_stmt *s);

static void push_scope(struct ck *c, struct scope *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->up = c->scope;
	c->scope = sc;
}

static void stmt(struct ck *c, struct fl_stmt *s)
{
	struct scope sc;
	switch (s->kind) {
	case FL_S_EMPTY:
		break;
	case FL_S_EXPR:
		expr(c, s->expr);
		break;
	case FL_S_BLOCK:
		push_scope(c, &sc);
		stmts(c, s->body);
		c->scope = sc.up;
		break;
	case FL_S_IF:
		expr(c, s->expr);
		need_scalar(c, s->expr, "an if condition");
		push_scope(c, &sc);
		stmt(c, s->then);
		c->scope = sc.up;
		if (s->els) {
			push_scope(c, &sc);
			stmt(c, s->els);
			c->scope = sc.up;
		}
		break;
	case FL_S_DECL: {
		if (s->type.ptr == 0 && s->type.base != FL_T_INT) {
			error(c, s->nloc, s->type.base == FL_T_STRUCT ? "declare a pointer: struct NAME *p" : NULL,
			      "variable '%s' declared %s", s->name,
			      s->type.base == FL_T_STRUCT ? "as a struct value" : "void");
			return;
		}
		if (s->init) {
			expr(c, s->init);
			if (!convertible(&s->type, &s->init->type, s->init) &&
			    !(is_void(&s->init->type) && s->init->kind != FL_E_CALL))
				error(c, s->init->loc, is_ptr(&s->type) ? "cast it: (void *)x" : NULL,
				      "cannot initialise %s '%s' with %s", type_str(c, &s->type), s->name,
				      type_str(c, &s->init->type));
		}
		for (size_t i = 0; i < c->scope->n; i++)
			if (strcmp(c->scope->syms[i]->name, s->name) == 0)
				error(c, s->nloc, "rename it", "redefinition of '%s'", s->name);
		struct fl_sym *prev = lookup(c, s->name);
		if (prev && prev->kind == FL_SYM_INPUT)
			error(c, s->nloc, "rename it; the pointcut's variable stays readable",
			      "'%s' is already bound by the pointcut", s->name);
		if (c->a->nlocals >= XFLOW_BC_MAX_LOCALS) {
			error(c, s->nloc, "split the advice", "more than %d variables", XFLOW_BC_MAX_LOCALS);
			return;
		}
		struct fl_sym *sym = sym_new(c, FL_SYM_LOCAL, s->name, s->type, s->nloc);
		sym->slot = (unsigned)c->a->nlocals;
		FL_PUSH(&c->u->arena, c->a->locals, c->a->nlocals, c->a->locals_cap, sym);
		s->sym = sym;
		scope_add(c, sym);
		break;
	}
	}
}

static void stmts(struct ck *c, struct fl_stmt *s)
{
	for (; s; s = s->next)
		stmt(c, s);
}

void fl_advice_check(struct xflow_unit *u, struct fl_advice *a)
{
	struct scope inputs = { 0 }, body = { 0 };
	struct ck c = { .u = u, .a = a, .scope = &inputs };
	check_pointcut(&c);
	body.up = &inputs;
	c.scope = &body;
	stmts(&c, a->body);
	for (size_t i = 0; i < a->ninputs; i++)
		if (!a->inputs[i]->used && a->origin == FL_ORIGIN_USER)
			fl_warning(&u->diag, FL_W_UNUSED, a->inputs[i]->loc, "drop it from the pointcut",
				   "'%s' is bound by the pointcut but never used", a->inputs[i]->name);
	if (c.bad)
		a->bad = true;
}
