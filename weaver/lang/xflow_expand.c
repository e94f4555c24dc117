/*
 * Pass: xflow expansion, exactly as the paper's section 4.1 shows.
 *
 *   <start>   → Figure 5: pointcut AND target(R)       register_flowid(F, R, get_new_flowid())
 *               (<select local_var="x"/>: AND local_var(x, R), key *(void**)R),
 *               guarded so that an R that has a live id keeps it (below)
 *   <quit>    → the same with remove_flowid(F, R)
 *   <move>    → Figure 6: AND local_var(from, R1) AND local_var(to, R2); re-key
 *   <copy>    → Figure 6 without the remove_flowid
 *   <xin_*>   → Figure 7, corrected: the id's low `size` bits go into bits
 *               offset.. of the header field, the other bits of the field kept
 *   <xout_*>  → the inverse; xout_move clears the bits again
 *   xflow(F, v, id) in an advice's pointcut → Figure 8's guard
 *
 * plus the two designs the paper leaves as future work: <xin_*> with <key>
 * (a request id both domains see, no free header bits needed) and <split>.
 * Generated code is advice source text, parsed by the same parser as user
 * code, so the dump shows exactly what is compiled; its locations are the
 * elements it came from.  xflow-derived advice is woven before general
 * advice (the paper's rule), in definition order.
 */
#include "weaver/lang/unit.h"

#include <string.h>

#include "xflow/record.h"

/* Does the pointcut (an AND tree) bind or mention @name anywhere? */
static bool pc_mentions(const struct fl_pc *pc, const char *name)
{
	if (!pc)
		return false;
	if (pc->kind == FL_PC_AND || pc->kind == FL_PC_OR || pc->kind == FL_PC_NOT)
		return pc_mentions(pc->l, name) || pc_mentions(pc->r, name);
	return (pc->a && strcmp(pc->a, name) == 0) || (pc->b && strcmp(pc->b, name) == 0) ||
	       (pc->c && strcmp(pc->c, name) == 0);
}

/* A fresh variable name that the pointcut does not use; the paper's
 * "random string that cannot clash". */
static const char *gensym(struct xflow_unit *u, const struct fl_pc *pc, const char *stem,
			  const char *avoid1, const char *avoid2)
{
	for (;;) {
		const char *n = fl_arena_printf(&u->arena, "%s%u", stem, ++u->gensym);
		if (!pc_mentions(pc, n) && (!avoid1 || strcmp(n, avoid1)) && (!avoid2 || strcmp(n, avoid2)))
			return n;
	}
}

static struct fl_pc *pc_new(struct xflow_unit *u, enum fl_pc_kind k, struct fl_loc loc)
{
	struct fl_pc *pc = fl_arena_alloc(&u->arena, sizeof(*pc));
	pc->kind = k;
	pc->loc = pc->aloc = pc->bloc = loc;
	pc->generated = true;
	return pc;
}

static struct fl_pc *pc_and(struct xflow_unit *u, struct fl_pc *l, struct fl_pc *r)
{
	if (!l)
		return r;
	struct fl_pc *a = pc_new(u, FL_PC_AND, r->loc);
	a->l = l;
	a->r = r;
	return a;
}

static struct fl_pc *pc_local_var(struct xflow_unit *u, struct fl_loc loc, const char *local,
				  const char *var)
{
	struct fl_pc *pc = pc_new(u, FL_PC_LOCAL_VAR, loc);
	pc->a = local;
	pc->b = var;
	return pc;
}

/* The access() conjuncts of an AND tree, up to @max. */
static size_t accesses(const struct fl_pc *pc, const struct fl_pc **out, size_t n, size_t max)
{
	if (!pc)
		return n;
	if (pc->kind == FL_PC_AND)
		return accesses(pc->r, out, accesses(pc->l, out, n, max), max);
	if (pc->kind == FL_PC_ACCESS && n < max)
		out[n++] = pc;
	return n;
}

/* The struct S of an access(S.member) conjunct, or else the struct that all
 * the access() conjuncts share. */
static const char *struct_for(const struct fl_pc *pc, const char *member)
{
	const struct fl_pc *acc[16];
	size_t n = accesses(pc, acc, 0, 16);
	for (size_t i = 0; i < n; i++)
		if (strcmp(acc[i]->b, member) == 0)
			return acc[i]->a;
	for (size_t i = 1; i < n; i++)
		if (strcmp(acc[i]->a, acc[0]->a) != 0)
			return NULL;
	return n ? acc[0]->a : NULL;
}

/* Does @pc name an instance target() can bind (an access(), or a
 * tracepoint's first argument)? */
static bool names_instance(const struct fl_pc *pc)
{
	if (!pc)
		return false;
	if (pc->kind == FL_PC_ACCESS || pc->kind == FL_PC_TRACEPOINT)
		return true;
	return names_instance(pc->l) || names_instance(pc->r);
}

