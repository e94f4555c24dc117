/*
 * export/snap_priv.h — a snapshot's layout, shared by the files of export/
 * that build (snap.c) and write (expo.c) it, and by the tests.
 */
#ifndef XFLOW_EXPORT_SNAP_PRIV_H
#define XFLOW_EXPORT_SNAP_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "export/export.h"

/* An escaped label value: every byte may become two. */
#define XFX_ESCAPED_MAX (2 * XFX_LABEL_MAX)

enum xfx_snap_kind { XFX_SNAP_U64, XFX_SNAP_NS, XFX_SNAP_DOUBLE, XFX_SNAP_HIST };

/* A histogram's u64s: the buckets, the count, the sum in ns. */
#define XFX_SNAP_HIST_U64 (XFX_NBUCKETS + 3)

struct xfx_snap_sample {
	size_t labels, labels_len; /* in labels[]: ',name="value"' repeated */
	enum xfx_snap_kind kind;
	union {
		uint64_t u;   /* U64, NS */
		double d;     /* DOUBLE */
		size_t hist;  /* HIST: index in u64[] */
	} v;
};

struct xfx_snap_fam {
	const struct xfx_family *f;
	size_t first, n; /* its samples */
};

struct xfx_snap {
	char host[XFX_ESCAPED_MAX + 1];
	size_t hostlen;
	struct xfx_snap_fam *fams;
	size_t nfams, capfams;
	struct xfx_snap_sample *samples;
	size_t nsamples, capsamples;
	char *labels;
	size_t nlabels, caplabels;
	size_t pending; /* where the next sample's labels start */
	uint64_t *u64;
	size_t nu64, capu64;
};

/* Write @value as a label value into @out (XFX_ESCAPED_MAX + 1 bytes):
 * xfx_label_sanitize(), then backslash, quote and newline escaped.
 * Returns the length written. */
size_t xfx_label_escape(const char *value, char *out);

#endif
