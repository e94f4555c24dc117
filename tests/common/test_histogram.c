/*
 * Histogram quantiles against the exact quantiles of sorted samples.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/testlib.h"
#include "xflow/histogram.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

typedef uint64_t (*gen_fn)(uint64_t *st);

static uint64_t gen_uniform(uint64_t *st) { return 1 + test_rand_next(st) % 10000000; }
static uint64_t gen_exponential(uint64_t *st)
{
	return (uint64_t)(-log(1.0 - test_rand_unit(st)) * 50000.0);
}
static uint64_t gen_lognormal(uint64_t *st)
{
	double u1 = test_rand_unit(st) + 1e-12, u2 = test_rand_unit(st);
	double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
	return (uint64_t)exp(9.0 + 2.5 * z);
}
static uint64_t gen_bimodal(uint64_t *st)
{
	/* A fast path at ~2 us and a slow one at ~2 ms, like a backlog hop. */
	uint64_t v = test_rand_next(st);
	return (v & 7) ? 2000 + v % 300 : 2000000 + (v >> 8) % 100000;
}
static uint64_t gen_small(uint64_t *st) { return test_rand_next(st) % 200; }
static uint64_t gen_huge(uint64_t *st) { return (test_rand_next(st) >> 26) + 1; }

static void check_distribution(const char *name, gen_fn gen, size_t n)
{
	uint64_t *v = malloc(n * sizeof(*v));
	static struct xflow_hist h;
	xflow_hist_init(&h);
	uint64_t st = 12345;
	for (size_t i = 0; i < n; i++) {
		v[i] = gen(&st);
		xflow_hist_record(&h, v[i]);
	}
	qsort(v, n, sizeof(*v), cmp_u64);
	static const double qs[] = { 0.001, 0.1, 0.25, 0.5, 0.9, 0.99, 0.999, 0.9999 };
	for (size_t k = 0; k < sizeof(qs) / sizeof(qs[0]); k++) {
		size_t rank = (size_t)ceil(qs[k] * (double)n);
		uint64_t exact = v[rank ? rank - 1 : 0];
		uint64_t got = xflow_hist_quantile(&h, qs[k]);
		double err = exact ? fabs((double)got - (double)exact) / (double)exact
				   : (double)(got != exact);
		cr_assert_leq(err, XFLOW_HIST_REL_ERROR, "%s q=%g exact %lu got %lu (err %.4f%%)",
			      name, qs[k], (unsigned long)exact, (unsigned long)got, err * 100);
	}
	cr_assert_eq(xflow_hist_quantile(&h, 1.0), v[n - 1], "%s: max is exact", name);
	cr_assert_eq(h.min, v[0]);
	cr_assert_eq(h.count, n);
	free(v);
}

Test(histogram, quantiles_within_stated_error_on_many_distributions, .timeout = 60)
{
	check_distribution("uniform", gen_uniform, 200000);
	check_distribution("exponential", gen_exponential, 200000);
	check_distribution("lognormal", gen_lognormal, 200000);
	check_distribution("bimodal", gen_bimodal, 200000);
	check_distribution("small", gen_small, 50000);
	check_distribution("huge", gen_huge, 50000);
}

Test(histogram, every_value_lands_in_a_bucket_that_contains_it)
{
	/* Powers of two and their neighbours, across the whole range. */
	for (unsigned e = 0; e < XFLOW_HIST_MAX_BITS; e++) {
		uint64_t p = UINT64_C(1) << e;
		uint64_t probes[] = { p - 1, p, p + 1, p + p / 3, 2 * p - 1 };
		for (size_t k = 0; k < 5; k++) {
			uint64_t x = probes[k];
			if (x > XFLOW_HIST_MAX_VALUE)
				continue;
			unsigned b = xflow_hist_bucket_of(x);
			cr_assert_lt(b, XFLOW_HIST_NBUCKETS);
			cr_assert_leq(xflow_hist_bucket_low(b), x, "x=%lu b=%u", (unsigned long)x, b);
			cr_assert_geq(xflow_hist_bucket_high(b), x, "x=%lu b=%u", (unsigned long)x, b);
			/* Width bound behind the error guarantee. */
			uint64_t w = xflow_hist_bucket_high(b) - xflow_hist_bucket_low(b) + 1;
			cr_assert(b < XFLOW_HIST_LINEAR ? w == 1 : w * 64 <= xflow_hist_bucket_low(b));
		}
	}
	/* Buckets tile the range with no gap or overlap. */
	for (unsigned b = 0; b + 1 < XFLOW_HIST_NBUCKETS; b++)
		cr_assert_eq(xflow_hist_bucket_high(b) + 1, xflow_hist_bucket_low(b + 1), "b=%u", b);
	cr_assert_eq(xflow_hist_bucket_high(XFLOW_HIST_NBUCKETS - 1), XFLOW_HIST_MAX_VALUE);
	/* The range reaches past 100 s. */
	cr_assert_gt(XFLOW_HIST_MAX_VALUE, UINT64_C(100) * 1000000000);
}

