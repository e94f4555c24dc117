/*
 * Weave plan reader and checker.  The agent loads plans from files, so the
 * reader treats every byte as hostile: each count is checked against the
 * bytes left before anything is allocated, each string offset against the
 * table, and the whole decoded plan against xflow_plan_check(), which the
 * writer runs too, so that what one writes the other accepts.
 */
#include "xflow/plan.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/arena.h"
#include "xflow/file.h"
#include "xflow/flowlang.h"
#include "xflow/record.h"

uint32_t xflow_plan_fnv32(const unsigned char *p, size_t n);

static int bad(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int bad(char *why, size_t whylen, const char *fmt, ...)
{
	if (why && whylen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(why, whylen, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* ---- checks on a decoded plan ------------------------------------------------ */

static bool fetch_ok(const struct xflow_plan_fetch *f, bool allow_none)
{
	if (f->scale && (f->kind != XFLOW_FETCH_VALUE || f->index >= 16 ||
			 (f->scale != 1 && f->scale != 2 && f->scale != 4 && f->scale != 8)))
		return false;
	if (!f->scale && f->index)
		return false;
	switch (f->kind) {
	case 0:
		return allow_none;
	case XFLOW_FETCH_REG:
	case XFLOW_FETCH_VALUE:
		return f->reg < 16;
	case XFLOW_FETCH_MEM:
		return f->reg <= 16;
	case XFLOW_FETCH_STATIC:
		return f->reg == 0xff;
	default:
		return false;
	}
}

static int site_cmp3(const struct xflow_plan_site *a, const struct xflow_plan_site *b)
{
	if (a->binary != b->binary)
		return a->binary < b->binary ? -1 : 1;
	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	return (int)a->kind - (int)b->kind;
}

int xflow_plan_limits_check(uint64_t ndomains, uint64_t nadvice, uint64_t nfields, uint64_t nflows,
			    char *why, size_t whylen)
{
	static const struct {
		const char *what, *name;
		uint64_t max;
	} lim[] = {
		{ "domains", "XFLOW_PLAN_MAX_DOMAINS", XFLOW_PLAN_MAX_DOMAINS },
		{ "advice", "XFLOW_PLAN_MAX_ADVICE", XFLOW_PLAN_MAX_ADVICE },
		{ "fields", "XFLOW_PLAN_MAX_FIELDS", XFLOW_PLAN_MAX_FIELDS },
		{ "flows", "XFLOW_PLAN_MAX_FLOWS", XFLOW_PLAN_MAX_FLOWS },
	};
	const uint64_t n[] = { ndomains, nadvice, nfields, nflows };
	for (size_t i = 0; i < sizeof(lim) / sizeof(lim[0]); i++)
		if (n[i] > lim[i].max)
			return bad(why, whylen, "plan: %llu %s, more than the %llu a plan holds (%s)",
				   (unsigned long long)n[i], lim[i].what, (unsigned long long)lim[i].max,
				   lim[i].name);
	return 0;
}

int xflow_plan_check(const struct xflow_plan *p, char *why, size_t whylen)
{
	if (xflow_plan_limits_check(p->ndomains, p->nadvice, p->nfields, p->nflows, why, whylen) != 0)
		return -EINVAL;
	for (uint32_t i = 0; i < p->nfields; i++)
		if (!p->fields[i].sname || !p->fields[i].member)
			return bad(why, whylen, "plan: field %u has no struct or member name", i);
	for (uint32_t i = 0; i < p->nadvice; i++) {
		const struct xflow_plan_advice *a = &p->advice[i];
		if (a->origin > XFLOW_ADVICE_QUIT)
			return bad(why, whylen, "plan: advice %u: unknown origin %u", i, a->origin);
		if (a->flow < -1 || (a->flow >= 0 && (uint32_t)a->flow >= p->nflows))
			return bad(why, whylen, "plan: advice %u: flow %d out of range", i, a->flow);
		if (a->flags & ~(uint32_t)(XFLOW_ADVICE_AFTER | XFLOW_ADVICE_AFTER_STORE | XFLOW_ADVICE_RECEIVES |
					   XFLOW_ADVICE_NOTIFIES))
			return bad(why, whylen, "plan: advice %u: unknown flags %#x", i, a->flags);
		/* A plan of an older version says nothing of receiving:
		 * a flag there is damage, not a claim to believe. */
		if ((a->flags & XFLOW_ADVICE_RECEIVES) && p->version && p->version < 4)
			return bad(why, whylen, "plan: advice %u: flag RECEIVES in a version %u plan (from version 4)", i,
				   p->version);
		if ((a->flags & XFLOW_ADVICE_NOTIFIES) && p->version && p->version < 5)
			return bad(why, whylen, "plan: advice %u: flag NOTIFIES in a version %u plan (from version 5)", i,
				   p->version);
		if (a->after_store_field < -1 ||
		    (a->after_store_field >= 0 && (uint32_t)a->after_store_field >= p->nfields))
			return bad(why, whylen, "plan: advice %u: after-store field out of range", i);
		if (a->rec_flags & ~(uint32_t)XFLOW_REC_OP_FLAGS)
			return bad(why, whylen, "plan: advice %u: unknown record flags %#x", i, a->rec_flags);
		struct xflow_bc_prog g = a->prog;
		if (g.version != XFLOW_BC_VERSION || g.nfields != p->nfields || g.nflows != p->nflows)
			return bad(why, whylen, "plan: advice %u: program version or table sizes do not match the plan", i);
		if (g.ninsns == 0 || g.ninsns > XFLOW_BC_MAX_INSNS || g.nconsts > XFLOW_BC_MAX_CONSTS ||
		    g.nlocals > XFLOW_BC_MAX_LOCALS || g.ninputs > XFLOW_BC_MAX_INPUTS)
			return bad(why, whylen, "plan: advice %u: program too big", i);
		for (uint32_t k = 0; k < g.ninputs; k++)
			if ((g.inputs[k].kind != XFLOW_IN_TARGET && g.inputs[k].kind != XFLOW_IN_LOCAL_VAR) ||
			    (g.inputs[k].type != XFLOW_BC_INT && g.inputs[k].type != XFLOW_BC_PTR) ||
			    (g.inputs[k].kind == XFLOW_IN_LOCAL_VAR && !g.inputs[k].local))
				return bad(why, whylen, "plan: advice %u: bad input %u", i, k);
		const char *vwhy = NULL;
		uint32_t at = 0;
		if (xflow_bc_verify(&g, &vwhy, &at) != 0)
			return bad(why, whylen, "plan: advice %u: program refused at instruction %u: %s", i, at,
				   vwhy ? vwhy : "?");
	}
	for (uint32_t d = 0; d < p->ndomains; d++) {
		const struct xflow_plan_domain *dm = &p->domains[d];
		if (!dm->name)
			return bad(why, whylen, "plan: domain %u has no name", d);
		for (uint32_t e = 0; e < d; e++)
			if (strcmp(p->domains[e].name, dm->name) == 0)
				return bad(why, whylen, "plan: domain '%s' appears twice", dm->name);
		if (dm->nsites > XFLOW_PLAN_MAX_SITES)
			return bad(why, whylen, "plan: domain %s: too many sites", dm->name);
		for (uint32_t i = 0; i < dm->nbinaries; i++)
			if (!dm->binaries[i].path || (dm->binaries[i].flags & ~(uint32_t)XFLOW_PLAN_BIN_RELOCATABLE))
				return bad(why, whylen, "plan: domain %s: binary %u: no path or unknown flags", dm->name, i);
		for (uint32_t i = 0; i < p->nfields; i++) {
			const struct xflow_plan_layout *l = &dm->layouts[i];
			if (l->offset < -1 || l->offset > (int64_t)UINT32_MAX || l->bit_size > 64 ||
			    (l->flags & ~(uint32_t)(XFLOW_LAYOUT_SIGNED | XFLOW_LAYOUT_POINTER)) ||
			    (l->offset < 0 && (l->size || l->bit_size || l->bit_offset)))
				return bad(why, whylen, "plan: domain %s: layout of field %u is invalid", dm->name, i);
			if (l->offset >= 0 && (l->size == 0 || l->size > 4096))
				return bad(why, whylen, "plan: domain %s: field %u has size %u", dm->name, i, l->size);
			/* An array element: the whole array within what an
			 * offset can say, and the element within its stride. */
			if ((!l->nelems) != (!l->stride) ||
			    (l->nelems && (l->offset < 0 || l->bit_size || l->size > l->stride)) ||
			    (l->nelems && (uint64_t)l->offset + (uint64_t)l->nelems * l->stride > (uint64_t)UINT32_MAX + 1))
				return bad(why, whylen, "plan: domain %s: array element %u is invalid", dm->name, i);
			if (l->bit_size && (l->bit_offset < (uint64_t)l->offset * 8 ||
					    l->bit_offset + l->bit_size > ((uint64_t)l->offset + l->size) * 8))
				return bad(why, whylen, "plan: domain %s: bitfield %u outside its bytes", dm->name, i);
		}
		for (uint32_t i = 0; i < dm->nsites; i++) {
			const struct xflow_plan_site *s = &dm->sites[i];
			if (s->binary >= dm->nbinaries)
				return bad(why, whylen, "plan: domain %s: site %u: binary %u out of range", dm->name, i, s->binary);
			if (s->kind < XFLOW_SITE_LOAD || s->kind > XFLOW_SITE_TRACEPOINT || s->len < 1 || s->len > 15 ||
			    (s->when_mask & ~3u))
				return bad(why, whylen, "plan: domain %s: site %u: bad kind, length or placement", dm->name, i);
			if (s->field < -1 || (s->field >= 0 && (uint32_t)s->field >= p->nfields))
				return bad(why, whylen, "plan: domain %s: site %u: field out of range", dm->name, i);
			if (!fetch_ok(&s->target, true))
				return bad(why, whylen, "plan: domain %s: site %u: bad target recipe", dm->name, i);
			if (i > 0 && site_cmp3(&dm->sites[i - 1], s) >= 0)
				return bad(why, whylen, "plan: domain %s: site %u: sites not sorted by binary, address and kind",
					   dm->name, i);
		}
		for (uint32_t i = 0; i < dm->nfetches; i++)
			if (!fetch_ok(&dm->fetches[i], false))
				return bad(why, whylen, "plan: domain %s: fetch %u is invalid", dm->name, i);
		for (uint32_t i = 0; i < dm->nbindings; i++) {
			const struct xflow_plan_binding *b = &dm->bindings[i];
			if (b->site >= dm->nsites || b->advice >= p->nadvice || b->when > XFLOW_WHEN_AFTER)
				return bad(why, whylen, "plan: domain %s: binding %u: site, advice or placement out of range",
					   dm->name, i);
			if (b->ninputs != p->advice[b->advice].prog.ninputs ||
			    (uint64_t)b->first_fetch + b->ninputs > dm->nfetches)
				return bad(why, whylen, "plan: domain %s: binding %u: inputs do not match the advice or the fetch table",
					   dm->name, i);
			if (!(dm->sites[b->site].when_mask & (1u << b->when)))
				return bad(why, whylen, "plan: domain %s: binding %u: placement not in its site's mask", dm->name, i);
			if (i > 0) {
				const struct xflow_plan_binding *a = &dm->bindings[i - 1];
				if (a->site > b->site || (a->site == b->site && a->advice >= b->advice))
					return bad(why, whylen, "plan: domain %s: binding %u: not in site and weave order",
						   dm->name, i);
			}
		}
	}
	return 0;
}

/* ---- decoding ------------------------------------------------------------------ */

struct rd {
	const unsigned char *p;
	size_t len, off;
	const char *strtab;
	size_t strsize;
	struct xflow_arena *arena;
	bool err, enomem;
	char *why;
	size_t whylen;
};

static bool need(struct rd *r, size_t n)
{
	if (r->err)
		return false;
	if (n > r->len - r->off) {
		bad(r->why, r->whylen, "plan: truncated at byte %zu (needs %zu more)", r->off, n);
		r->err = true;
		return false;
	}
	return true;
}

static uint64_t get(struct rd *r, int n)
{
	if (!need(r, (size_t)n))
		return 0;
	uint64_t v = 0;
	for (int i = 0; i < n; i++)
		v |= (uint64_t)r->p[r->off + (size_t)i] << (8 * i);
	r->off += (size_t)n;
	return v;
}

#define U8(r) ((uint8_t)get((r), 1))
#define U16(r) ((uint16_t)get((r), 2))
#define U32(r) ((uint32_t)get((r), 4))
#define U64(r) (get((r), 8))

static const char *str(struct rd *r)
{
	size_t at = r->off;
	uint32_t o = U32(r);
	if (r->err || o == 0)
		return NULL;
	if (o >= r->strsize) {
		bad(r->why, r->whylen, "plan: string offset %u at byte %zu outside the string table", o, at);
		r->err = true;
		return NULL;
	}
	/* The table ends with NUL (checked), so every string does too.  An
	 * empty string is "none", wherever it points: the writer writes none
	 * as offset 0, and a plan must read the same after a round trip. */
	return r->strtab[o] ? r->strtab + o : NULL;
}

/* An array of @n records of at least @min bytes each: refuse counts the
 * remaining bytes cannot hold before allocating. */
static void *arr(struct rd *r, uint64_t n, size_t min, size_t elem)
{
	if (r->err)
		return NULL;
	if (n > (r->len - r->off) / (min ? min : 1)) {
		bad(r->why, r->whylen, "plan: count %llu at byte %zu is more than the file holds",
		    (unsigned long long)n, r->off);
		r->err = true;
		return NULL;
	}
	void *m = n ? xflow_arena_alloc(r->arena, (size_t)n * elem) : NULL;
	if (n && !m) {
		bad(r->why, r->whylen, "plan: out of memory");
		r->err = r->enomem = true;
	}
	return m;
}

static void fetch(struct rd *r, struct xflow_plan_fetch *f)
{
	f->kind = U8(r);
	f->reg = U8(r);
	f->size = U8(r);
	f->index = U8(r);
	f->scale = U8(r);
	f->off = (int64_t)U64(r);
}

/* A plan that owns its memory has it all in one arena at p->mem, p itself
 * included (the reader's plans and jp_plan_build's). */
void xflow_plan_free(struct xflow_plan *p)
{
	if (!p || !p->mem)
		return;
	struct xflow_arena *a = p->mem;
	xflow_arena_fini(a);
	free(a);
}

int xflow_plan_read(const void *buf, size_t len, struct xflow_plan **out, char *why,
		    size_t whylen)
{
	*out = NULL;
	if (why && whylen)
		why[0] = '\0';
	const unsigned char *b = buf;
	if (len < XFLOW_PLAN_HEADER_SIZE || memcmp(b, XFLOW_PLAN_MAGIC, 8) != 0)
		return bad(why, whylen, "plan: not a weave plan (no %s header)", XFLOW_PLAN_MAGIC);
	struct rd r = { .p = b, .len = len, .off = 8, .why = why, .whylen = whylen };
	uint32_t version = U32(&r), bcv = U32(&r);
	uint64_t fsize = U64(&r);
	uint32_t stroff = U32(&r), strsize = U32(&r);
	uint32_t nflows = U32(&r), nfields = U32(&r), nadvice = U32(&r), ndomains = U32(&r);
	uint32_t sum = U32(&r), flags = U32(&r);
	uint64_t reserved = U64(&r);
	if (version < XFLOW_PLAN_VERSION_MIN || version > XFLOW_PLAN_VERSION)
		return bad(why, whylen, "plan: version %u, this reader knows %u to %u", version, XFLOW_PLAN_VERSION_MIN,
			   XFLOW_PLAN_VERSION);
	if (bcv != XFLOW_BC_VERSION)
		return bad(why, whylen, "plan: bytecode version %u, this runtime runs %u", bcv, XFLOW_BC_VERSION);
	if (fsize != len)
		return bad(why, whylen, "plan: header says %llu bytes, the file has %zu",
			   (unsigned long long)fsize, len);
	if (flags || reserved)
		return bad(why, whylen, "plan: reserved header fields are not zero");
	/* The checksum first: a damaged byte anywhere, the string table's
	 * framing included, is then named as what it is. */
	if (xflow_plan_fnv32(b + XFLOW_PLAN_HEADER_SIZE, len - XFLOW_PLAN_HEADER_SIZE) != sum)
		return bad(why, whylen, "plan: checksum mismatch (corrupted file)");
	if (stroff < XFLOW_PLAN_HEADER_SIZE || strsize < 2 || stroff > len || strsize != len - stroff ||
	    b[stroff] != 0 || b[len - 1] != 0)
		return bad(why, whylen, "plan: bad string table (offset %u, %u bytes)", stroff, strsize);
	if (xflow_plan_limits_check(ndomains, nadvice, nfields, nflows, why, whylen) != 0)
		return -EINVAL;
	struct xflow_arena *m = malloc(sizeof(*m));
	if (!m)
		return -ENOMEM;
	xflow_arena_init(m);
	r.arena = m;
	r.len = stroff;          /* records end where the strings start */
	/* The plan owns its memory: its strings are a copy, not pointers into
	 * @buf, which the caller frees (a control message, a file's bytes). */
	char *strtab = xflow_arena_alloc(m, strsize);
	struct xflow_plan *p = strtab ? xflow_arena_alloc(m, sizeof(*p)) : NULL;
	if (!p) {
		xflow_arena_fini(m);
		free(m);
		bad(why, whylen, "plan: out of memory");
		return -ENOMEM;
	}
	memcpy(strtab, b + stroff, strsize);
	r.strtab = strtab;
	r.strsize = strsize;
	p->mem = m;
	p->version = version;
	p->nflows = nflows;
	p->flows = arr(&r, nflows, 4, sizeof(*p->flows));
	for (uint32_t i = 0; i < nflows && !r.err; i++)
		p->flows[i] = str(&r);
	p->nfields = nfields;
	p->fields = arr(&r, nfields, 8, sizeof(*p->fields));
	for (uint32_t i = 0; i < nfields && !r.err; i++) {
		p->fields[i].sname = str(&r);
		p->fields[i].member = str(&r);
	}
	p->nadvice = nadvice;
	p->advice = arr(&r, nadvice, 48, sizeof(*p->advice));
	for (uint32_t i = 0; i < nadvice && !r.err; i++) {
		struct xflow_plan_advice *a = &p->advice[i];
		a->origin = U32(&r);
		a->flow = (int32_t)U32(&r);
		a->flags = U32(&r);
		a->after_store_field = (int32_t)U32(&r);
		a->rec_flags = U32(&r);
		a->file = str(&r);
		a->line = U32(&r);
		a->col = U32(&r);
		struct xflow_bc_prog *g = &a->prog;
		g->version = XFLOW_BC_VERSION;
		g->nfields = nfields;
		g->nflows = nflows;
		g->ninsns = U32(&r);
		g->nconsts = U32(&r);
		g->nlocals = U32(&r);
		g->ninputs = U32(&r);
		if (!r.err && (g->ninsns > XFLOW_BC_MAX_INSNS || g->nconsts > XFLOW_BC_MAX_CONSTS ||
			       g->nlocals > XFLOW_BC_MAX_LOCALS || g->ninputs > XFLOW_BC_MAX_INPUTS)) {
			bad(why, whylen, "plan: advice %u: program too big", i);
			r.err = true;
		}
		struct xflow_bc_insn *ins = arr(&r, g->ninsns, 8, sizeof(*ins));
		for (uint32_t k = 0; k < g->ninsns && !r.err; k++) {
			ins[k].op = U8(&r);
			ins[k].a = U8(&r);
			ins[k].b = U16(&r);
			ins[k].k = (int32_t)U32(&r);
		}
		uint64_t *consts = arr(&r, g->nconsts, 8, sizeof(*consts));
		for (uint32_t k = 0; k < g->nconsts && !r.err; k++)
			consts[k] = U64(&r);
		uint8_t *lt = arr(&r, g->nlocals, 1, 1);
		for (uint32_t k = 0; k < g->nlocals && !r.err; k++)
			lt[k] = U8(&r);
		struct xflow_bc_input *inp = arr(&r, g->ninputs, 10, sizeof(*inp));
		for (uint32_t k = 0; k < g->ninputs && !r.err; k++) {
			inp[k].kind = U8(&r);
			inp[k].type = U8(&r);
			inp[k].local = str(&r);
			inp[k].sname = str(&r);
		}
		g->insns = ins;
		g->consts = consts;
		g->local_types = lt;
		g->inputs = inp;
	}
	p->ndomains = ndomains;
	p->domains = arr(&r, ndomains, 20, sizeof(*p->domains));
	for (uint32_t d = 0; d < ndomains && !r.err; d++) {
		struct xflow_plan_domain *dm = &p->domains[d];
		dm->name = str(&r);
		dm->nbinaries = U32(&r);
		dm->nsites = U32(&r);
		dm->nbindings = U32(&r);
		dm->nfetches = U32(&r);
		dm->binaries = arr(&r, dm->nbinaries, version >= 3 ? 28 : 12, sizeof(*dm->binaries));
		for (uint32_t i = 0; i < dm->nbinaries && !r.err; i++) {
			dm->binaries[i].path = str(&r);
			dm->binaries[i].build_id = str(&r);
			dm->binaries[i].flags = U32(&r);
			if (version >= 3) {
				dm->binaries[i].size = U64(&r);
				dm->binaries[i].code_hash = U64(&r);
			}
		}
		dm->layouts = arr(&r, nfields, 32, sizeof(*dm->layouts));
		for (uint32_t i = 0; i < nfields && !r.err; i++) {
			struct xflow_plan_layout *l = &dm->layouts[i];
			l->offset = (int64_t)U64(&r);
			l->size = U32(&r);
			l->bit_offset = U32(&r);
			l->bit_size = U32(&r);
			l->flags = U32(&r);
			l->nelems = U32(&r);
			l->stride = U32(&r);
		}
		dm->sites = arr(&r, dm->nsites, 68, sizeof(*dm->sites));
		for (uint32_t i = 0; i < dm->nsites && !r.err; i++) {
			struct xflow_plan_site *s = &dm->sites[i];
			s->addr = U64(&r);
			s->binary = U32(&r);
			s->kind = U8(&r);
			s->len = U8(&r);
			s->when_mask = U8(&r);
			s->file = str(&r);
			s->line = U32(&r);
			s->func = str(&r);
			s->inlined_into = str(&r);
			s->insn = str(&r);
			s->field = (int32_t)U32(&r);
			s->sname = str(&r);
			s->member = str(&r);
			s->moff = U32(&r);
			s->msize = U32(&r);
			fetch(&r, &s->target);
		}
		dm->bindings = arr(&r, dm->nbindings, 14, sizeof(*dm->bindings));
		for (uint32_t i = 0; i < dm->nbindings && !r.err; i++) {
			struct xflow_plan_binding *x = &dm->bindings[i];
			x->site = U32(&r);
			x->advice = U32(&r);
			x->when = U8(&r);
			x->ninputs = U8(&r);
			x->first_fetch = U32(&r);
		}
		dm->fetches = arr(&r, dm->nfetches, 13, sizeof(*dm->fetches));
		for (uint32_t i = 0; i < dm->nfetches && !r.err; i++)
			fetch(&r, &dm->fetches[i]);
	}
	if (!r.err && r.off != r.len) {
		bad(why, whylen, "plan: %zu stray bytes before the string table", r.len - r.off);
		r.err = true;
	}
	int rc = r.enomem ? -ENOMEM : r.err ? -EINVAL : xflow_plan_check(p, why, whylen);
	if (rc) {
		xflow_plan_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

int xflow_plan_read_file(const char *path, struct xflow_plan **out, char *why, size_t whylen)
{
	*out = NULL;
	char *buf, fwhy[128], inner[512] = "";
	size_t len;
	int rc = xflow_file_read(path, (size_t)1 << 31, &buf, &len, fwhy, sizeof(fwhy));
	if (rc) {
		if (why)
			snprintf(why, whylen, "%s: %s", path, fwhy);
		return rc;
	}
	rc = xflow_plan_read(buf, len, out, inner, sizeof(inner));
	if (rc && why)
		snprintf(why, whylen, "%s: %s", path, inner);
	free(buf);
	return rc;
}
