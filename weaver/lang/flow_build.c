/*
 * Pass 1: the element tree of a flow file → xflow definitions and advice.
 *
 * Checks what XML itself cannot: which elements go where, their attributes,
 * attribute values, and <include>.  Each element's rules are one row of
 * elem_rules[]; unknown elements, unknown or missing attributes all get a
 * message naming what would be accepted there.
 */
#include "weaver/lang/advice.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "xflow/file.h"

#define MAX_FILE_SIZE (64u << 20)

struct elem_rule {
	const char *name;
	const char *required[4];
	const char *optional[4];
	const char *example;
};

static const struct elem_rule elem_rules[] = {
	{ "flows", { NULL }, { NULL }, "<flows> ... </flows>" },
	/* The paper names no root; <aspects> is the natural guess, and means
	 * the same (xflow(5)). */
	{ "aspects", { NULL }, { NULL }, "<aspects> ... </aspects>" },
	{ "advice", { NULL }, { NULL }, "<advice><pointcut>...</pointcut><before>...</before></advice>" },
	{ "aspect", { NULL }, { NULL }, "<aspect><pointcut>...</pointcut><before>...</before></aspect>" },
	{ "pointcut", { NULL }, { NULL }, "<pointcut>access(sk_buff.%)</pointcut>" },
	{ "before", { NULL }, { NULL }, "<before>...</before>" },
	{ "after", { NULL }, { NULL }, "<after>...</after>" },
	{ "xflow", { "name" }, { NULL }, "<xflow name=\"netflow\">" },
	/* notify is known on <quit> too, so that it is refused there with
	 * the reason rather than as an unknown attribute (point_notify). */
	{ "start", { NULL }, { "notify" }, "<start><pointcut>...</pointcut></start>" },
	{ "transit", { NULL }, { "notify" }, "<transit><pointcut>...</pointcut><move from=\"skb\" to=\"n\"/></transit>" },
	{ "quit", { NULL }, { "notify" }, "<quit><pointcut>...</pointcut></quit>" },
	{ "select", { "local_var" }, { NULL }, "<select local_var=\"data\"/>" },
	{ "action", { NULL }, { NULL }, "<action>...</action>" },
	{ "move", { "from", "to" }, { NULL }, "<move from=\"skb\" to=\"n\"/>" },
	{ "copy", { "from", "to" }, { NULL }, "<copy from=\"skb\" to=\"n\"/>" },
	{ "split", { "from", "to" }, { NULL }, "<split from=\"skb\" to=\"seg\"/>" },
	{ "xin_move", { "name", "from", "to" }, { NULL }, "<xin_move name=\"netin\" from=\"skb\" to=\"tx\"/>" },
	{ "xin_copy", { "name", "from", "to" }, { NULL }, "<xin_copy name=\"netin\" from=\"skb\" to=\"tx\"/>" },
	{ "xout_move", { "name", "from", "to" }, { NULL }, "<xout_move name=\"netin\" from=\"txp\" to=\"skb\"/>" },
	{ "xout_copy", { "name", "from", "to" }, { NULL }, "<xout_copy name=\"netin\" from=\"txp\" to=\"skb\"/>" },
	{ "field", { "name", "offset", "size" }, { NULL }, "<field name=\"flags\" offset=\"4\" size=\"12\"/>" },
	{ "key", { "member" }, { "bits" }, "<key member=\"gref\" bits=\"32\"/>" },
	{ "cast", { "var", "struct" }, { NULL }, "<cast var=\"data\" struct=\"xennet_gnttab_make_txreq\"/>" },
	{ "sender", { "domid" }, { NULL }, "<sender domid=\"queue->vif->domid\"/>" },
	{ "include", { "file" }, { NULL }, "<include file=\"netflow.xml\"/>" },
};

struct build {
	struct xflow_unit *u;
	int depth;               /* include depth */
};

static const struct elem_rule *rule_of(const char *name)
{
	for (size_t i = 0; i < sizeof(elem_rules) / sizeof(elem_rules[0]); i++)
		if (strcmp(elem_rules[i].name, name) == 0)
			return &elem_rules[i];
	return NULL;
}

bool fl_ident_ok(const char *s)
{
	if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
		return false;
	for (s++; *s; s++)
		if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9')))
			return false;
	return true;
}

