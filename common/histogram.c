/*
 * Log-linear latency histogram.  See xflow/histogram.h for the error bound.
 */
#include <math.h>
#include <string.h>

#include "xflow/histogram.h"

void xflow_hist_init(struct xflow_hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

void xflow_hist_merge(struct xflow_hist *dst, const struct xflow_hist *src)
{
	if (src->count == 0)
		return;
	for (unsigned i = 0; i < XFLOW_HIST_NBUCKETS; i++)
		dst->buckets[i] += src->buckets[i];
	dst->count += src->count;
	dst->sum = dst->sum + src->sum < dst->sum ? UINT64_MAX : dst->sum + src->sum;
	dst->overflow += src->overflow;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t xflow_hist_bucket_low(unsigned b)
{
	if (b < XFLOW_HIST_LINEAR)
		return b;
	if (b >= XFLOW_HIST_NBUCKETS)
		return XFLOW_HIST_MAX_VALUE;
	unsigned k = b - XFLOW_HIST_LINEAR;
	unsigned octave = k >> XFLOW_HIST_SUB_BITS;   /* 0: [128, 256) */
	unsigned sub = k & ((1u << XFLOW_HIST_SUB_BITS) - 1);
	unsigned shift = octave + 1;                  /* bucket width 2^shift */
	return ((uint64_t)(1u << XFLOW_HIST_SUB_BITS) + sub) << shift;
}

uint64_t xflow_hist_bucket_high(unsigned b)
{
	if (b + 1 >= XFLOW_HIST_NBUCKETS)
		return XFLOW_HIST_MAX_VALUE;
	return xflow_hist_bucket_low(b + 1) - 1;
}

/* The value a quantile falling in bucket @b is reported as. */
static uint64_t bucket_mid(const struct xflow_hist *h, unsigned b)
{
	uint64_t lo = xflow_hist_bucket_low(b), hi = xflow_hist_bucket_high(b);
	uint64_t mid = lo + (hi - lo) / 2;
	/* The min and max are exact; no sample lies outside them. */
	if (mid < h->min)
		mid = h->min;
	if (mid > h->max)
		mid = h->max;
	return mid;
}

uint64_t xflow_hist_quantile(const struct xflow_hist *h, double q)
{
	if (h->count == 0)
		return 0;
	if (!(q > 0.0))
		return h->min;
	if (q >= 1.0)
		return h->max;
	uint64_t rank = (uint64_t)ceil(q * (double)h->count);
	if (rank < 1)
		rank = 1;
	if (q > 0.5) {
		/* A high quantile lies near the top: the same bucket, the first
		 * from the maximum's down (none above it holds a sample) with
		 * count - rank + 1 samples at or above it.  The model asks for
		 * p99 on every 64th hop split; from below that walked most of
		 * the buckets. */
		uint64_t above = 0, need = h->count - rank + 1;
		for (unsigned b = xflow_hist_bucket_of(h->max) + 1; b-- > 0;) {
			above += h->buckets[b];
			if (above >= need)
				return bucket_mid(h, b);
		}
		return h->max;
	}
	uint64_t seen = 0;
	for (unsigned b = 0; b < XFLOW_HIST_NBUCKETS; b++) {
		seen += h->buckets[b];
		if (seen >= rank)
			return bucket_mid(h, b);
	}
	return h->max;
}

bool xflow_hist_next(const struct xflow_hist *h, unsigned *iter, struct xflow_hist_bucket *out)
{
	for (unsigned b = *iter; b < XFLOW_HIST_NBUCKETS; b++) {
		if (!h->buckets[b])
			continue;
		out->low = xflow_hist_bucket_low(b);
		out->high = xflow_hist_bucket_high(b);
		out->count = h->buckets[b];
		*iter = b + 1;
		return true;
	}
	*iter = XFLOW_HIST_NBUCKETS;
	return false;
}
