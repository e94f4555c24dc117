/*
 * The resolve pass: a compiled unit's advice × each domain's binaries →
 * a weave plan (xflow/plan.h).
 *
 * For each advice, in weave order, and each binary of each domain:
 *   1. candidates: the generator primitives of its pointcut (access, call,
 *      return) are resolved, restricted to the scope the top-level AND
 *      gives (within_function/within_file), so a big binary is decoded
 *      only where the pointcut can match;
 *   2. each candidate site is tested against the whole pointcut, with
 *      access/call/return/within_* as predicates on the site, target(),
 *      local_var() and xflow() as true (they bind, or guard at run time);
 *   3. each input of the advice gets its fetch recipe at the site:
 *      target(v) the accessed instance's base register, local_var(n, v)
 *      DWARF's location of n there.  A site where an input cannot be
 *      fetched (a variable optimized out there, as -O2 makes common) is
 *      left out with a warning naming it and why; the other sites are
 *      woven.
 * A pointcut that matches nothing in any domain is a warning, and so are
 * accesses it would select whose base register could not be typed; with
 * strict, a pointcut that matches nothing and a site left out are errors.
 */
#include "weaver/jp/joinpoint.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "weaver/jp/kbtf.h"
#include "weaver/lang/unit.h"
#include "xflow/plan.h"

struct dom_img {
	struct jp_image *img;
	uint32_t binary;
};

struct pb {
	struct xflow_unit *u;
	struct jp_plan_opts *opts;
	struct fl_arena *arena;
	unsigned errors, warnings;
	FILE *diag;
	const char **miss;       /* per advice: a local_var() filter's miss */
};