/* Check @n's attributes against its rule; false if a required one is missing. */
static bool check_attrs(struct build *B, const struct fl_xnode *n)
{
	struct fl_diag *d = &B->u->diag;
	const struct elem_rule *r = rule_of(n->name);
	bool ok = true;
	for (size_t i = 0; i < n->nattrs; i++) {
		const struct fl_xattr *a = &n->attrs[i];
		bool known = false;
		for (int k = 0; k < 4; k++)
			if ((r->required[k] && strcmp(r->required[k], a->name) == 0) ||
			    (r->optional[k] && strcmp(r->optional[k], a->name) == 0))
				known = true;
		if (!known) {
			char *hint = r->required[0]
				? fl_arena_printf(&B->u->arena, "write %s", r->example)
				: fl_arena_printf(&B->u->arena, "<%s> takes no attributes", n->name);
			fl_error(d, a->loc, hint, "unknown attribute '%s' on <%s>", a->name, n->name);
		}
	}
	for (int k = 0; k < 4 && r->required[k]; k++) {
		if (!fl_xnode_attr(n, r->required[k])) {
			fl_error(d, n->loc, fl_arena_printf(&B->u->arena, "write %s", r->example),
				 "<%s> needs a '%s' attribute", n->name, r->required[k]);
			ok = false;
		}
	}
	return ok;
}

/* Text outside the text-bearing elements is a mistake (usually code put in
 * the wrong element). */
static void check_no_text(struct build *B, const struct fl_xnode *n)
{
	for (size_t i = 0; i < n->tlen; i++) {
		char c = n->text[i];
		if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
			fl_error(&B->u->diag, fl_xnode_text_loc(n, i, 1),
				 "text belongs in <pointcut>, <before>, <after> or <action>",
				 "unexpected text inside <%s>", n->name);
			return;
		}
	}
}

static void unknown_child(struct build *B, const struct fl_xnode *parent,
			  const struct fl_xnode *kid, const char *allowed)
{
	const char *hint = fl_arena_printf(&B->u->arena, "<%s> may hold %s", parent->name, allowed);
	if (!rule_of(kid->name))
		fl_error(&B->u->diag, kid->loc, hint, "unknown element <%s>", kid->name);
	else
		fl_error(&B->u->diag, kid->loc, hint, "<%s> is not allowed inside <%s>",
			 kid->name, parent->name);
}

/* Is @s a word of the advice language (if, int, u8, while ...)?  Names
 * from attributes are spliced into generated advice code, so they must lex
 * as plain identifiers there. */
static bool is_keyword(const char *s)
{
	struct fl_code code = { .text = s, .len = strlen(s) };
	struct fl_lexer lx;
	fl_lex_init(&lx, &code);
	struct fl_tok t = fl_lex_next(&lx);
	return t.kind != FL_T_IDENT || t.len != code.len;
}

static const char *ident_attr(struct build *B, const struct fl_xnode *n, const char *name,
			      struct fl_loc *loc)
{
	const struct fl_xattr *a = fl_xnode_attr(n, name);
	if (!a)
		return NULL;
	*loc = a->vloc;
	if (!fl_ident_ok(a->value)) {
		fl_error(&B->u->diag, a->vloc, "names are C identifiers: letters, digits and _",
			 "'%s' is not a valid name for %s", a->value, name);
		return NULL;
	}
	if (is_keyword(a->value)) {
		fl_error(&B->u->diag, a->vloc, "rename it; C keywords and type names cannot name things here",
			 "'%s' is a keyword of the advice language", a->value);
		return NULL;
	}
	return a->value;
}

static bool uint_attr(struct build *B, const struct fl_xnode *n, const char *name,
		      unsigned *out, struct fl_loc *loc)
{
	const struct fl_xattr *a = fl_xnode_attr(n, name);
	if (!a)
		return false;
	*loc = a->vloc;
	char *end;
	errno = 0;
	unsigned long v = strtoul(a->value, &end, 0);
	if (errno || end == a->value || *end || a->value[0] == '-' || v > 1024) {
		fl_error(&B->u->diag, a->vloc, "write a bit count such as 4",
			 "'%s' is not a valid %s", a->value, name);
		return false;
	}
	*out = (unsigned)v;
	return true;
}

