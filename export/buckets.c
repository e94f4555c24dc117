/*
 * The exported histogram layout, and folding the monitor's fine histograms
 * into it.  See export/export.h.
 */
#include <stdio.h>
#include <string.h>

#include "export/export.h"

/* The bounds, in ns: 1, 1.2 ... 9 times each decade from 1 us, then 10 s
 * (see export.h for why these). */
#define DECADE(d) 10 * (d), 12 * (d), 14 * (d), 16 * (d), 18 * (d), 20 * (d), 22 * (d), 25 * (d), 30 * (d), \
	35 * (d), 40 * (d), 45 * (d), 50 * (d), 60 * (d), 70 * (d), 80 * (d), 90 * (d)
static const uint64_t bound_ns[XFX_NBUCKETS] = {
	DECADE(UINT64_C(100)),      DECADE(UINT64_C(1000)),      DECADE(UINT64_C(10000)),
	DECADE(UINT64_C(100000)),   DECADE(UINT64_C(1000000)),   DECADE(UINT64_C(10000000)),
	DECADE(UINT64_C(100000000)), UINT64_C(10000000000),
};
#undef DECADE

uint64_t xfx_bucket_ns(unsigned i)
{
	return bound_ns[i < XFX_NBUCKETS ? i : XFX_NBUCKETS - 1];
}

int xfx_seconds_format(uint64_t ns, char *buf)
{
	if (ns == 0)
		return sprintf(buf, "0");
	/* ns = digits * 10^zeros; seconds = digits * 10^(zeros - 9). */
	int zeros = 0;
	while (ns % 10 == 0) {
		ns /= 10;
		zeros++;
	}
	char d[24];
	int nd = sprintf(d, "%llu", (unsigned long long)ns);
	int exp10 = nd - 1 + zeros - 9; /* of the first digit */
	/* Go's strconv.FormatFloat(v, 'g', -1, 64), which client_golang
	 * writes "le" with: an exponent below 1e-4 and from 1e6 up.  Equal
	 * strings matter, since PromQL selects le="0.002" as a string. */
	if (exp10 < -4 || exp10 >= 6) {
		int n = sprintf(buf, "%c", d[0]);
		if (nd > 1)
			n += sprintf(buf + n, ".%s", d + 1);
		return n + sprintf(buf + n, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
	}
	int point = nd + zeros - 9; /* digits before the decimal point */
	int n = 0;
	if (point <= 0) {
		n += sprintf(buf, "0.");
		for (int k = point; k < 0; k++)
			buf[n++] = '0';
		n += sprintf(buf + n, "%s", d);
	} else if (point >= nd) {
		n += sprintf(buf, "%s", d);
		for (int k = nd; k < point; k++)
			buf[n++] = '0';
		buf[n] = '\0';
	} else {
		memcpy(buf, d, (size_t)point);
		n = point;
		n += sprintf(buf + n, ".%s", d + point);
	}
	return n;
}

void xfx_hist_coarsen(const struct xflow_hist *h, double ns_per_unit, uint64_t out[XFX_NBUCKETS + 1])
{
	memset(out, 0, (XFX_NBUCKETS + 1) * sizeof(*out));
	if (!h->count)
		return;
	/* No sample lies outside [min, max]: the buckets between them are all
	 * that can be non-zero, a few octaves of the histogram's 34. */
	unsigned b = xflow_hist_bucket_of(h->min), last = xflow_hist_bucket_of(h->max);
	unsigned j = 0;
	for (; b <= last; b++) {
		uint64_t n = h->buckets[b];
		if (!n)
			continue;
		double high = (double)xflow_hist_bucket_high(b) * ns_per_unit;
		while (j < XFX_NBUCKETS && high > (double)bound_ns[j])
			j++;
		out[j] += n;
	}
}
