/*
 * Resolution of access(S.m), call(f), return(f) and local_var(v) against
 * one image.
 *
 * access(S.m) selects an instruction with a memory operand
 * [base + index * scale + disp] when, at that instruction, the base
 * register is known to point into an object whose struct, or a struct
 * nested in it (a member, an element of an array member), is S, and the
 * bytes touched overlap m.  What a register holds (struct tval) is found,
 * in this order:
 *   1. DWARF: a pointer variable or parameter visible at the PC (in the
 *      function or an inlined instance around it) located in that register;
 *      asked again at each instruction on the way back, since a location
 *      range often ends at the very instruction that overwrites it;
 *   2. data flow, back along predecessors (where blocks join, every way in
 *      must agree; a loop back to itself is neutral) to the instruction that
 *      wrote the register:
 *        mov reg, reg2            reg2's value there,
 *        mov reg, [frame slot]    a pointer variable DWARF puts there,
 *        mov reg, [reg2 + d]      reg2 points to a T whose member at d is a
 *                                 pointer (p->next->m),
 *        mov reg, [rip + d]       a global pointer variable,
 *        lea reg, [reg2 + ...]    reg2's pointer moved (&p->inner, &a[i]),
 *                                 or a local struct variable in the frame,
 *        add reg, reg2 / imm      pointer plus integer,
 *        shl reg, imm             an integer known to be a multiple of 2^imm
 *                                 (an array index scaled by hand).
 * An unknown multiple (a scaled index) is accepted only where it lands in
 * an array whose element size divides it.  Anything else leaves the
 * register untyped and the instruction is not a site: no guessing, so no
 * false sites; what is missed is reported as recall by the tests.
 */
#include "weaver/jp/joinpoint.h"
#include "xflow/flowlang.h"

#include <errno.h>
#include <libdwarf/dwarf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CHAIN 8     /* registers followed back through moves and loads */

