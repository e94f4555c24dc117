/*
 * tests/tui/jsonlite.h — a small strict JSON parser (RFC 8259) and a
 * validator for the subset of JSON Schema that tui/snapshot-schema.json
 * uses: type, properties, required, additionalProperties (boolean), items,
 * enum (of strings), const, minimum, maximum, $ref to "#/$defs/NAME".
 * Header-only, static functions, for the unit tests and tests/tui/jsoncheck.c.
 */
#ifndef XFLOW_TESTS_JSONLITE_H
#define XFLOW_TESTS_JSONLITE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum jl_type { JL_NULL, JL_BOOL, JL_NUMBER, JL_STRING, JL_ARRAY, JL_OBJECT };

struct jl_value {
	enum jl_type type;
	int boolean;
	double number;
	int is_integer;
	char *string;          /* JL_STRING, NUL-terminated (may contain \0 escapes cut) */
	size_t n;              /* members of an array or object */
	struct jl_value *items;
	char **keys;           /* JL_OBJECT */
};

struct jl_parser {
	const char *p, *end;
	char err[160];
	int depth;
};

static inline void jl_free(struct jl_value *v)
{
	if (!v)
		return;
	free(v->string);
	for (size_t i = 0; i < v->n; i++) {
		jl_free(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	memset(v, 0, sizeof(*v));
}

static inline void jl_ws(struct jl_parser *ps)
{
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
		ps->p++;
}

static inline int jl_fail(struct jl_parser *ps, const char *msg, const char *start)
{
	if (!ps->err[0])
		snprintf(ps->err, sizeof(ps->err), "%s at byte %ld", msg, (long)(ps->p - start));
	return -1;
}

static inline int jl_parse_value(struct jl_parser *ps, struct jl_value *v, const char *start);

static inline int jl_hex4(const char *p, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
		else return -1;
	}
	*out = v;
	return 0;
}

static inline int jl_parse_string(struct jl_parser *ps, char **out, const char *start)
{
	ps->p++; /* opening quote */
	size_t cap = 16, len = 0;
	char *s = malloc(cap);
	if (!s)
		return jl_fail(ps, "out of memory", start);
	for (;;) {
		if (ps->p >= ps->end) {
			free(s);
			return jl_fail(ps, "unterminated string", start);
		}
		unsigned char c = (unsigned char)*ps->p;
		char buf[4];
		size_t n = 0;
		if (c == '"') {
			ps->p++;
			break;
		}
		if (c < 0x20) {
			free(s);
			return jl_fail(ps, "control character in string", start);
		}
		if (c == '\\') {
			if (ps->p + 1 >= ps->end) {
				free(s);
				return jl_fail(ps, "bad escape", start);
			}
			char e = ps->p[1];
			ps->p += 2;
			switch (e) {
			case '"': buf[n++] = '"'; break;
			case '\\': buf[n++] = '\\'; break;
			case '/': buf[n++] = '/'; break;
			case 'b': buf[n++] = '\b'; break;
			case 'f': buf[n++] = '\f'; break;
			case 'n': buf[n++] = '\n'; break;
			case 'r': buf[n++] = '\r'; break;
			case 't': buf[n++] = '\t'; break;
			case 'u': {
				unsigned cp;
				if (ps->end - ps->p < 4 || jl_hex4(ps->p, &cp)) {
					free(s);
					return jl_fail(ps, "bad \\u escape", start);
				}
				ps->p += 4;
				if (cp >= 0xd800 && cp <= 0xdbff) {
					unsigned lo;
					if (ps->end - ps->p < 6 || ps->p[0] != '\\' || ps->p[1] != 'u' ||
					    jl_hex4(ps->p + 2, &lo) || lo < 0xdc00 || lo > 0xdfff) {
						free(s);
						return jl_fail(ps, "lone surrogate", start);
					}
					ps->p += 6;
					cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				} else if (cp >= 0xdc00 && cp <= 0xdfff) {
					free(s);
					return jl_fail(ps, "lone surrogate", start);
				}
				if (cp < 0x80) {
					buf[n++] = (char)cp;
				} else if (cp < 0x800) {
					buf[n++] = (char)(0xc0 | cp >> 6);
					buf[n++] = (char)(0x80 | (cp & 0x3f));
				} else if (cp < 0x10000) {
					buf[n++] = (char)(0xe0 | cp >> 12);
					buf[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
					buf[n++] = (char)(0x80 | (cp & 0x3f));
				} else {
					buf[n++] = (char)(0xf0 | cp >> 18);
					buf[n++] = (char)(0x80 | ((cp >> 12) & 0x3f));
					buf[n++] = (char)(0x80 | ((cp >> 6) & 0x3f));
					buf[n++] = (char)(0x80 | (cp & 0x3f));
				}
				break;
			}
			default:
				free(s);
				return jl_fail(ps, "bad escape", start);
			}
		} else if (c < 0x80) {
			buf[n++] = (char)c;
			ps->p++;
		} else {
			/* Strict UTF-8. */
			int len8 = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
			if (!len8 || ps->end - ps->p < len8) {
				free(s);
				return jl_fail(ps, "invalid UTF-8", start);
			}
			unsigned cp = c & (0x3f >> (len8 - 1));
			for (int i = 1; i < len8; i++) {
				if (((unsigned char)ps->p[i] & 0xc0) != 0x80) {
					free(s);
					return jl_fail(ps, "invalid UTF-8", start);
				}
				cp = cp << 6 | ((unsigned char)ps->p[i] & 0x3f);
			}
			if ((len8 == 3 && cp < 0x800) || (len8 == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
			    (cp >= 0xd800 && cp <= 0xdfff)) {
				free(s);
				return jl_fail(ps, "invalid UTF-8", start);
			}
			for (int i = 0; i < len8; i++)
				buf[n++] = ps->p[i];
			ps->p += len8;
		}
		if (len + n + 1 > cap) {
			cap = cap * 2 + n;
			char *ns = realloc(s, cap);
			if (!ns) {
				free(s);
				return jl_fail(ps, "out of memory", start);
			}
			s = ns;
		}
		memcpy(s + len, buf, n);
		len += n;
	}
	s[len] = '\0';
	*out = s;
	return 0;
}

static inline int jl_push(struct jl_value *v, size_t *cap, int with_key)
{
	if (v->n == *cap) {
		*cap = *cap ? *cap * 2 : 4;
		struct jl_value *ni = realloc(v->items, *cap * sizeof(*ni));
		if (!ni)
			return -1;
		v->items = ni;
		if (with_key) {
			char **nk = realloc(v->keys, *cap * sizeof(*nk));
			if (!nk)
				return -1;
			v->keys = nk;
		}
	}
	memset(&v->items[v->n], 0, sizeof(v->items[0]));
	return 0;
}

static inline int jl_parse_value(struct jl_parser *ps, struct jl_value *v, const char *start)
{
	memset(v, 0, sizeof(*v));
	jl_ws(ps);
	if (ps->p >= ps->end)
		return jl_fail(ps, "unexpected end", start);
	if (++ps->depth > 200)
		return jl_fail(ps, "too deep", start);
	char c = *ps->p;
	int rc = 0;
	if (c == '{' || c == '[') {
		int obj = c == '{';
		size_t cap = 0;
		v->type = obj ? JL_OBJECT : JL_ARRAY;
		ps->p++;
		jl_ws(ps);
		if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
			ps->p++;
			ps->depth--;
			return 0;
		}
		for (;;) {
			if (jl_push(v, &cap, obj))
				return jl_fail(ps, "out of memory", start);
			char *key = NULL;
			if (obj) {
				jl_ws(ps);
				if (ps->p >= ps->end || *ps->p != '"')
					return jl_fail(ps, "expected a key", start);
				if (jl_parse_string(ps, &key, start))
					return -1;
				jl_ws(ps);
				if (ps->p >= ps->end || *ps->p != ':') {
					free(key);
					return jl_fail(ps, "expected ':'", start);
				}
				ps->p++;
			}
			rc = jl_parse_value(ps, &v->items[v->n], start);
			if (obj)
				v->keys[v->n] = key;
			v->n++;
			if (rc)
				return -1;
			jl_ws(ps);
			if (ps->p < ps->end && *ps->p == ',') {
				ps->p++;
				continue;
			}
			if (ps->p < ps->end && *ps->p == (obj ? '}' : ']')) {
				ps->p++;
				break;
			}
			return jl_fail(ps, obj ? "expected ',' or '}'" : "expected ',' or ']'", start);
		}
	} else if (c == '"') {
		v->type = JL_STRING;
		if (jl_parse_string(ps, &v->string, start))
			return -1;
	} else if (!strncmp(ps->p, "true", 4) && ps->end - ps->p >= 4) {
		v->type = JL_BOOL, v->boolean = 1, ps->p += 4;
	} else if (!strncmp(ps->p, "false", 5) && ps->end - ps->p >= 5) {
		v->type = JL_BOOL, ps->p += 5;
	} else if (!strncmp(ps->p, "null", 4) && ps->end - ps->p >= 4) {
		v->type = JL_NULL, ps->p += 4;
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		/* The JSON number grammar, exactly. */
		const char *q = ps->p;
		int integer = 1;
		if (*q == '-')
			q++;
		if (q >= ps->end || !(*q >= '0' && *q <= '9'))
			return jl_fail(ps, "bad number", start);
		if (*q == '0')
			q++;
		else
			while (q < ps->end && *q >= '0' && *q <= '9')
				q++;
		if (q < ps->end && *q == '.') {
			integer = 0;
			q++;
			if (q >= ps->end || !(*q >= '0' && *q <= '9'))
				return jl_fail(ps, "bad number", start);
			while (q < ps->end && *q >= '0' && *q <= '9')
				q++;
		}
		if (q < ps->end && (*q == 'e' || *q == 'E')) {
			integer = 0;
			q++;
			if (q < ps->end && (*q == '+' || *q == '-'))
				q++;
			if (q >= ps->end || !(*q >= '0' && *q <= '9'))
				return jl_fail(ps, "bad number", start);
			while (q < ps->end && *q >= '0' && *q <= '9')
				q++;
		}
		char buf[64];
		size_t n = (size_t)(q - ps->p) < sizeof(buf) - 1 ? (size_t)(q - ps->p) : sizeof(buf) - 1;
		memcpy(buf, ps->p, n);
		buf[n] = '\0';
		v->type = JL_NUMBER;
		v->number = strtod(buf, NULL);
		v->is_integer = integer;
		ps->p = q;
	} else {
		return jl_fail(ps, "unexpected character", start);
	}
	ps->depth--;
	return 0;
}

/* Parse all of @text; 0, or -1 with the reason in @err. */
static inline int jl_parse(const char *text, size_t len, struct jl_value *out, char *err, size_t errlen)
{
	struct jl_parser ps = { text, text + len, "", 0 };
	int rc = jl_parse_value(&ps, out, text);
	if (!rc) {
		jl_ws(&ps);
		if (ps.p != ps.end)
			rc = jl_fail(&ps, "trailing characters", text);
	}
	if (rc) {
		jl_free(out);
		snprintf(err, errlen, "%s", ps.err);
	}
	return rc;
}

static inline const struct jl_value *jl_get(const struct jl_value *obj, const char *key)
{
	if (!obj || obj->type != JL_OBJECT)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return &obj->items[i];
	return NULL;
}

static inline char *jl_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (n < cap)
			break;
		cap *= 2;
		char *nb = realloc(buf, cap);
		if (!nb) {
			free(buf);
			buf = NULL;
		}
		buf = nb;
	}
	fclose(f);
	if (buf) {
		char *nb = realloc(buf, n + 1); /* NUL-terminated for string use */
		if (!nb) {
			free(buf);
			return NULL;
		}
		buf = nb;
		buf[n] = '\0';
	}
	if (len)
		*len = n;
	return buf;
}