static struct fl_advice *gen(struct xflow_unit *u, struct fl_xflow *f, const struct fl_xpoint *p,
			     struct fl_loc loc, struct fl_pc *pc, const char *text,
			     unsigned rec_flags)
{
	struct fl_advice *a = fl_arena_alloc(&u->arena, sizeof(*a));
	a->loc = loc;
	a->origin = p->kind == FL_XP_START ? FL_ORIGIN_START
		  : p->kind == FL_XP_QUIT ? FL_ORIGIN_QUIT : FL_ORIGIN_TRANSIT;
	a->when = FL_BEFORE;
	a->flow = f;
	a->pc = pc;
	a->pc_node = p->pc_node;
	a->code.text = fl_arena_strdup(&u->arena, text);
	a->code.len = strlen(text);
	a->code.gen_loc = loc;
	a->rec_flags = rec_flags;
	a->after_store_field = -1;
	/* Every advice of a notify point marks its site: any record written
	 * there is the moment the hop beginning at it crosses. */
	a->notifies = p->notifies;
	bool ok;
	a->body = fl_advice_parse(u, &a->code, &ok);
	if (!ok)
		a->bad = true;
	return a;
}

static void append(struct fl_advice ***tail, struct fl_advice *a)
{
	**tail = a;
	*tail = &a->next;
}

static bool is_chain(const char *path);
static const char *chain_key(struct xflow_unit *u, const struct fl_xpoint *p, struct fl_loc loc, const char *path,
			     struct fl_pc **pc, struct fl_buf *b);

/* <start> and <quit>: Figure 5. */
static struct fl_advice *expand_end(struct xflow_unit *u, struct fl_xflow *f,
				    const struct fl_xpoint *p)
{
	bool start = p->kind == FL_XP_START;
	const char *r = gensym(u, p->pc, "random_str", p->select, NULL);
	struct fl_pc *extra;
	const char *key;
	if (is_chain(p->select)) {
		/* The object a member chain names (a keyed handoff's request
		 * keyed as itself): its root and index bound, read once. */
		struct fl_pc *pc = p->pc;
		struct fl_buf b = { 0 };
		key = chain_key(u, p, p->select_loc, p->select, &pc, &b);
		if (!key) {
			fl_buf_free(&b);
			return NULL;
		}
		fl_buf_printf(&b, start ? "if (get_flowid(%s, %s) == 0) {\n    register_flowid(%s, %s,\n"
					  "        get_new_flowid());\n}\n" : "remove_flowid(%s, %s);\n",
			      f->name, key, f->name, key);
		struct fl_advice *a = gen(u, f, p, p->loc, pc, b.s, start ? XFLOW_REC_START : XFLOW_REC_QUIT);
		fl_buf_free(&b);
		return a;
	}
	if (p->select) {
		extra = pc_local_var(u, p->select_loc, p->select, r);
		key = fl_arena_printf(&u->arena, "*(void**)%s", r);
	} else if (!names_instance(p->pc)) {
		/* Said here, in the words of what was written: the check of the
		 * expanded advice would name a target() nobody wrote. */
		fl_error(&u->diag, p->loc,
			 fl_arena_printf(&u->arena, "add AND access(STRUCT.member) for the object it touches, or "
						    "<select local_var=\"v\"/> for a pointer variable there"),
			 "<%s> of xflow %s needs an object to key the flow by: its pointcut has no access()",
			 start ? "start" : "quit", f->name);
		return NULL;
	} else {
		extra = pc_new(u, FL_PC_TARGET, p->loc);
		extra->a = r;
		key = r;
	}
	/* A start pointcut often matches several instructions on one path
	 * (every access of the member in the allocator).  Figure 5 as printed
	 * would give the object a new id at each: the earlier flows orphaned,
	 * waiting to expire, and every object counted once per instruction.
	 * An object with a live id keeps it (the interpreter then writes no
	 * START marker: the flow was not created here). */
	const char *text = start
		? fl_arena_printf(&u->arena, "if (get_flowid(%s, %s) == 0) {\n    register_flowid(%s, %s,\n"
					     "        get_new_flowid());\n}\n", f->name, key, f->name, key)
		: fl_arena_printf(&u->arena, "remove_flowid(%s, %s);\n", f->name, key);
	return gen(u, f, p, p->loc, pc_and(u, p->pc, extra), text,
		   start ? XFLOW_REC_START : XFLOW_REC_QUIT);
}

/* A <transit> with only a <select>: the flow passes here.  The id stays
 * under the selected pointer; the get makes the run's TRANSIT marker. */
static struct fl_advice *expand_pass(struct xflow_unit *u, struct fl_xflow *f, const struct fl_xpoint *p)
{
	if (is_chain(p->select)) {
		struct fl_pc *pc = p->pc;
		struct fl_buf b = { 0 };
		const char *key = chain_key(u, p, p->select_loc, p->select, &pc, &b);
		struct fl_advice *a = NULL;
		if (key) {
			fl_buf_printf(&b, "int xf_id = get_flowid(%s, %s);\n", f->name, key);
			a = gen(u, f, p, p->loc, pc, b.s, XFLOW_REC_TRANSIT);
		}
		fl_buf_free(&b);
		return a;
	}
	const char *r = gensym(u, p->pc, "random_str", p->select, NULL);
	struct fl_pc *extra = pc_local_var(u, p->select_loc, p->select, r);
	const char *text = fl_arena_printf(&u->arena, "int xf_id = get_flowid(%s, *(void**)%s);\n", f->name, r);
	return gen(u, f, p, p->loc, pc_and(u, p->pc, extra), text, XFLOW_REC_TRANSIT);
}

static const char *id_name(const struct fl_xop *op)
{
	return strcmp(op->from, "id") && strcmp(op->to, "id") ? "id" : "xf_id";
}

