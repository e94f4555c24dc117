/*
 * The pointcut language: primitive pointcuts combined with AND/OR/NOT
 * (any case, or && || !) and parentheses.
 *
 *   expr    := or
 *   or      := and { (OR | "||") and }
 *   and     := unary { (AND | "&&") unary }
 *   unary   := (NOT | "!") unary | "(" expr ")" | prim
 *   prim    := access(S.m | S.%) | within_function(f[@dom]) | within_file(path[@dom])
 *            | call(f[@dom]) | return(f[@dom]) | target(v) | local_var(name, v)
 *            | xflow(flow, v[, id])
 *
 * Works on the decoded text of a <pointcut> element; every error points
 * into the file with a caret.
 */
#include "weaver/lang/unit.h"

#include <ctype.h>
#include <stdarg.h>
#include <string.h>
#include <strings.h>

struct pcp {
	struct xflow_unit *u;
	const struct fl_xnode *n;
	const char *s;
	size_t len, i;
	int depth;
	unsigned prims;
	bool failed;
};

#define PRIMS "access, within_function, within_file, call, return, target, local_var, xflow, tracepoint"

static struct fl_loc loc_at(struct pcp *p, size_t i, size_t len)
{
	return fl_xnode_text_loc(p->n, i, len);
}

static void skip_ws(struct pcp *p)
{
	while (p->i < p->len && isspace((unsigned char)p->s[p->i]))
		p->i++;
}

static size_t ident_len(const struct pcp *p, size_t i)
{
	size_t j = i;
	if (j < p->len && (isalpha((unsigned char)p->s[j]) || p->s[j] == '_'))
		for (j++; j < p->len && (isalnum((unsigned char)p->s[j]) || p->s[j] == '_'); j++)
			;
	return j - i;
}

/* Length of the token at i, for carets. */
static size_t tok_len(const struct pcp *p, size_t i)
{
	if (i >= p->len)
		return 1;
	size_t n = ident_len(p, i);
	return n ? n : 1;
}

