/*
 * The flow-id table.  See xflow/flowid.h for the contract.
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

void xflow_flowtab_clear(struct xflow_flowtab *t)
{
	memset(t->slots, 0, xflow_flowtab_bytes(t));
	t->live = 0;
}

int xflow_flowtab__refuse(struct xflow_flowtab *t, uint64_t ptr, uint64_t id)
{
	if (ptr == 0 || id == 0)
		return -EINVAL;
	if (id > XFLOW_FLOWID_MAX)
		return -ERANGE;
	t->full++;
	return -ENOSPC;
}

void xflow_flowtab__delete_at(struct xflow_flowtab *t, uint64_t hole)
{
	t->live--;
	/* Backward-shift deletion: pull later members of the probe run into
	 * the hole when their home slot lies cyclically at or before it, so
	 * every remaining key stays reachable from its home without
	 * tombstones. */
	for (uint64_t j = (hole + 1) & t->mask;; j = (j + 1) & t->mask) {
		struct xflow_flowtab_slot *s = &t->slots[j];
		if (s->ptr == 0)
			break;
		uint64_t home = xflow_flowtab__home_of(t, s);
		/* Distance from home to j versus from hole to j, both modulo
		 * the table: the key may move to the hole when the hole is no
		 * further from j than its home is. */
		if (((j - home) & t->mask) >= ((j - hole) & t->mask)) {
			t->slots[hole] = *s;
			hole = j;
		}
	}
	t->slots[hole].ptr = 0;
	t->slots[hole].val = 0;
}

uint64_t xflow_flowtab_move(struct xflow_flowtab *t, uint16_t kind, uint64_t from, uint64_t to)
{
	uint64_t id = xflow_flowtab_get(t, kind, from);
	if (id == 0 || to == 0 || from == to)
		return id;
	/* Remove first: in a full table the move still finds room. */
	xflow_flowtab_remove(t, kind, from);
	xflow_flowtab_register(t, kind, to, id);
	return id;
}

uint64_t xflow_flowtab_copy(struct xflow_flowtab *t, uint16_t kind, uint64_t from, uint64_t to)
{
	uint64_t id = xflow_flowtab_get(t, kind, from);
	if (id == 0 || to == 0)
		return id;
	return xflow_flowtab_register(t, kind, to, id) == 0 ? id : 0;
}
