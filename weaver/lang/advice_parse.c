/*
 * Parser of the advice language, the C subset of the paper's figures:
 *
 *   stmt  := "{" stmt* "}" | if "(" expr ")" stmt [else stmt] | ";"
 *          | type declarator ["=" expr] {"," declarator ["=" expr]} ";"
 *          | expr ";"
 *   type  := [const] (void | struct NAME | integer type words)
 *   expr  := C's assignment, ||, &&, |, ^, &, equality, relational, shift,
 *            additive and multiplicative levels; unary - ~ ! + * and casts;
 *            postfix -> and builtin calls; numbers, names, $pc$, ( expr );
 *            &p->a[i] and &p->a[i].m.n, an element of an embedded array.
 *
 * No loops, no ++/--, no ?:, no other address-of: every advice terminates
 * and writes only struct members and its own locals.  The first syntax error of
 * a body is reported with a caret; the rest of that body is skipped (what
 * follows a syntax error is mostly noise), and the other bodies go on.
 */
#include "weaver/lang/advice.h"

#include <setjmp.h>
#include <stdarg.h>
#include <string.h>

struct ps {
	struct xflow_unit *u;
	const struct fl_code *code;
	struct fl_lexer lx;
	struct fl_tok tok, ahead;
	bool have_ahead;
	size_t prev_end;       /* just past the previous token */
	int depth;
	unsigned nodes;        /* bounds every later pass's recursion */
	jmp_buf fail;
};

struct fl_loc fl_code_loc(const struct fl_code *c, size_t i, size_t len)
{
	if (c->node)
		return fl_xnode_text_loc(c->node, i, len);
	return c->gen_loc;
}

static struct fl_loc tloc(struct ps *p, const struct fl_tok *t)
{
	return fl_code_loc(p->code, t->at, t->len ? t->len : 1);
}