/* The struct whose @member carries the id; reports when it cannot tell. */
static const char *carrier_struct(struct xflow_unit *u, const struct fl_xop *op,
				  const struct fl_xpoint *p, const struct fl_xpoint *xin_p,
				  const char *member)
{
	const char *s = struct_for(p->pc, member);
	if (!s && xin_p)
		s = struct_for(xin_p->pc, member);
	if (!s)
		fl_error(&u->diag, op->loc,
			 fl_arena_printf(&u->arena, "add access(STRUCT.%s) to the pointcut, e.g. access(netif_tx_request.%s)",
					 member, member),
			 "cannot tell which struct '%s' is a member of", member);
	return s;
}

/* ---- member chains (info->tx) and packed keys ---------------------------- */

static bool is_chain(const char *path)
{
	return path && (strstr(path, "->") != NULL || strchr(path, '[') != NULL);
}

/* The variable a path indexes an array by: "idx" of "q->a[idx].m", or
 * NULL (flow_build.c let at most one index through). */
static const char *path_index(struct xflow_unit *u, const char *path)
{
	const char *lb = path ? strchr(path, '[') : NULL;
	if (!lb)
		return NULL;
	const char *rb = strchr(lb, ']');
	return rb ? fl_arena_strndup(&u->arena, lb + 1, (size_t)(rb - lb - 1)) : NULL;
}

/* The variable a path starts from: "info" of "info->tx". */
static const char *path_root(struct xflow_unit *u, const char *path)
{
	const char *e = strstr(path, "->");
	return e ? fl_arena_strndup(&u->arena, path, (size_t)(e - path)) : path;
}

/* The struct a <cast> of @p gives the pointer at path prefix @pre. */
static const char *cast_of(const struct fl_xpoint *p, const char *pre, size_t len)
{
	for (size_t i = 0; i < p->ncasts; i++)
		if (strlen(p->casts[i].path) == len && strncmp(p->casts[i].path, pre, len) == 0)
			return p->casts[i].sname;
	return NULL;
}

/* Advice text reading @path from its root variable: each pointer on the
 * way is cast to the struct its <cast> names, so that every member read
 * is a (struct, member) the plan lays out from the domain's BTF or DWARF.
 * NULL after an error naming the pointer that needs a <cast>. */
static const char *path_text(struct xflow_unit *u, const struct fl_xpoint *p, struct fl_loc loc, const char *path)
{
	const char *root = path_root(u, path);
	const char *text = root;
	for (const char *a = strstr(path, "->"); a; a = strstr(a + 2, "->")) {
		const char *S = cast_of(p, path, (size_t)(a - path));
		const char *next = strstr(a + 2, "->");
		const char *m = next ? fl_arena_strndup(&u->arena, a + 2, (size_t)(next - a - 2)) : a + 2;
		if (!S) {
			const char *pre = fl_arena_strndup(&u->arena, path, (size_t)(a - path));
			fl_error(&u->diag, loc,
				 fl_arena_printf(&u->arena, "add <cast var=\"%s\" struct=\"NAME\"/> to the <transit>", pre),
				 "cannot tell which struct '%s' points to, to read its member '%s'", pre, m);
			return NULL;
		}
		/* m[i].n: the element's address, no read; its struct and the
		 * array's length come from the domain's BTF at plan time. */
		if (strchr(m, '['))
			text = fl_arena_printf(&u->arena, "&((struct %s *)%s)->%s", S, text, m);
		else
			text = fl_arena_printf(&u->arena, "((struct %s *)%s)->%s", S, text, m);
	}
	return text;
}

/* A <select>'s member chain: its root (and index) bound by local_var()
 * in *@pc, declared in @b, and the chain read into a local whose name is
 * returned; NULL after an error. */
static const char *chain_key(struct xflow_unit *u, const struct fl_xpoint *p, struct fl_loc loc, const char *path,
			     struct fl_pc **pc, struct fl_buf *b)
{
	const char *root = path_root(u, path), *idx = path_index(u, path);
	const char *text = path_text(u, p, loc, path);
	if (!text)
		return NULL;
	if (idx && !strcmp(idx, root)) {
		fl_error(&u->diag, loc, "index by an integer variable",
			 "'%s' indexes an array and is also the start of a chain", idx);
		return NULL;
	}
	const char *r = gensym(u, p->pc, "random_str", root, idx);
	*pc = pc_and(u, *pc, pc_local_var(u, loc, root, r));
	fl_buf_printf(b, "void *%s = *(void**)%s;\n", root, r);
	if (idx) {
		r = gensym(u, p->pc, "random_str", root, idx);
		*pc = pc_and(u, *pc, pc_local_var(u, loc, idx, r));
		fl_buf_printf(b, "unsigned long %s = *(unsigned long *)%s;\n", idx, r);
	}
	const char *xo = gensym(u, p->pc, "xf_obj", root, idx);
	fl_buf_printf(b, "void *%s = %s;\n", xo, text);
	return xo;
}

/* The key of @xin read from the request @req: one member as it is, or the
 * members packed, the first <key> in the highest bits and each masked to
 * its bits, so that the key is exactly what both domains can compute. */
