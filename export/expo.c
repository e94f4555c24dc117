/*
 * The Prometheus text exposition format (version 0.0.4) of a snapshot.
 * Runs on the server's thread, on a snapshot nobody writes meanwhile.
 * See export/export.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "export/snap_priv.h"

struct obuf {
	char *p;
	size_t n, cap;
	int oom;
};

static int ob_reserve(struct obuf *b, size_t more)
{
	if (b->oom)
		return -1;
	if (b->n + more <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 65536;
	while (cap < b->n + more)
		cap *= 2;
	char *p = realloc(b->p, cap);
	if (!p) {
		b->oom = 1;
		return -1;
	}
	b->p = p;
	b->cap = cap;
	return 0;
}

static void ob_put(struct obuf *b, const char *s, size_t len)
{
	if (ob_reserve(b, len))
		return;
	memcpy(b->p + b->n, s, len);
	b->n += len;
}

static void ob_str(struct obuf *b, const char *s)
{
	ob_put(b, s, strlen(s));
}

/* Bucket lines are most of a scrape: no printf for their numbers. */
static void ob_u64(struct obuf *b, uint64_t v)
{
	char t[24];
	int i = (int)sizeof(t);
	do {
		t[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	ob_put(b, t + i, sizeof(t) - (size_t)i);
}

static void ob_double(struct obuf *b, double v)
{
	char t[40];
	if (isnan(v))
		snprintf(t, sizeof(t), "NaN");
	else if (isinf(v))
		snprintf(t, sizeof(t), v > 0 ? "+Inf" : "-Inf");
	else
		/* The shortest form that reads back as the same double. */
		for (int prec = 1; prec <= 17; prec++) {
			snprintf(t, sizeof(t), "%.*g", prec, v);
			if (strtod(t, NULL) == v)
				break;
		}
	ob_str(b, t);
}

/* HELP text escapes backslash and newline, not quotes. */
static void ob_help(struct obuf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			ob_put(b, "\\\\", 2);
		else if (*s == '\n')
			ob_put(b, "\\n", 2);
		else
			ob_put(b, s, 1);
	}
}

static const char *type_name(enum xfx_type t)
{
	return t == XFX_COUNTER ? "counter" : t == XFX_GAUGE ? "gauge" : "histogram";
}

/* name{host="..."<labels><extra>} */
static void ob_series(struct obuf *b, const struct xfx_snap *s, const char *name, const char *suffix,
		      const struct xfx_snap_sample *x, const char *extra, size_t extra_len)
{
	ob_str(b, name);
	ob_str(b, suffix);
	ob_put(b, "{host=\"", 7);
	ob_put(b, s->host, s->hostlen);
	ob_put(b, "\"", 1);
	ob_put(b, s->labels + x->labels, x->labels_len);
	ob_put(b, extra, extra_len);
	ob_put(b, "} ", 2);
}

static void ob_hist(struct obuf *b, const struct xfx_snap *s, const char *name,
		    const struct xfx_snap_sample *x, char le[XFX_NBUCKETS][40], const size_t *le_len)
{
	const uint64_t *h = s->u64 + x->v.hist;
	uint64_t count = h[XFX_NBUCKETS + 1], cum = 0;
	for (unsigned i = 0; i < XFX_NBUCKETS; i++) {
		cum += h[i];
		ob_series(b, s, name, "_bucket", x, le[i], le_len[i]);
		ob_u64(b, cum);
		ob_put(b, "\n", 1);
	}
	ob_series(b, s, name, "_bucket", x, ",le=\"+Inf\"", 10);
	ob_u64(b, count);
	ob_put(b, "\n", 1);
	char sec[32];
	int n = xfx_seconds_format(h[XFX_NBUCKETS + 2], sec);
	ob_series(b, s, name, "_sum", x, "", 0);
	ob_put(b, sec, (size_t)n);
	ob_put(b, "\n", 1);
	ob_series(b, s, name, "_count", x, "", 0);
	ob_u64(b, count);
	ob_put(b, "\n", 1);
}

int xfx_snap_format(const struct xfx_snap *s, char **out, size_t *len)
{
	struct obuf b = { 0 };
	char le[XFX_NBUCKETS][40];
	size_t le_len[XFX_NBUCKETS];
	for (unsigned i = 0; i < XFX_NBUCKETS; i++) {
		char sec[32];
		xfx_seconds_format(xfx_bucket_ns(i), sec);
		le_len[i] = (size_t)snprintf(le[i], sizeof(le[i]), ",le=\"%s\"", sec);
	}
	for (size_t fi = 0; fi < s->nfams; fi++) {
		const struct xfx_snap_fam *fam = &s->fams[fi];
		if (!fam->n)
			continue;
		const char *name = fam->f->name;
		ob_str(&b, "# HELP ");
		ob_str(&b, name);
		ob_put(&b, " ", 1);
		ob_help(&b, fam->f->help);
		ob_str(&b, "\n# TYPE ");
		ob_str(&b, name);
		ob_put(&b, " ", 1);
		ob_str(&b, type_name(fam->f->type));
		ob_put(&b, "\n", 1);
		for (size_t k = 0; k < fam->n; k++) {
			const struct xfx_snap_sample *x = &s->samples[fam->first + k];
			char sec[32];
			switch (x->kind) {
			case XFX_SNAP_HIST:
				ob_hist(&b, s, name, x, le, le_len);
				continue;
			case XFX_SNAP_U64:
				ob_series(&b, s, name, "", x, "", 0);
				ob_u64(&b, x->v.u);
				break;
			case XFX_SNAP_NS:
				ob_series(&b, s, name, "", x, "", 0);
				ob_put(&b, sec, (size_t)xfx_seconds_format(x->v.u, sec));
				break;
			case XFX_SNAP_DOUBLE:
				ob_series(&b, s, name, "", x, "", 0);
				ob_double(&b, x->v.d);
				break;
			}
			ob_put(&b, "\n", 1);
		}
	}
	if (ob_reserve(&b, 1)) {
		free(b.p);
		return -ENOMEM;
	}
	b.p[b.n] = '\0';
	*out = b.p;
	*len = b.n;
	return 0;
}
