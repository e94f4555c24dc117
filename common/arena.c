/*
 * Memory freed all at once (common/arena.h).  Chunks of at least
 * CHUNK_MIN bytes; a block bigger than that gets a chunk of its own.
 */
#include "common/arena.h"

#include <stdlib.h>
#include <string.h>

#define CHUNK_MIN 16384
#define ALIGN 16

struct xflow_arena_chunk {
	struct xflow_arena_chunk *next;
	size_t size;
	_Alignas(ALIGN) unsigned char mem[];
};

void xflow_arena_init(struct xflow_arena *a)
{
	a->head = NULL;
	a->used = 0;
}

void xflow_arena_fini(struct xflow_arena *a)
{
	struct xflow_arena_chunk *c = a->head;
	while (c) {
		struct xflow_arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	a->head = NULL;
	a->used = 0;
}

void *xflow_arena_alloc(struct xflow_arena *a, size_t size)
{
	size = (size + ALIGN - 1) & ~(size_t)(ALIGN - 1);
	if (size == 0)
		size = ALIGN;
	if (!a->head || a->head->size - a->used < size) {
		size_t csize = size > CHUNK_MIN ? size : CHUNK_MIN;
		struct xflow_arena_chunk *c = malloc(sizeof(*c) + csize);
		if (!c)
			return NULL;
		c->size = csize;
		/* A big block gets its own chunk behind the current one, so the
		 * space left in the current chunk is not thrown away. */
		if (a->head && size > CHUNK_MIN) {
			c->next = a->head->next;
			a->head->next = c;
			memset(c->mem, 0, size);
			return c->mem;
		}
		c->next = a->head;
		a->head = c;
		a->used = 0;
	}
	void *p = a->head->mem + a->used;
	a->used += size;
	memset(p, 0, size);
	return p;
}