static const char *key_text(struct xflow_unit *u, const struct fl_xop *xin, const struct fl_xop *names,
			    const char *req)
{
	if (xin->nkeys == 1 && !xin->keys[0].bits)
		return fl_arena_printf(&u->arena, "%s->%s", req, names->keys[0].member);
	struct fl_buf b = { 0 };
	unsigned shift = 0;
	for (size_t i = xin->nkeys; i-- > 0;) {
		const struct fl_xkey *k = &names->keys[i];
		uint64_t mask = k->bits >= 64 ? UINT64_MAX : (UINT64_C(1) << k->bits) - 1;
		struct fl_buf t = { 0 };
		if (shift)
			fl_buf_printf(&t, "((%s->%s & 0x%llxULL) << %u)", req, k->member, (unsigned long long)mask, shift);
		else
			fl_buf_printf(&t, "(%s->%s & 0x%llxULL)", req, k->member, (unsigned long long)mask);
		if (b.s)
			fl_buf_printf(&t, " | %s", b.s);
		fl_buf_free(&b);
		b = t;
		shift += k->bits;
	}
	const char *r = fl_arena_strdup(&u->arena, b.s);
	fl_buf_free(&b);
	return r;
}

/* Does this keyed handoff need the chain form (below) rather than the
 * paper's plain variables? */
static bool keyed_chain_form(const struct fl_xop *op, const struct fl_xop *xin)
{
	return is_chain(op->from) || is_chain(op->to) || xin->nkeys > 1 || xin->keys[0].bits || op->sender ||
	       (op != xin && op->nkeys) || strcmp(op->from, op->to) == 0;
}

/* A keyed handoff whose object, request or sender's domain id are member
 * chains, or whose key is packed: every distinct root variable is bound
 * once, the chains are read into locals, and the rest is as for plain
 * variables.  The sending side: the object's id leaves keyed; the
 * receiving side: a new id, keyed, with the sender's domain id when a
 * <sender> gives it (STORE_HANDOFF_IN_FROM). */
static struct fl_advice *expand_keyed_chain(struct xflow_unit *u, struct fl_xflow *f, const struct fl_xpoint *p,
					    const struct fl_xop *op, const struct fl_xop *xin, const char *S)
{
	bool out = op->kind == FL_X_XIN_MOVE || op->kind == FL_X_XIN_COPY;
	bool move = op->kind == FL_X_XIN_MOVE || op->kind == FL_X_XOUT_MOVE;
	const char *obj_path = out ? op->from : op->to, *req_path = out ? op->to : op->from;
	struct fl_loc obj_loc = out ? op->from_loc : op->to_loc, req_loc = out ? op->to_loc : op->from_loc;
	const char *roots[3] = { path_root(u, obj_path), path_root(u, req_path),
				 op->sender ? path_root(u, op->sender) : NULL };
	struct fl_loc rloc[3] = { obj_loc, req_loc, op->sender_loc };
	const char *idx[3] = { path_index(u, obj_path), path_index(u, req_path),
			       op->sender ? path_index(u, op->sender) : NULL };
	const char *obj = path_text(u, p, obj_loc, obj_path);
	const char *req = path_text(u, p, req_loc, req_path);
	const char *dom = op->sender ? path_text(u, p, op->sender_loc, op->sender) : NULL;
	if (!obj || !req || (op->sender && !dom))
		return NULL;
	const char *xo = gensym(u, p->pc, "xf_obj", roots[0], roots[1]);
	const char *xr = gensym(u, p->pc, "xf_req", roots[0], roots[1]);
	const char *id = gensym(u, p->pc, "xf_id", roots[0], roots[1]);
	const char *F = f->name;
	struct fl_pc *pc = p->pc;
	struct fl_buf b = { 0 };
	for (int i = 0; i < 3; i++) {
		if (!roots[i] || (i > 0 && strcmp(roots[i], roots[0]) == 0) || (i > 1 && strcmp(roots[i], roots[1]) == 0))
			continue;
		const char *r = gensym(u, p->pc, "random_str", roots[0], roots[1]);
		pc = pc_and(u, pc, pc_local_var(u, rloc[i], roots[i], r));
		fl_buf_printf(&b, "void *%s = *(void**)%s;\n", roots[i], r);
	}
	/* An array's index: an integer argument, bound once, read whole (the
	 * kernel backend keeps the argument's own width). */
	for (int i = 0; i < 3; i++) {
		if (!idx[i] || (i > 0 && idx[0] && !strcmp(idx[i], idx[0])) ||
		    (i > 1 && idx[1] && !strcmp(idx[i], idx[1])))
			continue;
		for (int j = 0; j < 3; j++)
			if (roots[j] && !strcmp(roots[j], idx[i])) {
				fl_error(&u->diag, rloc[i], "index by an integer variable",
					 "'%s' indexes an array and is also the start of a chain", idx[i]);
				fl_buf_free(&b);
				return NULL;
			}
		const char *r = gensym(u, p->pc, "random_str", roots[0], roots[1]);
		pc = pc_and(u, pc, pc_local_var(u, rloc[i], idx[i], r));
		fl_buf_printf(&b, "unsigned long %s = *(unsigned long *)%s;\n", idx[i], r);
	}
	fl_buf_printf(&b, "void *%s = %s;\nstruct %s *%s = %s;\n", xo, obj, S, xr, req);
	const char *key = key_text(u, xin, op->nkeys ? op : xin, xr);
	unsigned rec = XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN;
	if (out) {
		fl_buf_printf(&b, "int %s = get_flowid(%s, %s);\nif (%s != 0) {\n\tSTORE_HANDOFF_OUT(%s, %s, %s);\n",
			      id, F, xo, id, F, key, id);
		if (move)
			fl_buf_printf(&b, "\tremove_flowid(%s, %s);\n", F, xo);
		fl_buf_puts(&b, "}\n");
	} else {
		fl_buf_printf(&b, "if (get_flowid(%s, %s) == 0) {\n\tint %s = get_new_flowid();\n"
			      "\tregister_flowid(%s, %s, %s);\n", F, xo, id, F, xo, id);
		if (dom)
			fl_buf_printf(&b, "\tSTORE_HANDOFF_IN_FROM(%s, %s, %s, %s);\n}\n", F, key, id, dom);
		else
			fl_buf_printf(&b, "\tSTORE_HANDOFF_IN(%s, %s, %s);\n}\n", F, key, id);
		rec |= XFLOW_REC_START;
	}
	struct fl_advice *a = gen(u, f, p, op->loc, pc, b.s, rec);
	fl_buf_free(&b);
	return a;
}

