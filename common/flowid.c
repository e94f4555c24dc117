/*
 * The flow-id table's operations.  See xflow/flowid.h for the contract.
 * Allocation is in flowid_alloc.c: this file uses no library call but
 * memset, so the in-process runtime (guestrt/hook/inproc/rt/) compiles it as it is.
 */
#include <errno.h>
#include <string.h>

#include "xflow/flowid.h"

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