static void diag_at(struct pb *b, const struct fl_loc *loc, const char *sev, long advice,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void diag_at(struct pb *b, const struct fl_loc *loc, const char *sev, long advice,
		    const char *fmt, ...)
{
	if (sev[0] == 'e')
		b->errors++;
	else if (sev[0] == 'w')
		b->warnings++;
	char where[PATH_MAX + 32] = "xflowc";
	if (loc && loc->src) {
		unsigned line = 0, col = 0;
		fl_loc_linecol(*loc, &line, &col);
		snprintf(where, sizeof(where), "%s:%u:%u", loc->src->path, line, col);
	}
	struct fl_buf msg = { 0 };
	va_list ap;
	va_start(ap, fmt);
	fl_buf_vprintf(&msg, fmt, ap);
	va_end(ap);
	if (b->diag)
		fprintf(b->diag, "%s: %s: %s\n", where, sev, msg.s ? msg.s : "");
	if (b->opts && b->opts->on_diag) {
		struct jp_plan_diag d = { .sev = sev, .advice = advice, .where = where,
					  .msg = msg.s ? msg.s : "" };
		b->opts->on_diag(b->opts->diag_ctx, &d);
	}
	fl_buf_free(&msg);
}

static bool dom_ok(const char *want, const char *dom)
{
	return !want || strcmp(want, dom) == 0;
}

/* ---- pointcut as a predicate on a site ------------------------------------ */

static bool chain_has(struct jp_index *ix, uint64_t addr, const char *f)
{
	int32_t c = jp_func_at(ix, addr, true);
	for (int d = 0; c >= 0 && d < 16; d++) {
		const struct jp_func *fn = &ix->funcs[c];
		if ((fn->name && strcmp(fn->name, f) == 0) || (fn->linkage && strcmp(fn->linkage, f) == 0))
			return true;
		c = fn->inlined ? fn->parent : -1;
	}
	return false;
}

/* Does access(@want.m) name the struct a site names @sname?  A typedef of
 * a struct names the struct (access(req_t.m) for typedef struct req_s
 * req_t), whose name the sites carry; an anonymous struct's typedef is
 * its only name. */
static bool struct_is(const struct jp_index *ix, const char *want, const char *sname)
{
	if (strcmp(want, sname) == 0)
		return true;
	int32_t st = jp_struct_find(ix, want);
	return st >= 0 && ix->types[st].name && strcmp(ix->types[st].name, sname) == 0;
}

static bool pc_eval(struct jp_image *img, const char *dom, const struct fl_pc *pc,
		    const struct jp_site *s, int depth)
{
	if (!pc || depth > FL_MAX_NEST)
		return false;
	switch (pc->kind) {
	case FL_PC_AND:
		return pc_eval(img, dom, pc->l, s, depth + 1) && pc_eval(img, dom, pc->r, s, depth + 1);
	case FL_PC_OR:
		return pc_eval(img, dom, pc->l, s, depth + 1) || pc_eval(img, dom, pc->r, s, depth + 1);
	case FL_PC_NOT:
		return !pc_eval(img, dom, pc->l, s, depth + 1);
	case FL_PC_ACCESS: {
		if (s->kind > JP_SITE_RMW || !s->sname || !struct_is(jp_image_index(img), pc->a, s->sname))
			return false;
		if (!pc->b || strcmp(pc->b, "%") == 0)
			return true;
		struct jp_field_layout l;
		struct jp_err e;
		if (jp_field_layout(img, pc->a, pc->b, &l, &e) != 0)
			return false;
		uint64_t sz = l.size ? l.size : 1;
		return !(s->moff + s->msize <= l.offset || s->moff >= l.offset + sz);
	}
	case FL_PC_CALL:
		return dom_ok(pc->dom, dom) && s->kind == JP_SITE_ENTRY && s->func && strcmp(s->func, pc->a) == 0;
	case FL_PC_RETURN:
		return dom_ok(pc->dom, dom) && s->kind == JP_SITE_RETURN && s->func && strcmp(s->func, pc->a) == 0;
	case FL_PC_WITHIN_FUNCTION:
		return dom_ok(pc->dom, dom) && chain_has(jp_image_index(img), s->addr, pc->a);
	case FL_PC_WITHIN_FILE:
		return dom_ok(pc->dom, dom) && jp_path_match(pc->a, s->file);
	case FL_PC_LOCAL_VAR: {
		/* Like AspectJ's args(): the join point must have the variable
		 * in scope.  One that is there but optimized out still
		 * matches, and binding it is then an error naming the site. */
		struct jp_recipe r;
		struct jp_err e;
		return jp_local_var(img, s, pc->a, &r, &e) != -ENOENT;
	}
	case FL_PC_TARGET:
	case FL_PC_XFLOW:
		return true;
	case FL_PC_TRACEPOINT:
		return false; /* kernel domains only (kpc_eval) */
	}
	return false;
}

/* The parts of @pc its author wrote, up to @max: the expansion of an xflow
 * ANDs generated conjuncts (target(), local_var() of generated names) to
 * the pointcut written, which a message must not show. */
static size_t written_parts(const struct fl_pc *pc, const struct fl_pc **out, size_t n, size_t max)
{
	if (!pc || n == max)
		return n;
	if (!pc->generated) {
		out[n++] = pc;
		return n;
	}
	if (pc->kind != FL_PC_AND)
		return n;
	return written_parts(pc->r, out, written_parts(pc->l, out, n, max), max);
}

/* Scope from the top-level conjunction; false if it cannot match in @dom. */
struct scope_acc {
	const char *funcs[32];
	size_t nfuncs;
	const char *files[32];
	size_t nfiles;
	bool impossible;
};

static void scope_from(const struct fl_pc *pc, const char *dom, struct scope_acc *sc, int depth)
{
	if (!pc || depth > FL_MAX_NEST)
		return;
	if (pc->kind == FL_PC_AND) {
		scope_from(pc->l, dom, sc, depth + 1);
		scope_from(pc->r, dom, sc, depth + 1);
		return;
	}
	if (pc->kind == FL_PC_WITHIN_FUNCTION || pc->kind == FL_PC_WITHIN_FILE) {
		if (!dom_ok(pc->dom, dom)) {
			sc->impossible = true;
			return;
		}
		/* Only one conjunct of each kind can be used as a list (a list
		 * is an OR); more than one stays a predicate. */
		if (pc->kind == FL_PC_WITHIN_FUNCTION) {
			if (sc->nfuncs == 0)
				sc->funcs[sc->nfuncs++] = pc->a;
		} else if (sc->nfiles == 0) {
			sc->files[sc->nfiles++] = pc->a;
		}
	}
}

static void gens_of(const struct fl_pc *pc, const struct fl_pc **v, size_t *n, size_t max, int depth)
{
	if (!pc || depth > FL_MAX_NEST || *n >= max)
		return;
	switch (pc->kind) {
	case FL_PC_AND:
	case FL_PC_OR:
		gens_of(pc->l, v, n, max, depth + 1);
		gens_of(pc->r, v, n, max, depth + 1);
		return;
	case FL_PC_ACCESS:
	case FL_PC_CALL:
	case FL_PC_RETURN:
	case FL_PC_TRACEPOINT:
		v[(*n)++] = pc;
		return;
	default:
		return;
	}
}

/* ---- building ----------------------------------------------------------------- */

struct dplan {
	struct xflow_plan_site *sites;
	size_t nsites, sites_cap;
	struct xflow_plan_binding *bind;
	size_t nbind, bind_cap;
	struct xflow_plan_fetch *fetch;
	size_t nfetch, fetch_cap;
};

/*
 * What stands for a binary's build id where it has none (xflow/plan.h):
 * its size, and the hash of its sites' bytes in site order.  A site whose
 * bytes cannot be read leaves both unrecorded rather than a hash the agent
 * could never match.
 */
static void binary_identity(struct xflow_plan_domain *dm, const struct dom_img *imgs, size_t nimgs)
{
	for (size_t k = 0; k < nimgs; k++) {
		struct xflow_plan_binary *pb = &dm->binaries[imgs[k].binary];
		const struct jp_elf *e = jp_image_elf(imgs[k].img);
		struct stat st;
		if (stat(jp_image_path(imgs[k].img), &st) != 0 || st.st_size <= 0)
			continue;
		uint64_t h = XFLOW_PLAN_HASH_INIT;
		bool ok = true;
		for (uint32_t s = 0; s < dm->nsites && ok; s++) {
			const struct xflow_plan_site *ps = &dm->sites[s];
			if (ps->binary != imgs[k].binary)
				continue;
			size_t avail = 0;
			const uint8_t *code = jp_elf_code(e, ps->addr, &avail);
			ok = code && avail >= ps->len;
			if (ok)
				h = xflow_plan_hash(h, code, ps->len);
		}
		if (ok) {
			pb->size = (uint64_t)st.st_size;
			pb->code_hash = h;
		}
	}
}

static struct xflow_plan_fetch to_fetch(const struct jp_recipe *r)
{
	struct xflow_plan_fetch f = { .kind = r->kind, .reg = r->reg, .size = r->size, .off = r->off };
	if (r->kind == JP_RECIPE_VALUE && r->scale) {
		f.index = r->index;
		f.scale = r->scale;
	}
	if (f.kind == XFLOW_FETCH_STATIC)
		f.reg = 0xff;
	return f;
}

static int field_index(const struct xflow_plan *p, const char *sname, const char *member)
{
	if (!sname || !member)
		return -1;
	for (uint32_t i = 0; i < p->nfields; i++)
		if (strcmp(p->fields[i].sname, sname) == 0 && strcmp(p->fields[i].member, member) == 0)
			return (int)i;
	return -1;
}

struct pend {
	uint32_t site_key;  /* index into the domain's site list */
	uint32_t advice;
	uint8_t when;
	struct xflow_plan_fetch in[XFLOW_BC_MAX_INPUTS];
	uint8_t nin;
};

static int site_key_cmp(const struct xflow_plan_site *a, const struct xflow_plan_site *b)
{
	if (a->binary != b->binary)
		return a->binary < b->binary ? -1 : 1;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return (int)a->kind - (int)b->kind;
}

static int idx_cmp(const void *x, const void *y, void *arg)
{
	const struct xflow_plan_site *sites = arg;
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
	int c = site_key_cmp(&sites[a], &sites[b]);
	return c ? c : (a < b ? -1 : a > b);
}

static int pend_cmp(const void *x, const void *y)
{
	const struct pend *a = x, *b = y;
	if (a->site_key != b->site_key)
		return a->site_key < b->site_key ? -1 : 1;
	if (a->advice != b->advice)
		return a->advice < b->advice ? -1 : 1;
	return (int)a->when - (int)b->when;
}

/* Find or add @s in the domain's (unsorted) site list; linear per advice
 * is fine for the sizes a flow selects, and a sort puts them in order. */
static uint32_t site_intern(struct pb *b, struct dplan *dp, const struct xflow_plan_site *s)
{
	for (size_t i = dp->nsites; i > 0; i--)
		if (site_key_cmp(&dp->sites[i - 1], s) == 0)
			return (uint32_t)(i - 1);
	FL_PUSH(b->arena, dp->sites, dp->nsites, dp->sites_cap, *s);
	return (uint32_t)(dp->nsites - 1);
}

static const char *dup(struct pb *b, const char *s)
{
	return s ? fl_arena_strdup(b->arena, s) : NULL;
}

/* When every candidate of an advice fails only its local_var() filter, the
 * "matches nothing" warning says which variable was missing where, with a
 * near name: that is a typo far more often than a wrong pointcut. */
static void note_local_miss(struct pb *b, struct jp_image *img, const struct fl_advice *adv,
			    const struct jp_site *s, size_t ai)
{
	if (b->miss[ai])
		return;
	const struct fl_pc *stack[FL_MAX_NEST];
	size_t n = 0;
	stack[n++] = adv->pc;
	while (n) {
		const struct fl_pc *pc = stack[--n];
		if (!pc)
			continue;
		if (pc->kind == FL_PC_AND || pc->kind == FL_PC_OR) {
			if (n + 2 <= FL_MAX_NEST) {
				stack[n++] = pc->l;
				stack[n++] = pc->r;
			}
			continue;
		}
		if (pc->kind != FL_PC_LOCAL_VAR)
			continue;
		struct jp_recipe r;
		struct jp_err e;
		if (jp_local_var(img, s, pc->a, &r, &e) == -ENOENT) {
			b->miss[ai] = fl_arena_strdup(b->arena, e.msg);
			return;
		}
	}
}

/*
 * The fetch recipes of @prog's inputs at @s, into @in: 0; -ENODATA when one
 * cannot be fetched there (a variable optimized out at this site, an
 * instance whose address the access does not give), which costs the site
 * and not the plan; -EINVAL when the pointcut asks for what no site of its
 * kind has (target() at a function entry).  @err says which and where.
 */
static int fetch_inputs(struct jp_image *img, const struct xflow_bc_prog *prog, const struct jp_site *s,
			struct xflow_plan_fetch *in, struct jp_err *err)
{
	for (uint32_t i = 0; i < prog->ninputs; i++) {
		const struct xflow_bc_input *x = &prog->inputs[i];
		struct jp_recipe r = { 0 };
		if (x->kind == XFLOW_IN_TARGET) {
			if (!s->target.kind) {
				bool access = s->kind <= JP_SITE_RMW;
				snprintf(err->msg, sizeof(err->msg),
					 "target() at %s:%u (%#llx, in %s) %s", s->file ? s->file : "?", s->line,
					 (unsigned long long)s->addr, s->func ? s->func : "?",
					 access ? "cannot be computed: the access gives no address of the instance"
						: "which is not a member access");
				return access ? -ENODATA : -EINVAL;
			}
			r = s->target;
		} else {
			int rc = jp_local_var(img, s, x->local, &r, err);
			if (rc)
				return rc == -ENODATA ? rc : -EINVAL;
		}
		in[i] = to_fetch(&r);
	}
	return 0;
}

/* Accesses the typer could not type that the pointcut would otherwise
 * select at @img: one warning per advice and binary, with how many and
 * the first, since they are missed without any other trace. */
static void report_untyped(struct pb *b, struct jp_image *img, const char *dom, size_t ai,
			   const struct jp_sites *cand)
{
	const struct fl_advice *adv = b->u->by_index[ai];
	size_t n = 0;
	const struct jp_site *first = NULL;
	for (size_t i = 0; i < cand->nuntyped; i++) {
		const struct jp_site *s = &cand->untyped[i];
		bool dupl = i > 0 && cand->untyped[i - 1].addr == s->addr;
		if (dupl || !pc_eval(img, dom, adv->pc, s, 0))
			continue;
		if (!first)
			first = s;
		n++;
	}
	if (!n)
		return;
	const char *bin = strrchr(jp_image_path(img), '/');
	diag_at(b, &adv->pc->loc, "warning", (long)ai,
		"in domain %s: %s: %zu access%s in scope may touch %s.%s but %s base register could not "
		"be typed, so %s not woven; %s %#llx (%s:%u, in %s): %s",
		dom, bin ? bin + 1 : jp_image_path(img), n, n == 1 ? "" : "es", first->sname,
		first->member ? first->member : "?", n == 1 ? "its" : "their", n == 1 ? "it is" : "they are",
		n == 1 ? "at" : "the first at", (unsigned long long)first->addr, first->file ? first->file : "?",
		first->line, first->func ? first->func : "?", first->text);
}

/* call(f) puts one site on each entry, one per call: a note names each
 * entry that is in a copy GCC made of f or inlined into f itself, and each
 * place that looks like an entry and is not one, so the plan says where
 * every site is and why. */
static void report_entries(struct pb *b, struct jp_image *img, const char *dom, size_t ai,
			   const struct jp_sites *cand)
{
	const struct fl_advice *adv = b->u->by_index[ai];
	const struct jp_site *self = NULL;
	size_t nself = 0;
	for (size_t i = 0; i < cand->n; i++) {
		const struct jp_site *s = &cand->v[i];
		if (s->kind != JP_SITE_ENTRY || !(s->clone || s->self_inlined) || !pc_eval(img, dom, adv->pc, s, 0))
			continue;
		if (s->self_inlined) {
			self = self ? self : s;
			nself++;
			continue;
		}
		diag_at(b, &adv->pc->loc, "note", (long)ai,
			"in domain %s: call(%s) is also at the entry of %s, a copy GCC made of %s (%#llx, %s:%u)",
			dom, s->func, s->clone, s->func, (unsigned long long)s->addr, s->file ? s->file : "?", s->line);
	}
	if (self)
		diag_at(b, &adv->pc->loc, "note", (long)ai,
			"in domain %s: call(%s) is also at %zu instance%s of %s inlined into itself, %s %#llx (%s:%u): "
			"recursive calls, or a part GCC split off and inlined back, which fires once more a call",
			dom, self->func, nself, nself == 1 ? "" : "s", self->func, nself == 1 ? "at" : "the first at",
			(unsigned long long)self->addr, self->file ? self->file : "?", self->line);
	for (size_t i = 0; i < cand->npassed; i++) {
		const struct jp_site *s = &cand->passed[i];
		if (!pc_eval(img, dom, adv->pc, s, 0))
			continue;
		char where[256];
		if (s->clone)
			snprintf(where, sizeof(where), "%s", s->clone);
		else
			snprintf(where, sizeof(where), "in %s", s->inlined_into ? s->inlined_into : "?");
		diag_at(b, &adv->pc->loc, "note", (long)ai,
			"in domain %s: call(%s) has no site at %#llx (%s:%u, %s): %s", dom, s->func,
			(unsigned long long)s->addr, s->file ? s->file : "?", s->line, where, s->why);
	}
}

/* Advice @ai, its program and the scope its pointcut gives in domain @dom:
 * false when it has no pointcut or program, or cannot match in @dom. */
static bool advice_in(struct pb *b, const struct xflow_plan *p, size_t ai, const char *dom,
		      const struct fl_advice **adv, const struct xflow_bc_prog **prog, struct scope_acc *sc)
{
	*adv = b->u->by_index[ai];
	*prog = p->advice[ai].prog.ninsns ? &p->advice[ai].prog : NULL;
	if (!*adv || !(*adv)->pc || !*prog)
		return false;
	memset(sc, 0, sizeof(*sc));
	scope_from((*adv)->pc, dom, sc, 0);
	return !sc->impossible;
}

static int resolve_advice(struct pb *b, struct xflow_plan *p, size_t ai, const char *dom,
			  struct dom_img *imgs, size_t nimgs, struct dplan *dp, struct pend **pv,
			  size_t *pn, size_t *pcap, bool *matched, unsigned *skipped)
{
	const struct fl_advice *adv;
	const struct xflow_bc_prog *prog;
	struct scope_acc sc;
	if (!advice_in(b, p, ai, dom, &adv, &prog, &sc))
		return 0;
	const struct fl_pc *gens[64];
	size_t ng = 0;
	gens_of(adv->pc, gens, &ng, 64, 0);
	if (ng == 0) {
		diag_at(b, &adv->pc->loc, "error", (long)ai,
			"pointcut selects no join points: it needs access(), call(), return() or tracepoint()");
		return -EINVAL;
	}
	struct jp_scope scope = { .funcs = sc.funcs, .nfuncs = sc.nfuncs, .files = sc.files,
				  .nfiles = sc.nfiles };
	for (size_t k = 0; k < nimgs; k++) {
		struct jp_image *img = imgs[k].img;
		struct jp_sites cand = { 0 };
		struct jp_err err;
		for (size_t g = 0; g < ng; g++) {
			const struct fl_pc *pc = gens[g];
			int rc;
			if ((pc->kind == FL_PC_CALL || pc->kind == FL_PC_RETURN) && !dom_ok(pc->dom, dom))
				continue;
			if (pc->kind == FL_PC_TRACEPOINT)
				continue; /* a kernel's, never a program's */
			if (pc->kind == FL_PC_ACCESS) {
				rc = jp_find_access(img, pc->a, pc->b, &scope, &cand, &err);
				const struct jp_index *ix = jp_image_index(img);
				int32_t st = rc ? -1 : jp_struct_find(ix, pc->a);
				if (st >= 0 && ix->types[st].name && strcmp(ix->types[st].name, pc->a) != 0)
					diag_at(b, &pc->aloc, "note", (long)ai,
						"in domain %s: %s is a typedef of struct %s: its sites are named %s",
						dom, pc->a, ix->types[st].name, ix->types[st].name);
			}
			else if (pc->kind == FL_PC_CALL)
				rc = jp_find_entry(img, pc->a, &scope, &cand, &err);
			else
				rc = jp_find_return(img, pc->a, &scope, &cand, &err);
			if (rc == -ENOENT) {
				/* Absent from this binary: other binaries of the
				 * domain may have it; said once below if none does. */
				if (nimgs == 1)
					diag_at(b, &pc->aloc, "warning", (long)ai, "in domain %s: %s", dom, err.msg);
				continue;
			}
			if (rc) {
				diag_at(b, &pc->loc, "error", (long)ai, "in domain %s: %s", dom, err.msg);
				jp_sites_free(&cand);
				return rc;
			}
		}
		for (size_t i = 0; i < cand.n; i++) {
			const struct jp_site *s = &cand.v[i];
			bool dupl = false;
			for (size_t j = 0; j < i && !dupl; j++)
				dupl = cand.v[j].addr == s->addr && cand.v[j].kind == s->kind;
			if (dupl)
				continue;
			if (!pc_eval(img, dom, adv->pc, s, 0)) {
				note_local_miss(b, img, adv, s, ai);
				continue;
			}
			struct pend pe = { .advice = (uint32_t)ai };
			int frc = fetch_inputs(img, prog, s, pe.in, &err);
			if (frc == -ENODATA) {
				/* At -O2 a variable often lives at some sites of a
				 * pointcut and not at others: weave the others. */
				diag_at(b, &adv->pc->loc, b->opts && b->opts->strict ? "error" : "warning", (long)ai,
					"in domain %s: %s; the site is not woven", dom, err.msg);
				(*skipped)++;
				continue;
			}
			if (frc) {
				diag_at(b, &adv->pc->loc, "error", (long)ai, "in domain %s: %s", dom, err.msg);
				continue;
			}
			pe.nin = (uint8_t)prog->ninputs;
			unsigned flags = p->advice[ai].flags;
			pe.when = flags & XFLOW_ADVICE_AFTER ? XFLOW_WHEN_AFTER : XFLOW_WHEN_BEFORE;
			if ((flags & XFLOW_ADVICE_AFTER_STORE) && (s->kind == JP_SITE_STORE || s->kind == JP_SITE_RMW)) {
				int af = p->advice[ai].after_store_field;
				if (af >= 0 && s->member && strcmp(p->fields[af].sname, s->sname) == 0) {
					struct jp_field_layout l;
					if (jp_field_layout(img, p->fields[af].sname, p->fields[af].member, &l, &err) == 0 &&
					    !(s->moff + s->msize <= l.offset || s->moff >= l.offset + (l.size ? l.size : 1)))
						pe.when = XFLOW_WHEN_AFTER;
				}
			}
			struct xflow_plan_site ps = {
				.addr = s->addr, .binary = imgs[k].binary, .kind = s->kind, .len = s->len,
				.file = dup(b, s->file), .line = s->line, .func = dup(b, s->func),
				.inlined_into = dup(b, s->inlined_into), .insn = dup(b, s->text),
				.sname = dup(b, s->sname), .member = dup(b, s->member),
				.moff = (uint32_t)s->moff, .msize = s->msize, .target = to_fetch(&s->target),
			};
			ps.field = field_index(p, s->sname, s->member);
			if (!s->target.kind)
				ps.target.kind = 0;
			pe.site_key = site_intern(b, dp, &ps);
			dp->sites[pe.site_key].when_mask |= (uint8_t)(1u << pe.when);
			FL_PUSH(b->arena, *pv, *pn, *pcap, pe);
			*matched = true;
		}
		report_untyped(b, img, dom, ai, &cand);
		report_entries(b, img, dom, ai, &cand);
		jp_sites_free(&cand);
	}
	return 0;
}

/* ---- kernel domains: join points from the kernel's BTF ------------------- */

/*
 * A kernel domain's sites are function entries (fentry), returns (fexit)
 * and tracepoints; a site's addr is the BTF id of its function or
 * tracepoint type, unique in that kernel, which keeps the plan's sort and
 * duplicate rules.  Inputs are arguments: the x86-64 argument registers
 * stand for arguments 0..5 and rax at a return for the return value, as
 * guestrt/hook/kernel/klower.h reads them.  access(S.m) cannot be resolved to
 * instructions without the kernel's DWARF: inside within_function(f) it is
 * approximated by f's entry, with a warning that says so.
 */
struct ksite {
	unsigned kind;           /* XFLOW_SITE_ENTRY, _RETURN, _TRACEPOINT */
	const char *name;
	struct jp_kbtf_func fn;
	const char *approx;      /* access(S.m) approximated here: "S.m" */
};

static bool kpc_eval(const char *dom, const struct fl_pc *pc, const struct ksite *s, int depth)
{
	if (!pc || depth > FL_MAX_NEST)
		return false;
	switch (pc->kind) {
	case FL_PC_AND:
		return kpc_eval(dom, pc->l, s, depth + 1) && kpc_eval(dom, pc->r, s, depth + 1);
	case FL_PC_OR:
		return kpc_eval(dom, pc->l, s, depth + 1) || kpc_eval(dom, pc->r, s, depth + 1);
	case FL_PC_NOT:
		return !kpc_eval(dom, pc->l, s, depth + 1);
	case FL_PC_ACCESS:
		/* At an entry or return: the struct is at hand when an argument
		 * points to one (a keyed handoff's request, say). */
		if (s->approx)
			return true;
		for (unsigned a = 0; a < s->fn.nargs; a++)
			if (s->fn.arg_struct[a] && !strcmp(s->fn.arg_struct[a], pc->a))
				return true;
		return false;
	case FL_PC_CALL:
		return dom_ok(pc->dom, dom) && s->kind == XFLOW_SITE_ENTRY && !strcmp(s->name, pc->a);
	case FL_PC_RETURN:
		return dom_ok(pc->dom, dom) && s->kind == XFLOW_SITE_RETURN && !strcmp(s->name, pc->a);
	case FL_PC_TRACEPOINT:
		return dom_ok(pc->dom, dom) && s->kind == XFLOW_SITE_TRACEPOINT && !strcmp(s->name, pc->a);
	case FL_PC_WITHIN_FUNCTION:
		return dom_ok(pc->dom, dom) && s->kind != XFLOW_SITE_TRACEPOINT && !strcmp(s->name, pc->a);
	case FL_PC_WITHIN_FILE:
		return false; /* refused before (BTF has no files) */
	case FL_PC_LOCAL_VAR:
	case FL_PC_TARGET:
	case FL_PC_XFLOW:
		return true;
	}
	return false;
}

static bool pc_has(const struct fl_pc *pc, enum fl_pc_kind kind, int depth)
{
	if (!pc || depth > FL_MAX_NEST)
		return false;
	return pc->kind == kind || pc_has(pc->l, kind, depth + 1) || pc_has(pc->r, kind, depth + 1);
}

/* Argument @i as a fetch recipe: its x86-64 argument register. */
static struct xflow_plan_fetch karg(int i)
{
	static const uint8_t abi[JP_KBTF_MAX_ARGS] = { 5, 4, 1, 2, 8, 9 };
	return (struct xflow_plan_fetch){ .kind = XFLOW_FETCH_REG, .reg = i < 0 ? 0 : abi[i], .size = 8 };
}

/* Does @prog index an array (XFLOW_OP_ELEM) and read input @i as an
 * integer, as the expansion reads an index (LDIN, then LDM not of a
 * pointer)?  Then the input must be an integer argument, and its fetch
 * says its width: the BPF program masks the register to it. */
static bool read_as_index(const struct xflow_bc_prog *prog, uint32_t i)
{
	bool elem = false, as_int = false;
	for (uint32_t pc = 0; pc < prog->ninsns; pc++) {
		const struct xflow_bc_insn *in = &prog->insns[pc];
		elem |= in->op == XFLOW_OP_ELEM;
		if (in->op == XFLOW_OP_LDIN && in->a == i && pc + 1 < prog->ninsns &&
		    prog->insns[pc + 1].op == XFLOW_OP_LDM && !(prog->insns[pc + 1].b & XFLOW_LDM_PTR))
			as_int = true;
	}
	return elem && as_int;
}

static int kfetch(const struct xflow_bc_prog *prog, const struct ksite *s, struct xflow_plan_fetch *in,
		  struct jp_err *err)
{
	const char *what = s->kind == XFLOW_SITE_TRACEPOINT ? "tracepoint" : "function";
	for (uint32_t i = 0; i < prog->ninputs; i++) {
		const struct xflow_bc_input *x = &prog->inputs[i];
		int arg = -2;
		if (x->kind == XFLOW_IN_TARGET) {
			/* The instance: the first argument that is a struct S *
			 * (S of the access() when there is one). */
			for (unsigned a = 0; a < s->fn.nargs && a < JP_KBTF_MAX_ARGS && arg < -1; a++)
				if (s->fn.arg_struct[a] && (!x->sname || !strcmp(s->fn.arg_struct[a], x->sname)))
					arg = (int)a;
			if (arg < -1) {
				snprintf(err->msg, sizeof(err->msg), "target() at %s %s: no argument is a struct %s *",
					 what, s->name, x->sname ? x->sname : "");
				return -EINVAL;
			}
		} else if (s->kind == XFLOW_SITE_TRACEPOINT) {
			/* BTF gives a tracepoint's arguments no names: they are
			 * arg0, arg1, ... in the order of its TP_PROTO. */
			char *end = NULL;
			long n = strncmp(x->local, "arg", 3) == 0 && x->local[3] ? strtol(x->local + 3, &end, 10) : -1;
			if (n < 0 || !end || *end || n >= (long)s->fn.nargs || n >= JP_KBTF_MAX_ARGS) {
				snprintf(err->msg, sizeof(err->msg),
					 "local_var(%s, ...) at tracepoint %s: its %u arguments are called arg0..arg%u "
					 "(BTF gives them no names)", x->local, s->name, s->fn.nargs,
					 s->fn.nargs ? s->fn.nargs - 1 : 0);
				return -EINVAL;
			}
			arg = (int)n;
		} else {
			for (unsigned a = 0; a < s->fn.nargs && arg < -1; a++)
				if (!strcmp(s->fn.arg[a], x->local))
					arg = (int)a;
			if (arg >= JP_KBTF_MAX_ARGS) {
				snprintf(err->msg, sizeof(err->msg), "%s is argument %d of %s: fentry and fexit read the "
					 "first %d only", x->local, arg + 1, s->name, JP_KBTF_MAX_ARGS);
				return -EINVAL;
			}
			if (arg < -1 && !strcmp(x->local, "retval") && s->kind == XFLOW_SITE_RETURN && s->fn.returns)
				arg = -1;
			if (arg < -1) {
				char names[256] = "";
				size_t o = 0;
				for (unsigned a = 0; a < s->fn.nargs && o < sizeof(names) - 1; a++) {
					int n = snprintf(names + o, sizeof(names) - o, "%s%s", a ? ", " : "", s->fn.arg[a]);
					o += n > 0 ? (size_t)n : 0;
				}
				snprintf(err->msg, sizeof(err->msg),
					 "%s has no argument %s (its arguments: %s)%s", s->name, x->local,
					 names[0] ? names : "none",
					 s->kind == XFLOW_SITE_RETURN ? "; at return() its return value is retval"
					 : !strcmp(x->local, "retval") ? "; retval is bound at return() only" : "");
				return -EINVAL;
			}
		}
		in[i] = karg(arg);
		if (x->kind == XFLOW_IN_LOCAL_VAR && read_as_index(prog, i)) {
			if (arg < 0 || !s->fn.arg_int[arg]) {
				snprintf(err->msg, sizeof(err->msg), "%s indexes an array, but is not an integer argument "
					 "of %s %s", x->local, what, s->name);
				return -EINVAL;
			}
			in[i].size = s->fn.arg_int[arg];
		}
	}
	return 0;
}

/* Every array element @prog takes (XFLOW_OP_ELEM) is one of an array
 * embedded in its struct, with a fixed length, in this kernel. */
static int kelems(const struct xflow_plan *p, const struct xflow_bc_prog *prog, struct jp_kbtf *kb,
		  struct jp_err *err)
{
	for (uint32_t pc = 0; pc < prog->ninsns; pc++) {
		const struct xflow_bc_insn *in = &prog->insns[pc];
		struct jp_kbtf_member km;
		if (in->op == XFLOW_OP_ELEM && in->b < p->nfields &&
		    jp_kbtf_member(kb, p->fields[in->b].sname, p->fields[in->b].member, &km, err) != 0)
			return -EINVAL;
	}
	return 0;
}

static void kadd(struct ksite *v, size_t *n, size_t max, const struct ksite *s)
{
	for (size_t i = 0; i < *n; i++)
		if (v[i].kind == s->kind && !strcmp(v[i].name, s->name))
			return;
	if (*n < max)
		v[(*n)++] = *s;
}

static int resolve_advice_kernel(struct pb *b, struct xflow_plan *p, size_t ai, const char *dom,
				 struct jp_kbtf *kb, uint32_t binary, struct dplan *dp, struct pend **pv,
				 size_t *pn, size_t *pcap, bool *matched)
{
	const struct fl_advice *adv;
	const struct xflow_bc_prog *prog;
	struct scope_acc sc;
	if (!advice_in(b, p, ai, dom, &adv, &prog, &sc))
		return 0;
	if (pc_has(adv->pc, FL_PC_WITHIN_FILE, 0)) {
		diag_at(b, &adv->pc->loc, "warning", (long)ai,
			"in kernel domain %s: within_file() needs the kernel's DWARF, which this planner does not "
			"read: the advice is not woven there", dom);
		return 0;
	}
	const struct fl_pc *gens[64];
	size_t ng = 0;
	gens_of(adv->pc, gens, &ng, 64, 0);
	struct ksite cand[64];
	size_t nc = 0;
	for (size_t g = 0; g < ng; g++) {
		const struct fl_pc *pc = gens[g];
		struct ksite s = { 0 };
		struct jp_err err;
		int rc;
		if (pc->kind != FL_PC_ACCESS && !dom_ok(pc->dom, dom))
			continue;
		if (pc->kind == FL_PC_ACCESS) {
			/* Beside call(), return() or tracepoint(), access() only
			 * says which struct is at hand (kpc_eval). */
			if (!sc.nfuncs && (pc_has(adv->pc, FL_PC_CALL, 0) || pc_has(adv->pc, FL_PC_RETURN, 0) ||
					   pc_has(adv->pc, FL_PC_TRACEPOINT, 0)))
				continue;
			if (!sc.nfuncs) {
				diag_at(b, &pc->loc, "warning", (long)ai,
					"in kernel domain %s: access(%s.%s) is an instruction-level join point, which needs "
					"the kernel's DWARF; add within_function(f) to weave it at f's entry instead",
					dom, pc->a, pc->b);
				continue;
			}
			s.kind = XFLOW_SITE_ENTRY;
			s.name = sc.funcs[0];
			s.approx = fl_arena_printf(b->arena, "%s.%s", pc->a, pc->b);
			rc = jp_kbtf_func(kb, s.name, &s.fn, &err);
		} else if (pc->kind == FL_PC_TRACEPOINT) {
			s.kind = XFLOW_SITE_TRACEPOINT;
			s.name = pc->a;
			rc = jp_kbtf_tracepoint(kb, s.name, &s.fn, &err);
		} else {
			s.kind = pc->kind == FL_PC_CALL ? XFLOW_SITE_ENTRY : XFLOW_SITE_RETURN;
			s.name = pc->a;
			rc = jp_kbtf_func(kb, s.name, &s.fn, &err);
		}
		if (rc) {
			/* Named, never dropped in silence: an unresolved join
			 * point of a kernel differs between kernel versions. */
			diag_at(b, &pc->aloc, "warning", (long)ai, "in kernel domain %s: unresolved: %s", dom, err.msg);
			continue;
		}
		kadd(cand, &nc, 64, &s);
	}
	for (size_t i = 0; i < nc; i++) {
		const struct ksite *s = &cand[i];
		if (!kpc_eval(dom, adv->pc, s, 0))
			continue;
		struct pend pe = { .advice = (uint32_t)ai };
		struct jp_err err;
		if (kelems(p, prog, kb, &err)) {
			/* The advice's, whichever site: said once. */
			diag_at(b, &adv->pc->loc, "error", (long)ai, "in kernel domain %s: %s", dom, err.msg);
			return 0;
		}
		if (kfetch(prog, s, pe.in, &err)) {
			diag_at(b, &adv->pc->loc, "error", (long)ai, "in kernel domain %s: %s", dom, err.msg);
			continue;
		}
		if (s->approx)
			diag_at(b, &adv->pc->loc, "warning", (long)ai,
				"in kernel domain %s: access(%s) approximated by the entry of %s (instruction-level "
				"join points need the kernel's DWARF)", dom, s->approx, s->name);
		pe.nin = (uint8_t)prog->ninputs;
		pe.when = s->kind == XFLOW_SITE_RETURN ? XFLOW_WHEN_AFTER : XFLOW_WHEN_BEFORE;
		struct xflow_plan_site ps = {
			.addr = s->fn.id, .binary = binary, .kind = (uint8_t)s->kind, .len = 1,
			.func = dup(b, s->name), .field = -1,
			.insn = s->kind == XFLOW_SITE_ENTRY ? "fentry" : s->kind == XFLOW_SITE_RETURN ? "fexit"
											: "raw tracepoint",
		};
		pe.site_key = site_intern(b, dp, &ps);
		dp->sites[pe.site_key].when_mask |= (uint8_t)(1u << pe.when);
		FL_PUSH(b->arena, *pv, *pn, *pcap, pe);
		*matched = true;
	}
	return 0;
}

/* Is binary @k of a domain one of its binaries 0..k-1, under this name or
 * another (a symbolic link, a path with "..", the monitor's name for an
 * agent's executable given again with bin=)?  A binary named twice is one
 * binary: resolved twice, each of its sites would be placed twice and its
 * advice run twice at every hit, a start giving each object two flows. */
static bool binary_named_before(const char *const *bins, size_t k)
{
	struct stat a, b;
	bool have = stat(bins[k], &a) == 0;
	for (size_t j = 0; j < k; j++) {
		if (!strcmp(bins[j], bins[k]))
			return true;
		if (have && stat(bins[j], &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
			return true;
	}
	return false;
}

int jp_plan_build(struct xflow_unit *u, const struct jp_domain_spec *doms, size_t ndoms,
		  struct jp_plan_opts *opts, struct xflow_plan **out)
{
	*out = NULL;
	struct fl_arena *arena = malloc(sizeof(*arena));
	if (!arena)
		return -ENOMEM;
	fl_arena_init(arena);
	struct pb b = { .u = u, .opts = opts, .arena = arena,
			.diag = opts && opts->diag ? opts->diag : opts && opts->on_diag ? NULL : stderr };
	struct xflow_plan *p = fl_arena_alloc(arena, sizeof(*p));
	p->mem = &arena->core;
	char why[512];
	if (xflow_plan_limits_check(ndoms, 0, 0, 0, why, sizeof(why)) != 0) {
		diag_at(&b, NULL, "error", -1, "%s: give fewer --domain options", why);
		ndoms = 0;
	}
	p->nflows = (uint32_t)xflow_unit_flow_count(u);
	p->flows = fl_arena_alloc(arena, (p->nflows + 1) * sizeof(*p->flows));
	for (uint32_t i = 0; i < p->nflows; i++)
		p->flows[i] = xflow_unit_flow_name(u, i);
	p->nfields = (uint32_t)xflow_unit_field_count(u);
	p->fields = fl_arena_alloc(arena, (p->nfields + 1) * sizeof(*p->fields));
	for (uint32_t i = 0; i < p->nfields; i++)
		xflow_unit_field(u, i, &p->fields[i].sname, &p->fields[i].member, NULL);
	size_t nadv = xflow_unit_advice_count(u);
	p->nadvice = (uint32_t)nadv;
	p->advice = fl_arena_alloc(arena, (nadv + 1) * sizeof(*p->advice));
	for (size_t i = 0; i < nadv; i++) {
		struct xflow_advice_info ai;
		if (xflow_unit_advice(u, i, &ai) != 0 || !ai.prog) {
			diag_at(&b, NULL, "error", (long)i, "advice %zu was not compiled", i);
			continue;
		}
		struct xflow_plan_advice *a = &p->advice[i];
		a->origin = ai.origin;
		a->flow = ai.flow;
		a->flags = ai.flags;
		a->after_store_field = ai.after_store_field;
		a->rec_flags = ai.rec_flags;
		a->file = ai.file;
		a->line = ai.line;
		a->col = ai.col;
		a->prog = *ai.prog;
	}
	bool *matched = fl_arena_alloc(arena, (nadv + 1) * sizeof(*matched));
	unsigned *skipped = fl_arena_alloc(arena, (nadv + 1) * sizeof(*skipped));
	b.miss = fl_arena_alloc(arena, (nadv + 1) * sizeof(*b.miss));
	p->ndomains = (uint32_t)ndoms;
	p->domains = fl_arena_alloc(arena, (ndoms + 1) * sizeof(*p->domains));
	int rc = 0;
	for (size_t d = 0; d < ndoms && rc == 0; d++) {
		struct xflow_plan_domain *dm = &p->domains[d];
		dm->name = doms[d].name;
		dm->binaries = fl_arena_alloc(arena, (doms[d].nbinaries + 1) * sizeof(*dm->binaries));
		dm->layouts = fl_arena_alloc(arena, (p->nfields + 1) * sizeof(*dm->layouts));
		for (uint32_t i = 0; i < p->nfields; i++)
			dm->layouts[i].offset = -1;
		struct dom_img *imgs = fl_arena_alloc(arena, (doms[d].nbinaries + 1) * sizeof(*imgs));
		size_t nimgs = 0;
		struct jp_kbtf *kb = NULL;
		uint32_t kbin = 0;
		for (size_t k = 0; k < doms[d].nbinaries; k++) {
			struct jp_err err;
			struct jp_image_opts io = { .debug_root = opts ? opts->debug_root : NULL };
			if (binary_named_before(doms[d].binaries, k))
				continue;
			if (jp_kbtf_is_kernel(doms[d].binaries[k]) && (doms[d].nbinaries > 1 || kb)) {
				diag_at(&b, NULL, "error", -1, "domain %s: a kernel (%s) is the domain's only binary: "
					"an agent traces either its kernel or its processes", dm->name, doms[d].binaries[k]);
				continue;
			}
			uint32_t i = dm->nbinaries++;
			dm->binaries[i].path = doms[d].binaries[k];
			if (jp_kbtf_is_kernel(doms[d].binaries[k])) {
				if (jp_kbtf_open(&kb, doms[d].binaries[k], &err) != 0)
					diag_at(&b, NULL, "error", -1, "domain %s: %s", dm->name, err.msg);
				const char *mn, *mwhy;
				for (unsigned sk = 0; kb && sk < jp_kbtf_skipped(kb, sk, &mn, &mwhy); sk++)
					diag_at(&b, NULL, "warning", -1, "domain %s: module %s skipped: %s", dm->name, mn,
						mwhy);
				kbin = i;
				/* Struct layouts from BTF: the keys of keyed handoffs. */
				for (uint32_t f = 0; kb && f < p->nfields; f++) {
					struct jp_kbtf_member km;
					if (jp_kbtf_member(kb, p->fields[f].sname, p->fields[f].member, &km, &err) != 0)
						continue;
					dm->layouts[f] = (struct xflow_plan_layout){
						.offset = (int64_t)km.offset, .size = (uint32_t)km.size,
						.bit_offset = km.bit_offset, .bit_size = km.bit_size,
						.flags = (km.is_signed ? XFLOW_LAYOUT_SIGNED : 0u) |
							 (km.is_ptr ? XFLOW_LAYOUT_POINTER : 0u),
						.nelems = km.nelems, .stride = km.stride,
					};
				}
				continue;
			}
			if (jp_image_open(&imgs[nimgs].img, doms[d].binaries[k], &io, &err) != 0) {
				diag_at(&b, NULL, "error", -1, "domain %s: %s", dm->name, err.msg);
				continue;
			}
			struct jp_image *img = imgs[nimgs].img;
			imgs[nimgs].binary = i;
			nimgs++;
			const char *bid = jp_image_build_id(img);
			dm->binaries[i].build_id = bid[0] ? fl_arena_strdup(arena, bid) : NULL;
			dm->binaries[i].flags = jp_image_is_relocatable(img) ? XFLOW_PLAN_BIN_RELOCATABLE : 0;
			for (uint32_t f = 0; f < p->nfields; f++) {
				struct jp_field_layout l;
				if (dm->layouts[f].offset >= 0 ||
				    jp_field_layout(img, p->fields[f].sname, p->fields[f].member, &l, &err) != 0)
					continue;
				dm->layouts[f] = (struct xflow_plan_layout){
					.offset = (int64_t)l.offset, .size = (uint32_t)l.size,
					.bit_offset = l.bit_offset, .bit_size = l.bit_size,
					.flags = (l.is_signed ? XFLOW_LAYOUT_SIGNED : 0u) |
						 (l.is_ptr ? XFLOW_LAYOUT_POINTER : 0u),
				};
			}
		}
		struct dplan dp = { 0 };
		struct pend *pv = NULL;
		size_t pn = 0, pcap = 0;
		for (size_t ai = 0; ai < nadv && nimgs; ai++) {
			int r = resolve_advice(&b, p, ai, dm->name, imgs, nimgs, &dp, &pv, &pn, &pcap, &matched[ai],
					       &skipped[ai]);
			if (r == -ENOMEM)
				rc = r;
		}
		for (size_t ai = 0; ai < nadv && kb; ai++)
			resolve_advice_kernel(&b, p, ai, dm->name, kb, kbin, &dp, &pv, &pn, &pcap, &matched[ai]);
		jp_kbtf_free(kb);
		/* Sort sites; renumber bindings; sort them in site and weave order. */
		uint32_t *order = fl_arena_alloc(arena, (dp.nsites + 1) * sizeof(*order));
		uint32_t *newidx = fl_arena_alloc(arena, (dp.nsites + 1) * sizeof(*newidx));
		for (uint32_t i = 0; i < dp.nsites; i++)
			order[i] = i;
		if (dp.nsites > 1)
			qsort_r(order, dp.nsites, sizeof(*order), idx_cmp, dp.sites);
		dm->sites = fl_arena_alloc(arena, (dp.nsites + 1) * sizeof(*dm->sites));
		for (uint32_t i = 0; i < dp.nsites; i++) {
			dm->sites[i] = dp.sites[order[i]];
			newidx[order[i]] = i;
		}
		dm->nsites = (uint32_t)dp.nsites;
		binary_identity(dm, imgs, nimgs);
		for (size_t i = 0; i < nimgs; i++)
			jp_image_free(imgs[i].img);
		for (size_t i = 0; i < pn; i++)
			pv[i].site_key = newidx[pv[i].site_key];
		if (pn > 1)
			qsort(pv, pn, sizeof(*pv), pend_cmp);
		dm->bindings = fl_arena_alloc(arena, (pn + 1) * sizeof(*dm->bindings));
		size_t nf = 0;
		for (size_t i = 0; i < pn; i++)
			nf += pv[i].nin;
		dm->fetches = fl_arena_alloc(arena, (nf + 1) * sizeof(*dm->fetches));
		for (size_t i = 0; i < pn; i++) {
			/* One binding per (site, advice): an advice placed both
			 * before and after would be two programs. */
			if (dm->nbindings && dm->bindings[dm->nbindings - 1].site == pv[i].site_key &&
			    dm->bindings[dm->nbindings - 1].advice == pv[i].advice)
				continue;
			struct xflow_plan_binding *x = &dm->bindings[dm->nbindings++];
			x->site = pv[i].site_key;
			x->advice = pv[i].advice;
			x->when = pv[i].when;
			x->ninputs = pv[i].nin;
			x->first_fetch = dm->nfetches;
			for (uint8_t k = 0; k < pv[i].nin; k++)
				dm->fetches[dm->nfetches++] = pv[i].in[k];
		}
	}
	for (size_t ai = 0; ai < nadv && rc == 0; ai++) {
		const struct fl_advice *adv = u->by_index[ai];
		/* An advice whose every site was skipped has said why already. */
		if (matched[ai] || skipped[ai] || !adv || !adv->pc)
			continue;
		struct fl_buf txt = { 0 };
		const struct fl_pc *parts[16];
		size_t n = written_parts(adv->pc, parts, 0, 16);
		for (size_t k = 0; k < n; k++) {
			bool paren = n > 1 && parts[k]->kind == FL_PC_OR;
			fl_buf_printf(&txt, "%s%s", k ? " AND " : "", paren ? "(" : "");
			fl_pc_print(&txt, parts[k]);
			fl_buf_printf(&txt, "%s", paren ? ")" : "");
		}
		static const char *const elem[] = { "", "<start> of xflow ", "<transit> of xflow ", "<quit> of xflow " };
		bool derived = adv->origin != FL_ORIGIN_USER && adv->flow;
		diag_at(&b, &adv->pc->loc, opts && opts->strict ? "error" : "warning", (long)ai,
			"%s%s%spointcut '%s' matches nothing in any domain%s%s", derived ? elem[adv->origin] : "",
			derived ? adv->flow->name : "", derived ? ": " : "", txt.s ? txt.s : "?",
			b.miss[ai] ? "; for example " : "", b.miss[ai] ? b.miss[ai] : "");
		fl_buf_free(&txt);
	}
	if (rc == 0 && b.errors)
		rc = -EINVAL;
	if (rc == 0) {
		if (xflow_plan_check(p, why, sizeof(why)) != 0) {
			diag_at(&b, NULL, "error", -1, "the plan built is invalid: %s", why);
			rc = -EINVAL;
		}
	}
	if (opts) {
		opts->errors = b.errors;
		opts->warnings = b.warnings;
	}
	*out = p;
	return rc;
}