/* One part of a chain between arrows: NAME, or, after the first,
 * NAME[INDEX] with ".member"s after it (the element of an embedded array,
 * and members embedded in it): does it lex so?  Sets *@indexed. */
static bool chain_part_ok(const char *part, bool *indexed)
{
	const char *lb = strchr(part, '[');
	*indexed = lb != NULL;
	if (!lb)
		return fl_ident_ok(part);
	char buf[128];
	const char *rb = strchr(lb, ']');
	size_t n = (size_t)(lb - part);
	if (!rb || n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, part, n);
	buf[n] = 0;
	if (!fl_ident_ok(buf))
		return false;
	n = (size_t)(rb - lb - 1);
	if (n == 0 || n >= sizeof(buf))
		return false;
	memcpy(buf, lb + 1, n);
	buf[n] = 0;
	if (!fl_ident_ok(buf))
		return false;
	for (const char *m = rb + 1; *m;) {
		if (*m != '.')
			return false;
		const char *e = strchr(m + 1, '.');
		n = e ? (size_t)(e - m - 1) : strlen(m + 1);
		if (n == 0 || n >= sizeof(buf))
			return false;
		memcpy(buf, m + 1, n);
		buf[n] = 0;
		if (!fl_ident_ok(buf))
			return false;
		m += n + 1;
	}
	return true;
}

/* A variable bound by the pointcut, or a member chain from one
 * ("info->tx", at most FL_MAX_DEREF arrows, and at most one embedded
 * array indexed by a bound variable, "q->a[i].m"): spliced into generated
 * code, so each part must lex as plain identifiers. */
static const char *path_attr(struct build *B, const struct fl_xnode *n, const char *name, struct fl_loc *loc)
{
	const struct fl_xattr *a = fl_xnode_attr(n, name);
	if (!a)
		return NULL;
	*loc = a->vloc;
	const char *s = a->value;
	unsigned arrows = 0, indexes = 0;
	for (;;) {
		const char *e = strstr(s, "->");
		size_t len = e ? (size_t)(e - s) : strlen(s);
		char part[128];
		bool ok = len > 0 && len < sizeof(part), indexed = false;
		if (ok) {
			memcpy(part, s, len);
			part[len] = 0;
			ok = chain_part_ok(part, &indexed);
		}
		if (ok && indexed) {
			/* The index becomes a variable of the advice. */
			const char *lb = strchr(part, '['), *rb = strchr(part, ']');
			memmove(part, lb + 1, (size_t)(rb - lb - 1));
			part[rb - lb - 1] = 0;
		}
		if (ok && is_keyword(part)) {
			fl_error(&B->u->diag, a->vloc, "rename it; C keywords and type names cannot name things here",
				 "'%s' is a keyword of the advice language", part);
			return NULL;
		}
		if (!ok) {
			fl_error(&B->u->diag, a->vloc,
				 "write a bound variable or a member chain such as info->tx or q->ring[idx].req",
				 "'%s' is not a variable or member chain for %s", a->value, name);
			return NULL;
		}
		if (indexed && s == a->value) {
			fl_error(&B->u->diag, a->vloc, "index an array embedded in a struct: v->member[i]",
				 "'%s' indexes a variable, not a struct's array member", a->value);
			return NULL;
		}
		if (indexed && ++indexes > 1) {
			fl_error(&B->u->diag, a->vloc, "reach the second array through a bound variable of its own",
				 "'%s' indexes more than one array", a->value);
			return NULL;
		}
		if (!e)
			break;
		s = e + 2;
		arrows++;
	}
	if (arrows > FL_MAX_DEREF) {
		fl_error(&B->u->diag, a->vloc, fl_arena_printf(&B->u->arena, "at most %u '->' per chain", FL_MAX_DEREF),
			 "'%s' follows %u pointers", a->value, arrows);
		return NULL;
	}
	return a->value;
}

/* A <pointcut> child, parsed, or NULL after an error. */
static struct fl_pc *pointcut_of(struct build *B, const struct fl_xnode *n,
				 const struct fl_xnode *pcn)
{
	if (!pcn) {
		fl_error(&B->u->diag, n->loc, "add <pointcut>...</pointcut> to say where it applies",
			 "<%s> has no <pointcut>", n->name);
		return NULL;
	}
	check_attrs(B, pcn);
	for (size_t i = 0; i < pcn->nkids; i++)
		unknown_child(B, pcn, pcn->kids[i], "only pointcut text");
	return fl_pointcut_parse(B->u, pcn);
}

