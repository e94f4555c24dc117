/*
 * Arena and string buffer, and reading an input file whole.  See util.h
 * for why memory exhaustion aborts.
 */
#include "weaver/util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Noreturn void fl_oom(void)
{
	fputs("xflowc: out of memory\n", stderr);
	abort();
}

void fl_arena_init(struct fl_arena *a)
{
	xflow_arena_init(&a->core);
}

void fl_arena_fini(struct fl_arena *a)
{
	xflow_arena_fini(&a->core);
}

void *fl_arena_alloc(struct fl_arena *a, size_t size)
{
	void *p = xflow_arena_alloc(&a->core, size);
	if (!p)
		fl_oom();
	return p;
}

char *fl_arena_strndup(struct fl_arena *a, const char *s, size_t n)
{
	char *p = fl_arena_alloc(a, n + 1);
	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *fl_arena_strdup(struct fl_arena *a, const char *s)
{
	return fl_arena_strndup(a, s, strlen(s));
}

char *fl_arena_printf(struct fl_arena *a, const char *fmt, ...)
{
	struct fl_buf b = { 0 };
	va_list ap;
	va_start(ap, fmt);
	fl_buf_vprintf(&b, fmt, ap);
	va_end(ap);
	char *p = fl_arena_strndup(a, b.s ? b.s : "", b.len);
	fl_buf_free(&b);
	return p;
}

void *fl_arena_grow(struct fl_arena *a, void *old, size_t size, size_t n,
		    size_t *cap, size_t want)
{
	if (want <= *cap)
		return old;
	size_t ncap = *cap ? *cap * 2 : 4;
	while (ncap < want)
		ncap *= 2;
	void *p = fl_arena_alloc(a, ncap * size);
	if (n)
		memcpy(p, old, n * size);
	*cap = ncap;
	return p;
}

static void buf_reserve(struct fl_buf *b, size_t more)
{
	if (b->len + more + 1 <= b->cap)
		return;
	size_t ncap = b->cap ? b->cap * 2 : 256;
	while (ncap < b->len + more + 1)
		ncap *= 2;
	char *s = realloc(b->s, ncap);
	if (!s)
		fl_oom();
	b->s = s;
	b->cap = ncap;
}

void fl_buf_putn(struct fl_buf *b, const char *s, size_t n)
{
	buf_reserve(b, n);
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

void fl_buf_putc(struct fl_buf *b, char c)
{
	fl_buf_putn(b, &c, 1);
}

void fl_buf_puts(struct fl_buf *b, const char *s)
{
	fl_buf_putn(b, s, strlen(s));
}

void fl_buf_vprintf(struct fl_buf *b, const char *fmt, va_list ap)
{
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	if (n < 0)
		return;
	buf_reserve(b, (size_t)n);
	vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
}

void fl_buf_printf(struct fl_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fl_buf_vprintf(b, fmt, ap);
	va_end(ap);
}

void fl_buf_free(struct fl_buf *b)
{
	free(b->s);
	b->s = NULL;
	b->len = b->cap = 0;
}

static uint64_t hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;   /* FNV-1a */
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
	return h;
}

static struct fl_map_slot *find(const struct fl_map *m, const char *key, size_t klen)
{
	size_t mask = m->cap - 1;
	for (size_t i = hash(key, klen) & mask;; i = (i + 1) & mask) {
		struct fl_map_slot *s = &m->slots[i];
		if (!s->key || (s->klen == klen && memcmp(s->key, key, klen) == 0))
			return s;
	}
}

void *fl_map_get(const struct fl_map *m, const char *key, size_t klen)
{
	if (!m->cap)
		return NULL;
	return find(m, key, klen)->val;
}

void *fl_map_put(struct fl_arena *a, struct fl_map *m, const char *key, size_t klen, void *val)
{
	/* Keep the load under one half so probes stay short. */
	if ((m->n + 1) * 2 > m->cap) {
		struct fl_map old = *m;
		m->cap = old.cap ? old.cap * 2 : 64;
		m->slots = fl_arena_alloc(a, m->cap * sizeof(*m->slots));
		m->n = 0;
		for (size_t i = 0; i < old.cap; i++)
			if (old.slots[i].key) {
				*find(m, old.slots[i].key, old.slots[i].klen) = old.slots[i];
				m->n++;
			}
	}
	struct fl_map_slot *s = find(m, key, klen);
	if (s->key)
		return s->val;
	*s = (struct fl_map_slot){ key, klen, val };
	m->n++;
	return val;
}
