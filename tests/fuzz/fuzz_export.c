/*
 * Fuzz target for the exporter's handling of outside input (export/):
 * --listen parsing, request routing, label values from guests (escaped,
 * cut, made valid UTF-8), the bounded series table, and histogram folding.
 * Whatever comes, the text written must read back as valid exposition
 * format (tests/export/expocheck.h) and folding must lose no sample.
 *
 * Input: lines.  1: a --listen value; 2, 3: a request's method and URL;
 * 4: the host label; the rest: label values, two per histogram sample,
 * whose values also come from the bytes.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "tests/export/expocheck.h"

static const struct xfx_family f_hist = { "fz_latency_seconds", XFX_HISTOGRAM, "h" };
static const struct xfx_family f_count = { "fz_values_total", XFX_COUNTER, "c\\d\ne" };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 1 << 16)
		return 0;
	char *text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	char *lines[64];
	size_t n = 0;
	for (char *p = text; n < 64;) {
		lines[n++] = p;
		char *nl = strchr(p, '\n');
		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
	}
	char err[512];
	struct xfx_listen l;
	if (xfx_listen_parse(lines[0], &l, err, sizeof(err)) == 0 && strlen(l.text) >= sizeof(l.text))
		abort();
	if (n >= 3)
		(void)xfx_route(lines[1], lines[2]);

	struct xfx_snap *s;
	struct xfx_fold *fold;
	if (xfx_snap_new(&s) || xfx_fold_new(4, &fold)) {
		free(text);
		return 0;
	}
	xfx_snap_reset(s, n >= 4 ? lines[3] : "");
	xfx_snap_family(s, &f_hist);
	static struct xflow_hist h;
	for (size_t i = 4; i + 1 < n; i += 2) {
		/* Series keyed by the labels they show, as tui/metrics.c does:
		 * two values that sanitize alike are one series. */
		char key[2 * XFX_LABEL_MAX + 2];
		size_t a = xfx_label_sanitize(lines[i], key);
		size_t b = xfx_label_sanitize(lines[i + 1], key + a + 1);
		uint32_t before = xfx_fold_count(fold);
		uint32_t slot = xfx_fold_slot(fold, key, a + 1 + b);
		if (slot != XFX_FOLDED && slot >= xfx_fold_count(fold))
			abort();
		/* Series must be distinct: only a key's first time is written. */
		if (slot == XFX_FOLDED || xfx_fold_count(fold) == before)
			continue;
		xflow_hist_init(&h);
		uint64_t sum = 0;
		for (const char *c = lines[i]; *c; c++) {
			uint64_t v = (uint64_t)(unsigned char)*c << ((unsigned char)*c % 40);
			xflow_hist_record(&h, v);
			sum += v;
		}
		uint64_t buckets[XFX_NBUCKETS + 1], total = 0;
		xfx_hist_coarsen(&h, (double)(1 + (unsigned char)lines[i + 1][0]) / 7, buckets);
		for (unsigned k = 0; k <= XFX_NBUCKETS; k++)
			total += buckets[k];
		if (total != h.count)
			abort();
		xfx_snap_label(s, "from", lines[i]);
		xfx_snap_label(s, "to", lines[i + 1]);
		xfx_snap_hist(s, buckets, h.count, sum);
	}
	xfx_snap_family(s, &f_count);
	for (size_t i = 4; i < n; i++) {
		char lv[24];
		snprintf(lv, sizeof(lv), "%zu", i);
		xfx_snap_label(s, "line", lv);
		xfx_snap_label(s, "text", lines[i]);
		xfx_snap_seconds(s, (uint64_t)strlen(lines[i]) * UINT64_C(1000003));
	}
	char *out;
	size_t len;
	if (xfx_snap_format(s, &out, &len) == 0) {
		struct expo_stats st;
		if (expo_check(out, len, "host", &st, err, sizeof(err))) {
			fprintf(stderr, "fuzz_export: %s\n", err);
			abort();
		}
		free(out);
	}
	xfx_fold_free(fold);
	xfx_snap_free(s);
	free(text);
	return 0;
}
