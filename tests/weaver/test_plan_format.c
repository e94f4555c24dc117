/*
 * The weave plan: built from a flow file against a fixture binary, written,
 * read back, and written again byte for byte; deterministic across builds;
 * a reader that refuses every truncation and every corruption the checksum
 * or the checks can see, and never crashes on what it is given.
 */
#include <criterion/criterion.h>
#include <sys/stat.h>

#include "tests/lib/testlib.h"
#include "tests/weaver/fixtures/jp_fixture.h"
#include "weaver/jp/joinpoint.h"
#include "xflow/collector.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"
#include "xflow/record.h"

uint32_t xflow_plan_fnv32(const unsigned char *p, size_t n);

static const char flow_xml[] =
	"<flows>\n"
	"<xflow name=\"pkt\">\n"
	"  <start><pointcut>access(sk_buff.data) AND within_function(alloc_skb_from_cache)</pointcut></start>\n"
	"  <transit><pointcut>access(sk_buff.head) AND within_function(skb_clone)</pointcut>\n"
	"    <move from=\"skb\" to=\"n\"/></transit>\n"
	"  <quit><pointcut>access(sk_buff.%) AND within_function(kfree_skb)</pointcut></quit>\n"
	"</xflow>\n"
	"<advice>\n"
	"  <pointcut>access(sk_buff.%) AND target(b) AND xflow(pkt, b, id)</pointcut>\n"
	"  <before>long long t; DO_RDTSC(t); STORE_DATA3($pc$, t, id);</before>\n"
	"</advice>\n"
	"<advice>\n"
	"  <pointcut>call(skb_put) AND local_var(n, np)</pointcut>\n"
	"  <before>STORE_DATA1(*(int*)np);</before>\n"
	"</advice>\n"
	"<advice>\n"
	"  <pointcut>return(kfree_skb) OR call(nothing_like_this)</pointcut>\n"
	"  <after>STORE_DATA1($pc$);</after>\n"
	"</advice>\n"
	"</flows>\n";

static char *dir, *bin;

static void setup(void)
{
	dir = jpf_tmp_new();
	cr_assert(dir);
	bin = jpf_build(dir, "jp_netlike", "gcc", "-g -O0", "plan");
	cr_assert(bin);
}

static void teardown(void)
{
	free(bin);
	jpf_tmp_free(dir);
}

TestSuite(plan_format, .init = setup, .fini = teardown, .timeout = 60);

static struct xflow_unit *compile(const char *xml)
{
	struct xflow_unit *u;
	struct xflow_unit_opts o = { .no_include = true };
	cr_assert_eq(xflow_unit_new(&u, &o), 0);
	cr_assert_eq(xflow_unit_add_buffer(u, "t.xml", xml, strlen(xml)), 0);
	int rc = xflow_unit_compile(u);
	if (rc)
		xflow_unit_print_diags(u, stderr);
	cr_assert_eq(rc, 0);
	return u;
}

/* Build, and write to bytes. */
static void *build(struct xflow_unit *u, size_t *len, struct xflow_plan **keep, char **diags)
{
	const char *bins[] = { bin };
	struct jp_domain_spec d = { "dom0", bins, 1 };
	char *dbuf = NULL;
	size_t dlen = 0;
	FILE *df = open_memstream(&dbuf, &dlen);
	struct jp_plan_opts o = { .diag = df };
	struct xflow_plan *p;
	int rc = jp_plan_build(u, &d, 1, &o, &p);
	fclose(df);
	cr_assert_eq(rc, 0, "%s", dbuf);
	void *buf;
	char why[256];
	cr_assert_eq(xflow_plan_write(p, &buf, len, why, sizeof(why)), 0, "%s", why);
	if (keep)
		*keep = p;
	else
		xflow_plan_free(p);
	if (diags)
		*diags = dbuf;
	else
		free(dbuf);
	return buf;
}