/* The struct a keyed handoff's request is: its <cast>, else the access()
 * conjunct that names the first key member. */
static const char *request_struct(struct xflow_unit *u, const struct fl_xop *op, const struct fl_xpoint *p,
				  const struct fl_xpoint *xin_p, const char *req_path, const char *member)
{
	const char *S = cast_of(p, req_path, strlen(req_path));
	return S ? S : carrier_struct(u, op, p, xin_p, member);
}

static struct fl_advice *expand_op(struct xflow_unit *u, struct fl_xflow *f,
				   const struct fl_xpoint *p, const struct fl_xop *op,
				   const struct fl_xpoint *xin_p)
{
	/* An xin without a valid <field> or <key>, and the xouts naming it,
	 * were reported when the xin was read. */
	if ((op->kind == FL_X_XIN_MOVE || op->kind == FL_X_XIN_COPY) && !op->has_field && !op->has_key)
		return NULL;
	if ((op->kind == FL_X_XOUT_MOVE || op->kind == FL_X_XOUT_COPY) &&
	    (!op->xin || (!op->xin->has_field && !op->xin->has_key)))
		return NULL;
	bool keyed = ((op->kind == FL_X_XIN_MOVE || op->kind == FL_X_XIN_COPY) && op->has_key) ||
		     ((op->kind == FL_X_XOUT_MOVE || op->kind == FL_X_XOUT_COPY) && op->xin->has_key);
	if (!keyed && (is_chain(op->from) || is_chain(op->to))) {
		/* A chain is read, never written: only a key needs one. */
		fl_error(&u->diag, is_chain(op->from) ? op->from_loc : op->to_loc,
			 "bind the object itself with local_var() or target()",
			 "a member chain names only a keyed handoff's object or request");
		return NULL;
	}
	if ((op->kind == FL_X_XOUT_MOVE || op->kind == FL_X_XOUT_COPY) && !keyed &&
	    (op->nkeys || op->sender || strcmp(op->from, op->to) == 0)) {
		fl_error(&u->diag, op->loc, "give the <xin_*> a <key member=\"...\"/>",
			 "<key>, <sender> and a request keyed as itself need a keyed <xin_*>");
		return NULL;
	}
	if (keyed && op->nkeys && (op->kind == FL_X_XOUT_MOVE || op->kind == FL_X_XOUT_COPY)) {
		bool same = op->nkeys == op->xin->nkeys;
		for (size_t i = 0; same && i < op->nkeys; i++)
			same = op->keys[i].bits == op->xin->keys[i].bits;
		if (!same) {
			fl_error(&u->diag, op->keys[0].loc,
				 "name the receiving side's member for each of the xin's <key>s, in order, with the same bits",
				 "the <key>s of <%s> do not match those of <xin_*> '%s'",
				 op->kind == FL_X_XOUT_MOVE ? "xout_move" : "xout_copy", op->name);
			return NULL;
		}
	}
	const char *r1 = gensym(u, p->pc, "random_str", op->from, op->to);
	const char *r2 = gensym(u, p->pc, "random_str", op->from, op->to);
	struct fl_pc *pc = pc_and(u, p->pc, pc_local_var(u, op->from_loc, op->from, r1));
	pc = pc_and(u, pc, pc_local_var(u, op->to_loc, op->to, r2));
	const char *F = f->name, *id = id_name(op);
	struct fl_buf b = { 0 };
	unsigned rec = XFLOW_REC_TRANSIT;
	int after_store = -1;
	bool receives = false;
	bool move = op->kind == FL_X_MOVE || op->kind == FL_X_XIN_MOVE || op->kind == FL_X_XOUT_MOVE;

	switch (op->kind) {
	case FL_X_MOVE:
	case FL_X_COPY:
		fl_buf_printf(&b, "void *%s = *(void**)%s;\nvoid *%s = *(void**)%s;\n"
			      "int %s = get_flowid(%s, %s);\nif (%s != 0) {\n"
			      "\tregister_flowid(%s, %s, %s);\n",
			      op->from, r1, op->to, r2, id, F, op->from, id, F, op->to, id);
		if (move)
			fl_buf_printf(&b, "\tremove_flowid(%s, %s);\n", F, op->from);
		fl_buf_puts(&b, "}\n");
		break;
	case FL_X_SPLIT:
	{
		/* A fragment that has a live id keeps it, as a started object
		 * does (see expand_end): the split matched again on its path. */
		const char *child = strcmp(op->from, "child") && strcmp(op->to, "child") ? "child" : "xf_child";
		fl_buf_printf(&b, "void *%s = *(void**)%s;\nvoid *%s = *(void**)%s;\n"
			      "int %s = get_flowid(%s, %s);\nif (%s != 0) {\n"
			      "\tif (get_flowid(%s, %s) == 0) {\n"
			      "\t\tint %s = get_new_flowid();\n"
			      "\t\tregister_flowid(%s, %s, %s);\n"
			      "\t\tSTORE_SPLIT(%s, %s, %s);\n\t}\n}\n",
			      op->from, r1, op->to, r2, id, F, op->from, id, F, op->to, child, F, op->to, child,
			      F, child, id);
	}
		rec |= XFLOW_REC_START;
		break;
	case FL_X_XIN_MOVE:
	case FL_X_XIN_COPY: {
		const char *member = op->has_key ? op->key : op->field;
		const char *S = op->has_key ? request_struct(u, op, p, NULL, op->to, member)
					    : carrier_struct(u, op, p, NULL, member);
		if (!S)
			goto fail;
		if (op->has_key && keyed_chain_form(op, op)) {
			fl_buf_free(&b);
			return expand_keyed_chain(u, f, p, op, op, S);
		}
		fl_buf_printf(&b, "void *%s = *(void**)%s;\nstruct %s *%s = *(void**)%s;\n"
			      "int %s = get_flowid(%s, %s);\nif (%s != 0) {\n",
			      op->from, r1, S, op->to, r2, id, F, op->from, id);
		rec |= XFLOW_REC_CROSS_DOMAIN;
		if (op->has_key) {
			fl_buf_printf(&b, "\tSTORE_HANDOFF_OUT(%s, %s->%s, %s);\n", F, op->to, member, id);
		} else {
			uint64_t low = op->size >= 64 ? UINT64_MAX : (UINT64_C(1) << op->size) - 1;
			fl_buf_printf(&b, "\t%s->%s = (%s->%s & ~0x%llxULL) | ((%s & 0x%llxULL) << %u);\n",
				      op->to, member, op->to, member,
				      (unsigned long long)(low << op->offset), id,
				      (unsigned long long)low, op->offset);
			if (op->size < XFLOW_FLOWID_BITS)
				rec |= XFLOW_REC_TRUNCATED_ID;
			/* The xin trap: a store to this field at the join point
			 * would overwrite the bits; the resolver runs us after it. */
			after_store = fl_unit_field(u, S, member, op->loc);
			u->fields[after_store].min_bits = op->offset + op->size;
		}
		if (move)
			fl_buf_printf(&b, "\tremove_flowid(%s, %s);\n", F, op->from);
		fl_buf_puts(&b, "}\n");
		break;
	}
	case FL_X_XOUT_MOVE:
	case FL_X_XOUT_COPY: {
		const struct fl_xop *xin = op->xin;
		const char *member = xin->has_key ? (op->nkeys ? op->keys[0].member : xin->key) : xin->field;
		const char *S = xin->has_key ? request_struct(u, op, p, xin_p, op->from, member)
					     : carrier_struct(u, op, p, xin_p, member);
		if (!S)
			goto fail;
		if (xin->has_key && keyed_chain_form(op, xin)) {
			fl_buf_free(&b);
			return expand_keyed_chain(u, f, p, op, xin, S);
		}
		rec |= XFLOW_REC_CROSS_DOMAIN;
		if (xin->has_key) {
			/* A fresh local id, unless @to has a live one (the
			 * receive matched again on its path): kept, as by a start. */
			fl_buf_printf(&b, "struct %s *%s = *(void**)%s;\nvoid *%s = *(void**)%s;\n"
				      "if (get_flowid(%s, %s) == 0) {\n"
				      "\tint %s = get_new_flowid();\n\tregister_flowid(%s, %s, %s);\n"
				      "\tSTORE_HANDOFF_IN(%s, %s->%s, %s);\n}\n",
				      S, op->from, r1, op->to, r2, F, op->to, id, F, op->to, id,
				      F, op->from, member, id);
			rec |= XFLOW_REC_START;
		} else {
			uint64_t low = xin->size >= 64 ? UINT64_MAX : (UINT64_C(1) << xin->size) - 1;
			fl_buf_printf(&b, "struct %s *%s = *(void**)%s;\nvoid *%s = *(void**)%s;\n"
				      "int %s = (%s->%s >> %u) & 0x%llxULL;\nif (%s != 0) {\n"
				      "\tregister_flowid(%s, %s, %s);\n",
				      S, op->from, r1, op->to, r2, id, op->from, member, xin->offset,
				      (unsigned long long)low, id, F, op->to, id);
			if (move)
				fl_buf_printf(&b, "\t%s->%s &= ~0x%llxULL;\n", op->from, member,
					      (unsigned long long)(low << xin->offset));
			fl_buf_puts(&b, "}\n");
			if (xin->size < XFLOW_FLOWID_BITS)
				rec |= XFLOW_REC_TRUNCATED_ID;
			int fi = fl_unit_field(u, S, member, op->loc);
			if (u->fields[fi].min_bits < xin->offset + xin->size)
				u->fields[fi].min_bits = xin->offset + xin->size;
			/* Its record is CROSS_DOMAIN as the sender's is; the
			 * flag is what tells the monitor which side it is. */
			receives = true;
		}
		break;
	}
	}
	struct fl_advice *a = gen(u, f, p, op->loc, pc, b.s, rec);
	a->after_store_field = after_store;
	a->receives = receives;
	fl_buf_free(&b);
	return a;
fail:
	fl_buf_free(&b);
	return NULL;
}