static void code_element(struct build *B, const struct fl_xnode *n)
{
	check_attrs(B, n);
	for (size_t i = 0; i < n->nkids; i++)
		unknown_child(B, n, n->kids[i], "only advice code (write < as &lt;)");
}

static struct fl_advice *new_advice(struct build *B, const struct fl_xnode *n,
				    struct fl_pc *pc, const struct fl_xnode *pcn,
				    const struct fl_xnode *code, enum fl_when when)
{
	struct fl_advice *a = fl_arena_alloc(&B->u->arena, sizeof(*a));
	a->loc = n->loc;
	a->origin = FL_ORIGIN_USER;
	a->when = when;
	a->pc = pc;
	a->pc_node = pcn;
	a->code.text = code->text;
	a->code.len = code->tlen;
	a->code.node = code;
	a->after_store_field = -1;
	return a;
}

static void build_advice(struct build *B, const struct fl_xnode *n)
{
	check_attrs(B, n);
	check_no_text(B, n);
	const struct fl_xnode *pcn = NULL, *codes[8];
	size_t ncodes = 0;
	for (size_t i = 0; i < n->nkids; i++) {
		const struct fl_xnode *k = n->kids[i];
		if (strcmp(k->name, "pointcut") == 0) {
			if (pcn)
				fl_error(&B->u->diag, k->loc, "combine them with AND or OR",
					 "<%s> has more than one <pointcut>", n->name);
			else
				pcn = k;
		} else if (strcmp(k->name, "before") == 0 || strcmp(k->name, "after") == 0) {
			code_element(B, k);
			if (ncodes < 8)
				codes[ncodes++] = k;
		} else {
			unknown_child(B, n, k, "<pointcut>, <before> and <after>");
		}
	}
	struct fl_pc *pc = pointcut_of(B, n, pcn);
	if (ncodes == 0) {
		fl_error(&B->u->diag, n->loc, "add <before>...</before> or <after>...</after>",
			 "<%s> has no <before> or <after> code", n->name);
		return;
	}
	for (size_t i = 0; i < ncodes; i++) {
		struct fl_advice *a = new_advice(B, n, pc, pcn, codes[i],
						 codes[i]->name[0] == 'a' ? FL_AFTER : FL_BEFORE);
		if (!pc)
			a->bad = true;
		*B->u->user_tail = a;
		B->u->user_tail = &a->next;
	}
}

static bool is_xin(const struct fl_xop *op)
{
	return op && (op->kind == FL_X_XIN_MOVE || op->kind == FL_X_XIN_COPY);
}

/* One <key member="m" bits="n"/>: appended to the packed key.  A lone key
 * may leave bits out (the whole member); several must each say how many of
 * their low bits they give, and those fit in the key's 64. */
static void key_of(struct build *B, struct fl_xop *op, const struct fl_xnode *f)
{
	struct fl_diag *d = &B->u->diag;
	static const char *const kname[] = { [FL_X_XIN_MOVE] = "xin_move", [FL_X_XIN_COPY] = "xin_copy",
					     [FL_X_XOUT_MOVE] = "xout_move", [FL_X_XOUT_COPY] = "xout_copy" };
	const char *xin = op->kind <= FL_X_XOUT_COPY && kname[op->kind] ? kname[op->kind] : "?";
	if (op->nkeys == FL_MAX_KEYS) {
		fl_error(d, f->loc, fl_arena_printf(&B->u->arena, "pack at most %u members into one key", FL_MAX_KEYS),
			 "<%s> has more than %u <key>s", xin, FL_MAX_KEYS);
		return;
	}
	struct fl_xkey k = { 0 };
	k.loc = f->loc;
	k.member = ident_attr(B, f, "member", &k.loc);
	if (!k.member)
		return;
	if (fl_xnode_attr(f, "bits")) {
		if (!uint_attr(B, f, "bits", &k.bits, &k.bits_loc))
			return;
		if (k.bits == 0 || k.bits > 64) {
			fl_error(d, k.bits_loc, "a key member gives 1 to 64 of its low bits",
				 "bits=\"%u\" is not 1..64", k.bits);
			return;
		}
	}
	op->keys[op->nkeys++] = k;
	op->key = op->keys[0].member;
	op->key_loc = op->keys[0].loc;
	op->has_key = true;
	unsigned total = 0;
	for (size_t i = 0; i < op->nkeys; i++) {
		if (op->nkeys > 1 && !op->keys[i].bits) {
			fl_error(d, op->keys[i].loc, "write bits=\"N\" on each <key> of a composite key",
				 "<key member=\"%s\"> is one of several and says no bits", op->keys[i].member);
			op->has_key = false;
			return;
		}
		total += op->keys[i].bits;
	}
	if (total > 64) {
		fl_error(d, k.bits_loc, "the members' bits must fit the record's 64-bit key: make them add up to 64 or less",
			 "the <key>s of <%s> add up to %u bits", xin, total);
		op->has_key = false;
	}
}

