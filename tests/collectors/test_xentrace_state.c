/*
 * The xentrace decoder: exact runstate times and counts per vcpu and domain
 * on generated traces, migrations, lost records, exits, hypercalls, unknown
 * events; and the summary against `xenalyze --summary` on a real capture.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/xentrace.h"
#include "tests/lib/testlib.h"

#define RUNNING XENTRACE_RS_RUNNING
#define RUNNABLE XENTRACE_RS_RUNNABLE
#define BLOCKED XENTRACE_RS_BLOCKED
#define IDLE XENTRACE_IDLE_DOMAIN

struct mtrace {
	char *data;
	size_t len;
	FILE *f;
	struct xentrace_writer *w;
};

static struct xentrace_writer *mt_begin(struct mtrace *t, unsigned ncpus, size_t window)
{
	memset(t, 0, sizeof(*t));
	t->f = open_memstream(&t->data, &t->len);
	cr_assert_not_null(t->f);
	cr_assert_eq(xentrace_writer_new(&t->w, t->f, ncpus, window), 0);
	return t->w;
}

/* Closes the trace and decodes it with @hz. */
static struct xentrace_state *mt_decode(struct mtrace *t, uint64_t hz)
{
	cr_assert_eq(xentrace_writer_close(t->w), 0);
	fclose(t->f);
	struct xentrace_source src;
	xentrace_source_init_mem(&src, t->data, t->len);
	struct xentrace_reader *r;
	cr_assert_eq(xentrace_reader_open(&r, &src, NULL), 0);
	struct xentrace_state *s;
	cr_assert_eq(xentrace_state_new(&s, hz), 0);
	cr_assert_eq(xentrace_state_run(s, r), 0);
	xentrace_reader_free(r);
	free(t->data);
	return s;
}

static void rs(struct xentrace_writer *w, unsigned cpu, uint64_t tsc, unsigned dom, unsigned v, int from, int to)
{
	cr_assert_eq(xentrace_writer_runstate(w, cpu, tsc, dom, v, from, to), 0);
}

static const struct xentrace_vcpu *vcpu(const struct xentrace_state *s, unsigned dom, unsigned vid)
{
	const struct xentrace_domain *d = xentrace_state_domain_find(s, dom);
	cr_assert_not_null(d, "d%u", dom);
	const struct xentrace_vcpu *v = xentrace_domain_vcpu(d, vid);
	cr_assert_not_null(v, "d%uv%u", dom, vid);
	return v;
}

