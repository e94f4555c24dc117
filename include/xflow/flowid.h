/*
 * xflow/flowid.h — the flow-id table: which flow each live data structure
 * belongs to.
 *
 * The paper's API (seed 001 §4.1): get_new_flowid, register_flowid,
 * get_flowid, remove_flowid — here xflow_flowtab_new_id, _register, _get,
 * _remove — plus _move and _copy for transits.  Keys are (flow kind,
 * pointer); the value is a flow id (1 .. XFLOW_FLOWID_MAX; 0 means "none"; the
 * ids this file hands out are odd, see xflow_flowid_after).
 *
 * Open addressing with linear probing and backward-shift deletion (no
 * tombstones, so lookups never slow down as keys come and go), at most half
 * full.  All memory is allocated by xflow_flowtab_init(); no call after it
 * allocates, so the table is safe in a hook.  When @capacity keys are live,
 * registering another fails with -ENOSPC and is counted.
 *
 * Thread safety: none inside.  A table belongs to one thread at a time (the
 * agent's handler thread); a caller that shares it serialises the calls.
 * Lookups on a table no one is changing may run concurrently.
 */
#ifndef XFLOW_FLOWID_H
#define XFLOW_FLOWID_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "xflow/record.h"

struct xflow_flowtab_slot {
	uint64_t ptr;  /* key pointer; 0 = empty slot */
	uint64_t val;  /* kind << 48 | flow id */
};

struct xflow_flowtab {
	struct xflow_flowtab_slot *slots;
	uint64_t mask;      /* nslots - 1 */
	unsigned shift;     /* 64 - log2(nslots): hash bits to keep */
	size_t capacity;    /* live keys allowed */
	size_t live;        /* live keys now */
	uint64_t last_id;   /* the last id handed out */
	uint64_t full;      /* registrations refused because the table was full */
	size_t mapped;      /* bytes mapped for slots (huge-page tables), else 0 */
};

/* Allocate a table for @capacity live keys (1 .. 2^30).  0 or -errno. */
int xflow_flowtab_init(struct xflow_flowtab *t, size_t capacity);
void xflow_flowtab_fini(struct xflow_flowtab *t);
/* Forget every key (ids keep counting). */
void xflow_flowtab_clear(struct xflow_flowtab *t);

/* Bytes the table holds for its slots (for memory accounting). */
static inline size_t xflow_flowtab_bytes(const struct xflow_flowtab *t)
{
	return (size_t)(t->mask + 1) * sizeof(struct xflow_flowtab_slot);
}

/*
 * Flow ids are odd.  A flow crossing into another domain carries its id's
 * low bits in a ring header (seed 001 §4.2), and the receiving side reads
 * all-zero bits as "no flow": an even id would lose the flow there once in
 * 2^bits.  An odd id is never all zero in any number of low bits, so no
 * allocator needs to know how many bits a plan carries.
 */
static inline uint64_t xflow_flowid_after(uint64_t prev)
{
	return prev == 0 || prev >= XFLOW_FLOWID_MAX - 1 ? 1 : (prev | 1) + 2;
}

/* A new flow id: 1, 3, 5, ... wrapping from XFLOW_FLOWID_MAX back to 1. */
static inline uint64_t xflow_flowtab_new_id(struct xflow_flowtab *t)
{
	t->last_id = xflow_flowid_after(t->last_id);
	return t->last_id;
}

/*
 * Map (@kind, @ptr) to @id, replacing any id it had.  Returns 0, -EINVAL
 * for a NULL pointer or id 0, -ERANGE for an id over 48 bits, -ENOSPC when
 * the table is full (counted in t->full).
 */
static inline int xflow_flowtab_register(struct xflow_flowtab *t, uint16_t kind, uint64_t ptr,
					 uint64_t id);

/* Remove the mapping of (@kind, @ptr).  0, or -ENOENT if there was none. */
static inline int xflow_flowtab_remove(struct xflow_flowtab *t, uint16_t kind, uint64_t ptr);

/* Give @to the id of @from and forget @from.  Returns the id, or 0 when
 * @from has none (then nothing changes). */
