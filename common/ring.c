/*
 * Shared-memory SPSC ring: formatting a region, and the consumer.  The
 * producer is in ring_producer.c and, for its fast path, xflow/ring.h.
 */
#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "xflow/ring.h"

static_assert(sizeof(struct xflow_ring_hdr) == XFLOW_RING_HDR_SIZE, "ring header is ABI");
static_assert(offsetof(struct xflow_ring_hdr, prod) == 64, "producer line");
static_assert(offsetof(struct xflow_ring_hdr, cons) == 128, "consumer line");
static_assert(sizeof(_Atomic uint64_t) == 8, "atomics must be plain words in shared memory");

int xflow_ring_format(void *region, size_t size, uint32_t slot_size, uint32_t nslots,
		      enum xflow_clock_kind clock)
{
	size_t need = xflow_ring_region_size(slot_size, nslots);
	if (!region || !need || need > size ||
	    (clock != XFLOW_CLOCK_TSC && clock != XFLOW_CLOCK_MONOTONIC))
		return -EINVAL;

	struct xflow_ring_hdr *h = region;
	memset(h, 0, sizeof(*h));
	h->version = XFLOW_RING_VERSION;
	h->clock = (uint16_t)clock;
	h->slot_size = slot_size;
	h->nslots = nslots;
	h->region_size = need;
	atomic_store_explicit(&h->prod, 0, memory_order_relaxed);
	atomic_store_explicit(&h->cons, 0, memory_order_relaxed);
	/* Release: a peer that sees the magic sees the whole header. */
	atomic_store_explicit((_Atomic uint32_t *)&h->magic, XFLOW_RING_MAGIC,
			      memory_order_release);
	return 0;
}

/* The first reason sticks: later symptoms usually follow from it. */
__attribute__((format(printf, 3, 4))) static void
consumer_set_corrupt(struct xflow_ring_consumer *c, int err, const char *fmt, ...)
{
	if (c->corrupt)
		return;
	c->corrupt = err;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->corrupt_why, sizeof(c->corrupt_why), fmt, ap);
	va_end(ap);
}

int xflow_ring_consumer_init(struct xflow_ring_consumer *c, void *region, size_t size,
			     uint32_t expect_slot_size, struct xflow_notifier *notifier)
{
	struct xflow_ring_hdr *h = region;

	memset(c, 0, sizeof(*c));
	c->notifier = notifier;
	if (!h || size < sizeof(*h)) {
		consumer_set_corrupt(c, -EINVAL, "region of %zu bytes is smaller than a ring header",
				     size);
		return c->corrupt;
	}
	/* Read the geometry once: the producer may change the header at any
	 * time, and everything below uses only these private copies. */
	uint32_t magic = atomic_load_explicit((_Atomic uint32_t *)&h->magic, memory_order_acquire);
	uint16_t version = h->version, clock = h->clock;
	uint32_t slot_size = h->slot_size, nslots = h->nslots;

	if (magic != XFLOW_RING_MAGIC || version != XFLOW_RING_VERSION) {
		consumer_set_corrupt(c, -EPROTO, "bad ring magic %#" PRIx32 " or version %u", magic,
				     (unsigned)version);
		return c->corrupt;
	}
	size_t need = xflow_ring_region_size(slot_size, nslots);
	if (!need || need > size) {
		consumer_set_corrupt(c, -EINVAL,
				     "impossible geometry: %" PRIu32 " slots of %" PRIu32
				     " bytes in %zu bytes", nslots, slot_size, size);
		return c->corrupt;
	}
	if (expect_slot_size && slot_size != expect_slot_size) {
		consumer_set_corrupt(c, -EINVAL, "slot size %" PRIu32 ", expected %" PRIu32,
				     slot_size, expect_slot_size);
		return c->corrupt;
	}
	if (clock != XFLOW_CLOCK_TSC && clock != XFLOW_CLOCK_MONOTONIC) {
		consumer_set_corrupt(c, -EINVAL, "unknown clock kind %u", (unsigned)clock);
		return c->corrupt;
	}
	c->hdr = h;
	c->slots = (const unsigned char *)region + XFLOW_RING_HDR_SIZE;
	c->region_size = size;
	c->slot_size = slot_size;
	c->nslots = nslots;
	c->mask = nslots - 1;
	c->clock = (enum xflow_clock_kind)clock;
	c->cons = atomic_load_explicit(&h->cons, memory_order_relaxed);
	c->prod_seen = c->cons;
	c->spin = XFLOW_RING_SPIN_DEFAULT;
	c->wake_batch = nslots / 4 < 256 ? (nslots / 4 ? nslots / 4 : 1) : 256;
	return 0;
}

