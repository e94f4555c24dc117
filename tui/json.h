/*
 * tui/json.h — a small streaming JSON writer for batch output and snapshots.
 *
 * The writer tracks nesting so callers never place commas themselves.  Strings
 * are escaped per RFC 8259: quote, backslash and control characters are
 * escaped, and bytes that are not valid UTF-8 become U+FFFD so the output is
 * always valid JSON whatever the collectors named their sites.  Numbers that
 * JSON cannot express (NaN, infinities) are written as null.
 *
 * Errors are sticky: after a write error every call is a no-op and
 * xft_json_error() returns the first negative errno.
 */
#ifndef XFLOW_TUI_JSON_H
#define XFLOW_TUI_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define XFT_JSON_MAX_DEPTH 32

struct xft_json {
	FILE *f;
	int depth;
	int err;
	int pretty;                        /* newline and indent per member */
	unsigned char first[XFT_JSON_MAX_DEPTH]; /* nothing written yet at this level */
	int after_key;
};

void xft_json_init(struct xft_json *j, FILE *f, int pretty);
void xft_json_object_begin(struct xft_json *j);
void xft_json_object_end(struct xft_json *j);
void xft_json_array_begin(struct xft_json *j);
void xft_json_array_end(struct xft_json *j);
void xft_json_key(struct xft_json *j, const char *key);
void xft_json_string(struct xft_json *j, const char *s);
void xft_json_string_n(struct xft_json *j, const char *s, size_t n);
void xft_json_u64(struct xft_json *j, uint64_t v);
void xft_json_i64(struct xft_json *j, int64_t v);
void xft_json_double(struct xft_json *j, double v);
void xft_json_bool(struct xft_json *j, int v);
void xft_json_null(struct xft_json *j);
/* Finish a top-level value (a newline); 0 or the first error. */
int xft_json_end(struct xft_json *j);
int xft_json_error(const struct xft_json *j);

/* Escape @n bytes of @s into @out (without quotes), NUL-terminated when
 * @outlen > 0; returns the length the full escape needs.  For tests and
 * for callers that build JSON in memory. */
size_t xft_json_escape(const char *s, size_t n, char *out, size_t outlen);

#endif
