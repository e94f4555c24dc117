/*
 * xflow/histogram.h — log-linear latency histogram in constant memory.
 *
 * Values are nanoseconds.  Values below 128 ns are counted exactly; above,
 * each power of two is split into 64 equal buckets, so a bucket is at most
 * 1/64 of its lower bound wide.  A quantile is reported as the midpoint of
 * the bucket holding the sample of that rank (clamped to the recorded min
 * and max), hence:
 *
 *   |reported - exact| / exact  <=  1/128  (0.79 %)
 *
 * for every quantile, where "exact" is the sample of the same rank in the
 * sorted input (rank = ceil(q * count), at least 1).  p100 is the exact max.
 * Trackable range: 0 .. 2^40 - 1 ns (about 18 minutes); larger values are
 * counted in the last bucket and in .overflow, and min/max stay exact.
 *
 * One histogram is XFLOW_HIST_NBUCKETS * 8 bytes plus a few counters
 * (about 18 KiB) however many values it holds.  Not thread-safe: one
 * writer; merge per-thread histograms to combine.
 */
#ifndef XFLOW_HISTOGRAM_H
#define XFLOW_HISTOGRAM_H

#include <stdbool.h>
#include <stdint.h>

#define XFLOW_HIST_SUB_BITS 6                              /* 64 buckets per octave */
#define XFLOW_HIST_LINEAR (2u << XFLOW_HIST_SUB_BITS)      /* 128: exact below */
#define XFLOW_HIST_MAX_BITS 40
#define XFLOW_HIST_MAX_VALUE ((UINT64_C(1) << XFLOW_HIST_MAX_BITS) - 1)
#define XFLOW_HIST_NBUCKETS \
	(XFLOW_HIST_LINEAR + (XFLOW_HIST_MAX_BITS - XFLOW_HIST_SUB_BITS - 1) * (1u << XFLOW_HIST_SUB_BITS))
/* The guaranteed bound on any quantile's relative error. */
#define XFLOW_HIST_REL_ERROR (1.0 / 128.0)

struct xflow_hist {
	uint64_t count;
	uint64_t sum;      /* saturates at UINT64_MAX */
	uint64_t min;      /* UINT64_MAX while empty */
	uint64_t max;
	uint64_t overflow; /* values over XFLOW_HIST_MAX_VALUE */
	uint64_t buckets[XFLOW_HIST_NBUCKETS];
};

void xflow_hist_init(struct xflow_hist *h);
static inline void xflow_hist_reset(struct xflow_hist *h) { xflow_hist_init(h); }

/* Add @src's values to @dst. */
void xflow_hist_merge(struct xflow_hist *dst, const struct xflow_hist *src);

/* The value at quantile @q in [0, 1] (0.5 = median), 0 when empty. */
uint64_t xflow_hist_quantile(const struct xflow_hist *h, double q);

/* The bucket a value falls in, and a bucket's value range [low, high]. */
static inline unsigned xflow_hist_bucket_of(uint64_t v);
uint64_t xflow_hist_bucket_low(unsigned bucket);
uint64_t xflow_hist_bucket_high(unsigned bucket);

/* Iteration over the non-empty buckets, for drawing:
 *     unsigned it = 0; struct xflow_hist_bucket b;
 *     while (xflow_hist_next(h, &it, &b)) ...
 */
struct xflow_hist_bucket {
	uint64_t low, high, count;
};
bool xflow_hist_next(const struct xflow_hist *h, unsigned *iter, struct xflow_hist_bucket *b);

/* --- inline fast path --------------------------------------------------- */

static inline unsigned xflow_hist_bucket_of(uint64_t v)
{
	if (v < XFLOW_HIST_LINEAR)
		return (unsigned)v;
	if (v > XFLOW_HIST_MAX_VALUE)
		return XFLOW_HIST_NBUCKETS - 1;
	unsigned e = 63u - (unsigned)__builtin_clzll(v); /* 7 .. 39 */
	unsigned sub = (unsigned)(v >> (e - XFLOW_HIST_SUB_BITS)) - (1u << XFLOW_HIST_SUB_BITS);
	return XFLOW_HIST_LINEAR + ((e - XFLOW_HIST_SUB_BITS - 1) << XFLOW_HIST_SUB_BITS) + sub;
}

static inline void xflow_hist_record(struct xflow_hist *h, uint64_t v)
{
	h->buckets[xflow_hist_bucket_of(v)]++;
	h->count++;
	h->sum = h->sum + v < h->sum ? UINT64_MAX : h->sum + v;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
	if (v > XFLOW_HIST_MAX_VALUE)
		h->overflow++;
}

#endif