#define ASSERT_CYC(c, n, cyc)                                                                            \
	do {                                                                                             \
		struct xentrace_cycles c_ = (c);                                                         \
		cr_assert_eq(c_.count, (n), "%s: count %lu", #c, (unsigned long)c_.count);               \
		cr_assert_eq(c_.cycles, (cyc), "%s: cycles %lu", #c, (unsigned long)c_.cycles);          \
	} while (0)

Test(xentrace_state, runstate_times_counts_and_a_migration)
{
	struct mtrace t;
	struct xentrace_writer *w = mt_begin(&t, 2, 4096);
	/* cpu 1's window reaches the file before cpu 0's. */
	rs(w, 1, 200, IDLE, 1, RUNNING, RUNNABLE);
	rs(w, 1, 300, IDLE, 1, RUNNABLE, RUNNING);
	rs(w, 1, 8000, 1, 0, BLOCKED, RUNNABLE); /* woken from cpu 1 */
	rs(w, 1, 8400, IDLE, 1, RUNNING, RUNNABLE);
	rs(w, 1, 8500, 1, 0, RUNNABLE, RUNNING); /* lands on cpu 1 */
	rs(w, 1, 9500, 1, 0, RUNNING, BLOCKED);
	xentrace_writer_flush_cpu(w, 1);
	rs(w, 0, 100, IDLE, 0, RUNNING, RUNNABLE);
	rs(w, 0, 1000, 1, 0, RUNNABLE, RUNNING);
	rs(w, 0, 5000, 1, 0, RUNNING, BLOCKED);
	rs(w, 0, 5000, IDLE, 0, RUNNABLE, RUNNING);
	struct xentrace_state *s = mt_decode(&t, 1000000000);

	const struct xentrace_vcpu *v = vcpu(s, 1, 0);
	ASSERT_CYC(xentrace_vcpu_runstate(v, RUNNING), 2, 4000 + 1000);
	ASSERT_CYC(xentrace_vcpu_runstate(v, BLOCKED), 1, 3000);
	ASSERT_CYC(xentrace_vcpu_runstate(v, RUNNABLE), 1, 500);
	ASSERT_CYC(xentrace_vcpu_wake(v), 1, 500);
	cr_assert_eq(xentrace_vcpu_migrations(v), 1);
	cr_assert_eq(xentrace_vcpu_pcpu(v), 1);
	cr_assert_eq(xentrace_vcpu_wake_latency_ns(s, v, 0.5), 500);
	const struct xentrace_domain *d = xentrace_state_domain_find(s, 1);
	ASSERT_CYC(xentrace_domain_runstate(d, XENTRACE_DRS_FULL_RUN), 2, 5000);
	ASSERT_CYC(xentrace_domain_runstate(d, XENTRACE_DRS_BLOCKED), 1, 3000);
	ASSERT_CYC(xentrace_domain_runstate(d, XENTRACE_DRS_FULL_CONTENTION), 1, 500);
	cr_assert_eq(xentrace_state_total_cycles(s), 9400);
	cr_assert_eq(xentrace_state_skipped(s), 0);
	cr_assert_eq(xentrace_state_unknown_total(s), 0);
	cr_assert_float_eq(xentrace_vcpu_runstate_share(s, v, RUNNING), 5000.0 / 9400, 1e-12);
	/* Domains in id order; the placeholder domain is not one of them. */
	const struct xentrace_domain *it = xentrace_state_domain_next(s, NULL);
	cr_assert_eq(xentrace_domain_id(it), 1);
	it = xentrace_state_domain_next(s, it);
	cr_assert_eq(xentrace_domain_id(it), IDLE);
	cr_assert_null(xentrace_state_domain_next(s, it));
	xentrace_state_free(s);
}

Test(xentrace_state, two_vcpus_make_partial_states)
{
	struct mtrace t;
	struct xentrace_writer *w = mt_begin(&t, 2, 64);
	rs(w, 0, 100, IDLE, 0, RUNNING, RUNNABLE);
	rs(w, 1, 100, IDLE, 1, RUNNING, RUNNABLE);
	rs(w, 0, 1000, 2, 0, RUNNABLE, RUNNING);
	rs(w, 1, 1000, 2, 1, RUNNABLE, RUNNING);
	rs(w, 1, 2000, 2, 1, RUNNING, BLOCKED);    /* one runs, one blocked: partial run */
	rs(w, 0, 3000, 2, 0, RUNNING, RUNNABLE);   /* runnable + blocked: partial contention */
	rs(w, 1, 3500, 2, 1, BLOCKED, RUNNABLE);   /* both runnable: full contention */
	rs(w, 0, 4000, 2, 0, RUNNABLE, RUNNING);   /* running + runnable: concurrency hazard */
	rs(w, 0, 4200, 2, 0, RUNNING, BLOCKED);
	rs(w, 1, 4600, 2, 1, RUNNABLE, RUNNING);
	rs(w, 1, 5000, 2, 1, RUNNING, BLOCKED);
	struct xentrace_state *s = mt_decode(&t, 1000000000);
	const struct xentrace_domain *d = xentrace_state_domain_find(s, 2);
	ASSERT_CYC(xentrace_domain_runstate(d, XENTRACE_DRS_FULL_RUN), 1, 1000);
	ASSERT_CYC(xentrace_domain_runstate(d, XENTRACE_DRS_PARTIAL_RUN), 2, 1000 + 400);
	ASSERT_CYC(xentrace_domain_runstate(d, XENTRACE_DRS_PARTIAL_CONTENTION), 2, 500 + 400);
	ASSERT_CYC(xentrace_domain_runstate(d, XENTRACE_DRS_FULL_CONTENTION), 1, 500);
	ASSERT_CYC(xentrace_domain_runstate(d, XENTRACE_DRS_CONCURRENCY_HAZARD), 1, 200);
	const struct xentrace_vcpu *v1 = vcpu(s, 2, 1);
	ASSERT_CYC(xentrace_vcpu_runstate(v1, RUNNING), 2, 1000 + 400);
	ASSERT_CYC(xentrace_vcpu_runstate(v1, BLOCKED), 1, 1500);
	ASSERT_CYC(xentrace_vcpu_runstate(v1, RUNNABLE), 1, 1100);
	ASSERT_CYC(xentrace_vcpu_wake(v1), 1, 1100);
	const struct xentrace_vcpu *v0 = vcpu(s, 2, 0);
	ASSERT_CYC(xentrace_vcpu_runstate(v0, RUNNING), 2, 2000 + 200);
	ASSERT_CYC(xentrace_vcpu_runstate(v0, RUNNABLE), 1, 1000);
	ASSERT_CYC(xentrace_vcpu_wake(v0), 0, 0);
	xentrace_state_free(s);
}

Test(xentrace_state, lost_records_mark_vcpus_lost)
{
	struct mtrace t;
	struct xentrace_writer *w = mt_begin(&t, 1, 4096);
	rs(w, 0, 100, IDLE, 0, RUNNING, RUNNABLE);
	rs(w, 0, 1000, 1, 0, RUNNABLE, RUNNING);
	cr_assert_eq(xentrace_writer_lost(w, 0, 7000, 42, 1, 0, 3000), 0);
	rs(w, 0, 8000, 1, 0, RUNNING, BLOCKED);
	struct xentrace_state *s = mt_decode(&t, 1000000000);
	const struct xentrace_vcpu *v = vcpu(s, 1, 0);
	/* Running until the loss began, lost until it ended, running again. */
	ASSERT_CYC(xentrace_vcpu_runstate(v, RUNNING), 2, 2000 + 1000);
	ASSERT_CYC(xentrace_vcpu_runstate(v, XENTRACE_RS_LOST), 1, 4000);
	ASSERT_CYC(xentrace_domain_runstate(xentrace_state_domain_find(s, 1), XENTRACE_DRS_LOST), 1, 4000);
	cr_assert_eq(xentrace_state_skipped(s), 0);
	xentrace_state_free(s);
}

Test(xentrace_state, hvm_exits_hypercalls_guest_and_unknown_events)
{
	struct mtrace t;
	struct xentrace_writer *w = mt_begin(&t, 1, 4096);
	rs(w, 0, 100, IDLE, 0, RUNNING, RUNNABLE);
	rs(w, 0, 200, 3, 0, RUNNABLE, RUNNING);
	for (unsigned i = 0; i < 10; i++) {
		cr_assert_eq(xentrace_writer_vmexit(w, 0, 1000 + 100 * i, 30 /* IO_INSTRUCTION */, 0xffffffff81000000u), 0);
		cr_assert_eq(xentrace_writer_vmentry(w, 0, 1000 + 100 * i + 10 + i), 0);
	}
	cr_assert_eq(xentrace_writer_vmexit(w, 0, 5000, 12 /* HLT */, 0), 0);
	uint32_t x = 5;
	cr_assert_eq(xentrace_writer_add(w, 0, 5050, true, 0x0800f123u, 1, &x), 0); /* guest record */
	rs(w, 0, 5100, 3, 0, RUNNING, RUNNABLE); /* closes the HLT exit */
	cr_assert_eq(xentrace_writer_add(w, 0, 5300, true, 0x0000f0ffu, 0, NULL), 0); /* no class */
	cr_assert_eq(xentrace_writer_add(w, 0, 5400, true, 0x0001f0aau, 0, NULL), 0); /* unknown gen */
	cr_assert_eq(xentrace_writer_add(w, 0, 5500, true, 0x0001f0aau, 0, NULL), 0);
	uint32_t irq[3] = { 24, 1000, 1300 }; /* TRC_HW_IRQ_HANDLED: irq, start, end */
	cr_assert_eq(xentrace_writer_add(w, 0, 5600, true, 0x802008, 3, irq), 0);
	irq[2] = 1100;
	cr_assert_eq(xentrace_writer_add(w, 0, 5700, true, 0x802008, 3, irq), 0);
	struct xentrace_state *s = mt_decode(&t, 1000000000);
	ASSERT_CYC(xentrace_state_irq(s, 24), 2, 400);
	ASSERT_CYC(xentrace_state_irq(s, 25), 0, 0);
	const struct xentrace_vcpu *v = vcpu(s, 3, 0);
	ASSERT_CYC(xentrace_vcpu_exit_reason(v, 30), 10, 10 * 10 + 45);
	ASSERT_CYC(xentrace_vcpu_exit_reason(v, 12), 1, 100);
	cr_assert_eq(xentrace_domain_guest_records(xentrace_state_domain_find(s, 3)), 1);
	cr_assert_eq(xentrace_state_unknown_count(s, 0x0001f0aau), 2);
	cr_assert_eq(xentrace_state_unknown_count(s, 0x0000f0ffu), 1);
	cr_assert_eq(xentrace_state_unknown_total(s), 3);

	/* A PV vcpu's hypercalls. */
	w = mt_begin(&t, 1, 4096);
	rs(w, 0, 100, IDLE, 0, RUNNING, RUNNABLE);
	rs(w, 0, 200, 0, 0, RUNNABLE, RUNNING);
	for (unsigned i = 0; i < 7; i++)
		cr_assert_eq(xentrace_writer_hypercall(w, 0, 300 + i, i % 2 ? 29 : 23), 0);
	xentrace_state_free(s);
	s = mt_decode(&t, 1000000000);
	cr_assert_eq(xentrace_vcpu_hypercalls(vcpu(s, 0, 0), 29), 3);
	cr_assert_eq(xentrace_vcpu_hypercalls(vcpu(s, 0, 0), 23), 4);
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);
	xentrace_state_print_summary(s, f);
	fclose(f);
	cr_assert_not_null(strstr(out, "    sched_op                     [29]:      3\n"), "%s", out);
	cr_assert_not_null(strstr(out, "  hypercall  7\n"), "%s", out);
	free(out);
	xentrace_state_free(s);
}

Test(xentrace_state, domain_lifetimes)
{
	struct mtrace t;
	struct xentrace_writer *w = mt_begin(&t, 1, 4096);
	uint32_t id = 7;
	cr_assert_eq(xentrace_writer_add(w, 0, 100, true, 0x41001, 1, &id), 0);
	cr_assert_eq(xentrace_writer_add(w, 0, 900, true, 0x41002, 1, &id), 0);
	struct xentrace_state *s = mt_decode(&t, 1000000000);
	uint64_t c, d;
	cr_assert(xentrace_state_domain_lifetime(s, 7, &c, &d));
	cr_assert_eq(c, 100);
	cr_assert_eq(d, 900);
	cr_assert_not(xentrace_state_domain_lifetime(s, 8, &c, &d));
	cr_assert_null(xentrace_state_domain_find(s, 7), "xenalyze lists only scheduled domains");
	xentrace_state_free(s);
	cr_assert_eq(xentrace_state_new(&s, 0), -EINVAL);
}

/* Weighted percentiles (xenalyze's "where the time goes") are within the
 * histogram's error of the exact ones. */
Test(xentrace_state, weighted_percentiles_within_histogram_error)
{
	struct mtrace t;
	struct xentrace_writer *w = mt_begin(&t, 1, 1 << 16);
	uint64_t seed = 42, tsc = 1000;
	enum { N = 2000 };
	static uint64_t runs[N];
	rs(w, 0, 100, IDLE, 0, RUNNING, RUNNABLE);
	for (int i = 0; i < N; i++) {
		runs[i] = 1000 + test_rand_next(&seed) % 1000000;
		rs(w, 0, tsc, 4, 0, RUNNABLE, RUNNING);
		tsc += runs[i];
		rs(w, 0, tsc, 4, 0, RUNNING, RUNNABLE);
		tsc += 500;
	}
	struct xentrace_state *s = mt_decode(&t, 1000000000);
	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);
	xentrace_state_print_summary(s, f);
	fclose(f);
	char *line = strstr(out, "-- v0 --\n Runstates:\n   running:");
	cr_assert_not_null(line, "%s", out);
	long long p[3];
	int n;
	cr_assert_eq(sscanf(line, "-- v0 --\n Runstates:\n   running: %d %*fs %*d {%lld|%lld|%lld}", &n, &p[0],
			    &p[1], &p[2]), 4);
	cr_assert_eq(n, N);
	/* Exact: the first sorted value where the running sum passes pct%. */
	static uint64_t sorted[N];
	memcpy(sorted, runs, sizeof(sorted));
	for (int i = 1; i < N; i++)
		for (int j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
			uint64_t x = sorted[j];
			sorted[j] = sorted[j - 1];
			sorted[j - 1] = x;
		}
	double total = 0;
	for (int i = 0; i < N; i++)
		total += (double)sorted[i];
	const int pct[3] = { 5, 50, 95 };
	for (int k = 0; k < 3; k++) {
		double seen = 0;
		uint64_t exact = 0;
		for (int i = 0; i < N; i++) {
			seen += (double)sorted[i];
			if (seen > total * pct[k] / 100) {
				exact = sorted[i];
				break;
			}
		}
		/* Bucket error, and one bucket either side where the sum crosses. */
		cr_assert_leq(fabs((double)p[k] - (double)exact), exact * 3.0 / 128, "p%d %lld vs %lu", pct[k], p[k],
			      (unsigned long)exact);
	}
	free(out);
	xentrace_state_free(s);
}