uint64_t xflow_flowtab_move(struct xflow_flowtab *t, uint16_t kind, uint64_t from, uint64_t to);

/* Give @to the id of @from and keep @from.  Returns the id, 0 when @from
 * has none, or 0 with t->full counted when the table is full. */
uint64_t xflow_flowtab_copy(struct xflow_flowtab *t, uint16_t kind, uint64_t from, uint64_t to);

/* --- inline fast path --------------------------------------------------- */

#define XFLOW_FLOWTAB__KIND_MUL UINT64_C(0x9E3779B97F4A7C15)
#define XFLOW_FLOWTAB__MUL UINT64_C(0xBF58476D1CE4E5B9)
#define XFLOW_FLOWTAB__MUL_INV UINT64_C(0x96de1b173f119089)
_Static_assert(XFLOW_FLOWTAB__MUL * XFLOW_FLOWTAB__MUL_INV == 1, "the hash's multiplier and its inverse");

static inline uint64_t xflow_flowtab__hash(const struct xflow_flowtab *t, uint16_t kind,
					   uint64_t ptr)
{
	/* Multiplicative (Fibonacci) hashing: the high bits of the product
	 * depend on every bit of the key, and allocator pointers differ mostly
	 * in their middle bits.  (Page-local hashing, which keeps objects of
	 * one slab page on neighbouring lines, was measured: 20 % faster
	 * registration at 1M keys, slower random lookups, and an
	 * allocator-dependent worst case; not worth it.) */
	uint64_t k = ptr ^ ((uint64_t)kind * XFLOW_FLOWTAB__KIND_MUL);
	return (k * XFLOW_FLOWTAB__MUL) >> t->shift;
}

/*
 * A key for the number @n whose home slot is 2@n (plus @n's top bit)
 * modulo the table's size, for a table keyed by numbers handed out in
 * order (flow ids) rather than by pointers: consecutive numbers take every
 * other slot, two to a cache line, where hashed keys take a line each, a
 * cache miss per key in a table larger than the caches.  Not every slot:
 * a window of live numbers would make one run of slots, and backward-shift
 * deletion scans a run to its end.  The inverse of the hash above on @n
 * rotated so that its low bits come out on top: a bijection of @n for each
 * kind, and 0 (no key: refused) for one @n per kind (0 for kind 0).
 */
static inline uint64_t xflow_flowtab_key_of_number(const struct xflow_flowtab *t, uint16_t kind, uint64_t n)
{
	unsigned r = 63 - t->shift; /* log2 of the slots less one, 0 .. 62 */
	uint64_t x = r ? n << (64 - r) | n >> r : n;
	return (x * XFLOW_FLOWTAB__MUL_INV) ^ ((uint64_t)kind * XFLOW_FLOWTAB__KIND_MUL);
}

/* The home slot of the key stored in @s (its kind is in its value's top
 * bits): where backward-shift deletion decides whether the key may move. */
static inline uint64_t xflow_flowtab__home_of(const struct xflow_flowtab *t,
					      const struct xflow_flowtab_slot *s)
{
	return xflow_flowtab__hash(t, (uint16_t)(s->val >> XFLOW_FLOWID_BITS), s->ptr);
}

/* The id of (@kind, @ptr), or 0 when it has none. */
static inline uint64_t xflow_flowtab_get(const struct xflow_flowtab *t, uint16_t kind,
					 uint64_t ptr)
{
	uint64_t want = (uint64_t)kind << XFLOW_FLOWID_BITS;
	uint64_t i = xflow_flowtab__hash(t, kind, ptr);
	/* Two slots a step: at most half full, the key is in its home slot or
	 * the next one nearly always, so the common case is one well-predicted
	 * branch (the choice between the two is a conditional move).  A key
	 * never lies past an empty slot of its run, so an empty first slot
	 * also rules out the second. */
	for (;;) {
		const struct xflow_flowtab_slot *a = &t->slots[i], *b = &t->slots[(i + 1) & t->mask];
		int ha = a->ptr == ptr && (a->val & ~XFLOW_FLOWID_MAX) == want;
		int hb = b->ptr == ptr && (b->val & ~XFLOW_FLOWID_MAX) == want;
		if (ha | hb)
			return (ha ? a->val : b->val) & XFLOW_FLOWID_MAX;
		if (a->ptr == 0 || b->ptr == 0)
			return 0;
		i = (i + 2) & t->mask;
	}
}

