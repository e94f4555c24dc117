/*
 * A bounded table of series: keys to slots, first come first served.  See
 * export/export.h.  Open addressing on a power-of-two table at most half
 * full, the keys in one arena.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"

#define KEY_MAX (2 * XFX_LABEL_MAX + 2)

struct xfx_fold {
	uint32_t max, n, mask;
	uint32_t *table;  /* slot + 1; 0 = empty */
	uint32_t *hash;   /* per slot */
	size_t *off;      /* per slot: its key in arena */
	uint16_t *len;
	char *arena;
	size_t narena, caparena;
};

int xfx_fold_new(uint32_t max, struct xfx_fold **out)
{
	if (!max || max > (1u << 24))
		return -EINVAL;
	struct xfx_fold *f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	uint32_t size = 16;
	while (size < 2 * max)
		size <<= 1;
	f->max = max;
	f->mask = size - 1;
	f->table = calloc(size, sizeof(*f->table));
	f->hash = calloc(max, sizeof(*f->hash));
	f->off = calloc(max, sizeof(*f->off));
	f->len = calloc(max, sizeof(*f->len));
	if (!f->table || !f->hash || !f->off || !f->len) {
		xfx_fold_free(f);
		return -ENOMEM;
	}
	*out = f;
	return 0;
}

void xfx_fold_free(struct xfx_fold *f)
{
	if (!f)
		return;
	free(f->table);
	free(f->hash);
	free(f->off);
	free(f->len);
	free(f->arena);
	free(f);
}

static uint32_t hash_bytes(const char *p, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)p[i]) * 16777619u;
	return h;
}

uint32_t xfx_fold_slot(struct xfx_fold *f, const char *key, size_t len)
{
	if (len > KEY_MAX)
		len = KEY_MAX;
	uint32_t h = hash_bytes(key, len);
	uint32_t i = h & f->mask;
	for (; f->table[i]; i = (i + 1) & f->mask) {
		uint32_t s = f->table[i] - 1;
		if (f->hash[s] == h && f->len[s] == len && !memcmp(f->arena + f->off[s], key, len))
			return s;
	}
	if (f->n == f->max)
		return XFX_FOLDED;
	if (!f->arena || f->narena + len > f->caparena) {
		size_t cap = f->caparena ? f->caparena : 4096;
		while (cap < f->narena + len)
			cap *= 2;
		char *a = realloc(f->arena, cap);
		if (!a)
			return XFX_FOLDED; /* counted like any key past the limit */
		f->arena = a;
		f->caparena = cap;
	}
	uint32_t s = f->n++;
	memcpy(f->arena + f->narena, key, len);
	f->off[s] = f->narena;
	f->len[s] = (uint16_t)len;
	f->hash[s] = h;
	f->narena += len;
	f->table[i] = s + 1;
	return s;
}

const char *xfx_fold_key(const struct xfx_fold *f, uint32_t slot, size_t *len)
{
	if (slot >= f->n) {
		*len = 0;
		return "";
	}
	*len = f->len[slot];
	return f->arena + f->off[slot];
}

uint32_t xfx_fold_count(const struct xfx_fold *f)
{
	return f->n;
}

uint32_t xfx_fold_max(const struct xfx_fold *f)
{
	return f->max;
}