/* --- schema ---------------------------------------------------------------- */

static inline const char *jl_type_name(const struct jl_value *v)
{
	switch (v->type) {
	case JL_NULL: return "null";
	case JL_BOOL: return "boolean";
	case JL_NUMBER: return v->is_integer ? "integer" : "number";
	case JL_STRING: return "string";
	case JL_ARRAY: return "array";
	default: return "object";
	}
}

static inline int jl_type_ok(const struct jl_value *v, const char *t)
{
	if (!strcmp(t, "number"))
		return v->type == JL_NUMBER;
	if (!strcmp(t, "integer"))
		return v->type == JL_NUMBER && v->is_integer;
	return !strcmp(jl_type_name(v), t);
}

/* Validate @v against @schema (within @root for $ref); 0, or -1 with the
 * JSON pointer of the first failure in @err. */
static inline int jl_validate(const struct jl_value *root, const struct jl_value *schema,
			      const struct jl_value *v, const char *where, char *err, size_t errlen)
{
	if (!schema || schema->type != JL_OBJECT)
		return 0;
	const struct jl_value *ref = jl_get(schema, "$ref");
	if (ref && ref->type == JL_STRING) {
		const char *pre = "#/$defs/";
		if (strncmp(ref->string, pre, strlen(pre))) {
			snprintf(err, errlen, "%s: unsupported $ref %s", where, ref->string);
			return -1;
		}
		const struct jl_value *target = jl_get(jl_get(root, "$defs"), ref->string + strlen(pre));
		if (!target) {
			snprintf(err, errlen, "%s: unknown $ref %s", where, ref->string);
			return -1;
		}
		return jl_validate(root, target, v, where, err, errlen);
	}
	const struct jl_value *t = jl_get(schema, "type");
	if (t) {
		int ok = 0;
		if (t->type == JL_STRING)
			ok = jl_type_ok(v, t->string);
		else if (t->type == JL_ARRAY)
			for (size_t i = 0; i < t->n; i++)
				ok |= t->items[i].type == JL_STRING && jl_type_ok(v, t->items[i].string);
		if (!ok) {
			snprintf(err, errlen, "%s: wrong type %s", where, jl_type_name(v));
			return -1;
		}
	}
	const struct jl_value *en = jl_get(schema, "enum");
	if (en && en->type == JL_ARRAY) {
		int ok = 0;
		for (size_t i = 0; i < en->n; i++)
			ok |= en->items[i].type == JL_STRING && v->type == JL_STRING &&
			      !strcmp(en->items[i].string, v->string);
		if (!ok) {
			snprintf(err, errlen, "%s: not one of the allowed values", where);
			return -1;
		}
	}
	const struct jl_value *cn = jl_get(schema, "const");
	if (cn && cn->type == JL_STRING && (v->type != JL_STRING || strcmp(cn->string, v->string))) {
		snprintf(err, errlen, "%s: must be \"%s\"", where, cn->string);
		return -1;
	}
	const struct jl_value *mn = jl_get(schema, "minimum");
	if (mn && mn->type == JL_NUMBER && v->type == JL_NUMBER && v->number < mn->number) {
		snprintf(err, errlen, "%s: below the minimum %g", where, mn->number);
		return -1;
	}
	const struct jl_value *mx = jl_get(schema, "maximum");
	if (mx && mx->type == JL_NUMBER && v->type == JL_NUMBER && v->number > mx->number) {
		snprintf(err, errlen, "%s: above the maximum %g", where, mx->number);
		return -1;
	}
	char sub[512];
	if (v->type == JL_OBJECT) {
		const struct jl_value *props = jl_get(schema, "properties");
		const struct jl_value *req = jl_get(schema, "required");
		const struct jl_value *addl = jl_get(schema, "additionalProperties");
		if (req && req->type == JL_ARRAY)
			for (size_t i = 0; i < req->n; i++)
				if (req->items[i].type == JL_STRING && !jl_get(v, req->items[i].string)) {
					snprintf(err, errlen, "%s: missing \"%s\"", where, req->items[i].string);
					return -1;
				}
		for (size_t i = 0; i < v->n; i++) {
			const struct jl_value *ps = jl_get(props, v->keys[i]);
			snprintf(sub, sizeof(sub), "%s/%s", where, v->keys[i]);
			if (!ps) {
				if (addl && addl->type == JL_BOOL && !addl->boolean) {
					snprintf(err, errlen, "%.200s: not allowed here", sub);
					return -1;
				}
				continue;
			}
			if (jl_validate(root, ps, &v->items[i], sub, err, errlen))
				return -1;
		}
	}
	if (v->type == JL_ARRAY) {
		const struct jl_value *items = jl_get(schema, "items");
		for (size_t i = 0; items && i < v->n; i++) {
			snprintf(sub, sizeof(sub), "%s/%zu", where, i);
			if (jl_validate(root, items, &v->items[i], sub, err, errlen))
				return -1;
		}
	}
	return 0;
}

#endif