static void err(struct pcp *p, size_t i, const char *hint, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void err(struct pcp *p, size_t i, const char *hint, const char *fmt, ...)
{
	if (p->failed)
		return;  /* one syntax error per pointcut: the rest would be noise */
	p->failed = true;
	struct fl_buf b = { 0 };
	va_list ap;
	va_start(ap, fmt);
	fl_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	fl_error_caret(&p->u->diag, loc_at(p, i, tok_len(p, i)), hint, "%s", b.s);
	fl_buf_free(&b);
}

static const char *tok_text(struct pcp *p, size_t i)
{
	if (i >= p->len)
		return "end of pointcut";
	return fl_arena_printf(&p->u->arena, "'%.*s'", (int)tok_len(p, i), p->s + i);
}

static bool eat(struct pcp *p, const char *lit)
{
	skip_ws(p);
	size_t n = strlen(lit);
	if (p->i + n <= p->len && memcmp(p->s + p->i, lit, n) == 0) {
		p->i += n;
		return true;
	}
	return false;
}

static bool expect(struct pcp *p, const char *lit, const char *what)
{
	if (eat(p, lit))
		return true;
	err(p, p->i, fl_arena_printf(&p->u->arena, "write %s here", what),
	    "expected %s before %s", what, tok_text(p, p->i));
	return false;
}

static const char *ident(struct pcp *p, struct fl_loc *loc, const char *what)
{
	skip_ws(p);
	size_t n = ident_len(p, p->i);
	if (!n) {
		err(p, p->i, fl_arena_printf(&p->u->arena, "write %s here", what),
		    "expected %s before %s", what, tok_text(p, p->i));
		return NULL;
	}
	*loc = loc_at(p, p->i, n);
	const char *r = fl_arena_strndup(&p->u->arena, p->s + p->i, n);
	p->i += n;
	return r;
}

/* A keyword (AND, OR, NOT) in any case, as a whole word. */
static bool keyword(struct pcp *p, const char *kw)
{
	skip_ws(p);
	size_t n = ident_len(p, p->i);
	if (n == strlen(kw) && strncasecmp(p->s + p->i, kw, n) == 0) {
		p->i += n;
		return true;
	}
	return false;
}

static struct fl_pc *node(struct pcp *p, enum fl_pc_kind k, size_t at, size_t len)
{
	struct fl_pc *pc = fl_arena_alloc(&p->u->arena, sizeof(*pc));
	pc->kind = k;
	pc->loc = loc_at(p, at, len);
	return pc;
}

/* "@dom" after a function name or path. */
static bool domain(struct pcp *p, struct fl_pc *pc)
{
	skip_ws(p);
	if (p->i >= p->len || p->s[p->i] != '@')
		return true;
	p->i++;
	skip_ws(p);
	size_t j = p->i;
	while (j < p->len && (isalnum((unsigned char)p->s[j]) || p->s[j] == '_' ||
			      p->s[j] == '-' || p->s[j] == '.' || p->s[j] == '*'))
		j++;
	if (j == p->i) {
		err(p, p->i, "write the domain's name after '@', e.g. @linux0",
		    "expected a domain name before %s", tok_text(p, p->i));
		return false;
	}
	pc->dom = fl_arena_strndup(&p->u->arena, p->s + p->i, j - p->i);
	p->i = j;
	return true;
}

static bool path_char(char c)
{
	return isalnum((unsigned char)c) || strchr("_./-+,~", c);
}

static struct fl_pc *prim(struct pcp *p)
{
	skip_ws(p);
	size_t at = p->i;
	size_t n = ident_len(p, at);
	if (!n) {
		err(p, at, "a pointcut is one of " PRIMS ", combined with AND, OR, NOT and ( )",
		    "expected a pointcut before %s", tok_text(p, at));
		return NULL;
	}
	static const struct { const char *name; enum fl_pc_kind kind; } prims[] = {
		{ "access", FL_PC_ACCESS },
		{ "within_function", FL_PC_WITHIN_FUNCTION },
		{ "within_file", FL_PC_WITHIN_FILE },
		{ "call", FL_PC_CALL },
		{ "return", FL_PC_RETURN },
		{ "target", FL_PC_TARGET },
		{ "local_var", FL_PC_LOCAL_VAR },
		{ "xflow", FL_PC_XFLOW },
		{ "tracepoint", FL_PC_TRACEPOINT },
	};
	int kind = -1;
	for (size_t k = 0; k < sizeof(prims) / sizeof(prims[0]); k++)
		if (strlen(prims[k].name) == n && memcmp(prims[k].name, p->s + at, n) == 0)
			kind = (int)prims[k].kind;
	if (kind < 0) {
		err(p, at, "the pointcuts are " PRIMS,
		    "unknown pointcut %s", tok_text(p, at));
		return NULL;
	}
	if (++p->prims > FL_MAX_PRIMS) {
		err(p, at, "split the advice", "pointcut longer than %d terms", FL_MAX_PRIMS);
		return NULL;
	}
	p->i += n;
	struct fl_pc *pc = node(p, (enum fl_pc_kind)kind, at, n);
	if (!expect(p, "(", "'('"))
		return NULL;
	switch (pc->kind) {
	case FL_PC_ACCESS:
		if (!(pc->a = ident(p, &pc->aloc, "a struct name")))
			return NULL;
		if (!eat(p, ".")) {
			err(p, p->i, "write access(struct.member) or access(struct.%), e.g. access(sk_buff.data)",
			    "expected '.' before %s", tok_text(p, p->i));
			return NULL;
		}
		skip_ws(p);
		if (p->i < p->len && p->s[p->i] == '%') {
			pc->bloc = loc_at(p, p->i, 1);
			pc->b = "%";
			p->i++;
		} else if (!(pc->b = ident(p, &pc->bloc, "a member name or '%'"))) {
			return NULL;
		}
		break;
	case FL_PC_WITHIN_FILE: {
		skip_ws(p);
		size_t j = p->i;
		while (j < p->len && path_char(p->s[j]))
			j++;
		if (j == p->i) {
			err(p, p->i, "write a path such as drivers/.../netfront.c",
			    "expected a file path before %s", tok_text(p, p->i));
			return NULL;
		}
		pc->aloc = loc_at(p, p->i, j - p->i);
		pc->a = fl_arena_strndup(&p->u->arena, p->s + p->i, j - p->i);
		p->i = j;
		if (!domain(p, pc))
			return NULL;
		break;
	}
	case FL_PC_WITHIN_FUNCTION:
	case FL_PC_CALL:
	case FL_PC_RETURN:
		if (!(pc->a = ident(p, &pc->aloc, "a function name")) || !domain(p, pc))
			return NULL;
		break;
	case FL_PC_TRACEPOINT: {
		/* category:name, as tracefs and perf write it. */
		struct fl_loc cl, nl;
		const char *cat = ident(p, &cl, "a tracepoint category, e.g. skb in skb:consume_skb");
		if (!cat || !expect(p, ":", "':' between the category and the name"))
			return NULL;
		const char *name = ident(p, &nl, "a tracepoint name, e.g. consume_skb");
		if (!name || !domain(p, pc))
			return NULL;
		pc->a = fl_arena_printf(&p->u->arena, "%s:%s", cat, name);
		pc->aloc = cl;
		break;
	}
	case FL_PC_TARGET:
		if (!(pc->a = ident(p, &pc->aloc, "a variable name")))
			return NULL;
		break;
	case FL_PC_LOCAL_VAR:
		if (!(pc->a = ident(p, &pc->aloc, "the program's local variable")) ||
		    !expect(p, ",", "','") ||
		    !(pc->b = ident(p, &pc->bloc, "a variable name")))
			return NULL;
		break;
	case FL_PC_XFLOW:
		if (!(pc->a = ident(p, &pc->aloc, "a flow name")) ||
		    !expect(p, ",", "','") ||
		    !(pc->b = ident(p, &pc->bloc, "a variable name")))
			return NULL;
		if (eat(p, ",") && !(pc->c = ident(p, &pc->cloc, "a variable name for the flow id")))
			return NULL;
		break;
	default:
		break;
	}
	if (!expect(p, ")", "')'"))
		return NULL;
	return pc;
}

static struct fl_pc *expr(struct pcp *p);

static struct fl_pc *unary(struct pcp *p)
{
	skip_ws(p);
	size_t at = p->i;
	if (++p->depth > FL_MAX_NEST) {
		err(p, at, "split the pointcut", "pointcut nested deeper than %s",
		    "64 levels");
		return NULL;
	}
	struct fl_pc *r = NULL;
	if (keyword(p, "NOT") || eat(p, "!")) {
		struct fl_pc *x = unary(p);
		if (x) {
			r = node(p, FL_PC_NOT, at, p->s[at] == '!' ? 1 : 3);
			r->l = x;
		}
	} else if (eat(p, "(")) {
		r = expr(p);
		if (r && !expect(p, ")", "')'"))
			r = NULL;
	} else {
		r = prim(p);
	}
	p->depth--;
	return r;
}

static struct fl_pc *binary(struct pcp *p, bool is_or)
{
	struct fl_pc *l = is_or ? binary(p, false) : unary(p);
	while (l) {
		skip_ws(p);
		size_t at = p->i;
		bool kw = keyword(p, is_or ? "OR" : "AND");
		if (!kw && !eat(p, is_or ? "||" : "&&"))
			break;
		struct fl_pc *r = is_or ? binary(p, false) : unary(p);
		if (!r)
			return NULL;
		struct fl_pc *b = node(p, is_or ? FL_PC_OR : FL_PC_AND, at, kw ? (is_or ? 2 : 3) : 2);
		b->l = l;
		b->r = r;
		l = b;
	}
	return l;
}

static struct fl_pc *expr(struct pcp *p)
{
	return binary(p, true);
}

struct fl_pc *fl_pointcut_parse(struct xflow_unit *u, const struct fl_xnode *n)
{
	struct pcp p = { .u = u, .n = n, .s = n->text, .len = n->tlen };
	skip_ws(&p);
	if (p.i == p.len) {
		fl_error(&u->diag, n->loc, "write e.g. access(sk_buff.data) AND within_function(f)",
			 "empty pointcut");
		return NULL;
	}
	struct fl_pc *pc = expr(&p);
	if (pc) {
		skip_ws(&p);
		if (p.i < p.len) {
			err(&p, p.i, "join pointcuts with AND, OR or NOT",
			    "unexpected %s after the pointcut", tok_text(&p, p.i));
			pc = NULL;
		}
	}
	return p.failed ? NULL : pc;
}

static void pc_print(struct fl_buf *b, const struct fl_pc *pc, int prec)
{
	switch (pc->kind) {
	case FL_PC_AND:
	case FL_PC_OR: {
		int mine = pc->kind == FL_PC_OR ? 1 : 2;
		if (mine < prec)
			fl_buf_putc(b, '(');
		pc_print(b, pc->l, mine);
		fl_buf_puts(b, pc->kind == FL_PC_OR ? " OR " : " AND ");
		pc_print(b, pc->r, mine + 1);
		if (mine < prec)
			fl_buf_putc(b, ')');
		break;
	}
	case FL_PC_NOT:
		fl_buf_puts(b, "NOT ");
		pc_print(b, pc->l, 3);
		break;
	case FL_PC_ACCESS:
		fl_buf_printf(b, "access(%s.%s)", pc->a, pc->b);
		break;
	case FL_PC_WITHIN_FUNCTION:
	case FL_PC_WITHIN_FILE:
	case FL_PC_CALL:
	case FL_PC_RETURN:
	case FL_PC_TRACEPOINT: {
		static const char *const names[] = {
			[FL_PC_WITHIN_FUNCTION] = "within_function",
			[FL_PC_WITHIN_FILE] = "within_file",
			[FL_PC_CALL] = "call", [FL_PC_RETURN] = "return",
			[FL_PC_TRACEPOINT] = "tracepoint",
		};
		fl_buf_printf(b, "%s(%s%s%s)", names[pc->kind], pc->a,
			      pc->dom ? "@" : "", pc->dom ? pc->dom : "");
		break;
	}
	case FL_PC_TARGET:
		fl_buf_printf(b, "target(%s)", pc->a);
		break;
	case FL_PC_LOCAL_VAR:
		fl_buf_printf(b, "local_var(%s, %s)", pc->a, pc->b);
		break;
	case FL_PC_XFLOW:
		fl_buf_printf(b, "xflow(%s, %s%s%s)", pc->a, pc->b, pc->c ? ", " : "",
			      pc->c ? pc->c : "");
		break;
	}
}

void fl_pc_print(struct fl_buf *b, const struct fl_pc *pc)
{
	pc_print(b, pc, 0);
}