static void field_of(struct build *B, struct fl_xop *op, const struct fl_xnode *f)
{
	struct fl_diag *d = &B->u->diag;
	op->carrier_seen = true;
	if (!check_attrs(B, f))
		return;
	if (strcmp(f->name, "field") == 0 && op->nkeys) {
		fl_error(d, f->loc, "carry the id either in header bits or by a key",
			 "<%s> has both <key> and <field>", op->kind == FL_X_XIN_MOVE ? "xin_move" : "xin_copy");
		return;
	}
	for (size_t i = 0; i < f->nkids; i++)
		unknown_child(B, f, f->kids[i], "nothing");
	if (op->has_field) {
		fl_error(d, f->loc, "one <field>, or <key>s, per <xin_...>",
			 "<%s> has more than one <field> or <key>", op->kind == FL_X_XIN_MOVE ? "xin_move" : "xin_copy");
		return;
	}
	if (strcmp(f->name, "key") == 0) {
		key_of(B, op, f);
		return;
	}
	op->field = ident_attr(B, f, "name", &op->field_loc);
	bool ok = op->field && uint_attr(B, f, "offset", &op->offset, &op->offset_loc) &&
		  uint_attr(B, f, "size", &op->size, &op->size_loc);
	if (!ok)
		return;
	if (op->size == 0) {
		fl_error(d, op->size_loc, "carry at least one bit of the flow id",
			 "field size is 0");
		return;
	}
	if (op->offset + op->size > 64) {
		fl_error(d, op->size_loc,
			 fl_arena_printf(&B->u->arena, "a header field is at most 64 bits: make offset + size <= 64 (e.g. size=\"%u\")",
					 op->offset < 64 ? 64 - op->offset : 1),
			 "field bits %u..%u run past 64 bits", op->offset, op->offset + op->size - 1);
		return;
	}
	op->has_field = true;
	if (op->size < 48)
		fl_warning(d, FL_W_TRUNCATION, op->size_loc,
			   "the monitor links the cut ids by time, as the paper does; a <key> carries whole ids",
			   "only %u of a flow id's 48 bits fit in the field", op->size);
}

static const struct { const char *name; enum fl_xop_kind kind; } xop_names[] = {
	{ "move", FL_X_MOVE }, { "copy", FL_X_COPY },
	{ "xin_move", FL_X_XIN_MOVE }, { "xin_copy", FL_X_XIN_COPY },
	{ "xout_move", FL_X_XOUT_MOVE }, { "xout_copy", FL_X_XOUT_COPY },
	{ "split", FL_X_SPLIT },
};

