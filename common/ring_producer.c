/*
 * The ring's geometry and the producer's slow paths (the fast path is
 * inline in xflow/ring.h).  No library call but memset: the in-process
 * runtime (guestrt/hook/inproc/rt/) compiles this file too, for the rings it fills
 * inside a traced program.
 */
#include <errno.h>
#include <string.h>

#include "xflow/ring.h"

static int is_pow2(uint32_t v)
{
	return v && !(v & (v - 1));
}

static int geometry_valid(uint32_t slot_size, uint32_t nslots)
{
	return slot_size >= 8 && slot_size <= XFLOW_RING_MAX_SLOT && slot_size % 8 == 0 &&
	       is_pow2(nslots) && nslots <= XFLOW_RING_MAX_SLOTS;
}

size_t xflow_ring_region_size(uint32_t slot_size, uint32_t nslots)
{
	if (!geometry_valid(slot_size, nslots))
		return 0;
	return XFLOW_RING_HDR_SIZE + (size_t)slot_size * nslots;
}

int xflow_ring_producer_init(struct xflow_ring_producer *p, void *region, size_t size,
			     struct xflow_notifier *notifier, uint32_t batch)
{
	struct xflow_ring_hdr *h = region;

	memset(p, 0, sizeof(*p));
	if (!h || size < sizeof(*h) || batch == 0)
		return -EINVAL;
	if (h->magic != XFLOW_RING_MAGIC || h->version != XFLOW_RING_VERSION)
		return -EPROTO;
	uint32_t slot_size = h->slot_size, nslots = h->nslots;
	size_t need = xflow_ring_region_size(slot_size, nslots);
	if (!need || need > size)
		return -EINVAL;

	p->hdr = h;
	p->slots = (unsigned char *)region + XFLOW_RING_HDR_SIZE;
	p->slot_size = slot_size;
	p->mask = nslots - 1;
	/* Resume where a previous producer stopped: the indexes are the
	 * ring's state, not ours. */
	p->prod = atomic_load_explicit(&h->prod, memory_order_relaxed);
	p->cons_cache = atomic_load_explicit(&h->cons, memory_order_acquire);
	p->dropped = atomic_load_explicit(&h->dropped, memory_order_relaxed);
	p->batch = batch < nslots / 2 ? batch : (nslots / 2 ? nslots / 2 : 1);
	p->notifier = notifier;
	return 0;
}

int xflow_ring_producer_stream(struct xflow_ring_producer *p)
{
#if defined(__x86_64__)
	p->stream = 1;
#if defined(__SSE2__)
	/* Runs of records in 32-byte stores where the CPU has them (not in
	 * the runtime, built without SSE, which pushes one at a time). */
	if (__builtin_cpu_supports("avx2"))
		p->stream = XFLOW_RING_STREAM_WIDE;
#endif
	return 0;
#else
	(void)p;
	return -EOPNOTSUPP;
#endif
}

void xflow_ring__notify_check(struct xflow_ring_producer *p)
{
	p->unnotified = 0;
	if (p->stream) {
#if defined(__x86_64__)
		/* Non-temporal stores are ordered with nothing: the store
		 * fence makes the batch's slots visible before the index
		 * that publishes them (the release store alone would not). */
		__asm__ volatile("sfence" : : : "memory");
#endif
		atomic_store_explicit(&p->hdr->prod, p->prod, memory_order_release);
	}
	if (!p->notifier)
		return;
	/* Seq_cst fence: our store of `prod` is ordered before the load of
	 * `consumer_sleeping` (store→load, which release/acquire do not
	 * give).  It pairs with the fence in xflow_ring_wait(): either we see
	 * the consumer's flag, or the consumer sees our index. */
	atomic_thread_fence(memory_order_seq_cst);
	/* Take the flag as we notify, so one sleep costs one notification
	 * however many batches are published before the consumer wakes.  The
	 * plain load first keeps the locked exchange off the common path. */
	if (atomic_load_explicit(&p->hdr->consumer_sleeping, memory_order_relaxed) &&
	    atomic_exchange_explicit(&p->hdr->consumer_sleeping, 0, memory_order_relaxed)) {
		p->notifies++;
		p->notifier->ops->notify(p->notifier);
	}
}

uint32_t xflow_ring_free_slots(struct xflow_ring_producer *p)
{
	/* Acquire, as in xflow_ring_push_n(): the slots it frees are read. */
	p->cons_cache = atomic_load_explicit(&p->hdr->cons, memory_order_acquire);
	uint64_t used = p->prod - p->cons_cache;
	uint64_t nslots = (uint64_t)p->mask + 1;
	return used >= nslots ? 0 : (uint32_t)(nslots - used);
}

void xflow_ring_flush(struct xflow_ring_producer *p)
{
	if (p->unnotified)
		xflow_ring__notify_check(p);
}

/* Release, as `prod` is stored: a consumer that acquires the claim sees
 * every record it covers published. */
void xflow_ring_set_held(struct xflow_ring_producer *p, uint64_t t)
{
	atomic_store_explicit(&p->hdr->held_before, t, memory_order_release);
}
