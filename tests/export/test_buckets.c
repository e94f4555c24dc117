/*
 * The exported histogram layout (export/buckets.c): the bounds the man page
 * documents, their text as Prometheus's own client writes it, folding fine
 * histograms, and the quantile error xflowtop(1) states for it.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

#include "export/export.h"

Test(buckets, layout_is_the_documented_one)
{
	cr_assert_eq(XFX_NBUCKETS, 120);
	cr_assert_eq(xfx_bucket_ns(0), 1000);
	cr_assert_eq(xfx_bucket_ns(XFX_NBUCKETS - 1), UINT64_C(10000000000));
	/* Round thresholds people alert on are bounds. */
	static const uint64_t must[] = { 1000, 2000, 5000, 100000, 1800000, 2000000, 2200000, 2500000, 5000000,
					 10000000, 100000000, 1000000000 };
	for (size_t k = 0; k < sizeof(must) / sizeof(must[0]); k++) {
		int found = 0;
		for (unsigned i = 0; i < XFX_NBUCKETS; i++)
			found |= xfx_bucket_ns(i) == must[k];
		cr_assert(found, "%llu ns is not a bound", (unsigned long long)must[k]);
	}
	/* Strictly increasing, no step wider than 20 % of its lower bound:
	 * the figure the man page's error bound rests on. */
	double widest = 0;
	for (unsigned i = 1; i < XFX_NBUCKETS; i++) {
		cr_assert_gt(xfx_bucket_ns(i), xfx_bucket_ns(i - 1));
		double step = (double)xfx_bucket_ns(i) / (double)xfx_bucket_ns(i - 1) - 1;
		if (step > widest)
			widest = step;
	}
	cr_assert_float_eq(widest, 0.2, 1e-9);
}

