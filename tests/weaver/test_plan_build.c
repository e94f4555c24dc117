/*
 * The resolve pass (weaver/plan_build.c) on what -O2 hides, with
 * tests/weaver/fixtures/jp_reqpipe.c built by gcc and clang: a site where
 * an input cannot be fetched is left out with a warning and the others
 * are woven (--strict refuses), accesses whose base register could not
 * be typed are said, and every diagnostic reaches on_diag with the advice
 * it concerns.
 */
#include <criterion/criterion.h>

#include "tests/weaver/fixtures/jp_fixture.h"
#include "weaver/jp/joinpoint.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"

static char *dir;

static void setup(void)
{
	dir = jpf_tmp_new();
	cr_assert(dir);
}

static void teardown(void)
{
	jpf_tmp_free(dir);
}

TestSuite(plan_build, .init = setup, .fini = teardown, .timeout = 120);

#define MAX_SEEN 32

struct seen {
	struct {
		char sev[16], msg[1024];
		long advice;
	} v[MAX_SEEN];
	size_t n;
};

static void on_diag(void *ctx, const struct jp_plan_diag *d)
{
	struct seen *s = ctx;
	if (s->n == MAX_SEEN)
		return;
	snprintf(s->v[s->n].sev, sizeof(s->v[0].sev), "%s", d->sev);
	snprintf(s->v[s->n].msg, sizeof(s->v[0].msg), "%s", d->msg);
	s->v[s->n].advice = d->advice;
	s->n++;
}

static struct xflow_unit *unit_of(const char *xml)
{
	struct xflow_unit *u;
	cr_assert_eq(xflow_unit_new(&u, NULL), 0);
	cr_assert_eq(xflow_unit_add_buffer(u, "t.xml", xml, strlen(xml)), 0);
	cr_assert_eq(xflow_unit_compile(u), 0);
	return u;
}

/* Resolve @u against @bin as domain "d"; diagnostics into @seen. */
static int build(struct xflow_unit *u, const char *bin, bool strict, struct seen *seen,
		 struct xflow_plan **plan)
{
	const char *bins[] = { bin };
	struct jp_domain_spec dom = { "d", bins, 1 };
	FILE *quiet = fopen("/dev/null", "w");
	struct jp_plan_opts o = { .strict = strict, .diag = quiet, .on_diag = on_diag, .diag_ctx = seen };
	memset(seen, 0, sizeof(*seen));
	int rc = jp_plan_build(u, &dom, 1, &o, plan);
	fclose(quiet);
	size_t faults = 0;
	for (size_t i = 0; i < seen->n; i++)
		faults += strcmp(seen->v[i].sev, "note") != 0;
	cr_expect_eq(o.errors + o.warnings, faults, "every diagnostic reaches on_diag");
	return rc;
}

/* The sites bound to advice @ai in @p's one domain, as addresses. */
static size_t bound_sites(const struct xflow_plan *p, uint32_t ai, uint64_t *out, size_t max)
{
	const struct xflow_plan_domain *d = &p->domains[0];
	size_t n = 0;
	for (uint32_t b = 0; b < d->nbindings && n < max; b++)
		if (d->bindings[b].advice == ai)
			out[n++] = d->sites[d->bindings[b].site].addr;
	return n;
}

static const char *const ccs[] = { "gcc", "clang" };
#define NCC (sizeof(ccs) / sizeof(ccs[0]))

/* jp_reqpipe built at -O2 by compiler @c, or NULL when it is not installed. */
static char *reqpipe(size_t c)
{
	if (!jpf_have(ccs[c]))
		return NULL;
	char *bin = jpf_build(dir, "jp_reqpipe", ccs[c], "-g -O2", ccs[c]);
	cr_assert(bin);
	return bin;
}

static bool planned(const struct xflow_plan *p, uint64_t addr)
{
	for (uint32_t i = 0; i < p->domains[0].nsites; i++)
		if (p->domains[0].sites[i].addr == addr)
			return true;
	return false;
}

/* 'part' is in a register at the first access of req in req_split and
 * dead at the later ones: the first is woven, the others are listed. */