long xflow_ring_pop(struct xflow_ring_consumer *c, void *out, size_t max)
{
	if (c->corrupt)
		return c->corrupt;
	/* Acquire: pairs with the producer's release store; the slots below
	 * `prod` are written before we copy them. */
	uint64_t prod = atomic_load_explicit(&c->hdr->prod, memory_order_acquire);
	if (prod < c->prod_seen) {
		consumer_set_corrupt(c, -EPROTO, "producer index went back from %" PRIu64 " to %" PRIu64,
				     c->prod_seen, prod);
		return c->corrupt;
	}
	uint64_t avail = prod - c->cons;
	if (avail > c->nslots) {
		consumer_set_corrupt(c, -EPROTO,
				     "producer index %" PRIu64 " is ahead of the consumer's %" PRIu64
				     " by more than the ring", prod, c->cons);
		return c->corrupt;
	}
	c->prod_seen = prod;
	size_t n = avail < max ? (size_t)avail : max;
	/* The slots to copy are contiguous but for one wrap: at most two
	 * copies, whatever n is. */
	size_t first = (size_t)(c->cons & c->mask);
	size_t run1 = n < c->nslots - first ? n : c->nslots - first;
	memcpy(out, c->slots + first * c->slot_size, run1 * c->slot_size);
	if (n > run1)
		memcpy((unsigned char *)out + run1 * c->slot_size, c->slots,
		       (n - run1) * c->slot_size);
	c->cons += n;
	if (n)
		/* Release: our copies out of those slots are complete before
		 * the producer may overwrite them. */
		atomic_store_explicit(&c->hdr->cons, c->cons, memory_order_release);
	return (long)n;
}

long xflow_ring_pop_records(struct xflow_ring_consumer *c, struct xflow_record *out,
			    size_t max)
{
	if (c->corrupt)
		return c->corrupt;
	if (c->slot_size != XFLOW_RECORD_SIZE)
		return -EINVAL;
	long n = xflow_ring_pop(c, out, max);
	for (long i = 0; i < n; i++) {
		const char *why;
		if (xflow_record_plainly_valid(&out[i]))
			continue;
		/* Decoding in place is safe: `out` is already our private copy. */
		if (xflow_record_decode(&out[i], sizeof(out[i]), &out[i], &why) < 0) {
			c->bad_records++;
			consumer_set_corrupt(c, -EBADMSG, "record %" PRIu64 " has a bad %s field",
					     c->cons - (uint64_t)n + (uint64_t)i, why);
			return i;
		}
	}
	return n;
}

int xflow_ring_wait(struct xflow_ring_consumer *c, int timeout_ms)
{
	if (c->corrupt)
		return c->corrupt;
	if (!c->notifier || !c->notifier->ops->wait)
		return -ENOTSUP;
	/* Spin a little before sleeping: a producer that is streaming
	 * publishes again within microseconds, and a consumer that sleeps at
	 * every empty moment would make it pay a system call each time.
	 * While spinning, wait for a batch rather than one record: reading
	 * right behind the producer makes the index and slot cache lines
	 * bounce between the two cores at every record. */
	uint64_t avail = 0;
	for (uint32_t i = 0; i < c->spin; i++) {
		avail = atomic_load_explicit(&c->hdr->prod, memory_order_relaxed) - c->cons;
		if (avail >= c->wake_batch)
			return 1;
		for (int k = 0; k < 16; k++)
			__builtin_ia32_pause();
	}
	if (avail)
		return 1;
	atomic_store_explicit(&c->hdr->consumer_sleeping, 1, memory_order_relaxed);
	/* Seq_cst fence: the flag is visible before we re-read `prod`; pairs
	 * with the producer's fence in xflow_ring__notify_check(). */
	atomic_thread_fence(memory_order_seq_cst);
	int rc = 1;
	if (atomic_load_explicit(&c->hdr->prod, memory_order_acquire) == c->cons)
		rc = c->notifier->ops->wait(c->notifier, timeout_ms);
	atomic_store_explicit(&c->hdr->consumer_sleeping, 0, memory_order_relaxed);
	return rc;
}

int xflow_ring_arm(struct xflow_ring_consumer *c)
{
	if (c->corrupt)
		return c->corrupt;
	atomic_store_explicit(&c->hdr->consumer_sleeping, 1, memory_order_relaxed);
	/* Seq_cst fence, as in xflow_ring_wait(): the flag is visible before
	 * we re-read `prod`, so a record published after this check is
	 * followed by a notification. */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&c->hdr->prod, memory_order_acquire) != c->cons) {
		atomic_store_explicit(&c->hdr->consumer_sleeping, 0, memory_order_relaxed);
		return 1;
	}
	return 0;
}

uint64_t xflow_ring_dropped(const struct xflow_ring_consumer *c)
{
	return c->hdr ? atomic_load_explicit(&c->hdr->dropped, memory_order_relaxed) : 0;
}

uint64_t xflow_ring_held_before(const struct xflow_ring_consumer *c)
{
	return c->hdr ? atomic_load_explicit(&c->hdr->held_before, memory_order_acquire) : 0;
}
