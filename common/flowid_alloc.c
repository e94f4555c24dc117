/*
 * The flow-id table's memory: xflow_flowtab_init() and _fini().  Kept apart
 * from the operations (flowid.c), which the in-process runtime compiles
 * without a C library.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "xflow/flowid.h"

#define FLOWTAB_MAX_CAPACITY (UINT64_C(1) << 30)
#define FLOWTAB_HUGE ((size_t)2 << 20) /* x86-64 huge page */

int xflow_flowtab_init(struct xflow_flowtab *t, size_t capacity)
{
	memset(t, 0, sizeof(*t));
	if (capacity == 0 || capacity > FLOWTAB_MAX_CAPACITY)
		return -EINVAL;
	/* At most half full, so a probe run stays short (about 1.5 slots on
	 * a hit, 2.5 on a miss with linear probing). */
	unsigned bits = 1;
	while ((UINT64_C(1) << bits) < 2 * (uint64_t)capacity)
		bits++;
	size_t nslots = (size_t)1 << bits;
	size_t bytes = nslots * sizeof(*t->slots);
	if (bytes >= FLOWTAB_HUGE) {
		/* A big table is touched at random: with 4 KiB pages nearly
		 * every operation also misses the TLB.  Ask for huge pages
		 * (a hint; the kernel may decline) and start zeroed. */
		bytes = (bytes + FLOWTAB_HUGE - 1) & ~(FLOWTAB_HUGE - 1);
		void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return -ENOMEM;
		madvise(m, bytes, MADV_HUGEPAGE);
		t->slots = m;
		t->mapped = bytes;
	} else {
		/* Cache-line aligned so a probe run touches as few lines as
		 * it can; aligned_alloc wants a multiple of the alignment. */
		bytes = (bytes + 63) & ~(size_t)63;
		t->slots = aligned_alloc(64, bytes);
		if (!t->slots)
			return -ENOMEM;
		memset(t->slots, 0, bytes);
	}
	t->mask = nslots - 1;
	t->shift = 64 - bits;
	t->capacity = capacity;
	return 0;
}

void xflow_flowtab_fini(struct xflow_flowtab *t)
{
	if (t->mapped)
		munmap(t->slots, t->mapped);
	else
		free(t->slots);
	memset(t, 0, sizeof(*t));
}