/* The xin_* that an xout_* names, anywhere in the unit, and its transit
 * (the first of that name, if it was defined twice). */
static const struct fl_xop *find_xin(struct xflow_unit *u, const char *name,
				     const struct fl_xpoint **where)
{
	const struct fl_xop *op = fl_map_get(&u->xin_map, name, strlen(name));
	*where = op ? op->point : NULL;
	return op;
}

/* Names: xflows are unique (checked when built); xin names are unique and
 * every xout names an xin. */
static void check_names(struct xflow_unit *u)
{
	for (struct fl_xflow *f = u->flows; f; f = f->next)
		for (struct fl_xpoint *p = f->points; p; p = p->next)
			for (size_t i = 0; i < p->nops; i++) {
				struct fl_xop *op = p->ops[i];
				op->point = p;
				if ((op->kind == FL_X_XIN_MOVE || op->kind == FL_X_XIN_COPY) && op->name)
					fl_map_put(&u->arena, &u->xin_map, op->name, strlen(op->name), op);
			}
	for (struct fl_xflow *f = u->flows; f; f = f->next) {
		bool has_start = false, has_quit = false;
		for (struct fl_xpoint *p = f->points; p; p = p->next) {
			has_start |= p->kind == FL_XP_START;
			has_quit |= p->kind == FL_XP_QUIT;
			for (size_t i = 0; i < p->nops; i++) {
				struct fl_xop *op = p->ops[i];
				const struct fl_xpoint *wp;
				if (!op->name)
					continue;
				if (op->kind == FL_X_XIN_MOVE || op->kind == FL_X_XIN_COPY) {
					const struct fl_xop *first = find_xin(u, op->name, &wp);
					if (first != op) {
						unsigned line, col;
						fl_loc_linecol(first->loc, &line, &col);
						fl_error(&u->diag, op->name_loc,
							 fl_arena_printf(&u->arena, "give each a name of its own; the first is at line %u", line),
							 "xin name '%s' is defined twice", op->name);
					}
				} else {
					op->xin = find_xin(u, op->name, &wp);
					if (!op->xin)
						fl_error(&u->diag, op->name_loc,
							 "define <xin_move name=\"...\"> (or xin_copy) in the sending domain's transit",
							 "<%s> names '%s', but no <xin_move> or <xin_copy> has that name",
							 op->kind == FL_X_XOUT_MOVE ? "xout_move" : "xout_copy", op->name);
				}
			}
		}
		if (f->points && (!has_start || !has_quit))
			fl_warning(&u->diag, FL_W_EMPTY_FLOW, f->loc,
				   has_start ? "add a <quit> so ids are removed when the data dies"
					     : "add a <start> so the flow gets ids",
				   "xflow '%s' has no <%s>", f->name, has_start ? "quit" : "start");
	}
}

