/*
 * call(f) at -O2 (issue 26 items 2 and 3): one site per call, at f's
 * entry.  fixtures/jp_entry.c is built with gcc -g -O2; each call() site
 * is checked against f's symbol and DWARF low_pc, and then the fixture is
 * run under ptrace with a breakpoint on every site: each function's sites
 * must stop exactly as often as main called it (never 0 because a site is
 * behind a branch or in a cold part, never twice because a part GCC split
 * off had a site of its own).
 */
#include <criterion/criterion.h>

#include "tests/weaver/fixtures/jp_fixture.h"
#include "weaver/jp/joinpoint.h"

static const char *const funcs[] = { "finalize", "handle", "split" };
#define NFUNCS (sizeof(funcs) / sizeof(funcs[0]))

/* The address of the function symbol named @name exactly, or of the first
 * one beginning with @name and containing @part (when @part is given). */
static bool sym_addr(const struct jp_image *img, const char *name, const char *part, uint64_t *addr)
{
	const struct jp_elf *e = jp_image_elf(img);
	size_t nl = strlen(name);
	for (size_t i = 0; i < e->nsyms; i++) {
		const char *s = e->syms[i].name;
		bool hit = part ? strncmp(s, name, nl) == 0 && strstr(s + nl, part) : strcmp(s, name) == 0;
		if (hit) {
			*addr = e->syms[i].addr;
			return true;
		}
	}
	return false;
}

struct fixture {
	char *dir, *bin;
	struct jp_image *img;
	struct jp_sites sites[NFUNCS];
};

static void fixture_open(struct fixture *fx)
{
	memset(fx, 0, sizeof(*fx));
	fx->dir = jpf_tmp_new();
	cr_assert(fx->dir);
	fx->bin = jpf_build(fx->dir, "jp_entry", "gcc", "-g -O2", "O2");
	cr_assert(fx->bin);
	struct jp_err err;
	cr_assert_eq(jp_image_open(&fx->img, fx->bin, NULL, &err), 0, "%s", err.msg);
	uint64_t a;
	if (!sym_addr(fx->img, "handle", ".cold", &a) || !sym_addr(fx->img, "split", ".part", &a))
		cr_skip_test("this gcc made no handle.cold or split.part.N of fixtures/jp_entry.c at -O2: "
			     "nothing split to test");
	for (size_t f = 0; f < NFUNCS; f++)
		cr_assert_eq(jp_find_entry(fx->img, funcs[f], NULL, &fx->sites[f], &err), 0, "%s", err.msg);
}

static void fixture_close(struct fixture *fx)
{
	for (size_t f = 0; f < NFUNCS; f++)
		jp_sites_free(&fx->sites[f]);
	jp_image_free(fx->img);
	free(fx->bin);
	jpf_tmp_free(fx->dir);
}

/* The out-of-line function named @name whose range holds @addr. */
static const struct jp_func *func_holding(struct jp_image *img, const char *name, uint64_t addr)
{
	struct jp_index *ix = jp_image_index(img);
	for (size_t f = 0; f < ix->nfuncs; f++) {
		const struct jp_func *fn = &ix->funcs[f];
		if (fn->inlined || !fn->name || strcmp(fn->name, name) != 0)
			continue;
		for (uint32_t r = 0; r < fn->nranges; r++)
			if (addr >= fn->ranges[r].lo && addr < fn->ranges[r].hi)
				return fn;
	}
	return NULL;
}

Test(jp_entry, out_of_line_site_is_the_symbol_and_low_pc, .timeout = 120)
{
	struct fixture fx;
	fixture_open(&fx);
	for (size_t f = 0; f < 2; f++) {
		const struct jp_sites *s = &fx.sites[f];
		uint64_t sym;
		cr_assert(sym_addr(fx.img, funcs[f], NULL, &sym), "no symbol %s", funcs[f]);
		cr_assert_eq(s->n, 1, "call(%s): %zu sites, want 1", funcs[f], s->n);
		cr_expect_eq(s->v[0].addr, sym, "call(%s) at %#llx (%s:%u), its symbol at %#llx", funcs[f],
			     (unsigned long long)s->v[0].addr, s->v[0].file, s->v[0].line, (unsigned long long)sym);
		/* DW_AT_low_pc of the part that holds the symbol: for handle,
		 * the hot part's range, not the lower cold one. */
		const struct jp_func *fn = func_holding(fx.img, funcs[f], sym);
		cr_assert(fn, "no DWARF function %s holds its symbol", funcs[f]);
		bool low_pc = false;
		for (uint32_t r = 0; r < fn->nranges; r++)
			low_pc |= fn->ranges[r].lo == s->v[0].addr;
		cr_expect(low_pc, "call(%s) at %#llx is not the start of one of its ranges", funcs[f],
			  (unsigned long long)s->v[0].addr);
	}
	uint64_t cold;
	cr_assert(sym_addr(fx.img, "handle", ".cold", &cold));
	cr_expect_neq(fx.sites[1].v[0].addr, cold, "call(handle) in handle.cold");
	fixture_close(&fx);
}

