/*
 * Fetch recipes against a real run: each fixture, built with gcc and clang
 * at -O0 and -O2, runs under ptrace with a breakpoint at every site (each
 * member access and each traced function's entry).  At each stop:
 *   target(v): the instance the recipe computes must be an object the
 *              program printed ("OBJ S addr"), or inside one for structs
 *              the program never allocates alone (ring elements);
 *   local_var: each argument the program printed before the call
 *              ("ARG f name value") is read with jp_local_var's recipe and
 *              must equal what was printed, wherever DWARF gives a location.
 */
#include <criterion/criterion.h>

#include "tests/weaver/fixtures/jp_fixture.h"
#include "weaver/jp/joinpoint.h"

struct argname {
	char func[64], name[32];
};

/* The arg("f", "name", ...) calls in a fixture's source. */
static size_t read_args(const char *src, struct argname *v, size_t max)
{
	FILE *f = fopen(src, "r");
	cr_assert(f);
	char line[1024];
	size_t n = 0;
	while (fgets(line, sizeof(line), f) && n < max) {
		const char *p = strstr(line, "arg(\"");
		if (!p)
			continue;
		struct argname a;
		if (sscanf(p, "arg(\"%63[^\"]\", \"%31[^\"]\"", a.func, a.name) != 2)
			continue;
		bool dup = false;
		for (size_t k = 0; k < n && !dup; k++)
			dup = strcmp(v[k].func, a.func) == 0 && strcmp(v[k].name, a.name) == 0;
		if (!dup)
			v[n++] = a;
	}
	fclose(f);
	return n;
}

struct bp {
	uint64_t addr;     /* link-time */
	long orig;
};

struct counts {
	unsigned hits, target_ok, target_bad, var_ok, var_bad, var_none;
};

static uint64_t mask(uint64_t v, unsigned size)
{
	return size && size < 8 ? v & ((1ull << (8 * size)) - 1) : v;
}

static bool recipe_read(const struct jpf_run *r, pid_t pid, const struct user_regs_struct *regs,
			const struct jp_recipe *rc, bool want_value, uint64_t *out)
{
	bool ok = true;
	switch (rc->kind) {
	case JP_RECIPE_REG:
		*out = jpf_reg(regs, rc->reg);
		return true;
	case JP_RECIPE_VALUE:
		*out = jpf_reg(regs, rc->reg) + (uint64_t)rc->off +
		       (rc->scale ? jpf_reg(regs, rc->index) * rc->scale : 0);
		return true;
	case JP_RECIPE_MEM: {
		uint64_t a = jpf_reg(regs, rc->reg) + (uint64_t)rc->off;
		*out = want_value ? jpf_peek(pid, a, &ok) : a;
		return ok;
	}
	case JP_RECIPE_STATIC: {
		uint64_t a = r->base + (uint64_t)rc->off;
		*out = want_value ? jpf_peek(pid, a, &ok) : a;
		return ok;
	}
	default:
		return false;
	}
}

static bool inside_some_obj(const struct jpf_run *r, uint64_t v)
{
	for (const char *p = strstr(r->buf, "OBJ "); p; p = strstr(p + 1, "OBJ ")) {
		const char *sp = strchr(p + 4, ' ');
		if (!sp)
			break;
		uint64_t o = strtoull(sp + 1, NULL, 16);
		if (v >= o && v < o + 4096)
			return true;
	}
	return false;
}

static void check_site(struct jp_image *img, const struct jpf_run *r, const struct jp_site *s,
		       const struct user_regs_struct *regs, const struct argname *args, size_t nargs,
		       struct counts *c, const char *tag)
{
	struct jp_index *ix = jp_image_index(img);
	if (s->target.kind) {
		uint64_t v;
		bool ok = recipe_read(r, r->pid, regs, &s->target, false, &v);
		char key[96];
		snprintf(key, sizeof(key), "OBJ %.80s ", s->sname);
		/* An instance the program printed, or one nested in it (a
		 * struct member, an element of a ring). */
		bool good = ok && (jpf_is_obj(r, s->sname, v) || inside_some_obj(r, v));
		if (good) {
			c->target_ok++;
		} else {
			c->target_bad++;
			fprintf(stderr, "  %s: target %#llx is no %s: ", tag, (unsigned long long)v, s->sname);
			jp_site_print(s, stderr);
		}
	}
	const char *outer = s->outer >= 0 ? ix->funcs[s->outer].name : NULL;
	for (size_t k = 0; k < nargs; k++) {
		if (!outer || strcmp(args[k].func, outer) != 0)
			continue;
		uint64_t want;
		if (!jpf_last_arg(r, args[k].func, args[k].name, &want))
			continue;
		struct jp_recipe rc;
		struct jp_err err;
		int rv = jp_local_var(img, s, args[k].name, &rc, &err);
		if (rv == -ENODATA) {
			c->var_none++;
			continue;
		}
		cr_assert_eq(rv, 0, "%s: %s", tag, err.msg);
		uint64_t got;
		if (!recipe_read(r, r->pid, regs, &rc, true, &got)) {
			c->var_bad++;
			continue;
		}
		unsigned size = rc.size ? rc.size : 8;
		if (mask(got, size) == mask(want, size)) {
			c->var_ok++;
		} else {
			c->var_bad++;
			fprintf(stderr, "  %s: %s=%#llx read %#llx via ", tag, args[k].name,
				(unsigned long long)want, (unsigned long long)got);
			jp_recipe_print(&rc, stderr);
			fputs(" at ", stderr);
			jp_site_print(s, stderr);
		}
	}
}