static struct fl_xop *build_xop(struct build *B, struct fl_xflow *f, const struct fl_xnode *k,
				enum fl_xop_kind kind)
{
	if (!check_attrs(B, k))
		return NULL;
	struct fl_xop *op = fl_arena_alloc(&B->u->arena, sizeof(*op));
	op->kind = kind;
	op->loc = k->loc;
	op->flow = f;
	op->from = path_attr(B, k, "from", &op->from_loc);
	op->to = path_attr(B, k, "to", &op->to_loc);
	if (fl_xnode_attr(k, "name"))
		op->name = ident_attr(B, k, "name", &op->name_loc);
	check_no_text(B, k);
	for (size_t i = 0; i < k->nkids; i++) {
		const struct fl_xnode *c = k->kids[i];
		bool xout = kind == FL_X_XOUT_MOVE || kind == FL_X_XOUT_COPY;
		if (is_xin(op) && (strcmp(c->name, "field") == 0 || strcmp(c->name, "key") == 0)) {
			field_of(B, op, c);
		} else if (xout && strcmp(c->name, "key") == 0) {
			/* The receiving side's names for the xin's key members. */
			if (check_attrs(B, c))
				key_of(B, op, c);
		} else if (xout && strcmp(c->name, "sender") == 0) {
			if (check_attrs(B, c)) {
				if (op->sender)
					fl_error(&B->u->diag, c->loc, "one <sender> per <xout_...>",
						 "<%s> has more than one <sender>", k->name);
				op->sender = path_attr(B, c, "domid", &op->sender_loc);
			}
		} else {
			unknown_child(B, k, c, is_xin(op) ? "<field> or <key>" : xout ? "<key> and <sender>" : "nothing");
		}
	}
	if (!op->from || !op->to || (rule_of(k->name)->required[2] && !op->name))
		return NULL;
	/* A keyed receiving side may key the request itself: the handoff
	 * then ends where the receiver is done with it (checked when the
	 * xout meets its xin). */
	if (strcmp(op->from, op->to) == 0 && kind != FL_X_XOUT_MOVE && kind != FL_X_XOUT_COPY)
		fl_error(&B->u->diag, op->to_loc, "name the variable the id moves to",
			 "'from' and 'to' are the same variable '%s'", op->from);
	return op;
}

/* The notify attribute of point @n: true for notify="yes".  A hop begins
 * at a <start> or a <transit>; a <quit> ends its flow, so no hop begins
 * there to cross at it, and notify is refused. */
static bool point_notify(struct build *B, const struct fl_xnode *n, enum fl_xpoint_kind kind)
{
	const struct fl_xattr *a = fl_xnode_attr(n, "notify");
	if (!a)
		return false;
	if (strcmp(a->value, "yes") != 0 && strcmp(a->value, "no") != 0) {
		fl_error(&B->u->diag, a->vloc, "write notify=\"yes\" where the domain notifies the next one, or leave it out",
			 "'%s' is not a valid notify (yes or no)", a->value);
		return false;
	}
	if (kind == FL_XP_QUIT && strcmp(a->value, "yes") == 0) {
		fl_error(&B->u->diag, a->loc,
			 "put notify=\"yes\" on the <start> or <transit> where the domain notifies the next one",
			 "notify on a <quit>: the flow ends there, so no hop begins there to cross");
		return false;
	}
	return strcmp(a->value, "yes") == 0;
}