/* The out-of-line part of xflow_flowtab_register(): refuse a bad argument
 * or a full table. */
int xflow_flowtab__refuse(struct xflow_flowtab *t, uint64_t ptr, uint64_t id);

static inline int xflow_flowtab_register(struct xflow_flowtab *t, uint16_t kind, uint64_t ptr,
					 uint64_t id)
{
	if (ptr == 0 || id == 0 || id > XFLOW_FLOWID_MAX)
		return xflow_flowtab__refuse(t, ptr, id);
	uint64_t want = (uint64_t)kind << XFLOW_FLOWID_BITS;
	for (uint64_t i = xflow_flowtab__hash(t, kind, ptr);; i = (i + 1) & t->mask) {
		struct xflow_flowtab_slot *s = &t->slots[i];
		if (s->ptr == ptr && (s->val & ~XFLOW_FLOWID_MAX) == want) {
			s->val = want | id;
			return 0;
		}
		if (s->ptr == 0) {
			/* Absent: it takes the free slot ending its run. */
			if (t->live >= t->capacity)
				return xflow_flowtab__refuse(t, ptr, id);
			t->live++;
			s->ptr = ptr;
			s->val = want | id;
			/* Removing this key will look at the slot after it.
			 * In a table too big for the caches (the ones mapped
			 * with huge pages), that slot's line is cold by then
			 * when it starts a new line (the array starts on
			 * one): fetch it now, while this line's miss is being
			 * paid anyway.  A smaller table stays cached.  At 1M
			 * keys: remove 23 -> 17 ns, register +2 ns (+5 when
			 * every insert prefetched). */
			if (t->mapped && (i + 1) % (64 / sizeof(*s)) == 0)
				__builtin_prefetch(&t->slots[(i + 1) & t->mask], 0, 3);
			return 0;
		}
	}
}

/* The out-of-line part of xflow_flowtab_remove(): empty slot @hole and
 * close the gap behind it. */
void xflow_flowtab__delete_at(struct xflow_flowtab *t, uint64_t hole);

static inline int xflow_flowtab_remove(struct xflow_flowtab *t, uint16_t kind, uint64_t ptr)
{
	if (ptr == 0)
		return -ENOENT;
	uint64_t want = (uint64_t)kind << XFLOW_FLOWID_BITS;
	for (uint64_t i = xflow_flowtab__hash(t, kind, ptr);; i = (i + 1) & t->mask) {
		struct xflow_flowtab_slot *s = &t->slots[i];
		if (s->ptr == ptr && (s->val & ~XFLOW_FLOWID_MAX) == want) {
			uint64_t j = (i + 1) & t->mask;
			struct xflow_flowtab_slot *n = &t->slots[j];
			if (n->ptr != 0 && t->slots[(j + 1) & t->mask].ptr != 0) {
				/* A longer run behind the hole: out of line. */
				xflow_flowtab__delete_at(t, i);
				return 0;
			}
			/* The run ends at the hole or one slot after it (nearly
			 * every removal at most half full; in the bench at 1M
			 * keys 86 % end one slot after), so backward shift
			 * moves at most the key behind the hole, and only when
			 * it does not sit at its home.  Inline, the bench's
			 * remove at 1M keys went 19 -> 15 ns, and 6.5 -> 4.9 ns
			 * on recycled addresses. */
			if (n->ptr != 0 && xflow_flowtab__home_of(t, n) != j) {
				*s = *n;
				s = n;
			}
			s->ptr = 0;
			s->val = 0;
			t->live--;
			return 0;
		}
		if (s->ptr == 0)
			return -ENOENT;
	}
}

#endif