static void run_one(const char *dir, const char *fx, const char *cc, const char *flags, const char *tag,
		    struct counts *total)
{
	char src[256], label[128];
	snprintf(src, sizeof(src), "%s/%s.c", JPF_DIR, fx);
	snprintf(label, sizeof(label), "%s %s", fx, tag);
	char *bin = jpf_build(dir, fx, cc, flags, tag);
	cr_assert(bin);
	struct jpf_marks mk;
	cr_assert_eq(jpf_marks_read(src, &mk), 0);
	struct argname args[64];
	size_t nargs = read_args(src, args, 64);
	struct jp_image *img;
	struct jp_err err;
	cr_assert_eq(jp_image_open(&img, bin, NULL, &err), 0, "%s", err.msg);

	struct jp_sites sites = { 0 };
	const char *done[32];
	size_t ndone = 0;
	for (size_t m = 0; m < mk.n; m++) {
		if (mk.v[m].kind == 'c') {
			cr_assert_eq(jp_find_entry(img, mk.v[m].member, NULL, &sites, &err), 0, "%s", err.msg);
			continue;
		}
		if (mk.v[m].kind != 'a')
			continue;
		bool seen = false;
		for (size_t k = 0; k < ndone && !seen; k++)
			seen = strcmp(done[k], mk.v[m].sname) == 0;
		if (seen || ndone == 32)
			continue;
		done[ndone++] = mk.v[m].sname;
		cr_assert_eq(jp_find_access(img, mk.v[m].sname, "%", NULL, &sites, &err), 0, "%s", err.msg);
	}
	/* One breakpoint per address. */
	struct bp *bps = calloc(sites.n + 1, sizeof(*bps));
	size_t nbp = 0;
	for (size_t i = 0; i < sites.n; i++) {
		bool dup = false;
		for (size_t k = 0; k < nbp && !dup; k++)
			dup = bps[k].addr == sites.v[i].addr;
		if (!dup)
			bps[nbp++].addr = sites.v[i].addr;
	}
	struct jpf_run *r = calloc(1, sizeof(*r));
	cr_assert_eq(jpf_start(r, bin, jp_image_is_relocatable(img)), 0);
	for (size_t k = 0; k < nbp; k++)
		cr_assert_eq(jpf_poke_int3(r->pid, r->base + bps[k].addr, &bps[k].orig), 0);
	struct counts c = { 0 };
	for (;;) {
		struct user_regs_struct regs;
		uint64_t at = 0;
		int stop = jpf_next_trap(r, &regs, &at);
		cr_assert_geq(stop, 0, "%s: fixture stopped by signal %d", label, -stop);
		if (stop == 0)
			break;
		struct bp *b = NULL;
		for (size_t k = 0; k < nbp && !b; k++)
			if (bps[k].addr == at)
				b = &bps[k];
		cr_assert(b, "%s: trap at %#llx, not a site", label, (unsigned long long)at);
		regs.rip--;
		jpf_drain(r);
		c.hits++;
		for (size_t i = 0; i < sites.n; i++)
			if (sites.v[i].addr == at)
				check_site(img, r, &sites.v[i], &regs, args, nargs, &c, label);
		int rc = jpf_step_over(r, &regs, at, b->orig);
		cr_assert_geq(rc, 0, "%s: stepping over %#llx: %s", label, (unsigned long long)at, strerror(-rc));
		if (rc == 1)
			break;
	}
	jpf_drain(r);
	close(r->out);
	waitpid(r->pid, NULL, WNOHANG);
	fprintf(stderr,
		"jp recipes %-28s %u stops: target %u right %u wrong; local_var %u right %u wrong, %u optimized out\n",
		label, c.hits, c.target_ok, c.target_bad, c.var_ok, c.var_bad, c.var_none);
	cr_expect_gt(c.hits, 0, "%s: no site was hit", label);
	cr_expect_eq(c.target_bad, 0, "%s: wrong targets", label);
	cr_expect_eq(c.var_bad, 0, "%s: wrong local_var reads", label);
	total->hits += c.hits;
	total->target_ok += c.target_ok;
	total->var_ok += c.var_ok;
	free(r);
	free(bps);
	jp_sites_free(&sites);
	jp_image_free(img);
	jpf_marks_free(&mk);
	free(bin);
}

static void run_fixture(const char *fx)
{
	static const struct { const char *cc, *flags, *tag; } vs[] = {
		{ "gcc", "-g -O0", "gcc-O0" }, { "gcc", "-g -O2", "gcc-O2" },
		{ "clang", "-g -O0", "clang-O0" }, { "clang", "-g -O2", "clang-O2" },
		{ "gcc", "-gdwarf-4 -O2 -fno-pie -no-pie", "gcc-O2-dwarf4-nopie" },
	};
	char *dir = jpf_tmp_new();
	cr_assert(dir);
	struct counts total = { 0 };
	for (size_t v = 0; v < sizeof(vs) / sizeof(vs[0]); v++)
		if (jpf_have(vs[v].cc))
			run_one(dir, fx, vs[v].cc, vs[v].flags, vs[v].tag, &total);
	cr_expect_gt(total.target_ok, 0);
	cr_expect_gt(total.var_ok, 0);
	jpf_tmp_free(dir);
}

Test(jp_recipes, shapes, .timeout = 120)
{
	run_fixture("jp_shapes");
}

Test(jp_recipes, netlike, .timeout = 120)
{
	run_fixture("jp_netlike");
}

Test(jp_recipes, ring, .timeout = 120)
{
	run_fixture("jp_ring");
}
