/*
 * common/arena.h — memory freed all at once: a weave plan and everything
 * it points at (common/plan/), and the weaver's syntax trees and tables,
 * whose front end makes exhaustion fatal on top of it (weaver/util.h).
 * Here nothing aborts: an allocation that fails returns NULL.
 */
#ifndef XFLOW_COMMON_ARENA_H
#define XFLOW_COMMON_ARENA_H

#include <stddef.h>

struct xflow_arena {
	struct xflow_arena_chunk *head;
	size_t used; /* bytes taken in head */
};

void xflow_arena_init(struct xflow_arena *a);
void xflow_arena_fini(struct xflow_arena *a);
/* Zeroed, aligned for any scalar; NULL when memory is exhausted. */
void *xflow_arena_alloc(struct xflow_arena *a, size_t size);

#endif