Test(plan_format, build_roundtrip_deterministic)
{
	struct xflow_unit *u = compile(flow_xml);
	size_t n1, n2, n3;
	struct xflow_plan *p;
	char *diags;
	void *b1 = build(u, &n1, &p, &diags);
	/* The pointcut that cannot match part of an OR is quiet; a whole
	 * pointcut matching nothing would be a warning. */
	cr_expect(strstr(diags, "nothing_like_this"), "a missing function is named: %s", diags);
	void *b2 = build(u, &n2, NULL, NULL);
	cr_assert_eq(n1, n2);
	cr_assert(memcmp(b1, b2, n1) == 0, "two builds, two different plans");
	struct xflow_plan *q;
	char why[256];
	cr_assert_eq(xflow_plan_read(b1, n1, &q, why, sizeof(why)), 0, "%s", why);
	void *b3;
	cr_assert_eq(xflow_plan_write(q, &b3, &n3, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(n1, n3);
	cr_assert(memcmp(b1, b3, n1) == 0, "read then written differs");

	/* What it holds: one domain, sites of every kind, xflow advice first. */
	cr_assert_eq(q->ndomains, 1);
	cr_assert_eq(q->nflows, 1);
	cr_assert_str_eq(q->flows[0], "pkt");
	const struct xflow_plan_domain *d = &q->domains[0];
	cr_assert_str_eq(d->name, "dom0");
	cr_assert(d->binaries[0].flags & XFLOW_PLAN_BIN_RELOCATABLE);
	unsigned kinds[6] = { 0 };
	for (uint32_t i = 0; i < d->nsites; i++)
		kinds[d->sites[i].kind]++;
	cr_expect_gt(kinds[XFLOW_SITE_LOAD] + kinds[XFLOW_SITE_STORE], 0);
	cr_expect_gt(kinds[XFLOW_SITE_ENTRY], 0);
	cr_expect_gt(kinds[XFLOW_SITE_RETURN], 0);
	cr_expect_eq(q->advice[0].origin, XFLOW_ADVICE_START);
	bool saw_local = false, saw_after = false;
	for (uint32_t i = 0; i < d->nbindings; i++) {
		const struct xflow_plan_binding *b = &d->bindings[i];
		const struct xflow_bc_prog *g = &q->advice[b->advice].prog;
		for (uint32_t k = 0; k < b->ninputs; k++) {
			const struct xflow_plan_fetch *f = &d->fetches[b->first_fetch + k];
			if (g->inputs[k].kind == XFLOW_IN_TARGET)
				cr_expect(f->kind == XFLOW_FETCH_REG || f->kind == XFLOW_FETCH_VALUE);
			else
				saw_local = true;
		}
		if (b->when == XFLOW_WHEN_AFTER) {
			saw_after = true;
			cr_expect_eq(d->sites[b->site].kind, XFLOW_SITE_RETURN);
		}
	}
	cr_expect(saw_local && saw_after);
	/* Layouts of the fields the advice uses, from this binary's DWARF. */
	for (uint32_t f = 0; f < q->nfields; f++)
		cr_expect_geq(d->layouts[f].offset, 0, "%s.%s unresolved", q->fields[f].sname, q->fields[f].member);

	/* The dump names sites and their advice. */
	char *txt = NULL;
	size_t tlen = 0;
	FILE *tf = open_memstream(&txt, &tlen);
	xflow_plan_dump(q, tf, true);
	fclose(tf);
	cr_expect(strstr(txt, "domain dom0"));
	cr_expect(strstr(txt, "alloc_skb_from_cache"));
	cr_expect(strstr(txt, "sk_buff.data"));
	cr_expect(strstr(txt, "before advice 0"));
	cr_expect(strstr(txt, "RDTSC") || strstr(txt, "rdtsc"), "bytecode listed");
	free(txt);
	xflow_plan_free(q);
	xflow_plan_free(p);
	free(b1);
	free(b2);
	free(b3);
	free(diags);
	xflow_unit_free(u);
}

Test(plan_format, file_roundtrip_and_errors)
{
	struct xflow_unit *u = compile(flow_xml);
	size_t n;
	struct xflow_plan *p;
	void *b = build(u, &n, &p, NULL);
	char path[512], why[512];
	snprintf(path, sizeof(path), "%s/out.plan", dir);
	cr_assert_eq(xflow_plan_write_file(p, path, why, sizeof(why)), 0, "%s", why);
	struct xflow_plan *q;
	cr_assert_eq(xflow_plan_read_file(path, &q, why, sizeof(why)), 0, "%s", why);
	/* The plan owns its strings: read from a file, whose bytes the reader
	 * freed, they are still the sites' names (xflow-agent --plan names
	 * the sites of its records long after the read). */
	cr_assert_gt(q->domains[0].nsites, 0);
	for (uint32_t s = 0; s < q->domains[0].nsites; s++)
		cr_expect_str_eq(q->domains[0].sites[s].func, p->domains[0].sites[s].func);
	xflow_plan_free(q);
	/* And from a buffer that is then overwritten. */
	unsigned char *copy = malloc(n);
	memcpy(copy, b, n);
	cr_assert_eq(xflow_plan_read(copy, n, &q, why, sizeof(why)), 0, "%s", why);
	memset(copy, 'x', n);
	cr_expect_str_eq(q->domains[0].name, p->domains[0].name);
	cr_expect_str_eq(q->domains[0].sites[0].file, p->domains[0].sites[0].file);
	free(copy);
	xflow_plan_free(q);
	snprintf(path, sizeof(path), "%s/none.plan", dir);
	cr_assert_eq(xflow_plan_read_file(path, &q, why, sizeof(why)), -ENOENT);
	cr_expect(strstr(why, "none.plan"), "%s", why);
	/* Not a plan; another version. */
	cr_assert_eq(xflow_plan_read("hello", 5, &q, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "not a weave plan"), "%s", why);
	unsigned char *c = malloc(n);
	memcpy(c, b, n);
	c[8] = 99;
	cr_assert_eq(xflow_plan_read(c, n, &q, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "version 99"), "%s", why);
	free(c);
	xflow_plan_free(p);
	free(b);
	xflow_unit_free(u);
}

static void refix(unsigned char *c, size_t n)
{
	uint32_t sum = xflow_plan_fnv32(c + XFLOW_PLAN_HEADER_SIZE, n - XFLOW_PLAN_HEADER_SIZE);
	for (int i = 0; i < 4; i++)
		c[48 + i] = (unsigned char)(sum >> (8 * i));
}

Test(plan_format, hostile_bytes)
{
	struct xflow_unit *u = compile(flow_xml);
	size_t n;
	unsigned char *b = build(u, &n, NULL, NULL);
	struct xflow_plan *q;
	char why[512];
	/* Every prefix. */
	for (size_t k = 0; k < n; k++) {
		cr_assert_neq(xflow_plan_read(b, k, &q, why, sizeof(why)), 0, "prefix %zu of %zu accepted", k, n);
		cr_assert(why[0]);
	}
	/* A flipped byte anywhere after the header: the checksum sees it. */
	unsigned char *c = malloc(n);
	for (size_t k = XFLOW_PLAN_HEADER_SIZE; k < n; k += 7) {
		memcpy(c, b, n);
		c[k] ^= 0x5a;
		cr_assert_eq(xflow_plan_read(c, n, &q, why, sizeof(why)), -EINVAL);
		cr_assert(strstr(why, "checksum"), "%s", why);
	}
	/* Flips with the checksum made right: refused with a reason, or read
	 * into a plan that passes the checks and writes back the same. */
	uint64_t seed = 7;
	unsigned refused = 0, accepted = 0;
	for (int round = 0; round < 4000; round++) {
		memcpy(c, b, n);
		int flips = 1 + (int)(test_rand_next(&seed) % 3);
		for (int f = 0; f < flips; f++) {
			size_t k = (size_t)(test_rand_next(&seed) % n);
			c[k] = (unsigned char)test_rand_next(&seed);
		}
		refix(c, n);
		int rc = xflow_plan_read(c, n, &q, why, sizeof(why));
		if (rc) {
			cr_assert(why[0]);
			refused++;
			continue;
		}
		accepted++;
		void *back;
		size_t bl;
		cr_assert_eq(xflow_plan_write(q, &back, &bl, why, sizeof(why)), 0, "%s", why);
		char *txt = NULL;
		size_t tlen = 0;
		FILE *tf = open_memstream(&txt, &tlen);
		xflow_plan_dump(q, tf, true);
		fclose(tf);
		free(txt);
		free(back);
		xflow_plan_free(q);
	}
	fprintf(stderr, "plan hostile: %u refused, %u accepted (a string or a number changed)\n", refused,
		accepted);
	cr_expect_gt(refused, 0);
	free(c);
	free(b);
	xflow_unit_free(u);
}

/* A string offset that points at the NUL ending another string is an
 * empty string: "none", as offset 0 is.  Read as "" instead, a binary
 * without a path passed the checks, and the plan written back from it
 * (with offset 0) was refused: found by fuzz_plan. */
Test(plan_format, an_empty_string_is_none)
{
	struct xflow_unit *u = compile(flow_xml);
	size_t n;
	unsigned char *b = build(u, &n, NULL, NULL);
	struct xflow_plan *q;
	char why[512];
	cr_assert_eq(xflow_plan_read(b, n, &q, why, sizeof(why)), 0, "%s", why);
	const char *path = q->domains[0].binaries[0].path;
	uint32_t stroff = (uint32_t)b[24] | (uint32_t)b[25] << 8 | (uint32_t)b[26] << 16 | (uint32_t)b[27] << 24;
	uint32_t strsize = (uint32_t)b[28] | (uint32_t)b[29] << 8 | (uint32_t)b[30] << 16 | (uint32_t)b[31] << 24;
	const unsigned char *tab = b + stroff;
	size_t plen = strlen(path);
	uint32_t at = 0;
	for (uint32_t o = 1; o + plen < strsize && !at; o++)
		if (!memcmp(tab + o, path, plen + 1))
			at = o;
	cr_assert_neq(at, 0, "the binary's path is not in the string table");
	xflow_plan_free(q);
	/* Each place the tables hold that offset, in turn, pointed at the
	 * path's own NUL: where it is the binary's path, the plan is
	 * refused; elsewhere (a number that happens to be equal) whatever
	 * is read has a path. */
	unsigned char *c = malloc(n);
	unsigned nopath = 0;
	for (size_t k = XFLOW_PLAN_HEADER_SIZE; k + 4 <= stroff; k++) {
		uint32_t v = (uint32_t)b[k] | (uint32_t)b[k + 1] << 8 | (uint32_t)b[k + 2] << 16 | (uint32_t)b[k + 3] << 24;
		if (v != at)
			continue;
		memcpy(c, b, n);
		uint32_t e = at + (uint32_t)plen;
		for (int i = 0; i < 4; i++)
			c[k + (size_t)i] = (unsigned char)(e >> (8 * i));
		refix(c, n);
		if (xflow_plan_read(c, n, &q, why, sizeof(why)) == 0) {
			const char *pp = q->domains[0].binaries[0].path;
			cr_assert(pp && pp[0], "a binary with an empty path was read (offset at byte %zu)", k);
			xflow_plan_free(q);
		} else {
			nopath += strstr(why, "no path") != NULL;
		}
	}
	cr_expect_gt(nopath, 0, "no change of the path's offset was refused for it");
	free(c);
	free(b);
	xflow_unit_free(u);
}

Test(plan_format, checks_on_built_plans)
{
	struct xflow_unit *u = compile(flow_xml);
	size_t n;
	struct xflow_plan *p;
	free(build(u, &n, &p, NULL));
	char why[512];
	struct xflow_plan_domain *d = &p->domains[0];
	cr_assert_gt(d->nsites, 1);
	/* Sites out of order. */
	struct xflow_plan_site s0 = d->sites[0];
	d->sites[0] = d->sites[1];
	d->sites[1] = s0;
	cr_assert_eq(xflow_plan_check(p, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "not sorted"), "%s", why);
	d->sites[1] = d->sites[0];
	d->sites[0] = s0;
	cr_assert_eq(xflow_plan_check(p, why, sizeof(why)), 0, "%s", why);
	/* A binding to an advice that is not there. */
	uint32_t a = d->bindings[0].advice;
	d->bindings[0].advice = p->nadvice;
	cr_assert_eq(xflow_plan_check(p, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "binding 0"), "%s", why);
	d->bindings[0].advice = a;
	/* A bad fetch recipe. */
	d->sites[0].target.kind = 9;
	cr_assert_eq(xflow_plan_check(p, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "target recipe"), "%s", why);
	void *buf;
	cr_assert_eq(xflow_plan_write(p, &buf, &n, why, sizeof(why)), -EINVAL, "the writer refuses too");
	xflow_plan_free(p);
	xflow_unit_free(u);
}

/* A plan past a table limit is refused naming the limit and the count. */
Test(plan_format, limits_are_named)
{
	char why[256];
	cr_expect_eq(xflow_plan_limits_check(XFLOW_PLAN_MAX_DOMAINS, XFLOW_PLAN_MAX_ADVICE, XFLOW_PLAN_MAX_FIELDS,
					     XFLOW_PLAN_MAX_FLOWS, why, sizeof(why)), 0);
	cr_expect_eq(xflow_plan_limits_check(257, 0, 0, 0, why, sizeof(why)), -EINVAL);
	cr_expect_str_eq(why, "plan: 257 domains, more than the 256 a plan holds (XFLOW_PLAN_MAX_DOMAINS)");
	cr_expect_eq(xflow_plan_limits_check(0, 100000, 0, 0, why, sizeof(why)), -EINVAL);
	cr_expect_str_eq(why, "plan: 100000 advice, more than the 65536 a plan holds (XFLOW_PLAN_MAX_ADVICE)");
	cr_expect_eq(xflow_plan_limits_check(0, 0, 65536, 0, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "65536 fields") && strstr(why, "XFLOW_PLAN_MAX_FIELDS"), "%s", why);
	cr_expect_eq(xflow_plan_limits_check(0, 0, 0, 65536, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "65536 flows") && strstr(why, "XFLOW_PLAN_MAX_FLOWS"), "%s", why);
}

/* Issue 30 item 3b: a binary's size and code hash (version 3) go through
 * the file, and a version 2 plan, which has neither, is still read with
 * both 0 (not recorded: the agent checks nothing it cannot). */
Test(plan_format, a_binary_identity_and_version_2)
{
	struct xflow_plan_binary b = { .path = "/usr/bin/x", .size = 12345, .code_hash = UINT64_C(0x0123456789abcdef) };
	struct xflow_plan_domain d = { .name = "d", .binaries = &b, .nbinaries = 1 };
	struct xflow_plan p = { .domains = &d, .ndomains = 1 };
	void *buf;
	size_t len;
	char why[256];
	cr_assert_eq(xflow_plan_write(&p, &buf, &len, why, sizeof(why)), 0, "%s", why);
	struct xflow_plan *q;
	cr_assert_eq(xflow_plan_read(buf, len, &q, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(q->domains[0].binaries[0].size, 12345);
	cr_expect_eq(q->domains[0].binaries[0].code_hash, UINT64_C(0x0123456789abcdef));
	xflow_plan_free(q);

	/* The same as version 2: the header, a domain of five counts, the
	 * binary's three words, and without its two new ones. */
	unsigned char *v2 = malloc(len);
	size_t at = 64 + 20 + 12;
	memcpy(v2, buf, at);
	memcpy(v2 + at, (unsigned char *)buf + at + 16, len - at - 16);
	size_t n2 = len - 16;
	uint32_t ver = 2, stroff;
	uint64_t fsize = n2;
	memcpy(v2 + 8, &ver, 4);
	memcpy(v2 + 16, &fsize, 8);
	memcpy(&stroff, v2 + 24, 4);
	stroff -= 16;
	memcpy(v2 + 24, &stroff, 4);
	uint32_t sum = xflow_plan_fnv32(v2 + 64, n2 - 64);
	memcpy(v2 + 48, &sum, 4);
	cr_assert_eq(xflow_plan_read(v2, n2, &q, why, sizeof(why)), 0, "%s", why);
	cr_expect_str_eq(q->domains[0].binaries[0].path, "/usr/bin/x");
	cr_expect_eq(q->domains[0].binaries[0].size, 0);
	cr_expect_eq(q->domains[0].binaries[0].code_hash, 0);
	xflow_plan_free(q);
	/* Versions it does not know are refused naming both. */
	ver = 1;
	memcpy(v2 + 8, &ver, 4);
	cr_expect_neq(xflow_plan_read(v2, n2, &q, why, sizeof(why)), 0);
	char want[64];
	snprintf(want, sizeof(want), "plan: version 1, this reader knows %d to %d", XFLOW_PLAN_VERSION_MIN,
		 XFLOW_PLAN_VERSION);
	cr_expect(strstr(why, want), "%s", why);
	free(v2);
	free(buf);
}

/* The weaver records both for a binary, from the file and its sites. */
Test(plan_format, the_weaver_records_size_and_code_hash)
{
	struct xflow_unit *u = compile(flow_xml);
	size_t n;
	struct xflow_plan *p;
	void *b = build(u, &n, &p, NULL);
	const struct xflow_plan_domain *d = &p->domains[0];
	struct stat st;
	cr_assert_eq(stat(bin, &st), 0);
	cr_expect_eq(d->binaries[0].size, (uint64_t)st.st_size);
	/* The hash of the sites' bytes as read from the file. */
	struct jp_elf e;
	struct jp_err err = { 0 };
	cr_assert_eq(jp_elf_open(&e, bin, &err), 0);
	uint64_t h = XFLOW_PLAN_HASH_INIT;
	for (uint32_t s = 0; s < d->nsites; s++) {
		size_t avail;
		const uint8_t *code = jp_elf_code(&e, d->sites[s].addr, &avail);
		cr_assert(code && avail >= d->sites[s].len);
		h = xflow_plan_hash(h, code, d->sites[s].len);
	}
	jp_elf_close(&e);
	cr_expect_eq(d->binaries[0].code_hash, h);
	cr_expect_neq(h, XFLOW_PLAN_HASH_INIT);
	xflow_plan_free(p);
	free(b);
	xflow_unit_free(u);
}

/*
 * Issue 30 item 7: a plan in memory with the three kinds of cross-domain
 * advice: an unkeyed xin (sends), an unkeyed xout (RECEIVES), a keyed
 * side (neither: joined by key), and a user's advice.  Site i is bound to
 * advice i; site 4 to the xin and the xout both.
 */
static const struct xflow_bc_insn ret_only[] = { { .op = XFLOW_OP_RET } };
static const struct xflow_bc_insn keyed_side[] = {
	{ .op = XFLOW_OP_PUSHI, .k = 7 }, { .op = XFLOW_OP_PUSHI, .k = 9 },
	{ .op = XFLOW_OP_HANDOFF, .a = 0, .b = 0 }, { .op = XFLOW_OP_RET },
};
static const char *roles_flows[] = { "f" };

#define PROG(i) { .version = XFLOW_BC_VERSION, .ninsns = sizeof(i) / sizeof(i[0]), .insns = i, .nflows = 1 }
#define CROSS (XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN)

static void roles_plan(struct xflow_plan *p, struct xflow_plan_domain *d, struct xflow_plan_advice adv[4],
		       struct xflow_plan_binary *b, struct xflow_plan_site sites[5],
		       struct xflow_plan_binding bind[6])
{
	adv[0] = (struct xflow_plan_advice){ .origin = XFLOW_ADVICE_TRANSIT, .flow = 0, .after_store_field = -1,
					     .rec_flags = CROSS | XFLOW_REC_TRUNCATED_ID, .prog = PROG(ret_only) };
	adv[1] = (struct xflow_plan_advice){ .origin = XFLOW_ADVICE_TRANSIT, .flow = 0, .after_store_field = -1,
					     .flags = XFLOW_ADVICE_RECEIVES, .rec_flags = CROSS,
					     .prog = PROG(ret_only) };
	adv[2] = (struct xflow_plan_advice){ .origin = XFLOW_ADVICE_TRANSIT, .flow = 0, .after_store_field = -1,
					     .rec_flags = CROSS, .prog = PROG(keyed_side) };
	adv[3] = (struct xflow_plan_advice){ .origin = XFLOW_ADVICE_USER, .flow = -1, .after_store_field = -1,
					     .prog = PROG(ret_only) };
	*b = (struct xflow_plan_binary){ .path = "/usr/bin/x" };
	for (uint32_t i = 0; i < 5; i++)
		sites[i] = (struct xflow_plan_site){ .addr = 0x1000 + 16 * i, .kind = XFLOW_SITE_ENTRY, .len = 1,
						     .when_mask = 1, .field = -1 };
	uint32_t pairs[6][2] = { { 0, 0 }, { 1, 1 }, { 2, 2 }, { 3, 3 }, { 4, 0 }, { 4, 1 } };
	for (int i = 0; i < 6; i++)
		bind[i] = (struct xflow_plan_binding){ .site = pairs[i][0], .advice = pairs[i][1] };
	*d = (struct xflow_plan_domain){ .name = "d", .binaries = b, .nbinaries = 1, .sites = sites, .nsites = 5,
					 .bindings = bind, .nbindings = 6 };
	*p = (struct xflow_plan){ .flows = roles_flows, .nflows = 1, .advice = adv, .nadvice = 4, .domains = d,
				  .ndomains = 1 };
}

Test(plan_format, the_receives_flag_and_the_roles_it_gives)
{
	struct xflow_plan p, *q;
	struct xflow_plan_domain d;
	struct xflow_plan_advice adv[4];
	struct xflow_plan_binary b;
	struct xflow_plan_site sites[5];
	struct xflow_plan_binding bind[6];
	roles_plan(&p, &d, adv, &b, sites, bind);
	void *buf;
	size_t len;
	char why[256];
	cr_assert_eq(xflow_plan_write(&p, &buf, &len, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(xflow_plan_read(buf, len, &q, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(q->version, XFLOW_PLAN_VERSION);
	cr_expect_eq(q->advice[1].flags, XFLOW_ADVICE_RECEIVES, "the flag went through the file");
	cr_expect_eq(q->advice[0].flags, 0);
	const struct xflow_plan_domain *qd = &q->domains[0];
	const uint32_t K = XFLOW_SITE_ROLES_KNOWN;
	cr_expect_eq(xflow_plan_site_roles(q, qd, 0), K | XFLOW_SITE_SENDS);
	cr_expect_eq(xflow_plan_site_roles(q, qd, 1), K | XFLOW_SITE_RECEIVES);
	cr_expect_eq(xflow_plan_site_roles(q, qd, 2), K, "a keyed side sends by key, not by bits");
	cr_expect_eq(xflow_plan_site_roles(q, qd, 3), K);
	cr_expect_eq(xflow_plan_site_roles(q, qd, 4), K | XFLOW_SITE_SENDS | XFLOW_SITE_RECEIVES);
	cr_expect_eq(xflow_plan_site_roles(q, qd, 5), 0, "out of range");
	cr_expect_eq(xflow_plan_site_roles(&p, &d, 1), K | XFLOW_SITE_RECEIVES, "a plan built in memory");
	/* The dump says it. */
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	xflow_plan_dump(q, f, false);
	fclose(f);
	cr_expect(strstr(text, "receives from another domain"), "%s", text);
	free(text);
	xflow_plan_free(q);

	/* A flag bit nobody defined is still refused, by the writer and the
	 * reader alike. */
	unsigned char *c = malloc(len);
	memcpy(c, buf, len);
	size_t flags_at = 64 + 4 + 8; /* header, the flow, advice 0's origin and flow */
	cr_assert_eq(c[flags_at], 0);
	c[flags_at] = 0x10;
	refix(c, len);
	cr_expect_neq(xflow_plan_read(c, len, &q, why, sizeof(why)), 0);
	cr_expect(strstr(why, "plan: advice 0: unknown flags 0x10"), "%s", why);
	adv[0].flags = 0x10;
	void *refused = NULL;
	size_t rlen;
	cr_expect_eq(xflow_plan_write(&p, &refused, &rlen, why, sizeof(why)), -EINVAL);
	free(refused);
	adv[0].flags = 0;
	/* A version 3 plan cannot say RECEIVES: the flag there is damage,
	 * and without it the roles are not known. */
	memcpy(c, buf, len);
	uint32_t ver = 3;
	memcpy(c + 8, &ver, 4);
	refix(c, len);
	cr_expect_neq(xflow_plan_read(c, len, &q, why, sizeof(why)), 0);
	cr_expect(strstr(why, "plan: advice 1: flag RECEIVES in a version 3 plan"), "%s", why);
	size_t recv_at = 64 + 4 + 56 + 8; /* advice 0 is 48 bytes and one insn */
	cr_assert_eq(c[recv_at], XFLOW_ADVICE_RECEIVES);
	c[recv_at] = 0;
	refix(c, len);
	cr_assert_eq(xflow_plan_read(c, len, &q, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(q->version, 3);
	cr_expect_eq(xflow_plan_site_roles(q, &q->domains[0], 0), 0, "a version 3 plan's roles");
	xflow_plan_free(q);
	free(c);
	free(buf);
}

/* Issue 24: a point written notify="yes" marks its advice NOTIFIES, and
 * its sites NOTIFIES whatever else they are; the plan carries the flag
 * from version 5 and refuses it in an older one. */
Test(plan_format, the_notifies_flag_and_the_role_it_gives)
{
	struct xflow_plan p, *q;
	struct xflow_plan_domain d;
	struct xflow_plan_advice adv[4];
	struct xflow_plan_binary b;
	struct xflow_plan_site sites[5];
	struct xflow_plan_binding bind[6];
	roles_plan(&p, &d, adv, &b, sites, bind);
	adv[0].flags = XFLOW_ADVICE_NOTIFIES; /* the xin, also bound at site 4 */
	void *buf;
	size_t len;
	char why[256];
	cr_assert_eq(xflow_plan_write(&p, &buf, &len, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(xflow_plan_read(buf, len, &q, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(q->version, 5);
	cr_expect_eq(q->advice[0].flags, XFLOW_ADVICE_NOTIFIES, "the flag went through the file");
	const uint32_t K = XFLOW_SITE_ROLES_KNOWN;
	cr_expect_eq(xflow_plan_site_roles(q, &q->domains[0], 0), K | XFLOW_SITE_SENDS | XFLOW_SITE_NOTIFIES);
	cr_expect_eq(xflow_plan_site_roles(q, &q->domains[0], 1), K | XFLOW_SITE_RECEIVES, "not bound there");
	cr_expect_eq(xflow_plan_site_roles(q, &q->domains[0], 4),
		     K | XFLOW_SITE_SENDS | XFLOW_SITE_RECEIVES | XFLOW_SITE_NOTIFIES);
	char *text = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&text, &tlen);
	xflow_plan_dump(q, f, false);
	fclose(f);
	cr_expect(strstr(text, "weave plan v5"), "%s", text);
	cr_expect(strstr(text, "notifies the next domain"), "%s", text);
	free(text);
	xflow_plan_free(q);
	/* A version 4 plan cannot say NOTIFIES: the bit there is damage. */
	unsigned char *c = malloc(len);
	memcpy(c, buf, len);
	uint32_t ver = 4;
	memcpy(c + 8, &ver, 4);
	refix(c, len);
	cr_expect_neq(xflow_plan_read(c, len, &q, why, sizeof(why)), 0);
	cr_expect(strstr(why, "plan: advice 0: flag NOTIFIES in a version 4 plan (from version 5)"), "%s", why);
	size_t flags_at = 64 + 4 + 8;
	cr_assert_eq(c[flags_at], XFLOW_ADVICE_NOTIFIES);
	c[flags_at] = 0;
	refix(c, len);
	cr_assert_eq(xflow_plan_read(c, len, &q, why, sizeof(why)), 0, "%s", why);
	cr_expect_eq(xflow_plan_site_roles(q, &q->domains[0], 0), K | XFLOW_SITE_SENDS, "a version 4 plan's roles");
	xflow_plan_free(q);
	free(c);
	free(buf);
}
