/*
 * The flow-id table against a plain reference model under millions of
 * random operations, plus the edges of its contract.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/testlib.h"
#include "xflow/flowid.h"

/* Reference: a flat array of (kind, ptr, id), linear search. */
struct ref_entry {
	uint16_t kind;
	uint64_t ptr, id;
};
struct ref {
	struct ref_entry *e;
	size_t n, cap;
};

static struct ref_entry *ref_find(struct ref *r, uint16_t kind, uint64_t ptr)
{
	for (size_t i = 0; i < r->n; i++)
		if (r->e[i].kind == kind && r->e[i].ptr == ptr)
			return &r->e[i];
	return NULL;
}
static uint64_t ref_get(struct ref *r, uint16_t kind, uint64_t ptr)
{
	struct ref_entry *e = ref_find(r, kind, ptr);
	return e ? e->id : 0;
}
static int ref_register(struct ref *r, uint16_t kind, uint64_t ptr, uint64_t id)
{
	struct ref_entry *e = ref_find(r, kind, ptr);
	if (e) {
		e->id = id;
		return 0;
	}
	if (r->n == r->cap)
		return -ENOSPC;
	r->e[r->n++] = (struct ref_entry){ kind, ptr, id };
	return 0;
}
static int ref_remove(struct ref *r, uint16_t kind, uint64_t ptr)
{
	struct ref_entry *e = ref_find(r, kind, ptr);
	if (!e)
		return -ENOENT;
	*e = r->e[--r->n];
	return 0;
}

static void random_ops(uint64_t seed, size_t capacity, uint64_t key_space, long ops)
{
	struct xflow_flowtab t;
	cr_assert_eq(xflow_flowtab_init(&t, capacity), 0);
	struct ref r = { .e = calloc(capacity, sizeof(struct ref_entry)), .cap = capacity };
	uint64_t st = seed;
	uint64_t full_expected = 0;

	for (long i = 0; i < ops; i++) {
		uint64_t v = test_rand_next(&st);
		uint16_t kind = (uint16_t)(v % 3);
		/* Pointers in a small space so keys repeat, collide and form
		 * long probe runs; 8-byte aligned like real objects. */
		uint64_t ptr = ((v >> 8) % key_space + 1) * 8;
		uint64_t ptr2 = ((v >> 32) % key_space + 1) * 8;
		switch ((v >> 60) % 6) {
		case 0:
		case 1: {
			uint64_t id = xflow_flowtab_new_id(&t);
			int want = ref_register(&r, kind, ptr, id);
			if (want == -ENOSPC)
				full_expected++;
			cr_assert_eq(xflow_flowtab_register(&t, kind, ptr, id), want, "op %ld", i);
			break;
		}
		case 2:
			cr_assert_eq(xflow_flowtab_remove(&t, kind, ptr), ref_remove(&r, kind, ptr),
				     "op %ld", i);
			break;
		case 3: {
			uint64_t id = ref_get(&r, kind, ptr);
			if (id && ptr != ptr2) {
				ref_remove(&r, kind, ptr);
				ref_register(&r, kind, ptr2, id);
			}
			cr_assert_eq(xflow_flowtab_move(&t, kind, ptr, ptr2), id, "op %ld", i);
			break;
		}
		case 4: {
			uint64_t id = ref_get(&r, kind, ptr);
			uint64_t want = id;
			if (id && ref_register(&r, kind, ptr2, id) == -ENOSPC) {
				want = 0;
				full_expected++;
			}
			cr_assert_eq(xflow_flowtab_copy(&t, kind, ptr, ptr2), want, "op %ld", i);
			break;
		}
		default:
			cr_assert_eq(xflow_flowtab_get(&t, kind, ptr), ref_get(&r, kind, ptr),
				     "op %ld", i);
			break;
		}
		cr_assert_eq(t.live, r.n, "op %ld", i);
	}
	/* Every key of the model is still found, and nothing else is. */
	for (size_t i = 0; i < r.n; i++)
		cr_assert_eq(xflow_flowtab_get(&t, r.e[i].kind, r.e[i].ptr), r.e[i].id);
	for (uint64_t k = 1; k <= key_space; k++)
		for (uint16_t kind = 0; kind < 3; kind++)
			cr_assert_eq(xflow_flowtab_get(&t, kind, k * 8), ref_get(&r, kind, k * 8));
	cr_assert_eq(t.full, full_expected);
	free(r.e);
	xflow_flowtab_fini(&t);
}

Test(flowid, matches_reference_model_with_a_roomy_table, .timeout = 120)
{
	random_ops(1, 4096, 3000, 1000000);
}

Test(flowid, matches_reference_model_when_often_full, .timeout = 120)
{
	/* 600 keys of 3 kinds compete for 256 places. */
	random_ops(2, 256, 200, 1000000);
}

Test(flowid, matches_reference_model_with_tiny_table, .timeout = 120)
{
	random_ops(3, 1, 3, 500000);
	random_ops(4, 7, 16, 500000);
}

