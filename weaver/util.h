/*
 * weaver/util.h — the allocation helpers every pass shares.
 *
 * A unit's AST, tables and messages live in one arena freed at once, so a
 * pass that stops half-way (an error, a fuzz input) can never leak.  Memory
 * exhaustion is fatal in the front end, as it is in gcc: the arena prints a
 * message and aborts rather than threading ENOMEM through every parser rule.
 */
#ifndef XFLOW_WEAVER_UTIL_H
#define XFLOW_WEAVER_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "common/arena.h"

/* The core's arena (common/arena.h), with exhaustion made fatal. */
struct fl_arena {
	struct xflow_arena core;
};

void fl_arena_init(struct fl_arena *a);
void fl_arena_fini(struct fl_arena *a);
/* Zeroed, aligned for any scalar; never NULL. */
void *fl_arena_alloc(struct fl_arena *a, size_t size);
char *fl_arena_strndup(struct fl_arena *a, const char *s, size_t n);
char *fl_arena_strdup(struct fl_arena *a, const char *s);
char *fl_arena_printf(struct fl_arena *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Grow an arena array of @n elements of @size to at least @want; the old
 * block stays in the arena (arrays grow geometrically, so the waste is
 * bounded by the final size). */
void *fl_arena_grow(struct fl_arena *a, void *old, size_t size, size_t n,
		    size_t *cap, size_t want);

/* A growable heap string, for building generated code and dumps. */
struct fl_buf {
	char *s;
	size_t len, cap;
};

void fl_buf_putc(struct fl_buf *b, char c);
void fl_buf_puts(struct fl_buf *b, const char *s);
void fl_buf_putn(struct fl_buf *b, const char *s, size_t n);
void fl_buf_printf(struct fl_buf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void fl_buf_vprintf(struct fl_buf *b, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
void fl_buf_free(struct fl_buf *b);

/* Append one element to an arena-backed array (@arr, @n, @cap are lvalues). */
#define FL_PUSH(arena, arr, n, cap, val)                                        \
	do {                                                                    \
		if ((n) == (cap))                                               \
			(arr) = fl_arena_grow((arena), (arr), sizeof(*(arr)), (n), \
					      &(cap), (n) + 1);                 \
		(arr)[(n)++] = (val);                                           \
	} while (0)

/* A string-keyed hash map in the arena (names of flows, xins, fields), so
 * that units with thousands of names stay linear.  Keys are not copied. */
struct fl_map {
	struct fl_map_slot { const char *key; size_t klen; void *val; } *slots;
	size_t cap, n;
};

/* The value stored under @key (@klen bytes), or NULL. */
void *fl_map_get(const struct fl_map *m, const char *key, size_t klen);
/* Store @val under @key unless the key is present; returns the value now
 * stored under it (the old one if there was one). */
void *fl_map_put(struct fl_arena *a, struct fl_map *m, const char *key, size_t klen, void *val);

_Noreturn void fl_oom(void);

#endif