/* Figure 8: an advice whose pointcut has xflow(F, v[, id]) runs only when v
 * has an id of flow F, with id bound to it.  xflow() must be a conjunct. */
static struct fl_pc *strip_xflow(struct xflow_unit *u, struct fl_pc *pc,
				 const struct fl_pc **found, size_t *nfound, bool under_or)
{
	if (!pc)
		return NULL;
	switch (pc->kind) {
	case FL_PC_XFLOW:
		if (under_or) {
			fl_error_caret(&u->diag, pc->loc,
				       "join xflow() to the rest of the pointcut with AND; split the advice to select several flows",
				       "xflow() under OR or NOT cannot guard the advice");
			return pc;
		}
		if (*nfound < 8)
			found[(*nfound)++] = pc;
		return NULL;
	case FL_PC_AND: {
		struct fl_pc *l = strip_xflow(u, pc->l, found, nfound, under_or);
		struct fl_pc *r = strip_xflow(u, pc->r, found, nfound, under_or);
		if (l == pc->l && r == pc->r)
			return pc;
		if (!l || !r)
			return l ? l : r;
		struct fl_pc *a = fl_arena_alloc(&u->arena, sizeof(*a));
		*a = *pc;
		a->l = l;
		a->r = r;
		return a;
	}
	case FL_PC_OR:
	case FL_PC_NOT:
		strip_xflow(u, pc->l, found, nfound, true);
		strip_xflow(u, pc->r, found, nfound, true);
		return pc;
	default:
		return pc;
	}
}