Test(flowid, contract_edges)
{
	struct xflow_flowtab t;
	cr_assert_eq(xflow_flowtab_init(&t, 0), -EINVAL);
	cr_assert_eq(xflow_flowtab_init(&t, 4), 0);
	cr_assert_eq(xflow_flowtab_get(&t, 0, 0x1000), 0, "empty table");
	cr_assert_eq(xflow_flowtab_register(&t, 0, 0, 5), -EINVAL, "NULL key");
	cr_assert_eq(xflow_flowtab_register(&t, 0, 0x1000, 0), -EINVAL, "id 0 means none");
	cr_assert_eq(xflow_flowtab_register(&t, 0, 0x1000, XFLOW_FLOWID_MAX + 1), -ERANGE);
	cr_assert_eq(xflow_flowtab_register(&t, 0, 0x1000, XFLOW_FLOWID_MAX), 0);
	cr_assert_eq(xflow_flowtab_get(&t, 0, 0x1000), XFLOW_FLOWID_MAX);
	cr_assert_eq(xflow_flowtab_get(&t, 1, 0x1000), 0, "same pointer, other kind");
	cr_assert_eq(xflow_flowtab_register(&t, 0xffff, 0x1000, 9), 0);
	cr_assert_eq(xflow_flowtab_get(&t, 0xffff, 0x1000), 9);
	cr_assert_eq(xflow_flowtab_get(&t, 0, 0x1000), XFLOW_FLOWID_MAX);
	cr_assert_eq(xflow_flowtab_remove(&t, 0, 0x2000), -ENOENT);
	cr_assert_eq(xflow_flowtab_move(&t, 0, 0x2000, 0x3000), 0, "nothing to move");
	xflow_flowtab_fini(&t);
}

Test(flowid, new_ids_are_odd_from_one_and_skip_zero_on_wrap)
{
	struct xflow_flowtab t;
	xflow_flowtab_init(&t, 4);
	cr_assert_eq(xflow_flowtab_new_id(&t), 1);
	cr_assert_eq(xflow_flowtab_new_id(&t), 3);
	/* Never all zero in any low bits a ring header could carry. */
	for (unsigned i = 0; i < 10000; i++) {
		uint64_t id = xflow_flowtab_new_id(&t);
		for (unsigned bits = 1; bits <= 16; bits++)
			cr_assert_neq(id & ((1u << bits) - 1), 0, "id %llu carried in %u bits is 0",
				      (unsigned long long)id, bits);
	}
	t.last_id = XFLOW_FLOWID_MAX - 2;
	cr_assert_eq(xflow_flowtab_new_id(&t), XFLOW_FLOWID_MAX);
	cr_assert_eq(xflow_flowtab_new_id(&t), 1);
	xflow_flowtab_fini(&t);
}

Test(flowid, move_succeeds_in_a_full_table)
{
	struct xflow_flowtab t;
	xflow_flowtab_init(&t, 2);
	xflow_flowtab_register(&t, 0, 0x10, 1);
	xflow_flowtab_register(&t, 0, 0x20, 2);
	cr_assert_eq(xflow_flowtab_register(&t, 0, 0x30, 3), -ENOSPC);
	cr_assert_eq(t.full, 1);
	cr_assert_eq(xflow_flowtab_move(&t, 0, 0x10, 0x30), 1);
	cr_assert_eq(xflow_flowtab_get(&t, 0, 0x30), 1);
	cr_assert_eq(xflow_flowtab_get(&t, 0, 0x10), 0);
	cr_assert_eq(xflow_flowtab_copy(&t, 0, 0x30, 0x40), 0, "copy into a full table fails");
	cr_assert_eq(t.full, 2);
	xflow_flowtab_fini(&t);
}

/* Keys made of numbers: distinct for distinct numbers, each in the slot
 * its number names (every other one, so consecutive ones are neighbours
 * with an empty slot between), and usable as any key, with a table of
 * keys far past the slots' count. */
Test(flowid, keys_of_numbers_take_the_slot_their_number_names)
{
	struct xflow_flowtab t;
	cr_assert_eq(xflow_flowtab_init(&t, 1024), 0);
	uint64_t nslots = t.mask + 1;
	for (uint16_t kind = 0; kind < 3; kind++)
		for (uint64_t n = 1; n <= 4 * nslots; n++) {
			uint64_t k = xflow_flowtab_key_of_number(&t, kind, n);
			cr_assert_eq(xflow_flowtab__hash(&t, kind, k), 2 * n & t.mask, "kind %u number %llu", kind,
				     (unsigned long long)n);
			/* The same slot, the next wrap of numbers: another key. */
			cr_assert_neq(k, xflow_flowtab_key_of_number(&t, kind, n + nslots / 2));
		}
	uint64_t top = UINT64_C(1) << 63;
	cr_assert_eq(xflow_flowtab__hash(&t, 0, xflow_flowtab_key_of_number(&t, 0, top + 5)), 11, "the top bit");
	cr_assert_eq(xflow_flowtab_key_of_number(&t, 0, 0), 0, "number 0 of kind 0 has no key");
	/* A window of 1000 live numbers sliding far past the slots: each in
	 * its home slot, and a removal finds the slot after it empty. */
	for (uint64_t n = 1; n <= 20 * nslots; n++) {
		cr_assert_eq(xflow_flowtab_register(&t, 1, xflow_flowtab_key_of_number(&t, 1, n), n), 0);
		if (n > 1000)
			cr_assert_eq(xflow_flowtab_remove(&t, 1, xflow_flowtab_key_of_number(&t, 1, n - 1000)), 0);
		cr_assert_eq(xflow_flowtab_get(&t, 1, xflow_flowtab_key_of_number(&t, 1, n)), n);
		cr_assert_eq(xflow_flowtab_get(&t, 1, xflow_flowtab_key_of_number(&t, 1, n + nslots)), 0);
		uint64_t home = 2 * n & t.mask;
		cr_assert_eq(t.slots[home].ptr, xflow_flowtab_key_of_number(&t, 1, n), "not in its home slot");
		cr_assert_eq(t.slots[(home + 1) & t.mask].ptr, 0, "a run of slots");
	}
	xflow_flowtab_fini(&t);
}