Test(plan_build, site_with_an_optimized_out_input_is_left_out)
{
	static const char xml[] =
		"<flows><advice>\n"
		"<pointcut>access(req.%) AND within_function(req_split) AND local_var(part, pp)</pointcut>\n"
		"<before>STORE_DATA2($pc$, pp);</before></advice></flows>\n";
	for (size_t c = 0; c < NCC; c++) {
		char *bin = reqpipe(c);
		if (!bin)
			continue;
		struct xflow_unit *u = unit_of(xml);
		struct seen seen;
		struct xflow_plan *p = NULL;
		int rc = build(u, bin, false, &seen, &p);
		cr_assert_eq(rc, 0, "%s: %s", ccs[c], seen.n ? seen.v[0].msg : "");
		/* The oracle: where jp_local_var finds 'part', the site is in
		 * the plan; where DWARF has no location, a warning names it. */
		struct jp_image *img;
		struct jp_err err;
		cr_assert_eq(jp_image_open(&img, bin, NULL, &err), 0, "%s", err.msg);
		const char *fn[] = { "req_split" };
		struct jp_scope sc = { .funcs = fn, .nfuncs = 1 };
		struct jp_sites s = { 0 };
		cr_assert_eq(jp_find_access(img, "req", "%", &sc, &s, &err), 0, "%s", err.msg);
		unsigned woven = 0, left = 0;
		for (size_t i = 0; i < s.n; i++) {
			struct jp_recipe r;
			int lv = jp_local_var(img, &s.v[i], "part", &r, &err);
			if (lv == 0) {
				cr_expect(planned(p, s.v[i].addr), "%s: %#llx has 'part' and is not woven", ccs[c],
					  (unsigned long long)s.v[i].addr);
				woven++;
				continue;
			}
			cr_assert_eq(lv, -ENODATA, "%s", err.msg);
			cr_expect(!planned(p, s.v[i].addr));
			char at[32];
			snprintf(at, sizeof(at), "%#llx", (unsigned long long)s.v[i].addr);
			bool said = false;
			for (size_t k = 0; k < seen.n; k++)
				said |= strcmp(seen.v[k].sev, "warning") == 0 && seen.v[k].advice == 0 &&
					strstr(seen.v[k].msg, at) && strstr(seen.v[k].msg, "'part' is optimized out") &&
					strstr(seen.v[k].msg, "not woven");
			cr_expect(said, "%s: no warning for %s", ccs[c], at);
			left++;
		}
		cr_expect_gt(woven, 0, "%s: a site where 'part' lives", ccs[c]);
		cr_expect_gt(left, 0, "%s: a site where 'part' is dead", ccs[c]);
		jp_sites_free(&s);
		jp_image_free(img);
		xflow_plan_free(p);

		/* --strict keeps the refusal, with the same sites as errors. */
		rc = build(u, bin, true, &seen, &p);
		cr_expect_eq(rc, -EINVAL);
		unsigned errors = 0;
		for (size_t k = 0; k < seen.n; k++)
			errors += strcmp(seen.v[k].sev, "error") == 0 && strstr(seen.v[k].msg, "optimized out");
		cr_expect_eq(errors, left, "%s: %u errors for %u sites", ccs[c], errors, left);
		xflow_plan_free(p);
		xflow_unit_free(u);
		free(bin);
	}
}

/* A pointer loaded from a void * member has no type: the access it makes
 * is not a site, and the plan says so instead of missing it silently. */
Test(plan_build, untyped_accesses_are_said)
{
	static const char xml[] =
		"<flows>\n"
		"<advice><pointcut>call(req_stamp)</pointcut><before>STORE_DATA1($pc$);</before></advice>\n"
		"<advice><pointcut>access(part.len) AND within_function(req_stamp)</pointcut>\n"
		"<before>STORE_DATA1($pc$);</before></advice>\n"
		"</flows>\n";
	unsigned line = jpf_line_of(JPF_DIR "/jp_reqpipe.c", "->cookie)->len += 1;");
	cr_assert_gt(line, 0);
	char where[64];
	snprintf(where, sizeof(where), "jp_reqpipe.c:%u, in req_stamp", line);
	for (size_t c = 0; c < NCC; c++) {
		char *bin = reqpipe(c);
		if (!bin)
			continue;
		struct xflow_unit *u = unit_of(xml);
		struct seen seen;
		struct xflow_plan *p = NULL;
		cr_assert_eq(build(u, bin, false, &seen, &p), 0);
		bool said = false;
		for (size_t k = 0; k < seen.n; k++)
			said |= seen.v[k].advice == 1 && strcmp(seen.v[k].sev, "warning") == 0 &&
				strstr(seen.v[k].msg, "1 access in scope may touch part.len") &&
				strstr(seen.v[k].msg, "could not be typed") && strstr(seen.v[k].msg, where);
		cr_expect(said, "%s: the untyped access at line %u is not said", ccs[c], line);
		xflow_plan_free(p);
		xflow_unit_free(u);
		free(bin);
	}
}

/* @xml planned against fixtures/jp_typedef.c built at -O2: its unit (the
 * caller frees it after *plan), the plan and the diagnostics. */
