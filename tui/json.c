/*
 * The JSON writer.  See tui/json.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "tui/json.h"

void xft_json_init(struct xft_json *j, FILE *f, int pretty)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->pretty = pretty;
	j->first[0] = 1;
}

static void put(struct xft_json *j, const char *s, size_t n)
{
	if (j->err)
		return;
	if (n && fwrite(s, 1, n, j->f) != n)
		j->err = errno ? -errno : -EIO;
}

static void puts_(struct xft_json *j, const char *s)
{
	put(j, s, strlen(s));
}

static void indent(struct xft_json *j)
{
	if (!j->pretty)
		return;
	put(j, "\n", 1);
	for (int i = 0; i < j->depth; i++)
		put(j, "  ", 2);
}

/* Before any value or key: the comma and indentation its position needs. */
static void before_value(struct xft_json *j)
{
	if (j->after_key) {
		j->after_key = 0;
		return;
	}
	if (j->depth > 0) {
		if (!j->first[j->depth])
			put(j, ",", 1);
		indent(j);
	}
	j->first[j->depth] = 0;
}

static void open_(struct xft_json *j, const char *c)
{
	before_value(j);
	puts_(j, c);
	if (j->depth + 1 >= XFT_JSON_MAX_DEPTH) {
		if (!j->err)
			j->err = -E2BIG;
		return;
	}
	j->depth++;
	j->first[j->depth] = 1;
}

static void close_(struct xft_json *j, const char *c)
{
	if (j->depth == 0) {
		if (!j->err)
			j->err = -EINVAL;
		return;
	}
	int empty = j->first[j->depth];
	j->depth--;
	if (!empty)
		indent(j);
	puts_(j, c);
}

void xft_json_object_begin(struct xft_json *j) { open_(j, "{"); }
void xft_json_object_end(struct xft_json *j) { close_(j, "}"); }
void xft_json_array_begin(struct xft_json *j) { open_(j, "["); }
void xft_json_array_end(struct xft_json *j) { close_(j, "]"); }

/* Length of the valid UTF-8 sequence at @s (at most @n bytes), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned c = s[0];
	size_t len;
	uint32_t cp;
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

size_t xft_json_escape(const char *str, size_t n, char *out, size_t outlen)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t o = 0;
#define EMIT(ch)                            \
	do {                                \
		if (o + 1 < outlen)         \
			out[o] = (char)(ch); \
		o++;                        \
	} while (0)
	for (size_t i = 0; i < n;) {
		unsigned c = s[i];
		const char *esc = NULL;
		char ubuf[8];
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		default:
			if (c < 0x20 || c == 0x7f) {
				snprintf(ubuf, sizeof(ubuf), "\\u%04x", c);
				esc = ubuf;
			}
		}
		if (esc) {
			for (; *esc; esc++)
				EMIT(*esc);
			i++;
			continue;
		}
		size_t len = utf8_len(s + i, n - i);
		if (len == 0) {
			for (esc = "\\ufffd"; *esc; esc++)
				EMIT(*esc);
			i++;
			continue;
		}
		for (size_t k = 0; k < len; k++)
			EMIT(s[i + k]);
		i += len;
	}
#undef EMIT
	if (outlen)
		out[o < outlen ? o : outlen - 1] = '\0';
	return o;
}

void xft_json_string_n(struct xft_json *j, const char *s, size_t n)
{
	before_value(j);
	put(j, "\"", 1);
	char buf[512];
	/* Escape in slices so a long string needs no allocation; a slice never
	 * ends inside a UTF-8 sequence because we cut before a lead byte. */
	size_t i = 0;
	while (i < n) {
		size_t take = n - i < 96 ? n - i : 96;
		while (i + take < n && take > 0 && ((unsigned char)s[i + take] & 0xc0) == 0x80)
			take--;
		if (take == 0)
			take = n - i < 96 ? n - i : 96;
		size_t len = xft_json_escape(s + i, take, buf, sizeof(buf));
		put(j, buf, len);
		i += take;
	}
	put(j, "\"", 1);
}

void xft_json_string(struct xft_json *j, const char *s)
{
	if (!s) {
		xft_json_null(j);
		return;
	}
	xft_json_string_n(j, s, strlen(s));
}

void xft_json_key(struct xft_json *j, const char *key)
{
	xft_json_string(j, key);
	put(j, j->pretty ? ": " : ":", j->pretty ? 2 : 1);
	j->after_key = 1;
}

void xft_json_u64(struct xft_json *j, uint64_t v)
{
	char b[32];
	before_value(j);
	put(j, b, (size_t)snprintf(b, sizeof(b), "%" PRIu64, v));
}

void xft_json_i64(struct xft_json *j, int64_t v)
{
	char b[32];
	before_value(j);
	put(j, b, (size_t)snprintf(b, sizeof(b), "%" PRId64, v));
}

void xft_json_double(struct xft_json *j, double v)
{
	char b[40];
	if (!isfinite(v)) {
		xft_json_null(j);
		return;
	}
	before_value(j);
	int n = snprintf(b, sizeof(b), "%.15g", v);
	put(j, b, (size_t)n);
}

void xft_json_bool(struct xft_json *j, int v)
{
	before_value(j);
	puts_(j, v ? "true" : "false");
}

void xft_json_null(struct xft_json *j)
{
	before_value(j);
	puts_(j, "null");
}

int xft_json_end(struct xft_json *j)
{
	if (j->depth != 0 && !j->err)
		j->err = -EINVAL;
	put(j, "\n", 1);
	j->first[0] = 1;
	return j->err;
}

int xft_json_error(const struct xft_json *j)
{
	return j->err;
}