/* --- the real capture against xenalyze ------------------------------------ */

#define CAPTURE "../shared/traces/xen-4.17.5-pv-ping-disk/"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	size_t cap = 0;
	FILE *m = open_memstream(&buf, &cap);
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, n, m);
	fclose(f);
	fclose(m);
	*len = cap;
	return buf;
}

/* The lines xenalyze printed on stdout: from "Total time" on. */
static char **summary_lines(char *text, size_t *n)
{
	char *start = strstr(text, "Total time:");
	cr_assert_not_null(start);
	size_t cap = 1024;
	char **lines = malloc(cap * sizeof(*lines));
	*n = 0;
	for (char *l = strtok(start, "\n"); l; l = strtok(NULL, "\n")) {
		if (*n == cap)
			lines = realloc(lines, (cap *= 2) * sizeof(*lines));
		lines[(*n)++] = l;
	}
	return lines;
}

/* The real capture decoded (with xenalyze's sample sets kept, or not):
 * our summary in *out, xenalyze's in *ref; skips when the capture is not
 * there.  free() both. */
static void summarize_capture(bool keep_samples, char **out, char **ref)
{
	size_t tlen, rlen, outlen = 0;
	char *trace = slurp(CAPTURE "x.trace", &tlen);
	*ref = slurp(CAPTURE "xenalyze-summary.txt", &rlen);
	if (!trace || !*ref) {
		free(trace);
		free(*ref);
		cr_skip_test("real capture not found at " CAPTURE " (shared/ beside the repository)");
	}
	struct xentrace_source src;
	xentrace_source_init_mem(&src, trace, tlen);
	struct xentrace_reader *r;
	cr_assert_eq(xentrace_reader_open(&r, &src, NULL), 0);
	struct xentrace_state *s;
	cr_assert_eq(xentrace_state_new(&s, 2400000000u), 0);
	if (keep_samples)
		xentrace_state_keep_samples(s);
	cr_assert_eq(xentrace_state_run(s, r), 0);
	cr_assert_eq(xentrace_reader_ndiags(r), 0, "a clean capture: no diagnostics");
	cr_assert_eq(xentrace_reader_stats(r)->records, 31811 - 44, "all records but the 44 cpu changes");
	FILE *f = open_memstream(out, &outlen);
	xentrace_state_print_summary(s, f);
	fclose(f);
	xentrace_state_free(s);
	xentrace_reader_free(r);
	free(trace);
}