static int fail(struct jp_err *err, int rc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int fail(struct jp_err *err, int rc, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* ---- small helpers --------------------------------------------------------- */

unsigned jp_edit_distance(const char *a, const char *b, unsigned cap)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return cap + 1;
	unsigned row[65], prev[65];
	for (size_t j = 0; j <= lb; j++)
		prev[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		row[0] = (unsigned)i;
		unsigned best = row[0];
		for (size_t j = 1; j <= lb; j++) {
			unsigned c = prev[j - 1] + (a[i - 1] != b[j - 1]);
			if (prev[j] + 1 < c)
				c = prev[j] + 1;
			if (row[j - 1] + 1 < c)
				c = row[j - 1] + 1;
			row[j] = c;
			if (c < best)
				best = c;
		}
		if (best > cap)
			return cap + 1;
		memcpy(prev, row, (lb + 1) * sizeof(*row));
	}
	return prev[lb] > cap ? cap + 1 : prev[lb];
}

/* Keeps the nearest of the names offered to it. */
struct near {
	const char *want;
	const char *best;
	unsigned dist;
};

static void near_offer(struct near *n, const char *cand)
{
	if (!cand || !*cand || strcmp(cand, n->want) == 0)
		return;
	size_t l = strlen(n->want);
	unsigned cap = l < 6 ? 2 : (unsigned)(l / 3);
	unsigned d = jp_edit_distance(n->want, cand, cap);
	if (d <= cap && (!n->best || d < n->dist || (d == n->dist && strcmp(cand, n->best) < 0))) {
		n->best = cand;
		n->dist = d;
	}
}

static const char *near_hint(const struct near *n, char *buf, size_t len)
{
	if (!n->best)
		return "";
	snprintf(buf, len, "; did you mean '%s'?", n->best);
	return buf;
}

/* One definition of within_file() matching for the front end's checks and
 * for resolution: the front end's. */
bool jp_path_match(const char *pattern, const char *path)
{
	return pattern && path && xflow_path_match(pattern, path);
}

/* ---- index lookups ---------------------------------------------------------- */

int32_t jp_func_at(struct jp_index *ix, uint64_t addr, bool innermost)
{
	size_t lo = 0, hi = ix->nfmap;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ix->fmap[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	int32_t f = -1;
	/* Ranges of distinct functions do not overlap, but look back a few
	 * in case of duplicates (identical code folded by the linker). */
	for (size_t k = lo; k > 0 && lo - k < 4; k--)
		if (addr >= ix->fmap[k - 1].lo && addr < ix->fmap[k - 1].hi) {
			f = ix->fmap[k - 1].f;
			break;
		}
	if (f < 0 || !innermost)
		return f;
	int32_t best = f;
	const struct jp_func *fn = &ix->funcs[f];
	for (uint32_t k = 1; k <= fn->ninl; k++) {
		const struct jp_func *g = &ix->funcs[f + (int32_t)k];
		for (uint32_t r = 0; r < g->nranges; r++)
			if (addr >= g->ranges[r].lo && addr < g->ranges[r].hi) {
				best = f + (int32_t)k;   /* later in pre-order is deeper */
				break;
			}
	}
	return best;
}

const struct jp_line *jp_line_at(const struct jp_index *ix, uint64_t addr)
{
	size_t lo = 0, hi = ix->nlines;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ix->lines[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	const struct jp_line *l = &ix->lines[lo - 1];
	if (l->flags & JP_LINE_END_SEQ)
		return NULL;
	return l;
}

int32_t jp_type_strip(const struct jp_index *ix, int32_t t)
{
	for (int i = 0; i < 16 && t >= 0; i++) {
		const struct jp_type *ty = &ix->types[t];
		if (ty->kind != JP_T_TYPEDEF && ty->kind != JP_T_CV)
			return t;
		t = ty->target;
	}
	return t >= 0 && ix->types[t].kind != JP_T_TYPEDEF && ix->types[t].kind != JP_T_CV ? t : -1;
}

static bool is_record(const struct jp_type *t)
{
	return t->kind == JP_T_STRUCT || t->kind == JP_T_UNION;
}

int32_t jp_struct_find(const struct jp_index *ix, const char *name)
{
	int32_t via_typedef = -1;
	size_t lo = 0, hi = ix->nnamed;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (strcmp(ix->types[ix->named[mid]].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo; k < ix->nnamed && strcmp(ix->types[ix->named[k]].name, name) == 0; k++) {
		size_t i = (size_t)ix->named[k];
		const struct jp_type *t = &ix->types[i];
		if (is_record(t) && !t->declaration && t->nmembers)
			return (int32_t)i;
		if (t->kind == JP_T_TYPEDEF && via_typedef < 0) {
			int32_t s = jp_type_strip(ix, (int32_t)i);
			if (s >= 0 && is_record(&ix->types[s]) && ix->types[s].nmembers)
				via_typedef = s;
		}
	}
	return via_typedef;
}

static void near_structs(const struct jp_index *ix, struct near *n)
{
	for (size_t i = 0; i < ix->ntypes; i++) {
		const struct jp_type *t = &ix->types[i];
		if (t->name && (is_record(t) || (t->kind == JP_T_TYPEDEF && jp_type_strip(ix, (int32_t)i) >= 0 &&
						 is_record(&ix->types[jp_type_strip(ix, (int32_t)i)]))))
			near_offer(n, t->name);
	}
}

/* Member @path ("a", "a.b") of struct @st, anonymous members flattened. */
static bool member_find(const struct jp_index *ix, int32_t st, const char *path,
			uint64_t base, struct jp_member *out, int depth)
{
	if (st < 0 || depth > 8)
		return false;
	const struct jp_type *t = &ix->types[st];
	size_t n = strcspn(path, ".");
	for (uint32_t i = 0; i < t->nmembers; i++) {
		const struct jp_member *m = &t->members[i];
		if (!m->name) {
			int32_t in = jp_type_strip(ix, m->type);
			if (in >= 0 && is_record(&ix->types[in]) &&
			    member_find(ix, in, path, base + m->offset, out, depth + 1))
				return true;
			continue;
		}
		if (strlen(m->name) != n || strncmp(m->name, path, n) != 0)
			continue;
		if (path[n] == '.') {
			int32_t in = jp_type_strip(ix, m->type);
			return in >= 0 && is_record(&ix->types[in]) &&
			       member_find(ix, in, path + n + 1, base + m->offset, out, depth + 1);
		}
		*out = *m;
		out->offset += base;
		if (m->bit_size)
			out->bit_offset += (uint32_t)(base * 8);
		return true;
	}
	return false;
}

static void near_members(const struct jp_index *ix, int32_t st, struct near *n, int depth)
{
	if (st < 0 || depth > 8)
		return;
	const struct jp_type *t = &ix->types[st];
	for (uint32_t i = 0; i < t->nmembers; i++) {
		if (t->members[i].name)
			near_offer(n, t->members[i].name);
		else
			near_members(ix, jp_type_strip(ix, t->members[i].type), n, depth + 1);
	}
}

/* The named members of @st (anonymous ones flattened) that the bytes
 * [off, off + size) overlap, in order: appended to @b comma-separated,
 * with how many in *n and the first that holds every byte in *whole. */
static void members_at(const struct jp_index *ix, int32_t st, int64_t off, uint64_t size,
		       struct fl_buf *b, unsigned *n, const char **whole, int depth)
{
	if (st < 0 || depth > 8)
		return;
	const struct jp_type *t = &ix->types[st];
	for (uint32_t i = 0; i < t->nmembers; i++) {
		const struct jp_member *m = &t->members[i];
		int64_t lo = (int64_t)m->offset, hi = lo + (int64_t)(m->size ? m->size : 1);
		if (off + (int64_t)size <= lo || off >= hi)
			continue;
		if (!m->name) {
			members_at(ix, jp_type_strip(ix, m->type), off - lo, size, b, n, whole, depth + 1);
			continue;
		}
		if (!*whole && off >= lo && off + (int64_t)size <= hi)
			*whole = m->name;
		fl_buf_printf(b, "%s%s", *n ? "," : "", m->name);
		(*n)++;
	}
}

/* What a site of @st touching [off, off + size) names as its member: @asked
 * (or the member holding every byte touched) when the access stays inside
 * it, else every member it spans, "{cmd,arg}" (a 16-byte vector store over
 * two 8-byte fields touches both). */
static const char *site_member(struct jp_index *ix, int32_t st, uint64_t off, uint64_t size,
			       const struct jp_member *asked)
{
	if (asked && off >= asked->offset && off + size <= asked->offset + (asked->size ? asked->size : 1))
		return asked->name;
	struct fl_buf b = { 0 };
	unsigned n = 0;
	const char *whole = NULL;
	members_at(ix, st, (int64_t)off, size, &b, &n, &whole, 0);
	const char *r = whole && !asked ? whole
		      : n > 1 ? fl_arena_printf(&ix->arena, "{%s}", b.s)
		      : n == 1 ? fl_arena_strdup(&ix->arena, b.s) : NULL;
	fl_buf_free(&b);
	return r;
}

int jp_field_layout(struct jp_image *img, const char *sname, const char *member,
		    struct jp_field_layout *out, struct jp_err *err)
{
	struct jp_index *ix = jp_image_index(img);
	char hint[300];
	int32_t st = jp_struct_find(ix, sname);
	if (st < 0) {
		struct near n = { .want = sname };
		near_structs(ix, &n);
		return fail(err, -ENOENT, "%s: no struct '%s' in the debug info%s", jp_image_path(img),
			    sname, near_hint(&n, hint, sizeof(hint)));
	}
	struct jp_member m;
	if (!member_find(ix, st, member, 0, &m, 0)) {
		struct near n = { .want = member };
		near_members(ix, st, &n, 0);
		return fail(err, -ENOENT, "%s: struct %s has no member '%s'%s", jp_image_path(img),
			    sname, member, near_hint(&n, hint, sizeof(hint)));
	}
	memset(out, 0, sizeof(*out));
	out->offset = m.offset;
	out->size = m.size;
	out->bit_offset = m.bit_size ? m.bit_offset : 0;
	out->bit_size = m.bit_size;
	int32_t mt = jp_type_strip(ix, m.type);
	if (mt >= 0) {
		out->is_ptr = ix->types[mt].kind == JP_T_POINTER;
		out->is_signed = ix->types[mt].kind == JP_T_BASE && ix->types[mt].is_signed;
	}
	return 0;
}

/* ---- variable locations -------------------------------------------------- */

static const struct jp_loc *loc_at(const struct jp_var *v, uint64_t pc)
{
	for (uint32_t i = 0; i < v->nlocs; i++)
		if (pc >= v->locs[i].lo && pc < v->locs[i].hi)
			return &v->locs[i];
	return NULL;
}

static bool in_scope(const struct jp_var *v, uint64_t pc)
{
	if (!v->scope)
		return true;
	for (uint32_t i = 0; i < v->nscope; i++)
		if (pc >= v->scope[i].lo && pc < v->scope[i].hi)
			return true;
	return false;
}

static int breg_of(uint8_t atom)
{
	return atom >= DW_OP_breg0 && atom <= DW_OP_breg31 ? atom - DW_OP_breg0 : -1;
}

static int reg_of(uint8_t atom)
{
	return atom >= DW_OP_reg0 && atom <= DW_OP_reg31 ? atom - DW_OP_reg0 : -1;
}

/* The frame base of @f at @pc as register + offset. */
static int frame_base(struct jp_index *ix, const struct jp_func *f, uint64_t pc, unsigned *reg,
		      int64_t *off)
{
	if (!f->nfb)
		return -ENODATA;
	const struct jp_op *op = &f->fb[0];
	if (op->atom == DW_OP_call_frame_cfa)
		return jp_dwarf_cfa(ix, pc, reg, off);
	int r = reg_of(op->atom);
	if (r >= 0 && r < JP_NREGS) {
		*reg = (unsigned)r;
		*off = 0;
		return 0;
	}
	r = breg_of(op->atom);
	if (r >= 0 && r < JP_NREGS) {
		*reg = (unsigned)r;
		*off = (int64_t)op->a;
		return 0;
	}
	return -ENODATA;
}

/* How to read variable @v of function @f at @pc.  -ENODATA: not here. */
static int loc_recipe(struct jp_index *ix, const struct jp_func *f, const struct jp_var *v,
		      const struct jp_loc *l, uint64_t pc, struct jp_recipe *out)
{
	memset(out, 0, sizeof(*out));
	if (!l || !l->nops)
		return -ENODATA;
	const struct jp_op *o = l->ops;
	uint32_t n = l->nops;
	/* A single piece covering the value is the value. */
	if (n == 2 && o[1].atom == DW_OP_piece && o[1].a >= 8)
		n = 1;
	int32_t t = jp_type_strip(ix, v->type);
	out->size = t >= 0 && ix->types[t].size < 256 ? (uint8_t)ix->types[t].size : 0;
	int r;
	if (n == 1 && (r = reg_of(o[0].atom)) >= 0 && r < 16) {
		out->kind = JP_RECIPE_REG;
		out->reg = (uint8_t)r;
		return 0;
	}
	if (n == 1 && o[0].atom == DW_OP_regx && o[0].a < 16) {
		out->kind = JP_RECIPE_REG;
		out->reg = (uint8_t)o[0].a;
		return 0;
	}
	if (n == 1 && (r = breg_of(o[0].atom)) >= 0 && r < JP_NREGS) {
		out->kind = JP_RECIPE_MEM;
		out->reg = (uint8_t)r;
		out->off = (int64_t)o[0].a;
		return 0;
	}
	if (n == 1 && o[0].atom == DW_OP_fbreg) {
		unsigned fr;
		int64_t fo;
		if (frame_base(ix, f, pc, &fr, &fo) != 0)
			return -ENODATA;
		out->kind = JP_RECIPE_MEM;
		out->reg = (uint8_t)fr;
		out->off = fo + (int64_t)o[0].a;
		return 0;
	}
	if (n == 1 && o[0].atom == DW_OP_addr) {
		out->kind = JP_RECIPE_STATIC;
		out->reg = JP_REG_NONE;
		out->off = (int64_t)o[0].a;
		return 0;
	}
	if (n == 2 && o[1].atom == DW_OP_stack_value && (r = breg_of(o[0].atom)) >= 0 && r < 16) {
		if (o[0].a == 0) {
			out->kind = JP_RECIPE_REG;
			out->reg = (uint8_t)r;
		} else {
			out->kind = JP_RECIPE_VALUE;
			out->reg = (uint8_t)r;
			out->off = (int64_t)o[0].a;
		}
		return 0;
	}
	return -ENODATA;   /* constants, entry values, implicit pointers, pieces */
}

static int var_recipe(struct jp_index *ix, const struct jp_func *f, const struct jp_var *v,
		      uint64_t pc, struct jp_recipe *out)
{
	return loc_recipe(ix, f, v, loc_at(v, pc), pc, out);
}

/* The chain of functions at @pc, innermost first. */
static size_t func_chain(struct jp_index *ix, uint64_t pc, int32_t *chain, size_t max)
{
	size_t n = 0;
	int32_t f = jp_func_at(ix, pc, true);
	while (f >= 0 && n < max) {
		chain[n++] = f;
		f = ix->funcs[f].inlined ? ix->funcs[f].parent : -1;
	}
	return n;
}

/* ---- typing registers ------------------------------------------------------ */

/*
 * What a register holds before an instruction runs, as far as the typer
 * can tell: a pointer into an object of type t (a pointer type's target,
 * unstripped) at offset off plus an unknown multiple of stride (0: exactly
 * off), or an integer that is a multiple of stride, or unknown.  CYCLE
 * marks a value that depends on itself around a loop: neutral in a meet.
 */
enum tv_kind { TV_UNKNOWN, TV_CYCLE, TV_PTR, TV_INT };

struct tval {
	uint8_t kind;
	int32_t t;
	int64_t off;
	uint64_t stride;
};

static const struct tval tv_unknown = { .kind = TV_UNKNOWN, .t = -1 };

/* Memo of (instruction, register) → value for one query, so joins and
 * loops are walked once: a small open-addressing table. */
#define MEMO_SIZE 1024
#define WALK_BUDGET 400

struct memo_ent {
	uint32_t key;            /* (insn << 4 | reg) + 1 */
	uint32_t gen;            /* the query it belongs to; others are empty */
	bool done;
	struct tval v;
};

/* A pointer variable of the function being typed that lives in a
 * register over [lo, hi): what dwarf_reg_target looks through. */
struct regvar {
	uint64_t lo, hi;
	int32_t tgt;             /* the pointer's target type */
	int32_t func;            /* the (inlined) function it belongs to */
	uint8_t reg;
	const struct jp_var *v;
};

struct typer {
	struct jp_image *img;
	struct jp_index *ix;
	const struct jp_code *code;
	const char *why;
	struct regvar *rv;       /* innermost functions first */
	size_t nrv, rv_cap;
	int budget;
	uint32_t gen;
	struct memo_ent memo[MEMO_SIZE];
};

static struct tval reg_val(struct typer *ty, size_t i, unsigned reg, int depth);

static int32_t ptr_target(const struct jp_index *ix, int32_t t)
{
	t = jp_type_strip(ix, t);
	if (t < 0 || ix->types[t].kind != JP_T_POINTER)
		return -1;
	return ix->types[t].target;
}

static struct tval tv_ptr(int32_t t)
{
	if (t < 0)
		return tv_unknown;
	struct tval v = { .kind = TV_PTR, .t = t };
	return v;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t r = a % b;
		a = b;
		b = r;
	}
	return a;
}

static bool func_has(const struct jp_func *f, uint64_t pc)
{
	for (uint32_t r = 0; r < f->nranges; r++)
		if (pc >= f->ranges[r].lo && pc < f->ranges[r].hi)
			return true;
	return false;
}

/* Collect the register-located pointer variables of out-of-line function
 * @f and its inlined instances, innermost (latest in pre-order) first. */
static int typer_load(struct typer *ty, size_t f)
{
	struct jp_index *ix = ty->ix;
	ty->nrv = 0;
	for (size_t k = f + ix->funcs[f].ninl + 1; k-- > f;) {
		const struct jp_func *fn = &ix->funcs[k];
		for (uint32_t i = 0; i < fn->nvars; i++) {
			const struct jp_var *v = &fn->vars[i];
			int32_t tgt = ptr_target(ix, v->type);
			if (tgt < 0)
				continue;
			for (uint32_t l = 0; l < v->nlocs; l++) {
				struct jp_recipe r;
				if (loc_recipe(ix, &ix->funcs[f], v, &v->locs[l], v->locs[l].lo, &r) != 0 ||
				    r.kind != JP_RECIPE_REG)
					continue;
				if (ty->nrv == ty->rv_cap) {
					size_t ncap = ty->rv_cap ? ty->rv_cap * 2 : 64;
					struct regvar *nv = realloc(ty->rv, ncap * sizeof(*nv));
					if (!nv)
						return -ENOMEM;
					ty->rv = nv;
					ty->rv_cap = ncap;
				}
				ty->rv[ty->nrv++] = (struct regvar){ .lo = v->locs[l].lo, .hi = v->locs[l].hi,
								     .tgt = tgt, .func = (int32_t)k,
								     .reg = r.reg, .v = v };
			}
		}
	}
	return 0;
}

static int32_t dwarf_reg_target(struct typer *ty, uint64_t pc, unsigned reg)
{
	for (size_t i = 0; i < ty->nrv; i++) {
		const struct regvar *e = &ty->rv[i];
		if (e->reg != reg || pc < e->lo || pc >= e->hi || !in_scope(e->v, pc) ||
		    !func_has(&ty->ix->funcs[e->func], pc))
			continue;
		ty->why = e->v->name;
		return e->tgt;
	}
	return -1;
}

/* A variable of the frame at address reg + off at @pc: its type, or -1. */
static int32_t frame_var_type(struct typer *ty, uint64_t pc, unsigned reg, int64_t off,
			      const char **name)
{
	int32_t chain[16];
	size_t n = func_chain(ty->ix, pc, chain, 16);
	for (size_t c = 0; c < n; c++) {
		const struct jp_func *f = &ty->ix->funcs[chain[c]];
		for (uint32_t k = 0; k < f->nvars; k++) {
			const struct jp_var *v = &f->vars[k];
			if (!in_scope(v, pc))
				continue;
			struct jp_recipe r;
			if (var_recipe(ty->ix, &ty->ix->funcs[chain[n - 1]], v, pc, &r) == 0 &&
			    r.kind == JP_RECIPE_MEM && r.reg == reg && r.off == off) {
				*name = v->name;
				return v->type;
			}
		}
	}
	return -1;
}

/* A struct (or union) variable of the frame whose bytes hold reg + off at
 * @pc: its type, and where it starts (reg + *start), or -1. */
static int32_t frame_obj_at(struct typer *ty, uint64_t pc, unsigned reg, int64_t off, int64_t *start,
			    const char **name)
{
	int32_t chain[16];
	size_t n = func_chain(ty->ix, pc, chain, 16);
	for (size_t c = 0; c < n; c++) {
		const struct jp_func *f = &ty->ix->funcs[chain[c]];
		for (uint32_t k = 0; k < f->nvars; k++) {
			const struct jp_var *v = &f->vars[k];
			int32_t t = jp_type_strip(ty->ix, v->type);
			if (t < 0 || !is_record(&ty->ix->types[t]) || !in_scope(v, pc))
				continue;
			struct jp_recipe r;
			if (var_recipe(ty->ix, &ty->ix->funcs[chain[n - 1]], v, pc, &r) == 0 &&
			    r.kind == JP_RECIPE_MEM && r.reg == reg && off >= r.off &&
			    (uint64_t)(off - r.off) < ty->ix->types[t].size) {
				*start = r.off;
				*name = v->name;
				return v->type;
			}
		}
	}
	return -1;
}

static int32_t member_type_at(const struct jp_index *ix, int32_t st, uint64_t off, bool want_ptr,
			      int depth)
{
	st = jp_type_strip(ix, st);
	if (st < 0 || depth > 8 || !is_record(&ix->types[st]))
		return -1;
	st = ix->types[st].def;
	if (st < 0)
		return -1;
	const struct jp_type *t = &ix->types[st];
	for (uint32_t i = 0; i < t->nmembers; i++) {
		const struct jp_member *m = &t->members[i];
		if (m->bit_size || off < m->offset || off >= m->offset + (m->size ? m->size : 1))
			continue;
		int32_t mt = jp_type_strip(ix, m->type);
		if (mt < 0)
			continue;
		if (off == m->offset) {
			if (want_ptr && ix->types[mt].kind == JP_T_POINTER)
				return m->type;
			if (!want_ptr && is_record(&ix->types[mt]))
				return m->type;
		}
		if (is_record(&ix->types[mt]))
			return member_type_at(ix, mt, off - m->offset, want_ptr, depth + 1);
	}
	return -1;
}

/* The global whose bytes hold @addr (globals are sorted by address), or
 * -1; with @exact, only one that starts there. */
static int32_t global_at(const struct jp_index *ix, uint64_t addr, bool exact)
{
	size_t lo = 0, hi = ix->nglobals;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (ix->globals[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	const struct jp_global *g = &ix->globals[lo - 1];
	if (exact)
		return g->addr == addr ? (int32_t)(lo - 1) : -1;
	int32_t t = jp_type_strip(ix, g->type);
	uint64_t size = t >= 0 ? ix->types[t].size : 0;
	return addr - g->addr < size ? (int32_t)(lo - 1) : -1;
}

/* An integer operand as off + k * stride; anything not known to be an
 * integer of that form is "any integer" (0 + k * 1). */
static struct tval as_int(struct tval v)
{
	if (v.kind == TV_INT && v.stride)
		return v;
	return (struct tval){ .kind = TV_INT, .t = -1, .off = 0, .stride = 1 };
}

/* What a direct call at @w leaves in rax: a pointer of the callee's DWARF
 * return type (the System V return register), when the target is the
 * entry of a function of this binary whose return type is a pointer.
 * Calls through the PLT or a register leave rax unknown. */
static struct tval call_result(struct typer *ty, const struct jp_insn *w)
{
	int32_t f = w->target ? jp_func_at(ty->ix, w->target, false) : -1;
	if (f < 0 || ty->ix->funcs[f].entry != w->target)
		return tv_unknown;
	int32_t t = ptr_target(ty->ix, ty->ix->funcs[f].ret_type);
	if (t >= 0)
		ty->why = "a call's return value";
	return tv_ptr(t);
}

/* The value @reg has after instruction @j, which writes it. */
static struct tval writer_val(struct typer *ty, size_t j, unsigned reg, int depth)
{
	const struct jp_insn *w = &ty->code->insns[j];
	if (w->kind == JP_I_CALL)
		return reg == 0 ? call_result(ty, w) : tv_unknown;
	if (w->dst != reg)
		return tv_unknown;     /* an implicit write (a division) */
	if (w->dst_size != 8)
		return as_int(tv_unknown);   /* a 32-bit (or narrower) result */
	if (w->kind == JP_I_MOV && w->src < 16 && !w->has_mem)
		return reg_val(ty, j, w->src, depth + 1);
	if (w->kind == JP_I_SHL) {
		struct tval v = reg_val(ty, j, reg, depth + 1);
		if (v.kind != TV_INT || w->imm < 0 || w->imm > 16)
			return tv_unknown;
		v.off <<= w->imm;
		v.stride <<= w->imm;
		return v;
	}
	if (w->kind == JP_I_ADD) {
		struct tval a = reg_val(ty, j, reg, depth + 1);
		if (w->src == JP_REG_NONE) {
			if (a.kind != TV_PTR && a.kind != TV_INT)
				return tv_unknown;
			a.off += w->imm;
			return a;
		}
		struct tval b = reg_val(ty, j, w->src, depth + 1);
		/* pointer + integer, either way round: an unknown other side
		 * is taken as any integer, the sum being the pointer's */
		if (a.kind == TV_PTR && b.kind != TV_PTR && b.kind != TV_CYCLE) {
			b = as_int(b);
			a.off += b.off;
			a.stride = gcd64(a.stride, b.stride);
			return a;
		}
		if (b.kind == TV_PTR && a.kind != TV_PTR && a.kind != TV_CYCLE) {
			a = as_int(a);
			b.off += a.off;
			b.stride = gcd64(b.stride, a.stride);
			return b;
		}
		return tv_unknown;
	}
	if (w->has_mem != 1)
		return tv_unknown;
	const char *nm = NULL;
	if (w->kind == JP_I_MOV && w->msize == 8 && w->index == JP_REG_NONE) {
		if (w->base == JP_REG_RIP) {
			/* A global pointer, or a pointer member of a global
			 * struct (g.head->...). */
			uint64_t ea = w->addr + w->len + (uint64_t)w->disp;
			int32_t g = global_at(ty->ix, ea, false), t = -1;
			if (g >= 0 && ty->ix->globals[g].addr == ea)
				t = ptr_target(ty->ix, ty->ix->globals[g].type);
			if (t < 0 && g >= 0)
				t = ptr_target(ty->ix, member_type_at(ty->ix, ty->ix->globals[g].type,
								      ea - ty->ix->globals[g].addr, true, 0));
			if (t >= 0)
				ty->why = "a global";
			return tv_ptr(t);
		}
		int32_t vt = frame_var_type(ty, w->addr, w->base, w->disp, &nm);
		if (vt >= 0) {
			int32_t t = ptr_target(ty->ix, vt);
			if (t >= 0)
				ty->why = nm;
			return tv_ptr(t);
		}
		struct tval b = reg_val(ty, j, w->base, depth + 1);
		if (b.kind != TV_PTR || b.stride || b.off + w->disp < 0)
			return tv_unknown;
		return tv_ptr(ptr_target(ty->ix, member_type_at(ty->ix, b.t, (uint64_t)(b.off + w->disp), true, 0)));
	}
	if (w->kind == JP_I_LEA && w->base < 16) {
		if (w->index == JP_REG_NONE) {
			int32_t vt = frame_var_type(ty, w->addr, w->base, w->disp, &nm);
			if (vt >= 0) {
				int32_t st = jp_type_strip(ty->ix, vt);
				if (st >= 0 && is_record(&ty->ix->types[st])) {
					ty->why = nm;
					return tv_ptr(vt);
				}
			}
		}
		struct tval b = reg_val(ty, j, w->base, depth + 1);
		if (b.kind != TV_PTR)
			return tv_unknown;
		b.off += w->disp;
		if (w->index != JP_REG_NONE) {
			struct tval x = reg_val(ty, j, w->index, depth + 1);
			if (x.kind == TV_PTR || x.kind == TV_CYCLE)
				return tv_unknown;
			x = as_int(x);
			uint64_t sc = w->scale ? w->scale : 1;
			b.off += x.off * (int64_t)sc;
			b.stride = gcd64(b.stride, x.stride * sc);
		}
		return b;
	}
	return tv_unknown;
}

static struct memo_ent *memo_slot(struct typer *ty, size_t i, unsigned reg)
{
	uint32_t key = (uint32_t)((i << 4) | reg) + 1;
	uint32_t h = (key * 2654435761u) & (MEMO_SIZE - 1);
	for (uint32_t n = 0; n < MEMO_SIZE; n++) {
		struct memo_ent *e = &ty->memo[(h + n) & (MEMO_SIZE - 1)];
		if (e->gen != ty->gen) {
			e->gen = ty->gen;
			e->key = 0;
			return e;
		}
		if (e->key == key)
			return e;
	}
	return NULL;
}

static bool tv_same(const struct jp_index *ix, struct tval a, struct tval b)
{
	if (a.kind != b.kind || a.off != b.off || a.stride != b.stride)
		return false;
	if (a.kind != TV_PTR)
		return true;
	return a.t == b.t || jp_type_strip(ix, a.t) == jp_type_strip(ix, b.t);
}

/*
 * The value of @reg before instruction @i.  DWARF first (a location range
 * often ends at the instruction that overwrites the register, which may be
 * the access itself, so it is asked at each instruction on the way back);
 * then back along predecessors to the instruction that wrote the register;
 * where blocks join, every way in must agree.
 */
static struct tval reg_val(struct typer *ty, size_t i, unsigned reg, int depth)
{
	if (depth > MAX_CHAIN || reg >= 16 || --ty->budget < 0)
		return tv_unknown;
	struct memo_ent *e = memo_slot(ty, i, reg);
	if (!e)
		return tv_unknown;
	if (e->key) {
		if (!e->done)
			return (struct tval){ .kind = TV_CYCLE, .t = -1 };
		return e->v;
	}
	e->key = (uint32_t)((i << 4) | reg) + 1;
	e->done = false;
	const struct jp_code *c = ty->code;
	struct tval v = tv_unknown;
	int32_t t = dwarf_reg_target(ty, c->insns[i].addr, reg);
	if (t >= 0) {
		v = tv_ptr(t);
	} else if (c->insns[i].npred > 0) {
		bool have = false, cycle = false;
		v = tv_unknown;
		for (uint32_t p = 0; p < c->insns[i].npred; p++) {
			size_t j = c->preds[c->insns[i].pred0 + p];
			struct tval pv = c->insns[j].wregs & (1u << reg) ? writer_val(ty, j, reg, depth)
									 : reg_val(ty, j, reg, depth);
			if (pv.kind == TV_CYCLE) {
				cycle = true;
				continue;
			}
			if (pv.kind == TV_UNKNOWN || (have && !tv_same(ty->ix, v, pv))) {
				v = tv_unknown;
				have = false;
				cycle = false;
				break;
			}
			v = pv;
			have = true;
		}
		if (!have)
			v = cycle ? (struct tval){ .kind = TV_CYCLE, .t = -1 } : tv_unknown;
	}
	/* Re-find the slot: the table does not move, but be explicit. */
	e = memo_slot(ty, i, reg);
	if (e) {
		e->done = true;
		e->v = v;
	}
	return v;
}

static void typer_reset(struct typer *ty)
{
	/* A new generation empties the memo without touching it. */
	if (++ty->gen == 0) {
		memset(ty->memo, 0, sizeof(ty->memo));
		ty->gen = 1;
	}
	ty->budget = WALK_BUDGET;
	ty->why = NULL;
}

/* ---- scopes ------------------------------------------------------------------ */

static bool fname_is(const struct jp_func *f, const char *name)
{
	return (f->name && strcmp(f->name, name) == 0) || (f->linkage && strcmp(f->linkage, name) == 0);
}

/* May out-of-line function @f hold code in @scope? */
static bool func_may_match(const struct jp_index *ix, size_t f, const struct jp_scope *sc)
{
	if (!sc || !sc->nfuncs)
		return true;
	for (uint32_t k = 0; k <= ix->funcs[f].ninl; k++)
		for (size_t s = 0; s < sc->nfuncs; s++)
			if (fname_is(&ix->funcs[f + k], sc->funcs[s]))
				return true;
	return false;
}

static bool site_in_scope(struct jp_index *ix, uint64_t addr, const char *file,
			  const struct jp_scope *sc)
{
	if (!sc)
		return true;
	if (sc->nfuncs) {
		int32_t chain[16];
		size_t n = func_chain(ix, addr, chain, 16);
		bool ok = false;
		for (size_t c = 0; c < n && !ok; c++)
			for (size_t s = 0; s < sc->nfuncs && !ok; s++)
				ok = fname_is(&ix->funcs[chain[c]], sc->funcs[s]);
		if (!ok)
			return false;
	}
	if (sc->nfiles) {
		bool ok = false;
		for (size_t s = 0; s < sc->nfiles && !ok; s++)
			ok = jp_path_match(sc->files[s], file);
		if (!ok)
			return false;
	}
	return true;
}

/* ---- sites ---------------------------------------------------------------------- */

void jp_sites_free(struct jp_sites *s)
{
	free(s->v);
	free(s->untyped);
	free(s->passed);
	memset(s, 0, sizeof(*s));
}

/* Append a site for instruction @in to @v (@n of @cap). */
static struct jp_site *site_push(struct jp_image *img, struct jp_site **v, size_t *n, size_t *cap,
				 const struct jp_insn *in, int kind)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 16;
		struct jp_site *nv = realloc(*v, ncap * sizeof(*nv));
		if (!nv)
			return NULL;
		*v = nv;
		*cap = ncap;
	}
	struct jp_index *ix = jp_image_index(img);
	struct jp_site *s = &(*v)[(*n)++];
	memset(s, 0, sizeof(*s));
	s->addr = in->addr;
	s->len = in->len;
	s->kind = (uint8_t)kind;
	const struct jp_line *l = jp_line_at(ix, in->addr);
	s->file = l ? l->file : NULL;
	s->line = l ? l->line : 0;
	s->fidx = jp_func_at(ix, in->addr, true);
	s->outer = jp_func_at(ix, in->addr, false);
	if (s->fidx >= 0) {
		s->func = ix->funcs[s->fidx].name;
		if (ix->funcs[s->fidx].inlined && s->outer >= 0)
			s->inlined_into = ix->funcs[s->outer].name;
	}
	jp_insn_text(jp_image_elf(img), in->addr, s->text, sizeof(s->text));
	s->target.kind = JP_RECIPE_NONE;
	return s;
}

static struct jp_site *site_add(struct jp_image *img, struct jp_sites *out, const struct jp_insn *in,
				int kind)
{
	return site_push(img, &out->v, &out->n, &out->cap, in, kind);
}

static int site_cmp(const void *a, const void *b)
{
	const struct jp_site *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->kind - y->kind;
}

/* Does the type chain of @t (unstripped: typedef names count) name @sname? */
static bool type_named(const struct jp_index *ix, int32_t t, const char *sname)
{
	for (int i = 0; i < 16 && t >= 0; i++) {
		const struct jp_type *ty = &ix->types[t];
		if (ty->name && strcmp(ty->name, sname) == 0)
			return true;
		if (ty->kind != JP_T_TYPEDEF && ty->kind != JP_T_CV)
			return false;
		t = ty->target;
	}
	return false;
}

static int32_t complete(const struct jp_index *ix, int32_t st)
{
	if (st >= 0 && is_record(&ix->types[st]))
		return ix->types[st].def;
	return st;
}

struct hit {
	int32_t def;          /* the struct matched (complete definition) */
	uint64_t moff, msize; /* bytes touched, relative to it */
	int64_t at;           /* the struct's address is base + disp - at (plus
	                       * index * scale if consumed_index) */
	bool consumed_index;  /* the index register selects an array element */
	bool no_target;       /* the instance's address cannot be computed */
};

/*
 * Which struct does [base + index * scale + disp] touch, when base holds
 * @bv (a pointer into an object at some offset, perhaps plus an unknown
 * multiple of a stride)?  Levels: the object's struct, then nested struct
 * members and elements of arrays of structs.  The first level whose struct
 * is named @sname (and, with @want, overlaps that member) is the hit.  An
 * unknown multiple (a stride, an index register) is accepted where the
 * address lands in an array whose element size divides it: of structs (it
 * picks the element), or of scalars (the site covers the whole array).
 */
static bool descend(struct typer *ty, size_t i, struct tval bv, const char *sname, int32_t want_def,
		    const struct jp_member *want, struct hit *h)
{
	const struct jp_index *ix = ty->ix;
	const struct jp_insn *in = &ty->code->insns[i];
	int32_t named = bv.t;
	int32_t cur = complete(ix, jp_type_strip(ix, bv.t));
	int64_t eoff = bv.off + in->disp;    /* from the object, for k = 0 */
	uint64_t ustride = bv.stride;
	bool has_index = in->index != JP_REG_NONE, consumed = false;
	int64_t index_off = 0;
	if (has_index) {
		struct tval x = reg_val(ty, i, in->index, 1);
		if (x.kind == TV_PTR || x.kind == TV_CYCLE)
			return false;
		x = as_int(x);
		uint64_t sc = in->scale ? in->scale : 1;
		index_off = x.off * (int64_t)sc;
		eoff += index_off;
		ustride = ustride ? gcd64(ustride, x.stride * sc) : x.stride * sc;
	}
	if (eoff < 0)
		return false;
	uint64_t off = (uint64_t)eoff, sz = in->msize ? in->msize : 1;
	for (int depth = 0; depth < 8 && cur >= 0 && is_record(&ix->types[cur]); depth++) {
		const struct jp_type *t = &ix->types[cur];
		if (off >= t->size || (!ustride && off + sz > t->size))
			return false;
		const struct jp_member *m = NULL;
		for (uint32_t k = 0; k < t->nmembers && !m; k++) {
			const struct jp_member *c = &t->members[k];
			if (off >= c->offset && off < c->offset + (c->size ? c->size : 1))
				m = c;
		}
		int32_t mt = m ? jp_type_strip(ix, m->type) : -1;
		if (type_named(ix, named, sname)) {
			uint64_t lo = off, n = sz;
			if (ustride) {
				/* An element of a scalar array member. */
				if (!m || mt < 0 || ix->types[mt].kind != JP_T_ARRAY)
					return false;
				int32_t et = jp_type_strip(ix, ix->types[mt].target);
				uint64_t es = et >= 0 ? ix->types[et].size : 0;
				if (!es || ustride % es)
					return false;
				lo = m->offset;
				n = m->size;
			}
			if (want) {
				uint64_t wsz = want->size ? want->size : 1;
				if (lo + n <= want->offset || lo >= want->offset + wsz)
					return false;
			}
			h->def = want_def >= 0 ? want_def : cur;
			h->moff = lo;
			h->msize = n;
			/* The struct's address is EA - off; with the unknown
			 * multiple inside a scalar array, only an index
			 * register (not part of base) can be taken out. */
			h->at = (int64_t)off;
			h->consumed_index = consumed;
			/* Without the index term the instance is EA - off minus
			 * the index's constant part, when it is not consumed. */
			if (!consumed)
				h->at -= index_off;
			h->no_target = ustride && bv.stride;
			return true;
		}
		if (!m || mt < 0)
			return false;
		if (!m->name || is_record(&ix->types[mt])) {
			if (ustride || off + sz > m->offset + m->size)
				return false;
			named = m->type;
			cur = complete(ix, mt);
			off -= m->offset;
			continue;
		}
		if (ix->types[mt].kind == JP_T_ARRAY) {
			int32_t e = ix->types[mt].target, es = jp_type_strip(ix, e);
			for (int k = 0; k < 4 && es >= 0 && ix->types[es].kind == JP_T_ARRAY; k++) {
				e = ix->types[es].target;
				es = jp_type_strip(ix, e);
			}
			es = complete(ix, es);
			if (es < 0 || !is_record(&ix->types[es]) || !ix->types[es].size)
				return false;
			uint64_t esz = ix->types[es].size, rel = off - m->offset, o = rel % esz;
			if (o + sz > esz || (!ustride && rel + sz > m->size) || (ustride && ustride % esz))
				return false;
			consumed = ustride != 0 && has_index;
			ustride = 0;
			named = e;
			cur = es;
			off = o;
			continue;
		}
		return false;
	}
	return false;
}

static int access_kind(const struct jp_insn *in)
{
	return in->macc == (JP_ACC_READ | JP_ACC_WRITE) ? JP_SITE_RMW
	     : in->macc == JP_ACC_WRITE ? JP_SITE_STORE : JP_SITE_LOAD;
}

/* @in's base register could not be typed: keep it in out->untyped if its
 * displacement (not 0) falls inside the member asked (@want), or for S.%
 * (@want NULL) inside struct @st when @scope names functions.  0 or
 * -ENOMEM. */
static int untyped_offer(struct jp_image *img, struct jp_sites *out, const struct jp_insn *in,
			 int32_t st, const char *sname, const struct jp_member *want,
			 const struct jp_scope *scope)
{
	struct jp_index *ix = jp_image_index(img);
	/* Displacement 0 is every dereference of every pointer: no sign of
	 * a member at offset 0, and the load named would be unrelated. */
	if (in->disp <= 0 || in->base >= 16 || in->base == 7)
		return 0;
	uint64_t d = (uint64_t)in->disp;
	if (want ? d < want->offset || d >= want->offset + (want->size ? want->size : 1)
		 : !scope || !scope->nfuncs || d >= ix->types[st].size)
		return 0;
	const struct jp_line *l = jp_line_at(ix, in->addr);
	if (!site_in_scope(ix, in->addr, l ? l->file : NULL, scope))
		return 0;
	struct jp_site *s = site_push(img, &out->untyped, &out->nuntyped, &out->untyped_cap, in,
				      access_kind(in));
	if (!s)
		return -ENOMEM;
	s->sname = ix->types[st].name ? ix->types[st].name : sname;
	s->member = site_member(ix, st, d, in->msize ? in->msize : 1, want);
	s->moff = d;
	s->msize = in->msize;
	s->why = "its base register could not be typed";
	return 0;
}

int jp_find_access(struct jp_image *img, const char *sname, const char *member,
		   const struct jp_scope *scope, struct jp_sites *out, struct jp_err *err)
{
	struct jp_index *ix = jp_image_index(img);
	char hint[300];
	int32_t st = jp_struct_find(ix, sname);
	if (st < 0) {
		struct near n = { .want = sname };
		near_structs(ix, &n);
		return fail(err, -ENOENT, "%s: no struct '%s' in the debug info%s", jp_image_path(img),
			    sname, near_hint(&n, hint, sizeof(hint)));
	}
	bool any = !member || strcmp(member, "%") == 0;
	struct jp_member want = { 0 };
	if (!any && !member_find(ix, st, member, 0, &want, 0)) {
		struct near n = { .want = member };
		near_members(ix, st, &n, 0);
		return fail(err, -ENOENT, "%s: struct %s has no member '%s'%s", jp_image_path(img),
			    sname, member, near_hint(&n, hint, sizeof(hint)));
	}
	if (scope)
		for (size_t s = 0; s < scope->nfuncs; s++) {
			bool found = false;
			for (size_t k = 0; k < ix->nfnames && !found; k++)
				found = strcmp(ix->fnames[k], scope->funcs[s]) == 0;
			for (size_t f = 0; f < ix->nfuncs && !found; f++)
				found = ix->funcs[f].linkage && strcmp(ix->funcs[f].linkage, scope->funcs[s]) == 0;
			if (!found) {
				struct near n = { .want = scope->funcs[s] };
				for (size_t k = 0; k < ix->nfnames; k++)
					near_offer(&n, ix->fnames[k]);
				return fail(err, -ENOENT, "%s: no function '%s'%s", jp_image_path(img),
					    scope->funcs[s], near_hint(&n, hint, sizeof(hint)));
			}
		}
	size_t first = out->n, first_untyped = out->nuntyped;
	struct typer *ty = calloc(1, sizeof(*ty));
	if (!ty)
		return -ENOMEM;
	for (size_t f = 0; f < ix->nfuncs; f++) {
		if (ix->funcs[f].inlined || !func_may_match(ix, f, scope))
			continue;
		const struct jp_code *code = jp_image_code(img, f, err);
		if (!code) {
			free(ty->rv);
			free(ty);
			return -EINVAL;
		}
		ty->img = img;
		ty->ix = ix;
		ty->code = code;
		if (typer_load(ty, f) != 0) {
			free(ty->rv);
			free(ty);
			return -ENOMEM;
		}
		for (size_t i = 0; i < code->ninsns; i++) {
			const struct jp_insn *in = &code->insns[i];
			if (in->has_mem != 1 || !in->macc || in->base == JP_REG_NONE)
				continue;
			typer_reset(ty);
			struct tval bv = tv_unknown;
			int64_t global = -1;
			if (in->base == JP_REG_RIP) {
				/* [rip + d] inside a global struct variable. */
				uint64_t ea = in->addr + in->len + (uint64_t)in->disp;
				int32_t g = in->index == JP_REG_NONE ? global_at(ix, ea, false) : -1;
				if (g < 0)
					continue;
				bv = tv_ptr(ix->globals[g].type);
				bv.off = (int64_t)(ea - ix->globals[g].addr) - in->disp;
				global = (int64_t)ea;
			} else if (in->base < 16) {
				/* A struct variable in the frame ([rbp - 0x20 + m]),
				 * or a pointer in the register. */
				int64_t start;
				const char *nm;
				int32_t vt = in->base == 6 || in->base == 7
					? frame_obj_at(ty, in->addr, in->base, in->disp, &start, &nm) : -1;
				if (vt >= 0) {
					bv = tv_ptr(vt);
					bv.off = -start;
					ty->why = nm;
				} else if (in->disp >= 0 && in->base != 7) {
					bv = reg_val(ty, i, in->base, 0);
				}
			}
			if (bv.kind != TV_PTR) {
				if (bv.kind == TV_UNKNOWN && global < 0 &&
				    untyped_offer(img, out, in, st, sname, any ? NULL : &want, scope) != 0) {
					free(ty->rv);
					free(ty);
					return -ENOMEM;
				}
				continue;
			}
			struct hit h;
			if (!descend(ty, i, bv, sname, st, any ? NULL : &want, &h))
				continue;
			const struct jp_line *l = jp_line_at(ix, in->addr);
			if (!site_in_scope(ix, in->addr, l ? l->file : NULL, scope))
				continue;
			struct jp_site *s = site_add(img, out, in, access_kind(in));
			if (!s) {
				free(ty->rv);
				free(ty);
				return -ENOMEM;
			}
			s->sname = ix->types[st].name ? ix->types[st].name : sname;
			s->member = site_member(ix, h.def, h.moff, h.msize, any ? NULL : &want);
			s->moff = h.moff;
			s->msize = (uint32_t)h.msize;
			/* The instance: base (+ index * scale) + disp - at. */
			s->target.size = 8;
			s->target.reg = in->base;
			s->target.off = in->disp - h.at;
			if (global >= 0) {
				s->target.kind = JP_RECIPE_STATIC;
				s->target.reg = JP_REG_NONE;
				s->target.off = global - h.at;
				s->why = "a global";
			} else if (h.no_target) {
				s->target.kind = JP_RECIPE_NONE;
			} else if (h.consumed_index) {
				s->target.kind = JP_RECIPE_VALUE;
				s->target.index = in->index;
				s->target.scale = in->scale;
			} else {
				s->target.kind = s->target.off ? JP_RECIPE_VALUE : JP_RECIPE_REG;
			}
			if (global < 0)
				s->why = ty->why;
		}
	}
	free(ty->rv);
	free(ty);
	if (out->n > first)
		qsort(out->v + first, out->n - first, sizeof(*out->v), site_cmp);
	if (out->nuntyped > first_untyped)
		qsort(out->untyped + first_untyped, out->nuntyped - first_untyped, sizeof(*out->untyped),
		      site_cmp);
	return 0;
}

/* Functions named @func: -ENOENT with a did-you-mean if none. */
static int check_func(struct jp_image *img, const char *func, struct jp_err *err)
{
	struct jp_index *ix = jp_image_index(img);
	for (size_t f = 0; f < ix->nfuncs; f++)
		if (fname_is(&ix->funcs[f], func))
			return 0;
	char hint[300];
	struct near n = { .want = func };
	for (size_t k = 0; k < ix->nfnames; k++)
		near_offer(&n, ix->fnames[k]);
	bool declared = false;
	for (size_t k = 0; k < ix->nfnames && !declared; k++)
		declared = strcmp(ix->fnames[k], func) == 0;
	if (declared)
		return fail(err, -ENOENT, "%s: function '%s' has no code in this binary (declared only, or every call was inlined away without a trace)",
			    jp_image_path(img), func);
	return fail(err, -ENOENT, "%s: no function '%s'%s", jp_image_path(img), func,
		    near_hint(&n, hint, sizeof(hint)));
}

static const struct jp_insn *insn_at(const struct jp_code *c, uint64_t addr)
{
	size_t lo = 0, hi = c->ninsns;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->insns[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->ninsns && c->insns[lo].addr == addr ? &c->insns[lo] : NULL;
}

/* The end of the prologue of out-of-line function @f: the line table's
 * prologue_end mark if there is one, else the start of the second line
 * (gdb's rule), else the entry itself. */
static uint64_t after_prologue(const struct jp_index *ix, const struct jp_func *f)
{
	uint64_t lo = f->entry, hi = lo;
	for (uint32_t r = 0; r < f->nranges; r++)
		if (f->ranges[r].lo == lo)
			hi = f->ranges[r].hi;
	size_t a = 0, b = ix->nlines;
	while (a < b) {
		size_t mid = (a + b) / 2;
		if (ix->lines[mid].addr < lo)
			a = mid + 1;
		else
			b = mid;
	}
	size_t first = a;
	for (size_t i = first; i < ix->nlines && ix->lines[i].addr < hi; i++)
		if ((ix->lines[i].flags & JP_LINE_PROLOGUE_END) && !(ix->lines[i].flags & JP_LINE_END_SEQ))
			return ix->lines[i].addr;
	if (first >= ix->nlines || ix->lines[first].addr != lo)
		return lo;
	uint32_t l0 = ix->lines[first].line;
	for (size_t i = first + 1; i < ix->nlines && ix->lines[i].addr < hi; i++) {
		const struct jp_line *l = &ix->lines[i];
		if (l->flags & JP_LINE_END_SEQ)
			break;
		if (l->addr > lo && l->line != l0 && l->line != 0 && (l->flags & JP_LINE_STMT))
			return l->addr;
	}
	return lo;
}

/* Does every execution from @from reach @to by falling through, with no
 * other way in?  Only then is a site at @to once per call, as the entry
 * is: at -O2 the line after the prologue is often behind a branch. */
static bool straight_to(const struct jp_code *c, uint64_t from, uint64_t to)
{
	const struct jp_insn *in = insn_at(c, from);
	if (!in || c->has_indirect)
		return false;
	for (size_t i = (size_t)(in - c->insns); i < c->ninsns; i++) {
		const struct jp_insn *x = &c->insns[i];
		if (x->addr > from && x->jtarget)
			return false;
		if (x->addr == to)
			return true;
		if (x->kind == JP_I_JMP || x->kind == JP_I_JCC || x->kind == JP_I_RET || x->kind == JP_I_HALT ||
		    i + 1 == c->ninsns || c->insns[i + 1].addr != x->addr + x->len)
			return false;
	}
	return false;
}

/* A name GCC gives a part it split off a function @base: "base.part.0"
 * (the tail that partial inlining leaves out of line), "base.cold". */
static bool split_part(const char *sym, const char *base)
{
	size_t bl = strlen(base);
	if (!sym || strncmp(sym, base, bl) != 0)
		return false;
	return strstr(sym + bl, ".part.") || strstr(sym + bl, ".cold");
}

/* Is inlined instance @f inside a copy of the function it instantiates? */
static bool inlined_into_itself(const struct jp_index *ix, const struct jp_func *f, const char *func)
{
	int32_t c = f->parent;
	for (int d = 0; c >= 0 && d < 32; d++) {
		if (fname_is(&ix->funcs[c], func))
			return true;
		c = ix->funcs[c].inlined ? ix->funcs[c].parent : -1;
	}
	return false;
}

int jp_find_entry(struct jp_image *img, const char *func, const struct jp_scope *scope,
		  struct jp_sites *out, struct jp_err *err)
{
	int rc = check_func(img, func, err);
	if (rc)
		return rc;
	struct jp_index *ix = jp_image_index(img);
	size_t first = out->n;
	for (size_t f = 0; f < ix->nfuncs; f++) {
		const struct jp_func *fn = &ix->funcs[f];
		if (!fname_is(fn, func))
			continue;
		int32_t outer = fn->inlined ? jp_func_at(ix, fn->entry, false) : (int32_t)f;
		if (outer < 0)
			continue;
		const struct jp_code *code = jp_image_code(img, (size_t)outer, err);
		if (!code)
			return -EINVAL;
		const char *base = fn->linkage ? fn->linkage : fn->name;
		const char *sym = fn->inlined ? NULL : jp_image_symbol_at(img, fn->entry, base);
		const char *pass = split_part(sym, base) ? "a part GCC split off the function, entered only from its entries"
							 : NULL;
		/* The entry, or the end of the prologue when every call goes
		 * there straight from the entry (parameters kept on the stack
		 * at -O0 are there only then). */
		uint64_t at = fn->entry;
		if (!fn->inlined && !pass) {
			uint64_t ap = after_prologue(ix, fn);
			if (ap != at && insn_at(code, ap) && straight_to(code, at, ap))
				at = ap;
		}
		const struct jp_insn *in = insn_at(code, at);
		if (!in)
			continue;
		const struct jp_line *l = jp_line_at(ix, at);
		if (!site_in_scope(ix, at, l ? l->file : NULL, scope))
			continue;
		struct jp_site *s = pass ? site_push(img, &out->passed, &out->npassed, &out->passed_cap, in,
						     JP_SITE_ENTRY)
					 : site_add(img, out, in, JP_SITE_ENTRY);
		if (!s)
			return -ENOMEM;
		s->func = fn->name;
		s->fidx = (int32_t)f;
		s->inlined_into = fn->inlined ? ix->funcs[outer].name : NULL;
		s->clone = sym && strcmp(sym, base) != 0 ? sym : NULL;
		/* A recursive call inlined is a call; so is, to DWARF, a part
		 * GCC split off and inlined back, which is not: a site, named. */
		s->self_inlined = fn->inlined && inlined_into_itself(ix, fn, func);
		s->why = pass ? pass : fn->inlined ? "inlined entry" : at == fn->entry ? "entry" : "after prologue";
	}
	if (out->n > first)
		qsort(out->v + first, out->n - first, sizeof(*out->v), site_cmp);
	return 0;
}

static bool in_ranges(const struct jp_func *f, uint64_t a)
{
	for (uint32_t r = 0; r < f->nranges; r++)
		if (a >= f->ranges[r].lo && a < f->ranges[r].hi)
			return true;
	return false;
}

int jp_find_return(struct jp_image *img, const char *func, const struct jp_scope *scope,
		   struct jp_sites *out, struct jp_err *err)
{
	int rc = check_func(img, func, err);
	if (rc)
		return rc;
	struct jp_index *ix = jp_image_index(img);
	size_t first = out->n;
	for (size_t f = 0; f < ix->nfuncs; f++) {
		const struct jp_func *fn = &ix->funcs[f];
		if (fn->inlined || !fname_is(fn, func))
			continue;
		const struct jp_code *code = jp_image_code(img, f, err);
		if (!code)
			return -EINVAL;
		for (size_t i = 0; i < code->ninsns; i++) {
			const struct jp_insn *in = &code->insns[i];
			bool tail = in->kind == JP_I_JMP && in->target && !in_ranges(fn, in->target);
			if (in->kind != JP_I_RET && !tail)
				continue;
			const struct jp_line *l = jp_line_at(ix, in->addr);
			if (!site_in_scope(ix, in->addr, l ? l->file : NULL, scope))
				continue;
			struct jp_site *s = site_add(img, out, in, JP_SITE_RETURN);
			if (!s)
				return -ENOMEM;
			s->func = fn->name;
			s->fidx = (int32_t)f;
			s->inlined_into = NULL;
			s->why = tail ? "tail call" : "ret";
		}
	}
	if (out->n > first)
		qsort(out->v + first, out->n - first, sizeof(*out->v), site_cmp);
	return 0;
}

int jp_local_var(struct jp_image *img, const struct jp_site *site, const char *name,
		 struct jp_recipe *out, struct jp_err *err)
{
	struct jp_index *ix = jp_image_index(img);
	int32_t chain[16];
	size_t n = func_chain(ix, site->addr, chain, 16);
	char hint[300];
	struct near nr = { .want = name };
	for (size_t c = 0; c < n; c++) {
		const struct jp_func *f = &ix->funcs[chain[c]];
		const struct jp_var *found = NULL;
		for (uint32_t k = 0; k < f->nvars; k++) {
			const struct jp_var *v = &f->vars[k];
			if (!in_scope(v, site->addr))
				continue;
			near_offer(&nr, v->name);
			if (strcmp(v->name, name) == 0 && (!found || v->scope))
				found = v;    /* the innermost block's wins */
		}
		if (found) {
			if (var_recipe(ix, &ix->funcs[chain[n - 1]], found, site->addr, out) == 0)
				return 0;
			return fail(err, -ENODATA,
				    "%s: variable '%s' is optimized out at %#llx (%s:%u, in %s): DWARF gives no location there",
				    jp_image_path(img), name, (unsigned long long)site->addr,
				    site->file ? site->file : "?", site->line, f->name ? f->name : "?");
		}
	}
	return fail(err, -ENOENT, "%s: no variable '%s' visible at %#llx (%s:%u, in %s)%s",
		    jp_image_path(img), name, (unsigned long long)site->addr,
		    site->file ? site->file : "?", site->line, site->func ? site->func : "?",
		    near_hint(&nr, hint, sizeof(hint)));
}

/* ---- printing ------------------------------------------------------------------ */

void jp_recipe_print(const struct jp_recipe *r, FILE *out)
{
	switch (r->kind) {
	case JP_RECIPE_REG:
		fprintf(out, "%%%s", jp_reg_name(r->reg));
		break;
	case JP_RECIPE_MEM:
		fprintf(out, "[%%%s%+lld]", jp_reg_name(r->reg), (long long)r->off);
		break;
	case JP_RECIPE_STATIC:
		fprintf(out, "[base+%#llx]", (unsigned long long)r->off);
		break;
	case JP_RECIPE_VALUE:
		if (r->scale)
			fprintf(out, "%%%s+%%%s*%u%+lld", jp_reg_name(r->reg), jp_reg_name(r->index), r->scale,
				(long long)r->off);
		else
			fprintf(out, "%%%s%+lld", jp_reg_name(r->reg), (long long)r->off);
		break;
	default:
		fputs("-", out);
	}
}

void jp_site_print(const struct jp_site *s, FILE *out)
{
	static const char *const kinds[] = { "?", "load", "store", "rmw", "entry", "return" };
	fprintf(out, "%#llx %-6s %s:%u %s%s%s", (unsigned long long)s->addr,
		kinds[s->kind <= 5 ? s->kind : 0], s->file ? s->file : "?", s->line,
		s->func ? s->func : "?", s->inlined_into ? " inlined into " : "",
		s->inlined_into ? s->inlined_into : "");
	if (s->sname)
		fprintf(out, " %s.%s[%llu,+%u]", s->sname, s->member ? s->member : "?",
			(unsigned long long)s->moff, s->msize);
	fprintf(out, "  %s", s->text);
	if (s->target.kind) {
		fputs("  target=", out);
		jp_recipe_print(&s->target, out);
	}
	if (s->why)
		fprintf(out, " (%s)", s->why);
	fputc('\n', out);
}
