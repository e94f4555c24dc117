/*
 * Arrays grown geometrically (common/mem.h).
 */
#include "common/mem.h"

#include <errno.h>
#include <stdlib.h>

int xflow_grow(void **p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 16;
	while (n < need)
		n *= 2;
	void *q = realloc(*p, n * elem);
	if (!q)
		return -ENOMEM;
	*p = q;
	*cap = n;
	return 0;
}
