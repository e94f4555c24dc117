/*
 * tests/export/expocheck.h — an independent reader of the Prometheus text
 * exposition format (0.0.4), strict where Prometheus is: for the unit tests
 * and the fuzz target, which cannot rely on promtool being installed.
 * Header-only.
 *
 * Checks: every line is a HELP, a TYPE or a sample; names and label names
 * are legal; label values are valid UTF-8 with only \\, \" and \n escaped;
 * values are floats; a sample follows the TYPE of its family (for a
 * histogram: _bucket with an le label, _sum, _count); no series appears
 * twice; each histogram's buckets never decrease, end with +Inf, and +Inf
 * equals _count; every series has @first_label as its first label.
 */
#ifndef XFLOW_TESTS_EXPOCHECK_H
#define XFLOW_TESTS_EXPOCHECK_H

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct expo_stats {
	unsigned families, samples, series, histograms;
};

static int expo__fail(char *why, size_t n, unsigned line, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int expo__fail(char *why, size_t n, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int o = snprintf(why, n, "line %u: ", line);
	va_start(ap, fmt);
	if (o >= 0 && (size_t)o < n)
		vsnprintf(why + o, n - (size_t)o, fmt, ap);
	va_end(ap);
	return -1;
}

static size_t expo__name(const char *p, const char *end, int metric)
{
	size_t n = 0;
	for (; p + n < end; n++) {
		char c = p[n];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (metric && c == ':') ||
			 (n && c >= '0' && c <= '9');
		if (!ok)
			break;
	}
	return n;
}

/* A UTF-8 sequence's length at p, 0 if invalid (same rules as Go's). */
static size_t expo__utf8(const unsigned char *p, const unsigned char *end)
{
	if (p[0] < 0x80)
		return 1;
	size_t len = p[0] >= 0xf0 && p[0] <= 0xf4 ? 4 : p[0] >= 0xe0 ? 3 : p[0] >= 0xc2 && p[0] <= 0xdf ? 2 : 0;
	if (!len || p[0] > 0xf4 || (size_t)(end - p) < len)
		return 0;
	uint32_t cp = p[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static int expo__value(const char *p, const char *end, double *v)
{
	char buf[64];
	size_t n = (size_t)(end - p);
	if (!n || n >= sizeof(buf))
		return -1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	if (!strcmp(buf, "+Inf") || !strcmp(buf, "-Inf") || !strcmp(buf, "NaN")) {
		*v = buf[0] == '+' ? INFINITY : buf[0] == '-' ? -INFINITY : NAN;
		return 0;
	}
	char *e;
	*v = strtod(buf, &e);
	return *e || e == buf || isinf(*v) || isnan(*v) ? -1 : 0;
}

static uint64_t expo__hash(const char *p, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * UINT64_C(1099511628211);
	return h;
}

static int expo_check(const char *text, size_t len, const char *first_label, struct expo_stats *st, char *why,
		      size_t whylen)
{
	const char *p = text, *end = text + len;
	char fam[256] = "", type[16] = "";
	unsigned line = 0;
	uint64_t *seen = NULL;
	size_t nseen = 0, capseen = 0;
	/* The histogram series being read: its labels without le, last bucket. */
	uint64_t hist_key = 0;
	double hist_last = -1, hist_inf = -1;
	int rc = 0;
	memset(st, 0, sizeof(*st));
	if (len && end[-1] != '\n')
		return expo__fail(why, whylen, 0, "the text does not end with a newline");
	while (p < end && !rc) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl;
		line++;
		if (le == p) {
			rc = expo__fail(why, whylen, line, "empty line");
			break;
		}
		if (*p == '#') {
			int help = le - p > 7 && !memcmp(p, "# HELP ", 7), typ = le - p > 7 && !memcmp(p, "# TYPE ", 7);
			if (!help && !typ) {
				rc = expo__fail(why, whylen, line, "a comment that is neither HELP nor TYPE");
				break;
			}
			const char *q = p + 7;
			size_t n = expo__name(q, le, 1);
			if (!n || n >= sizeof(fam) || q + n >= le || q[n] != ' ') {
				rc = expo__fail(why, whylen, line, "bad metric name in %s", help ? "HELP" : "TYPE");
				break;
			}
			if (help) {
				for (const char *c = q + n + 1; c < le; c++)
					if (*c == '\\') {
						if (c + 1 >= le || (c[1] != '\\' && c[1] != 'n')) {
							rc = expo__fail(why, whylen, line, "bad escape in HELP");
							break;
						}
						c++;
					}
				if (rc)
					break;
				if (strlen(fam) == n && !strncmp(fam, q, n) && type[0]) {
					rc = expo__fail(why, whylen, line, "HELP after the family's TYPE");
					break;
				}
				snprintf(fam, sizeof(fam), "%.*s", (int)n, q);
				type[0] = '\0';
			} else {
				if (strlen(fam) != n || strncmp(fam, q, n) || type[0]) {
					rc = expo__fail(why, whylen, line, "TYPE without its HELP just before");
					break;
				}
				snprintf(type, sizeof(type), "%.*s", (int)(le - q - n - 1), q + n + 1);
				if (strcmp(type, "counter") && strcmp(type, "gauge") && strcmp(type, "histogram")) {
					rc = expo__fail(why, whylen, line, "unknown type '%s'", type);
					break;
				}
				st->families++;
				if (!strcmp(type, "histogram"))
					st->histograms++;
			}
			p = nl + 1;
			continue;
		}
		size_t n = expo__name(p, le, 1);
		if (!n) {
			rc = expo__fail(why, whylen, line, "a sample without a metric name");
			break;
		}
		const char *suffix = "";
		size_t fl = strlen(fam);
		if (!type[0] || n < fl || strncmp(p, fam, fl)) {
			rc = expo__fail(why, whylen, line, "a sample outside its family's TYPE");
			break;
		}
		suffix = p + fl;
		size_t sl = n - fl;
		int hist = !strcmp(type, "histogram");
		int is_bucket = hist && sl == 7 && !strncmp(suffix, "_bucket", 7);
		int is_count = hist && sl == 6 && !strncmp(suffix, "_count", 6);
		if (hist ? !(is_bucket || is_count || (sl == 4 && !strncmp(suffix, "_sum", 4))) : sl != 0) {
			rc = expo__fail(why, whylen, line, "sample name %.*s does not belong to family %s", (int)n, p, fam);
			break;
		}
		const char *q = p + n;
		uint64_t key = expo__hash(p, n, UINT64_C(14695981039346656037));
		uint64_t series_key = expo__hash(fam, fl, UINT64_C(14695981039346656037));
		double le_v = NAN;
		int first = 1;
		if (q < le && *q == '{') {
			q++;
			while (q < le && *q != '}') {
				size_t ln = expo__name(q, le, 0);
				if (!ln || q + ln + 1 >= le || q[ln] != '=' || q[ln + 1] != '"') {
					rc = expo__fail(why, whylen, line, "bad label");
					break;
				}
				if (first && first_label &&
				    (ln != strlen(first_label) || strncmp(q, first_label, ln))) {
					rc = expo__fail(why, whylen, line, "the first label is not %s", first_label);
					break;
				}
				first = 0;
				int is_le = ln == 2 && !strncmp(q, "le", 2);
				const char *name = q;
				q += ln + 2;
				const char *vstart = q;
				while (q < le && *q != '"') {
					if (*q == '\\') {
						if (q + 1 >= le || (q[1] != '\\' && q[1] != '"' && q[1] != 'n')) {
							rc = expo__fail(why, whylen, line, "bad escape in a label value");
							break;
						}
						q += 2;
						continue;
					}
					size_t u = expo__utf8((const unsigned char *)q, (const unsigned char *)le);
					if (!u) {
						rc = expo__fail(why, whylen, line, "invalid UTF-8 in a label value");
						break;
					}
					q += u;
				}
				if (rc)
					break;
				if (q >= le) {
					rc = expo__fail(why, whylen, line, "unterminated label value");
					break;
				}
				if (is_le && expo__value(vstart, q, &le_v)) {
					rc = expo__fail(why, whylen, line, "le is not a float");
					break;
				}
				key = expo__hash(name, (size_t)(q + 1 - name), key);
				if (!is_le)
					series_key = expo__hash(name, (size_t)(q + 1 - name), series_key);
				q++;
				if (q < le && *q == ',')
					q++;
			}
			if (rc)
				break;
			if (q >= le) {
				rc = expo__fail(why, whylen, line, "unterminated label set");
				break;
			}
			q++;
		} else if (first_label) {
			rc = expo__fail(why, whylen, line, "no labels (expected %s)", first_label);
			break;
		}
		if (q >= le || *q != ' ') {
			rc = expo__fail(why, whylen, line, "no space before the value");
			break;
		}
		double v;
		if (expo__value(q + 1, le, &v)) {
			rc = expo__fail(why, whylen, line, "bad value '%.*s'", (int)(le - q - 1), q + 1);
			break;
		}
		for (size_t i = 0; i < nseen; i++)
			if (seen[i] == key) {
				rc = expo__fail(why, whylen, line, "a series seen twice");
				break;
			}
		if (rc)
			break;
		if (nseen == capseen) {
			capseen = capseen ? capseen * 2 : 256;
			uint64_t *ns = realloc(seen, capseen * sizeof(*ns));
			if (!ns) {
				rc = expo__fail(why, whylen, line, "out of memory");
				break;
			}
			seen = ns;
		}
		seen[nseen++] = key;
		st->samples++;
		if (is_bucket) {
			if (isnan(le_v)) {
				rc = expo__fail(why, whylen, line, "a bucket without le");
				break;
			}
			if (series_key != hist_key) {
				hist_key = series_key;
				hist_last = -1;
				hist_inf = -1;
				st->series++;
			}
			if (v < hist_last) {
				rc = expo__fail(why, whylen, line, "a bucket count decreases");
				break;
			}
			hist_last = v;
			if (isinf(le_v))
				hist_inf = v;
		} else if (is_count) {
			if (series_key != hist_key || hist_inf < 0 || hist_inf != v) {
				rc = expo__fail(why, whylen, line, "_count differs from the +Inf bucket (or no +Inf bucket)");
				break;
			}
		} else if (!hist) {
			st->series++;
		}
		p = nl + 1;
	}
	free(seen);
	return rc;
}

#endif