static struct xflow_unit *typedef_plan(const char *xml, bool strict, struct seen *seen, struct xflow_plan **plan)
{
	char *bin = jpf_build(dir, "jp_typedef", "gcc", "-g -O2", "O2");
	cr_assert(bin);
	struct xflow_unit *u = unit_of(xml);
	int rc = build(u, bin, strict, seen, plan);
	cr_assert_eq(rc, 0, "%s", seen->n ? seen->v[0].msg : "");
	free(bin);
	return u;
}

/* Issue 26 item 4: access(T.m) where T is a typedef of struct S selects
 * what access(S.m) does, and the plan says which struct it names; an
 * anonymous struct is selected by its typedef. */
Test(plan_build, typedef_of_a_struct_is_the_struct)
{
	static const char xml[] =
		"<flows>\n"
		"<advice><pointcut>access(req_t.line) AND target(r)</pointcut><before>STORE_DATA2($pc$, r);</before></advice>\n"
		"<advice><pointcut>access(req_s.line)</pointcut><before>STORE_DATA1($pc$);</before></advice>\n"
		"<advice><pointcut>access(anon_t.b) AND within_function(req_set)</pointcut>"
		"<before>STORE_DATA1($pc$);</before></advice>\n"
		"</flows>\n";
	struct seen seen;
	struct xflow_plan *p = NULL;
	struct xflow_unit *u = typedef_plan(xml, true, &seen, &p);
	uint64_t by_typedef[8], by_struct[8], anon[8];
	size_t nt = bound_sites(p, 0, by_typedef, 8), ns = bound_sites(p, 1, by_struct, 8);
	cr_expect_geq(ns, 1, "access(req_s.line) selects nothing");
	cr_expect_eq(nt, ns, "access(req_t.line): %zu sites, access(req_s.line): %zu", nt, ns);
	for (size_t i = 0; i < nt && i < ns; i++)
		cr_expect_eq(by_typedef[i], by_struct[i]);
	cr_expect_eq(bound_sites(p, 2, anon, 8), 1, "access(anon_t.b) in req_set");
	bool said = false;
	for (size_t k = 0; k < seen.n; k++)
		said |= strcmp(seen.v[k].sev, "note") == 0 && seen.v[k].advice == 0 &&
			strstr(seen.v[k].msg, "req_t is a typedef of struct req_s");
	cr_expect(said, "the plan does not say which struct req_t names");
	xflow_plan_free(p);
	xflow_unit_free(u);
}

/* Issue 26 item 6: a load through an untyped pointer at displacement 0 is
 * any dereference at all, no sign of a member at offset 0: access(S.m) of
 * such a member names no unrelated load as "could not be typed". */
Test(plan_build, offset_zero_member_blames_no_unrelated_load)
{
	static const char xml[] =
		"<flows><advice><pointcut>access(req_t.state) AND within_function(req_set)</pointcut>"
		"<before>STORE_DATA1($pc$);</before></advice></flows>\n";
	struct seen seen;
	struct xflow_plan *p = NULL;
	struct xflow_unit *u = typedef_plan(xml, false, &seen, &p);
	uint64_t at[8];
	cr_expect_eq(bound_sites(p, 0, at, 8), 1, "r->state = 1 in req_set");
	for (size_t k = 0; k < seen.n; k++)
		cr_expect(!strstr(seen.v[k].msg, "could not be typed"), "%s: %s", seen.v[k].sev, seen.v[k].msg);
	xflow_plan_free(p);
	xflow_unit_free(u);
}

/* Issue 26 item 6: a pointcut of an xflow that matches nothing is shown
 * as written, with its element, not with the target() and local_var()s of
 * generated names its expansion added. */
Test(plan_build, xflow_pointcut_matching_nothing_is_shown_as_written)
{
	static const char xml[] =
		"<flows><xflow name='rq'>\n"
		"<start><pointcut>access(req_t.line) AND within_function(req_set)</pointcut></start>\n"
		"<transit><pointcut>call(req_set)</pointcut><move from='r' to='q'/></transit>\n"
		"</xflow></flows>\n";
	struct seen seen;
	struct xflow_plan *p = NULL;
	struct xflow_unit *u = typedef_plan(xml, false, &seen, &p);
	bool said = false;
	for (size_t k = 0; k < seen.n; k++) {
		cr_expect(!strstr(seen.v[k].msg, "random_str"), "%s: %s", seen.v[k].sev, seen.v[k].msg);
		said |= strcmp(seen.v[k].sev, "warning") == 0 &&
			strstr(seen.v[k].msg, "<transit> of xflow rq: pointcut 'call(req_set)' matches nothing") &&
			strstr(seen.v[k].msg, "no variable 'q'");
	}
	cr_expect(said, "no warning names the <transit>, its pointcut as written and the variable missing");
	xflow_plan_free(p);
	xflow_unit_free(u);
}