/* How @v is bound in the AND-conjunction @pc: 'T' target, 'L' local_var. */
static int binding_of(const struct fl_pc *pc, const char *v)
{
	if (!pc)
		return 0;
	if (pc->kind == FL_PC_AND) {
		int l = binding_of(pc->l, v);
		return l ? l : binding_of(pc->r, v);
	}
	if (pc->kind == FL_PC_TARGET && strcmp(pc->a, v) == 0)
		return 'T';
	if (pc->kind == FL_PC_LOCAL_VAR && strcmp(pc->b, v) == 0)
		return 'L';
	return 0;
}

static void guard_user(struct xflow_unit *u, struct fl_advice *a)
{
	const struct fl_pc *found[8];
	size_t n = 0;
	a->pc = strip_xflow(u, a->pc, found, &n, false);
	if (n == 0)
		return;
	struct fl_buf open = { 0 }, close = { 0 };
	struct fl_stmt *body = a->body;
	/* Innermost guard last: build from the last xflow() outwards. */
	for (size_t i = n; i-- > 0;) {
		const struct fl_pc *x = found[i];
		if (!fl_unit_flow(u, x->a)) {
			fl_error_caret(&u->diag, x->aloc, "define it with <xflow name=\"...\"> or <include> the file that does",
				       "unknown flow '%s'", x->a);
			a->bad = true;
			continue;
		}
		int how = binding_of(a->pc, x->b);
		if (!how) {
			fl_error_caret(&u->diag, x->bloc,
				       fl_arena_printf(&u->arena, "bind it with target(%s) or local_var(name, %s)", x->b, x->b),
				       "'%s' in xflow() is not bound by the pointcut", x->b);
			a->bad = true;
			continue;
		}
		const char *id = x->c ? x->c : gensym(u, a->pc, "random_id", NULL, NULL);
		const char *key = how == 'T' ? x->b : fl_arena_printf(&u->arena, "*(void**)%s", x->b);
		struct fl_buf g = { 0 };
		fl_buf_printf(&g, "int %s = get_flowid(%s, %s);\nif (%s != 0) {\n}\n", id, x->a, key, id);
		struct fl_code *code = fl_arena_alloc(&u->arena, sizeof(*code));
		code->text = fl_arena_strndup(&u->arena, g.s, g.len);
		code->len = g.len;
		code->gen_loc = x->loc;
		bool ok;
		struct fl_stmt *s = fl_advice_parse(u, code, &ok);
		if (ok && s && s->next && s->next->kind == FL_S_IF && s->next->then) {
			s->next->then->body = body;
			body = s;
		} else {
			a->bad = true;
		}
		/* For dumps: guards read outermost first. */
		struct fl_buf t = { 0 };
		fl_buf_printf(&t, "int %s = get_flowid(%s, %s);\nif (%s != 0) {\n%s", id, x->a, key, id,
			      open.s ? open.s : "");
		fl_buf_free(&open);
		open = t;
		fl_buf_puts(&close, "}\n");
		fl_buf_free(&g);
	}
	a->body = body;
	a->guard_open = open.s ? fl_arena_strdup(&u->arena, open.s) : NULL;
	a->guard_close = close.s ? fl_arena_strdup(&u->arena, close.s) : NULL;
	fl_buf_free(&open);
	fl_buf_free(&close);
}

void fl_xflow_expand(struct xflow_unit *u)
{
	check_names(u);
	struct fl_advice *head = NULL, **tail = &head;
	for (struct fl_xflow *f = u->flows; f; f = f->next) {
		for (struct fl_xpoint *p = f->points; p; p = p->next) {
			if (!p->pc)
				continue;   /* its pointcut had errors */
			if (p->kind != FL_XP_TRANSIT) {
				u->gensym = 0;
				struct fl_advice *a = expand_end(u, f, p);
				if (a)
					append(&tail, a);
			}
			if (p->kind == FL_XP_TRANSIT && p->select && !p->nops) {
				u->gensym = 0;
				append(&tail, expand_pass(u, f, p));
			}
			for (size_t i = 0; i < p->nops; i++) {
				const struct fl_xop *op = p->ops[i];
				const struct fl_xpoint *xin_p = NULL;
				if ((op->kind == FL_X_XOUT_MOVE || op->kind == FL_X_XOUT_COPY) &&
				    (!op->xin || !find_xin(u, op->name, &xin_p)))
					continue;
				u->gensym = 0;
				struct fl_advice *a = expand_op(u, f, p, op, xin_p);
				if (a)
					append(&tail, a);
			}
			if (p->action) {
				struct fl_advice *a = fl_arena_alloc(&u->arena, sizeof(*a));
				a->loc = p->action->loc;
				a->origin = p->kind == FL_XP_START ? FL_ORIGIN_START
					  : p->kind == FL_XP_QUIT ? FL_ORIGIN_QUIT : FL_ORIGIN_TRANSIT;
				a->flow = f;
				a->pc = p->pc;
				a->pc_node = p->pc_node;
				a->code.text = p->action->text;
				a->code.len = p->action->tlen;
				a->code.node = p->action;
				a->after_store_field = -1;
				bool ok;
				a->body = fl_advice_parse(u, &a->code, &ok);
				a->bad = !ok;
				append(&tail, a);
			}
		}
	}
	for (struct fl_advice *a = u->user; a; a = a->next) {
		if (!a->bad) {
			bool ok;
			a->body = fl_advice_parse(u, &a->code, &ok);
			a->bad = !ok;
		}
		if (a->pc)
			guard_user(u, a);
	}
	*tail = u->user;
	u->woven = head;
}
