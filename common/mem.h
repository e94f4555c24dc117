/*
 * common/mem.h — two helpers every folder had written for itself: the
 * owner of an embedded member (libuv's container_of), and an array grown
 * geometrically with realloc.
 */
#ifndef XFLOW_COMMON_MEM_H
#define XFLOW_COMMON_MEM_H

#include <stddef.h>

/* The struct of type @type whose member @member is at @ptr. */
#define xflow_container_of(ptr, type, member) ((type *)(void *)((char *)(ptr)-offsetof(type, member)))

/* Make the array *@p of *@cap elements of @elem bytes hold at least @need:
 * 0, or -ENOMEM with the array as it was.  The capacity starts at 16 and
 * doubles. */
int xflow_grow(void **p, size_t *cap, size_t need, size_t elem);

#endif
