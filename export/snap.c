/*
 * Snapshots: the figures of one moment, as families of samples with their
 * labels already escaped, ready for expo.c to write.  The loop thread fills
 * one; its arrays keep their capacity from one refresh to the next, so a
 * steady monitor allocates nothing here.  See export/export.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/mem.h"
#include "export/export.h"
#include "export/snap_priv.h"

int xfx_snap_new(struct xfx_snap **out)
{
	struct xfx_snap *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	*out = s;
	return 0;
}

void xfx_snap_free(struct xfx_snap *s)
{
	if (!s)
		return;
	free(s->fams);
	free(s->samples);
	free(s->labels);
	free(s->u64);
	free(s);
}

/* Length of the valid UTF-8 sequence at @p (at most @n bytes), 0 if none. */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	if (p[0] < 0x80)
		return 1;
	size_t len;
	unsigned char lo = 0x80, hi = 0xbf; /* range of the second byte */
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		len = 3;
		if (p[0] == 0xe0)
			lo = 0xa0; /* overlong */
		else if (p[0] == 0xed)
			hi = 0x9f; /* UTF-16 surrogates */
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		len = 4;
		if (p[0] == 0xf0)
			lo = 0x90; /* overlong */
		else if (p[0] == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else
		return 0;
	if (n < len || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	return len;
}

size_t xfx_label_sanitize(const char *value, char *out)
{
	const unsigned char *p = (const unsigned char *)value;
	size_t n = strlen(value), in = 0, o = 0;
	while (in < n) {
		size_t l = utf8_len(p + in, n - in);
		if (in + (l ? l : 1) > XFX_LABEL_MAX)
			break; /* cut before a character that would not fit */
		if (l == 0 || (l == 1 && ((p[in] < 0x20 && p[in] != '\n') || p[in] == 0x7f))) {
			/* Prometheus refuses invalid UTF-8; control bytes are
			 * valid, but a terminal or a log would act on them. */
			out[o++] = '?';
		} else {
			memcpy(out + o, p + in, l);
			o += l;
		}
		in += l ? l : 1;
	}
	out[o] = '\0';
	return o;
}

size_t xfx_label_escape(const char *value, char *out)
{
	char clean[XFX_LABEL_MAX + 1];
	size_t n = xfx_label_sanitize(value, clean), o = 0;
	for (size_t i = 0; i < n; i++) {
		if (clean[i] == '\\' || clean[i] == '"' || clean[i] == '\n') {
			out[o++] = '\\';
			out[o++] = clean[i] == '\n' ? 'n' : clean[i];
		} else {
			out[o++] = clean[i];
		}
	}
	out[o] = '\0';
	return o;
}

int xfx_snap_reset(struct xfx_snap *s, const char *host)
{
	s->nfams = s->nsamples = s->nlabels = s->nu64 = s->pending = 0;
	char esc[XFX_ESCAPED_MAX + 1];
	size_t n = xfx_label_escape(host, esc);
	memcpy(s->host, esc, n + 1);
	s->hostlen = n;
	return 0;
}

int xfx_snap_family(struct xfx_snap *s, const struct xfx_family *f)
{
	for (size_t i = 0; i < s->nfams; i++)
		if (s->fams[i].f == f || !strcmp(s->fams[i].f->name, f->name))
			return -EEXIST;
	if (xflow_grow((void **)&s->fams, &s->capfams, s->nfams + 1, sizeof(*s->fams)))
		return -ENOMEM;
	s->fams[s->nfams++] = (struct xfx_snap_fam){ .f = f, .first = s->nsamples, .n = 0 };
	/* Labels given before the family started belong to no sample. */
	s->nlabels = s->pending;
	return 0;
}

int xfx_snap_label(struct xfx_snap *s, const char *name, const char *value)
{
	size_t nl = strlen(name);
	if (xflow_grow((void **)&s->labels, &s->caplabels, s->nlabels + nl + XFX_ESCAPED_MAX + 5, 1))
		return -ENOMEM;
	char *o = s->labels + s->nlabels;
	*o++ = ',';
	memcpy(o, name, nl);
	o += nl;
	*o++ = '=';
	*o++ = '"';
	o += xfx_label_escape(value, o);
	*o++ = '"';
	s->nlabels = (size_t)(o - s->labels);
	return 0;
}

static struct xfx_snap_sample *add_sample(struct xfx_snap *s, enum xfx_snap_kind kind)
{
	if (!s->nfams || xflow_grow((void **)&s->samples, &s->capsamples, s->nsamples + 1, sizeof(*s->samples)))
		return NULL;
	struct xfx_snap_sample *x = &s->samples[s->nsamples++];
	x->kind = kind;
	x->labels = s->pending;
	x->labels_len = s->nlabels - s->pending;
	s->pending = s->nlabels;
	s->fams[s->nfams - 1].n++;
	return x;
}

static int add_value(struct xfx_snap *s, enum xfx_snap_kind kind, uint64_t u, double d)
{
	struct xfx_snap_sample *x = add_sample(s, kind);
	if (!x)
		return s->nfams ? -ENOMEM : -EINVAL;
	if (kind == XFX_SNAP_DOUBLE)
		x->v.d = d;
	else
		x->v.u = u;
	return 0;
}

int xfx_snap_u64(struct xfx_snap *s, uint64_t v)
{
	return add_value(s, XFX_SNAP_U64, v, 0);
}

int xfx_snap_seconds(struct xfx_snap *s, uint64_t ns)
{
	return add_value(s, XFX_SNAP_NS, ns, 0);
}

int xfx_snap_double(struct xfx_snap *s, double v)
{
	return add_value(s, XFX_SNAP_DOUBLE, 0, v);
}

int xfx_snap_hist(struct xfx_snap *s, const uint64_t buckets[XFX_NBUCKETS + 1], uint64_t count,
		  uint64_t sum_ns)
{
	if (xflow_grow((void **)&s->u64, &s->capu64, s->nu64 + XFX_SNAP_HIST_U64, sizeof(*s->u64)))
		return -ENOMEM;
	struct xfx_snap_sample *x = add_sample(s, XFX_SNAP_HIST);
	if (!x)
		return s->nfams ? -ENOMEM : -EINVAL;
	x->v.hist = s->nu64;
	uint64_t *h = s->u64 + s->nu64;
	memcpy(h, buckets, (XFX_NBUCKETS + 1) * sizeof(*h));
	h[XFX_NBUCKETS + 1] = count;
	h[XFX_NBUCKETS + 2] = sum_ns;
	s->nu64 += XFX_SNAP_HIST_U64;
	return 0;
}

size_t xfx_snap_samples(const struct xfx_snap *s)
{
	return s->nsamples;
}