Test(xentrace_state, summary_matches_xenalyze_on_real_capture)
{
	char *out, *ref;
	summarize_capture(false, &out, &ref);

	size_t nref, nout;
	char **want = summary_lines(ref, &nref);
	char **got = summary_lines(out, &nout);
	cr_assert_eq(nout, nref, "%zu lines, xenalyze printed %zu", nout, nref);
	unsigned runstate_lines = 0, pct_checked = 0;
	for (size_t i = 0; i < nref; i++) {
		char *wb = strchr(want[i], '{'), *gb = strchr(got[i], '{');
		if (!wb) {
			cr_assert_str_eq(got[i], want[i], "line %zu", i + 1);
			continue;
		}
		/* Counts, times and averages: exactly. */
		cr_assert_not_null(gb, "line %zu: %s", i + 1, got[i]);
		cr_assert_eq(gb - got[i], wb - want[i], "line %zu:\n got %s\nwant %s", i + 1, got[i], want[i]);
		cr_assert_eq(strncmp(got[i], want[i], (size_t)(wb - want[i])), 0, "line %zu:\n got %s\nwant %s",
			     i + 1, got[i], want[i]);
		if (strchr(want[i], 's') && strstr(want[i], "s "))
			runstate_lines++;
		/* Without xenalyze's samples (the histogram path xflowtop's
		 * views use), affinity lines hold plain percentiles within the
		 * histogram's error.  Runstate lines hold xenalyze's
		 * self-weighted "percentiles", which its selection makes
		 * depend on sample order: the histogram's are checked against
		 * exact values on generated data, and the samples' against
		 * xenalyze in the next test. */
		if (strstr(want[i], "affinity") || strstr(want[i], "   [")) {
			long long w[3], g[3];
			cr_assert_eq(sscanf(wb, "{%lld|%lld|%lld}", &w[0], &w[1], &w[2]), 3);
			cr_assert_eq(sscanf(gb, "{%lld|%lld|%lld}", &g[0], &g[1], &g[2]), 3);
			for (int k = 0; k < 3; k++)
				cr_assert_leq(fabs((double)(g[k] - w[k])), w[k] / 128.0 + 1, "line %zu: %lld vs %lld",
					      i + 1, g[k], w[k]);
			pct_checked++;
		}
	}
	cr_assert_geq(runstate_lines, 30);
	cr_assert_eq(pct_checked, 13);
	free(want);
	free(got);
	free(out);
	free(ref);
}

/* With xenalyze's sample sets kept, the summary is xenalyze's byte for
 * byte, braces included: the same statistics over the same samples. */
Test(xentrace_state, summary_is_xenalyze_byte_for_byte_with_its_samples)
{
	char *out, *ref;
	summarize_capture(true, &out, &ref);
	const char *want = strstr(ref, "Total time:");
	cr_assert_not_null(want);
	unsigned braces = 0;
	for (const char *c = want; (c = strchr(c, '{')); c++)
		braces++;
	cr_assert_geq(braces, 40, "the reference has its percentile lines");
	/* Line by line first, for a readable failure; then every byte. */
	size_t nref, nout;
	char *w = strdup(want), *g = strdup(out);
	char **wl = summary_lines(w, &nref), **gl = summary_lines(g, &nout);
	for (size_t i = 0; i < nref && i < nout; i++)
		cr_expect_str_eq(gl[i], wl[i], "line %zu", i + 1);
	cr_assert_eq(nout, nref);
	cr_assert_eq(strlen(out), strlen(want));
	cr_assert_eq(memcmp(out, want, strlen(want)), 0);
	free(wl);
	free(gl);
	free(w);
	free(g);
	free(out);
	free(ref);
}