Test(jp_entry, split_part_is_named_not_a_site, .timeout = 120)
{
	struct fixture fx;
	fixture_open(&fx);
	uint64_t part;
	cr_assert(sym_addr(fx.img, "split", ".part", &part));
	const struct jp_sites *s = &fx.sites[2];
	cr_expect_geq(s->n, 1, "call(split): no site");
	for (size_t i = 0; i < s->n; i++)
		cr_expect_neq(s->v[i].addr, part, "call(split) has a site in split.part.N (%#llx)",
			      (unsigned long long)part);
	bool named = false;
	for (size_t i = 0; i < s->npassed; i++)
		named |= s->passed[i].addr == part && s->passed[i].why && strstr(s->passed[i].why, "split off");
	cr_expect(named, "split.part.N is not named as a part that has no site");
	fixture_close(&fx);
}

/* walk's recursive calls GCC inlined into walk are calls: sites, marked
 * so that the plan names them (a part split off and inlined back would
 * look the same to DWARF), never left out. */
Test(jp_entry, recursive_inlined_calls_are_sites_and_named, .timeout = 120)
{
	struct fixture fx;
	fixture_open(&fx);
	struct jp_sites w = { 0 };
	struct jp_err err;
	cr_assert_eq(jp_find_entry(fx.img, "walk", NULL, &w, &err), 0, "%s", err.msg);
	size_t self = 0;
	for (size_t i = 0; i < w.n; i++)
		if (w.v[i].inlined_into && strcmp(w.v[i].inlined_into, "walk") == 0) {
			cr_expect(w.v[i].self_inlined, "an instance of walk inlined into walk not marked");
			self++;
		}
	if (!self)
		cr_skip_test("this gcc inlined no call of walk into walk");
	cr_expect_eq(w.npassed, 0, "an inlined recursive call of walk was left out");
	jp_sites_free(&w);
	fixture_close(&fx);
}

struct bp {
	uint64_t addr;
	long orig;
	size_t func;
};

Test(jp_entry, each_call_stops_once, .timeout = 120)
{
	struct fixture fx;
	fixture_open(&fx);
	struct bp bps[64];
	size_t nbp = 0;
	for (size_t f = 0; f < NFUNCS; f++)
		for (size_t i = 0; i < fx.sites[f].n && nbp < 64; i++)
			bps[nbp++] = (struct bp){ .addr = fx.sites[f].v[i].addr, .func = f };
	struct jpf_run *r = calloc(1, sizeof(*r));
	cr_assert(r);
	cr_assert_eq(jpf_start(r, fx.bin, jp_image_is_relocatable(fx.img)), 0);
	for (size_t k = 0; k < nbp; k++)
		cr_assert_eq(jpf_poke_int3(r->pid, r->base + bps[k].addr, &bps[k].orig), 0);
	unsigned hits[NFUNCS] = { 0 };
	for (;;) {
		struct user_regs_struct regs;
		uint64_t at = 0;
		int stop = jpf_next_trap(r, &regs, &at);
		cr_assert_geq(stop, 0, "fixture stopped by signal %d", -stop);
		if (stop == 0)
			break;
		jpf_drain(r);
		struct bp *b = NULL;
		for (size_t k = 0; k < nbp && !b; k++)
			if (bps[k].addr == at)
				b = &bps[k];
		cr_assert(b, "trap at %#llx, not a site", (unsigned long long)at);
		hits[b->func]++;
		int rc = jpf_step_over(r, &regs, at, b->orig);
		cr_assert_geq(rc, 0, "stepping over %#llx: %s", (unsigned long long)at, strerror(-rc));
		if (rc == 1)
			break;
	}
	jpf_drain(r);
	close(r->out);
	for (size_t f = 0; f < NFUNCS; f++) {
		char key[64];
		snprintf(key, sizeof(key), "CALLS %s ", funcs[f]);
		const char *p = strstr(r->buf, key);
		cr_assert(p, "the fixture did not say how often it called %s:\n%s", funcs[f], r->buf);
		unsigned calls = (unsigned)strtoul(p + strlen(key), NULL, 10);
		cr_expect_gt(calls, 0);
		fprintf(stderr, "jp entry: call(%s) %zu sites, %u stops for %u calls\n", funcs[f], fx.sites[f].n,
			hits[f], calls);
		cr_expect_eq(hits[f], calls, "call(%s): %u stops for %u calls", funcs[f], hits[f], calls);
	}
	free(r);
	fixture_close(&fx);
}