static void build_point(struct build *B, struct fl_xflow *f, const struct fl_xnode *n,
			enum fl_xpoint_kind kind)
{
	struct fl_diag *d = &B->u->diag;
	check_attrs(B, n);
	check_no_text(B, n);
	struct fl_xpoint *p = fl_arena_alloc(&B->u->arena, sizeof(*p));
	p->kind = kind;
	p->loc = n->loc;
	p->notifies = point_notify(B, n, kind);
	const struct fl_xnode *pcn = NULL;
	struct fl_xop *last = NULL;
	size_t op_elems = 0;   /* valid or not: no "says nothing" after an error */
	const char *allowed = kind == FL_XP_TRANSIT
		? "<pointcut>, <move>, <copy>, <xin_move>, <xin_copy>, <field>, <xout_move>, <xout_copy>, <split>, <select>, <cast> and <action>"
		: "<pointcut>, <select>, <cast> and <action>";
	for (size_t i = 0; i < n->nkids; i++) {
		const struct fl_xnode *k = n->kids[i];
		const char *name = k->name;
		int xk = -1;
		for (size_t j = 0; j < sizeof(xop_names) / sizeof(xop_names[0]); j++)
			if (strcmp(name, xop_names[j].name) == 0)
				xk = (int)xop_names[j].kind;
		if (strcmp(name, "pointcut") == 0) {
			if (pcn)
				fl_error(d, k->loc, "combine them with AND or OR",
					 "<%s> has more than one <pointcut>", n->name);
			else
				pcn = k;
		} else if (strcmp(name, "action") == 0) {
			code_element(B, k);
			if (p->action)
				fl_error(d, k->loc, "put all the code in one <action>",
					 "<%s> has more than one <action>", n->name);
			p->action = k;
		} else if (strcmp(name, "cast") == 0) {
			struct fl_xcast c = { .loc = k->loc };
			struct fl_loc sl;
			if (check_attrs(B, k) && (c.path = path_attr(B, k, "var", &c.loc)) &&
			    (c.sname = ident_attr(B, k, "struct", &sl))) {
				for (size_t j = 0; j < p->ncasts; j++)
					if (strcmp(p->casts[j].path, c.path) == 0)
						fl_error(d, c.loc, "give each pointer one struct",
							 "'%s' is cast twice", c.path);
				FL_PUSH(&B->u->arena, p->casts, p->ncasts, p->casts_cap, c);
			}
		} else if (strcmp(name, "select") == 0) {
			if (check_attrs(B, k)) {
				if (p->select)
					fl_error(d, k->loc, "select one variable",
						 "<%s> has more than one <select>", n->name);
				p->select = path_attr(B, k, "local_var", &p->select_loc);
			}
		} else if (kind == FL_XP_TRANSIT && xk >= 0) {
			op_elems++;
			last = build_xop(B, f, k, (enum fl_xop_kind)xk);
			if (last)
				FL_PUSH(&B->u->arena, p->ops, p->nops, p->ops_cap, last);
		} else if (kind == FL_XP_TRANSIT && (strcmp(name, "field") == 0 || strcmp(name, "key") == 0)) {
			/* The paper writes <field> as the sibling after its
			 * <xin_move/>; accept that as well as a child. */
			if (is_xin(last))
				field_of(B, last, k);
			else
				fl_error(d, k->loc, "put <field> right after the <xin_move> or <xin_copy> it belongs to",
					 "<%s> does not follow an <xin_move> or <xin_copy>", name);
		} else {
			unknown_child(B, n, k, allowed);
		}
	}
	p->pc_node = pcn;
	p->pc = pointcut_of(B, n, pcn);
	/* A <transit> with a <select> and no operation says the flow passes
	 * there: the id stays where it is and the hop is recorded. */
	if (kind == FL_XP_TRANSIT && op_elems == 0 && !p->action && !p->select)
		fl_error(d, n->loc, "add <move from=\"a\" to=\"b\"/> (or copy, xin_*, xout_*, split), or <select local_var=\"v\"/> where the flow only passes",
			 "<transit> says nothing about where the flow id goes");
	if (kind == FL_XP_TRANSIT && op_elems && p->select)
		fl_error(d, p->select_loc, "drop the <select>: the operations name their variables",
			 "<select> in a <transit> marks a pass without an operation, but this one has %zu", op_elems);
	for (size_t i = 0; i < p->nops; i++) {
		struct fl_xop *op = p->ops[i];
		if (is_xin(op) && !op->has_field && !op->has_key && !op->carrier_seen)
			fl_error(d, op->loc,
				 "add <field name=\"flags\" offset=\"4\" size=\"12\"/> (free header bits) or <key member=\"id\"/> (a request id both domains see)",
				 "<%s> says neither which header bits nor which key carry the id",
				 op->kind == FL_X_XIN_MOVE ? "xin_move" : "xin_copy");
	}
	*f->tail = p;
	f->tail = &p->next;
}

static void build_xflow(struct build *B, const struct fl_xnode *n)
{
	struct xflow_unit *u = B->u;
	if (!check_attrs(B, n))
		return;
	check_no_text(B, n);
	struct fl_loc nloc;
	const char *name = ident_attr(B, n, "name", &nloc);
	if (!name)
		return;
	struct fl_xflow *f = fl_unit_flow(u, name);
	if (f) {
		unsigned line, col;
		fl_loc_linecol(f->loc, &line, &col);
		fl_error(&u->diag, nloc,
			 fl_arena_printf(&u->arena, "rename one; the first is at %s:%u:%u",
					 f->loc.src ? f->loc.src->path : "?", line, col),
			 "xflow '%s' is defined twice", name);
		return;
	}
	f = fl_arena_alloc(&u->arena, sizeof(*f));
	f->name = name;
	f->loc = nloc;
	f->index = (int)u->nflows++;
	f->tail = &f->points;
	fl_map_put(&u->arena, &u->flow_map, f->name, strlen(f->name), f);
	*u->flows_tail = f;
	u->flows_tail = &f->next;
	for (size_t i = 0; i < n->nkids; i++) {
		const struct fl_xnode *k = n->kids[i];
		if (strcmp(k->name, "start") == 0)
			build_point(B, f, k, FL_XP_START);
		else if (strcmp(k->name, "transit") == 0)
			build_point(B, f, k, FL_XP_TRANSIT);
		else if (strcmp(k->name, "quit") == 0)
			build_point(B, f, k, FL_XP_QUIT);
		else
			unknown_child(B, n, k, "<start>, <transit> and <quit>");
	}
}