Test(buckets, seconds_are_written_as_go_writes_them)
{
	static const struct {
		uint64_t ns;
		const char *text;
	} cases[] = {
		{ 1000, "1e-06" },          { 1200, "1.2e-06" },       { 35000, "3.5e-05" },
		{ 100000, "0.0001" },       { 120000, "0.00012" },     { 2200000, "0.0022" },
		{ 1000000000, "1" },        { 2500000000, "2.5" },     { 10000000000, "10" },
		{ 0, "0" },                 { 1, "1e-09" },            { 123456789, "0.123456789" },
		{ 1234567890123, "1234.567890123" }, { UINT64_C(1000000000000000), "1e+06" },
		{ UINT64_C(1500000000000000), "1.5e+06" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char buf[32];
		int n = xfx_seconds_format(cases[i].ns, buf);
		cr_assert_str_eq(buf, cases[i].text, "%llu ns", (unsigned long long)cases[i].ns);
		cr_assert_eq(n, (int)strlen(buf));
		/* And the text reads back as the value. */
		cr_assert_float_eq(strtod(buf, NULL), (double)cases[i].ns / 1e9, 1e-15 * (double)cases[i].ns);
	}
}

/* Brute force: which bucket each sample's fine bucket falls in. */
static void reference(const uint64_t *v, size_t n, double unit, uint64_t out[XFX_NBUCKETS + 1])
{
	memset(out, 0, (XFX_NBUCKETS + 1) * sizeof(*out));
	for (size_t i = 0; i < n; i++) {
		double high = (double)xflow_hist_bucket_high(xflow_hist_bucket_of(v[i])) * unit;
		unsigned j = 0;
		while (j < XFX_NBUCKETS && high > (double)xfx_bucket_ns(j))
			j++;
		out[j]++;
	}
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

Test(buckets, coarsen_matches_brute_force_and_never_claims_a_sample_faster)
{
	static struct xflow_hist h;
	uint64_t seed = 88172645463325252u;
	static uint64_t v[20000];
	for (int round = 0; round < 20; round++) {
		xflow_hist_init(&h);
		/* Log-uniform from 1 ns to 100 s, some rounds narrow. */
		double lo = round % 2 ? 0 : 3 + round % 5, span = round % 2 ? 11 : 1;
		for (size_t i = 0; i < 20000; i++) {
			double e = lo + span * (double)(rnd(&seed) % 1000000) / 1e6;
			v[i] = (uint64_t)pow(10, e);
			xflow_hist_record(&h, v[i]);
		}
		uint64_t got[XFX_NBUCKETS + 1], want[XFX_NBUCKETS + 1];
		xfx_hist_coarsen(&h, 1.0, got);
		reference(v, 20000, 1.0, want);
		cr_assert_arr_eq(got, want, sizeof(got), "round %d", round);
		/* Cumulatively, le counts only samples at or below it, and misses
		 * only those within one fine bucket (1/64) under it. */
		uint64_t cum = 0;
		for (unsigned j = 0; j < XFX_NBUCKETS; j++) {
			cum += got[j];
			uint64_t b = xfx_bucket_ns(j), at_or_below = 0, well_below = 0;
			for (size_t i = 0; i < 20000; i++) {
				at_or_below += v[i] <= b;
				well_below += (double)v[i] < (double)b * (1 - 1.0 / 64);
			}
			cr_assert_leq(cum, at_or_below, "le %llu", (unsigned long long)b);
			cr_assert_geq(cum, well_below, "le %llu", (unsigned long long)b);
		}
		cr_assert_eq(cum + got[XFX_NBUCKETS], h.count);
	}
}

Test(buckets, coarsen_converts_cycles)
{
	/* A 2.5 GHz TSC: 2,500 cycles are 1 us. */
	static struct xflow_hist h;
	xflow_hist_init(&h);
	uint64_t v[] = { 2000, 2500, 3000, 5000000, 25000000000ull };
	for (size_t i = 0; i < 5; i++)
		xflow_hist_record(&h, v[i]);
	uint64_t got[XFX_NBUCKETS + 1], want[XFX_NBUCKETS + 1];
	xfx_hist_coarsen(&h, 0.4, got);
	reference(v, 5, 0.4, want);
	cr_assert_arr_eq(got, want, sizeof(got));
	cr_assert_eq(got[0], 1, "800 ns is under 1 us");
	cr_assert_eq(got[XFX_NBUCKETS], 1, "10 s of cycles is above the last bound only if over it");
}

Test(buckets, empty_histogram)
{
	static struct xflow_hist h;
	xflow_hist_init(&h);
	uint64_t got[XFX_NBUCKETS + 1];
	memset(got, 0xff, sizeof(got));
	xfx_hist_coarsen(&h, 1.0, got);
	for (unsigned i = 0; i <= XFX_NBUCKETS; i++)
		cr_assert_eq(got[i], 0);
}

/* Prometheus's histogram_quantile(): linear inside the bucket holding the
 * rank, the first bucket starting at 0, +Inf answered with the last bound. */
static double prom_quantile(double q, const uint64_t *b)
{
	uint64_t total = 0;
	for (unsigned i = 0; i <= XFX_NBUCKETS; i++)
		total += b[i];
	double rank = q * (double)total, cum = 0;
	for (unsigned i = 0; i < XFX_NBUCKETS; i++) {
		if (cum + (double)b[i] >= rank) {
			double lo = i ? (double)xfx_bucket_ns(i - 1) : 0, hi = (double)xfx_bucket_ns(i);
			return lo + (hi - lo) * (rank - cum) / (double)b[i];
		}
		cum += (double)b[i];
	}
	return (double)xfx_bucket_ns(XFX_NBUCKETS - 1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

Test(buckets, quantile_error_is_within_what_the_man_page_states)
{
	/* xflowtop(1): between 1 us and 10 s, at most 22 % (a 20 % bucket plus
	 * one fine bucket of 1/64). */
	static struct xflow_hist h;
	static uint64_t v[4001];
	uint64_t seed = 0x9E3779B97F4A7C15u;
	double worst = 0;
	for (int round = 0; round < 200; round++) {
		xflow_hist_init(&h);
		size_t n = 1 + rnd(&seed) % 4000;
		double centre = 3.2 + 6.5 * (double)(rnd(&seed) % 1000) / 1000, spread = (double)(rnd(&seed) % 1000) / 1000;
		for (size_t i = 0; i < n; i++) {
			v[i] = (uint64_t)pow(10, centre + spread * ((double)(rnd(&seed) % 2001) / 1000 - 1));
			xflow_hist_record(&h, v[i]);
		}
		qsort(v, n, sizeof(v[0]), cmp_u64);
		uint64_t b[XFX_NBUCKETS + 1];
		xfx_hist_coarsen(&h, 1.0, b);
		static const double qs[] = { 0.5, 0.9, 0.99 };
		for (int k = 0; k < 3; k++) {
			size_t rank = (size_t)ceil(qs[k] * (double)n);
			double exact = (double)v[rank ? rank - 1 : 0];
			if (exact < 1000 || exact > 1e10)
				continue;
			double err = fabs(prom_quantile(qs[k], b) - exact) / exact;
			if (err > worst)
				worst = err;
		}
	}
	cr_assert_leq(worst, 0.22, "worst relative error %.3f", worst);
}

Test(buckets, two_ms_within_ten_percent_stays_within_ten_percent)
{
	/* The end-to-end test's claim: samples whose median is within 2 ms
	 * +-10 % give a histogram_quantile(0.5) within 2 ms +-10 %, because
	 * 1.8 and 2.2 ms are bounds. */
	static struct xflow_hist h;
	uint64_t seed = 12345;
	for (int round = 0; round < 100; round++) {
		xflow_hist_init(&h);
		uint64_t lo = 1800000 + rnd(&seed) % 200000, width = rnd(&seed) % 400000;
		for (int i = 0; i < 1000; i++)
			xflow_hist_record(&h, lo + rnd(&seed) % (width + 1));
		uint64_t exact = xflow_hist_quantile(&h, 0.5);
		if (exact < 1800000 || exact > 2200000)
			continue;
		uint64_t b[XFX_NBUCKETS + 1];
		xfx_hist_coarsen(&h, 1.0, b);
		double p50 = prom_quantile(0.5, b);
		cr_assert(p50 >= 1800000 * (1 - 1.0 / 64) && p50 <= 2200000, "p50 %.0f for exact %llu", p50,
			  (unsigned long long)exact);
	}
}