static _Noreturn void fail(struct ps *p, const struct fl_tok *t, const char *hint,
			   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static _Noreturn void fail(struct ps *p, const struct fl_tok *t, const char *hint,
			   const char *fmt, ...)
{
	struct fl_buf b = { 0 };
	va_list ap;
	va_start(ap, fmt);
	fl_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	fl_error_caret(&p->u->diag, tloc(p, t), hint, "%s", b.s);
	fl_buf_free(&b);
	longjmp(p->fail, 1);
}

static void next(struct ps *p)
{
	p->prev_end = p->tok.at + p->tok.len;
	if (p->have_ahead) {
		p->tok = p->ahead;
		p->have_ahead = false;
	} else {
		p->tok = fl_lex_next(&p->lx);
	}
	if (p->tok.kind == FL_T_BAD)
		fail(p, &p->tok, "advice code is C: names, numbers, operators, $pc$ and builtin calls",
		     "stray %s in advice code",
		     fl_tok_describe(&p->u->arena, p->code, &p->tok));
	if (p->tok.kind == FL_T_NUM && p->tok.num_overflow)
		fail(p, &p->tok, "numbers are 64-bit", "number %s is too large",
		     fl_tok_describe(&p->u->arena, p->code, &p->tok));
}

static const struct fl_tok *peek2(struct ps *p)
{
	if (!p->have_ahead) {
		p->ahead = fl_lex_next(&p->lx);
		p->have_ahead = true;
	}
	return &p->ahead;
}

static const char *desc(struct ps *p)
{
	return fl_tok_describe(&p->u->arena, p->code, &p->tok);
}

/* A missing ';' or ')' belongs right after the previous token: point
 * there, as gcc does, not at whatever follows on the next line. */
static void expect(struct ps *p, int kind, const char *what)
{
	if (p->tok.kind != kind) {
		struct fl_tok at = p->tok;
		if (p->prev_end && (kind == ';' || kind == ')' || kind == '}')) {
			at.at = p->prev_end;
			at.len = 1;
		}
		fail(p, &at, fl_arena_printf(&p->u->arena, "write %s here", what),
		     "expected %s before %s", what, desc(p));
	}
	next(p);
}

/* Nesting is counted where the grammar recurses into itself: unary
 * operators and parentheses (unary), and statements inside statements. */
static void enter(struct ps *p)
{
	if (++p->depth > FL_MAX_NEST)
		fail(p, &p->tok, "split the expression or the if statements",
		     "advice code nested deeper than %d levels", FL_MAX_NEST);
}

static const char *tok_str(struct ps *p, const struct fl_tok *t)
{
	return fl_arena_strndup(&p->u->arena, p->code->text + t->at, t->len);
}

static struct fl_expr *mk(struct ps *p, enum fl_expr_kind k, const struct fl_tok *t)
{
	if (++p->nodes > FL_MAX_NODES)
		fail(p, t, "split the advice", "advice code longer than %d operations", FL_MAX_NODES);
	struct fl_expr *e = fl_arena_alloc(&p->u->arena, sizeof(*e));
	e->kind = k;
	e->loc = tloc(p, t);
	e->field = e->flow = e->builtin = -1;
	return e;
}

static bool starts_type(int kind)
{
	return kind == FL_T_INTTYPE || kind == FL_T_KW_VOID || kind == FL_T_KW_STRUCT ||
	       kind == FL_T_KW_CONST;
}

static bool is_c_keyword(struct ps *p)
{
	static const char *const kw[] = { "char", "short", "int", "long", "signed", "unsigned" };
	for (size_t i = 0; i < sizeof(kw) / sizeof(kw[0]); i++)
		if (strlen(kw[i]) == p->tok.len && memcmp(kw[i], p->code->text + p->tok.at, p->tok.len) == 0)
			return true;
	return false;
}

/* Type specifiers, then '*'s (the declarator's or the cast's). */
static struct fl_type parse_type(struct ps *p)
{
	struct fl_type ty = { .base = FL_T_INT };
	bool any = false;
	while (p->tok.kind == FL_T_KW_CONST)
		next(p);
	if (p->tok.kind == FL_T_KW_VOID) {
		ty.base = FL_T_VOID;
		next(p);
		any = true;
	} else if (p->tok.kind == FL_T_KW_STRUCT) {
		next(p);
		/* Typedef-like words (u8, size_t, ...) are fine as struct tags;
		 * only C's own type keywords are not. */
		if (p->tok.kind == FL_T_INTTYPE && !is_c_keyword(p))
			p->tok.kind = FL_T_IDENT;
		if (p->tok.kind != FL_T_IDENT)
			fail(p, &p->tok, "write struct NAME *p", "expected a struct name before %s", desc(p));
		ty.base = FL_T_STRUCT;
		ty.sname = tok_str(p, &p->tok);
		next(p);
		any = true;
	} else {
		int longs = 0;
		ty.size = 4;
		while (p->tok.kind == FL_T_INTTYPE || p->tok.kind == FL_T_KW_CONST) {
			const char *w = p->code->text + p->tok.at;
			size_t n = p->tok.len;
			if (p->tok.is_unsigned)
				ty.is_unsigned = true;
			if (n == 4 && memcmp(w, "char", 4) == 0)
				ty.size = 1;
			else if (n == 5 && memcmp(w, "short", 5) == 0)
				ty.size = 2;
			else if (n == 4 && memcmp(w, "long", 4) == 0)
				longs++;
			else if (memchr(w, '8', n))
				ty.size = 1;
			else if (memchr(w, '6', n) && memchr(w, '1', n))
				ty.size = 2;
			else if (memchr(w, '3', n))
				ty.size = 4;
			else if (memchr(w, '6', n) || (n == 6 && memcmp(w, "size_t", 6) == 0) ||
				 (n == 9 && memcmp(w, "uintptr_t", 9) == 0))
				ty.size = 8;
			any = true;
			next(p);
		}
		if (longs)
			ty.size = 8;
	}
	if (!any)
		fail(p, &p->tok, "declarations start with a type: int, long long, void *, struct NAME *",
		     "expected a type before %s", desc(p));
	while (p->tok.kind == FL_T_KW_CONST)
		next(p);
	while (p->tok.kind == '*') {
		if (ty.ptr == 8)
			fail(p, &p->tok, "use at most 8 levels of pointer", "too many '*'");
		ty.ptr++;
		next(p);
		while (p->tok.kind == FL_T_KW_CONST)
			next(p);
	}
	return ty;
}

static struct fl_expr *expr(struct ps *p);
static struct fl_expr *assign(struct ps *p);

static struct fl_expr *primary(struct ps *p)
{
	struct fl_tok t = p->tok;
	struct fl_expr *e;
	switch (t.kind) {
	case FL_T_NUM:
		e = mk(p, FL_E_NUM, &t);
		e->num = t.num;
		e->type.base = FL_T_INT;
		e->op = t.is_unsigned;   /* a u suffix */
		next(p);
		return e;
	case FL_T_PCVAR:
		next(p);
		return mk(p, FL_E_PC, &t);
	case FL_T_IDENT:
		next(p);
		if (p->tok.kind == '(') {
			e = mk(p, FL_E_CALL, &t);
			e->name = tok_str(p, &t);
			next(p);
			size_t cap = 0;
			if (p->tok.kind != ')') {
				for (;;) {
					struct fl_expr *a = assign(p);
					FL_PUSH(&p->u->arena, e->args, e->nargs, cap, a);
					if (e->nargs > 16)
						fail(p, &p->tok, "the builtins take at most 6 arguments", "too many arguments");
					if (p->tok.kind != ',')
						break;
					next(p);
				}
			}
			expect(p, ')', "')'");
			return e;
		}
		e = mk(p, FL_E_VAR, &t);
		e->name = tok_str(p, &t);
		return e;
	case '(':
		next(p);
		e = expr(p);
		expect(p, ')', "')'");
		return e;
	case FL_T_INC:
	case FL_T_DEC:
		fail(p, &t, "write x += 1 or x -= 1", "'++' and '--' are not part of the advice language");
	case FL_T_LOOP:
		fail(p, &t, "advice must always terminate: write the test with if", "loops are not allowed in advice");
	default:
		fail(p, &t, "write a number, a variable, $pc$, p->member or a builtin call",
		     "expected an expression before %s", desc(p));
	}
}

/* &p->a[i] and &p->a[i].m...: the address of an element of the array a
 * embedded in *p, or of a member embedded in that element.  Only behind
 * '&': the element is reached without a read, and its members are read
 * through a pointer declared with their struct, as any other. */
static struct fl_expr *element(struct ps *p, struct fl_expr *m, const struct fl_tok *t)
{
	if (m->kind != FL_E_MEMBER)
		fail(p, t, "index an array member: &p->member[i]", "only an embedded array member can be indexed");
	next(p);
	struct fl_expr *e = mk(p, FL_E_ELEM, t);
	e->l = m->l;
	e->r = expr(p);
	expect(p, ']', "']'");
	struct fl_buf b = { 0 };
	fl_buf_printf(&b, "%s[]", m->name);
	while (p->tok.kind == '.') {
		next(p);
		if (p->tok.kind != FL_T_IDENT)
			fail(p, &p->tok, "write &p->a[i].member", "expected a member name before %s", desc(p));
		fl_buf_printf(&b, ".%s", tok_str(p, &p->tok));
		next(p);
	}
	e->name = fl_arena_strdup(&p->u->arena, b.s);
	fl_buf_free(&b);
	if (p->tok.kind == '[' || p->tok.kind == FL_T_ARROW)
		fail(p, &p->tok, "declare a pointer to the element: struct NAME *q = &p->a[i]; then q->member",
		     "an element's address ends the expression");
	return e;
}

static struct fl_expr *postfix(struct ps *p, bool addr)
{
	struct fl_expr *e = primary(p);
	for (;;) {
		struct fl_tok t = p->tok;
		if (t.kind == '[' && addr) {
			return element(p, e, &t);
		} else if (t.kind == FL_T_ARROW) {
			next(p);
			if (p->tok.kind != FL_T_IDENT)
				fail(p, &p->tok, "write p->member", "expected a member name before %s", desc(p));
			struct fl_expr *m = mk(p, FL_E_MEMBER, &p->tok);
			m->name = tok_str(p, &p->tok);
			m->l = e;
			next(p);
			e = m;
		} else if (t.kind == '.') {
			fail(p, &t, "advice reaches structs through pointers: write p->member",
			     "'.' member access is not supported");
		} else if (t.kind == '[') {
			fail(p, &t, "take an embedded array's element by its address: &p->member[i]",
			     "array subscripts are not supported");
		} else if (t.kind == FL_T_INC || t.kind == FL_T_DEC) {
			fail(p, &t, "write x += 1 or x -= 1", "'++' and '--' are not part of the advice language");
		} else {
			return e;
		}
	}
}

static struct fl_expr *unary(struct ps *p)
{
	struct fl_tok t = p->tok;
	enter(p);
	struct fl_expr *e;
	switch (t.kind) {
	case '-': case '~': case '!': case '+':
		next(p);
		e = mk(p, FL_E_UNARY, &t);
		e->op = t.kind;
		e->l = unary(p);
		break;
	case '*':
		next(p);
		e = mk(p, FL_E_DEREF, &t);
		e->l = unary(p);
		break;
	case '&':
		next(p);
		e = postfix(p, true);
		if (e->kind != FL_E_ELEM)
			fail(p, &t, "advice takes only an array element's address, &p->member[i]; local_var(name, v) "
			     "binds v to a local's address", "'&' (address of) is not supported here");
		break;
	case '(':
		if (starts_type(peek2(p)->kind)) {
			next(p);
			e = mk(p, FL_E_CAST, &t);
			e->cast = parse_type(p);
			expect(p, ')', "')' after the type");
			e->l = unary(p);
			break;
		}
		/* fall through */
	default:
		e = postfix(p, false);
	}
	p->depth--;
	return e;
}

/* Binary operator levels, loosest first. */
static const int levels[][5] = {
	{ '|' }, { '^' }, { '&' }, { FL_T_EQ, FL_T_NE },
	{ '<', '>', FL_T_LE, FL_T_GE }, { FL_T_SHL, FL_T_SHR }, { '+', '-' },
	{ '*', '/', '%' },
};
#define NLEVELS (int)(sizeof(levels) / sizeof(levels[0]))

static struct fl_expr *binary(struct ps *p, int level)
{
	if (level == NLEVELS)
		return unary(p);
	struct fl_expr *l = binary(p, level + 1);
	for (;;) {
		bool match = false;
		for (int k = 0; k < 5 && levels[level][k]; k++)
			match |= p->tok.kind == levels[level][k];
		if (!match)
			break;
		struct fl_tok t = p->tok;
		next(p);
		struct fl_expr *e = mk(p, FL_E_BINARY, &t);
		e->op = t.kind;
		e->l = l;
		e->r = binary(p, level + 1);
		l = e;
	}
	return l;
}

static struct fl_expr *logical(struct ps *p, bool is_or)
{
	struct fl_expr *l = is_or ? logical(p, false) : binary(p, 0);
	while (p->tok.kind == (is_or ? FL_T_LOR : FL_T_LAND)) {
		struct fl_tok t = p->tok;
		next(p);
		struct fl_expr *e = mk(p, is_or ? FL_E_LOR : FL_E_LAND, &t);
		e->l = l;
		e->r = is_or ? logical(p, false) : binary(p, 0);
		l = e;
	}
	return l;
}

static struct fl_expr *assign(struct ps *p)
{
	struct fl_expr *l = logical(p, true);
	struct fl_tok t = p->tok;
	if (t.kind == '?')
		fail(p, &t, "write it with if/else", "'?:' is not supported");
	if (t.kind == '=' || t.kind == FL_T_ASSIGN_OP) {
		next(p);
		struct fl_expr *e = mk(p, FL_E_ASSIGN, &t);
		e->op = t.kind == '=' ? '=' : t.op;
		e->l = l;
		e->r = assign(p);
		l = e;
	}
	return l;
}

static struct fl_expr *expr(struct ps *p)
{
	struct fl_expr *e = assign(p);
	if (p->tok.kind == ',')
		fail(p, &p->tok, "write two statements", "the comma operator is not supported");
	return e;
}

static struct fl_stmt *mks(struct ps *p, enum fl_stmt_kind k, const struct fl_tok *t)
{
	if (++p->nodes > FL_MAX_NODES)
		fail(p, t, "split the advice", "advice code longer than %d operations", FL_MAX_NODES);
	struct fl_stmt *s = fl_arena_alloc(&p->u->arena, sizeof(*s));
	s->kind = k;
	s->loc = tloc(p, t);
	return s;
}

static struct fl_stmt *stmt(struct ps *p);

/* Statements up to '}' (or the end when @top); a linked list. */
static struct fl_stmt *stmts(struct ps *p, bool top)
{
	struct fl_stmt *head = NULL, **tail = &head;
	while (p->tok.kind != (top ? FL_T_EOF : '}')) {
		if (p->tok.kind == FL_T_EOF)
			fail(p, &p->tok, "close every '{' with '}'", "expected '}' before end of code");
		struct fl_stmt *s = stmt(p);
		/* A declaration list gives several statements. */
		*tail = s;
		while (s->next)
			s = s->next;
		tail = &s->next;
	}
	return head;
}

static struct fl_stmt *decl(struct ps *p)
{
	struct fl_tok t0 = p->tok;
	struct fl_type base = parse_type(p);
	/* parse_type took the first declarator's '*'s; later ones re-count. */
	struct fl_stmt *head = NULL, **tail = &head;
	struct fl_type ty = base;
	for (;;) {
		if (p->tok.kind != FL_T_IDENT)
			fail(p, &p->tok, "write TYPE NAME = VALUE;", "expected a variable name before %s", desc(p));
		struct fl_stmt *s = mks(p, FL_S_DECL, &t0);
		s->type = ty;
		s->name = tok_str(p, &p->tok);
		s->nloc = tloc(p, &p->tok);
		next(p);
		if (p->tok.kind == '=') {
			next(p);
			s->init = assign(p);
		}
		*tail = s;
		tail = &s->next;
		if (p->tok.kind != ',')
			break;
		next(p);
		ty = base;
		ty.ptr = 0;
		while (p->tok.kind == '*') {
			ty.ptr++;
			next(p);
		}
	}
	expect(p, ';', "';'");
	return head;
}

static struct fl_stmt *stmt(struct ps *p)
{
	struct fl_tok t = p->tok;
	struct fl_stmt *s;
	enter(p);
	switch (t.kind) {
	case '{':
		next(p);
		s = mks(p, FL_S_BLOCK, &t);
		s->body = stmts(p, false);
		expect(p, '}', "'}'");
		break;
	case ';':
		next(p);
		s = mks(p, FL_S_EMPTY, &t);
		break;
	case FL_T_KW_IF:
		next(p);
		s = mks(p, FL_S_IF, &t);
		expect(p, '(', "'(' after if");
		s->expr = expr(p);
		expect(p, ')', "')'");
		s->then = stmt(p);
		if (p->tok.kind == FL_T_KW_ELSE) {
			next(p);
			s->els = stmt(p);
		}
		break;
	case FL_T_LOOP:
		fail(p, &t, "advice must always terminate: write the test with if",
		     "loops are not allowed in advice");
	case FL_T_RETURN:
		fail(p, &t, "put the rest of the code in an if", "'return' is not supported in advice");
	case FL_T_KW_ELSE:
		fail(p, &t, "put else right after the body of its if", "'else' without a previous 'if'");
	default:
		if (starts_type(t.kind)) {
			s = decl(p);
		} else {
			s = mks(p, FL_S_EXPR, &t);
			s->expr = expr(p);
			expect(p, ';', "';'");
		}
	}
	p->depth--;
	return s;
}

struct fl_stmt *fl_advice_parse(struct xflow_unit *u, const struct fl_code *code, bool *ok)
{
	/* volatile: read after longjmp. */
	struct ps *volatile p = fl_arena_alloc(&u->arena, sizeof(*p));
	p->u = u;
	p->code = code;
	fl_lex_init(&p->lx, code);
	*ok = false;
	if (setjmp(p->fail))
		return NULL;
	next(p);
	struct fl_stmt *s = stmts(p, true);
	*ok = true;
	return s;
}