static void build_include(struct build *B, const struct fl_xnode *n)
{
	struct xflow_unit *u = B->u;
	if (!check_attrs(B, n))
		return;
	const struct fl_xattr *a = fl_xnode_attr(n, "file");
	if (u->opts.no_include) {
		fl_error(&u->diag, a->vloc, "includes are disabled for this input",
			 "cannot include '%s'", a->value);
		return;
	}
	if (B->depth + 1 > FL_MAX_INCLUDE_DEPTH) {
		fl_error(&u->diag, a->vloc, "flatten the includes",
			 "includes nested deeper than %d", FL_MAX_INCLUDE_DEPTH);
		return;
	}
	/* Relative to the including file, as C's #include "..." is. */
	char *path;
	const char *self = n->loc.src->path;
	const char *slash = strrchr(self, '/');
	if (a->value[0] == '/' || !slash)
		path = fl_arena_strdup(&u->arena, a->value);
	else
		path = fl_arena_printf(&u->arena, "%.*s/%s", (int)(slash - self), self, a->value);
	fl_build_file(u, path, B->depth + 1, a->vloc);
}

static void build_top(struct build *B, const struct fl_xnode *n)
{
	const char *name = n->name;
	if (strcmp(name, "advice") == 0 || strcmp(name, "aspect") == 0)
		build_advice(B, n);
	else if (strcmp(name, "xflow") == 0)
		build_xflow(B, n);
	else if (strcmp(name, "include") == 0)
		build_include(B, n);
	else if (!rule_of(name))
		fl_error(&B->u->diag, n->loc,
			 "a flow file holds <advice>, <aspect>, <xflow> and <include>, inside one <flows> (or <aspects>) root",
			 "unknown element <%s>", name);
	else
		fl_error(&B->u->diag, n->loc,
			 "a flow file holds <advice>, <aspect>, <xflow> and <include>, inside one <flows> (or <aspects>) root",
			 "<%s> is not allowed at the top level", name);
}

int fl_build_buffer(struct xflow_unit *u, const char *path, const char *buf,
		    size_t len, int depth)
{
	struct fl_xdoc doc;
	int rc = fl_xml_load(&u->arena, &u->diag, path, buf, len, &doc);
	if (rc < 0)
		return rc;
	struct build B = { .u = u, .depth = depth };
	const struct fl_xnode *r = doc.root;
	unsigned before = u->diag.nerrors;
	if (strcmp(r->name, "flows") == 0 || strcmp(r->name, "aspects") == 0) {
		check_attrs(&B, r);
		check_no_text(&B, r);
		for (size_t i = 0; i < r->nkids; i++)
			build_top(&B, r->kids[i]);
	} else {
		build_top(&B, r);
	}
	return u->diag.nerrors > before ? -EINVAL : 0;
}

int fl_build_file(struct xflow_unit *u, const char *path, int depth, struct fl_loc from)
{
	char *real = realpath(path, NULL);
	if (real) {
		/* Each file is loaded once however often it is included, so a
		 * shared flow definition can be included from many files; a file
		 * including itself (directly or not) is then harmless too. */
		for (size_t i = 0; i < u->nfiles; i++) {
			if (strcmp(u->files[i], real) == 0) {
				free(real);
				return 0;
			}
		}
		const char *r = fl_arena_strdup(&u->arena, real);
		free(real);
		FL_PUSH(&u->arena, u->files, u->nfiles, u->files_cap, r);
	}
	char *buf = NULL, why[128];
	size_t len = 0;
	int rc = xflow_file_read(path, MAX_FILE_SIZE, &buf, &len, why, sizeof(why));
	if (rc == -ENOMEM)
		fl_oom();
	if (rc < 0) {
		fl_error(&u->diag, from, from.src ? "the path is relative to the including file" : NULL,
			 "cannot read '%s': %s", path, why);
		return rc;
	}
	rc = fl_build_buffer(u, path, buf, len, depth);
	free(buf);
	return rc;
}