Test(histogram, overflow_is_counted_and_max_stays_exact)
{
	static struct xflow_hist h;
	xflow_hist_init(&h);
	xflow_hist_record(&h, XFLOW_HIST_MAX_VALUE + 5);
	xflow_hist_record(&h, 10);
	cr_assert_eq(h.overflow, 1);
	cr_assert_eq(h.max, XFLOW_HIST_MAX_VALUE + 5);
	cr_assert_eq(xflow_hist_quantile(&h, 1.0), XFLOW_HIST_MAX_VALUE + 5);
	cr_assert_eq(xflow_hist_quantile(&h, 0.5), 10);
}

Test(histogram, merge_equals_recording_everything_in_one)
{
	static struct xflow_hist a, b, all;
	xflow_hist_init(&a);
	xflow_hist_init(&b);
	xflow_hist_init(&all);
	uint64_t st = 9;
	for (int i = 0; i < 100000; i++) {
		uint64_t v = gen_lognormal(&st);
		xflow_hist_record(i & 1 ? &a : &b, v);
		xflow_hist_record(&all, v);
	}
	xflow_hist_merge(&a, &b);
	cr_assert_eq(memcmp(&a, &all, sizeof(a)), 0);
	xflow_hist_reset(&a);
	cr_assert_eq(a.count, 0);
	cr_assert_eq(xflow_hist_quantile(&a, 0.5), 0, "empty");
}

Test(histogram, iteration_visits_nonempty_buckets_in_order)
{
	static struct xflow_hist h;
	xflow_hist_init(&h);
	uint64_t st = 5;
	for (int i = 0; i < 50000; i++)
		xflow_hist_record(&h, gen_bimodal(&st));
	unsigned it = 0;
	struct xflow_hist_bucket bk;
	uint64_t total = 0, last = 0;
	int n = 0;
	while (xflow_hist_next(&h, &it, &bk)) {
		cr_assert_gt(bk.count, 0);
		cr_assert(n == 0 || bk.low > last);
		last = bk.high;
		total += bk.count;
		n++;
	}
	cr_assert_eq(total, h.count);
	cr_assert_gt(n, 10);
}

/* The bucket of the quantile counted from the lowest bucket up, as the
 * reference for the count from the top that high quantiles use. */
static uint64_t quantile_from_below(const struct xflow_hist *h, double q)
{
	uint64_t rank = (uint64_t)ceil(q * (double)h->count), seen = 0;
	if (rank < 1)
		rank = 1;
	for (unsigned b = 0; b < XFLOW_HIST_NBUCKETS; b++) {
		seen += h->buckets[b];
		if (seen < rank)
			continue;
		uint64_t lo = xflow_hist_bucket_low(b), hi = xflow_hist_bucket_high(b), mid = lo + (hi - lo) / 2;
		return mid < h->min ? h->min : mid > h->max ? h->max : mid;
	}
	return h->max;
}

Test(histogram, high_quantiles_from_the_top_are_those_from_below)
{
	static struct xflow_hist h, part;
	uint64_t st = 24;
	for (unsigned round = 0; round < 200; round++) {
		xflow_hist_init(&h);
		unsigned n = 1 + (unsigned)(test_rand_next(&st) % (round < 100 ? 5 : 3000));
		for (unsigned i = 0; i < n; i++) {
			uint64_t v = test_rand_next(&st);
			/* Small, ordinary and past the last bucket. */
			v = i % 7 == 0 ? v % 150 : i % 97 == 0 ? v : v % (UINT64_C(1) << (v % 40 + 1));
			xflow_hist_record(&h, v);
		}
		if (round % 3 == 0) {
			xflow_hist_init(&part);
			xflow_hist_record(&part, test_rand_next(&st) % 5000000);
			xflow_hist_merge(&h, &part);
		}
		for (unsigned k = 0; k <= 1000; k++) {
			double q = k / 1000.0;
			uint64_t want = q <= 0.0 ? h.min : q >= 1.0 ? h.max : quantile_from_below(&h, q);
			cr_assert_eq(xflow_hist_quantile(&h, q), want, "round %u q=%g", round, q);
		}
	}
}
