/*
 * xflow/ring.h — single-producer, single-consumer ring of fixed-size slots in
 * memory shared by two processes (or, on Xen, two domains).
 *
 * The producer is a hook: it must never block, allocate or take a lock.  A
 * full ring drops the record and counts it; the count is published in the
 * shared header so the consumer can show it.  The consumer treats the whole
 * shared region as hostile: it takes the ring's geometry once, at attach,
 * keeps its own copy, masks every index with it, copies slots out before
 * looking at them, and declares the ring corrupt (and stops reading it) when
 * an index or a record is impossible.
 *
 * Notification is batched and pluggable (struct xflow_notifier): the
 * consumer spins briefly, then announces that it is going to sleep with a
 * flag in the header; a producer only makes a system call when that flag is
 * set and it has published a whole batch since its last check, or when it is
 * asked to flush, and it takes the flag as it notifies, so one sleep costs
 * one notification.  A busy consumer costs the producer no system calls.
 * Latency bound: a sleeping consumer sees a record after at most `batch`
 * records, the producer's next xflow_ring_flush(), or the consumer's own wait
 * timeout, whichever comes first.
 *
 * Memory ordering (C11): the producer publishes slot contents with a release
 * store of `prod`; the consumer reads `prod` with an acquire load before it
 * copies slots.  The consumer releases slots with a release store of `cons`;
 * the producer acquires `cons` before reusing them.  The sleeping handshake
 * needs store→load order on both sides, hence a seq_cst fence on each.  A
 * streaming producer (xflow_ring_producer_stream) writes slots with
 * non-temporal stores, which the release store does not order, so it puts
 * a store fence before each publication.
 */
#ifndef XFLOW_RING_H
#define XFLOW_RING_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "xflow/record.h"

#define XFLOW_RING_MAGIC 0x47524658u /* "XFRG" little-endian */
#define XFLOW_RING_VERSION 1
/* Slots start at this offset; the header is padded so that the producer's
 * and the consumer's indexes sit on cache lines of their own. */
#define XFLOW_RING_HDR_SIZE 256
#define XFLOW_RING_MAX_SLOT 4096u
#define XFLOW_RING_MAX_SLOTS (1u << 24)
/* Polls (16 pauses apart, tens of microseconds in all) a waiting consumer
 * makes before it announces that it sleeps; 0 sleeps at once. */
#define XFLOW_RING_SPIN_DEFAULT 256u

/* What record timestamps count (struct xflow_record.timestamp). */
enum xflow_clock_kind {
	XFLOW_CLOCK_TSC = 1,       /* raw TSC ticks; the consumer calibrates */
	XFLOW_CLOCK_MONOTONIC = 2, /* CLOCK_MONOTONIC nanoseconds */
};

/*
 * The shared header, at offset 0 of the region.  Every field is
 * little-endian.  The first block is written once by xflow_ring_format() and
 * read once by each side at attach; the indexes are free-running 64-bit
 * counters (slot = index & (nslots - 1)), so they never wrap in practice.
 */
struct xflow_ring_hdr {
	uint32_t magic;       /* XFLOW_RING_MAGIC */
	uint16_t version;     /* XFLOW_RING_VERSION */
	uint16_t clock;       /* enum xflow_clock_kind of the records' timestamps */
	uint32_t slot_size;   /* bytes per slot: a multiple of 8, <= XFLOW_RING_MAX_SLOT */
	uint32_t nslots;      /* a power of two, <= XFLOW_RING_MAX_SLOTS */
	uint64_t region_size; /* bytes of the whole region, header included */
	uint8_t pad0[64 - 24];

	/* Written only by the producer. */
	_Atomic uint64_t prod;    /* slots published so far */
	_Atomic uint64_t dropped; /* records dropped because the ring was full */
	_Atomic uint64_t held_before; /* xflow_ring_set_held(); 0: nothing held */
	uint8_t pad1[64 - 24];

	/* Written only by the consumer. */
	_Atomic uint64_t cons;              /* slots consumed so far */
	_Atomic uint32_t consumer_sleeping; /* 1: notify me when you publish */
	uint32_t consumer_pad;
	uint8_t pad2[64 - 16];
	uint8_t pad3[64];
};

/* Bytes a region needs for @nslots slots of @slot_size bytes (0 if invalid). */
size_t xflow_ring_region_size(uint32_t slot_size, uint32_t nslots);

/*
 * Write a fresh header into @region of @size bytes.  Returns 0, or -EINVAL
 * when the geometry is invalid or does not fit.  Call before either side
 * attaches; it is not safe while a peer uses the region.
 */
int xflow_ring_format(void *region, size_t size, uint32_t slot_size,
		      uint32_t nslots, enum xflow_clock_kind clock);

/*
 * Notifier: how the producer wakes a sleeping consumer.  Implementations
 * embed struct xflow_notifier and reach back with container_of.  NULL hooks
 * are "not provided".
 */
struct xflow_notifier;
struct xflow_notifier_ops {
	const char *name;
	/* Producer side.  Wake the consumer.  Never blocks; safe in a hook and
	 * in a signal handler.  Returns 0 or a negative errno. */
	int (*notify)(struct xflow_notifier *n);
	/* Consumer side.  Wait until notified or @timeout_ms passes (-1:
	 * forever).  Consumes pending notifications.  Returns 1 when notified,
	 * 0 on timeout, or a negative errno (-EINTR when a signal arrived). */
	int (*wait)(struct xflow_notifier *n, int timeout_ms);
	/* Consumer side.  A file descriptor that polls readable while a
	 * notification is pending, for event loops; -1 if there is none. */
	int (*pollfd)(struct xflow_notifier *n);
	/* Consumer side.  Clear a pending notification after pollfd woke. */
	void (*ack)(struct xflow_notifier *n);
	/* Release the notifier's resources (not the embedding object). */
	void (*close)(struct xflow_notifier *n);
};

struct xflow_notifier {
	const struct xflow_notifier_ops *ops;
};

/* The eventfd notifier: both sides hold the same eventfd (inherited, or
 * passed with SCM_RIGHTS). */
struct xflow_eventfd_notifier {
	struct xflow_notifier base;
	int fd;
};

/* Create a new eventfd (fd < 0) or adopt @fd (ownership passes). */
int xflow_eventfd_notifier_init(struct xflow_eventfd_notifier *en, int fd);

/*
 * Producer.  Embed it; it holds no resources of its own.
 */
struct xflow_ring_producer {
	struct xflow_ring_hdr *hdr;
	unsigned char *slots;
	uint32_t slot_size;
	uint32_t mask;
	uint64_t prod;       /* next index to publish (private copy) */
	uint64_t cons_cache; /* the consumer's index when last read */
	uint64_t dropped;    /* records dropped so far */
	uint64_t notifies;   /* notifier calls made */
	uint32_t batch;      /* check for a sleeping consumer every this many records */
	uint32_t unnotified; /* pushed since the last check */
	uint32_t stream;     /* streaming stores, published a batch at a time:
	                      * 0 no, 1 yes, XFLOW_RING_STREAM_WIDE 32 bytes
	                      * at a time in runs (xflow_ring_push_records) */
	struct xflow_notifier *notifier;
};

/*
 * Attach as the producer of a formatted region.  @batch >= 1 (1: every
 * record); more than half the ring is taken as half the ring, so that a
 * sleeping consumer hears of a batch before the ring is full.  @notifier
 * may be NULL (the consumer polls).  Returns 0, -EINVAL for a bad header
 * or geometry that does not fit @size.
 */
int xflow_ring_producer_init(struct xflow_ring_producer *p, void *region,
			     size_t size, struct xflow_notifier *notifier,
			     uint32_t batch);

/*
 * Stream: from now on write slots with non-temporal stores and publish them
 * a batch at a time, behind one store fence, and at xflow_ring_flush().
 *
 * Why: with ordinary stores every line of the ring crosses between the two
 * CPUs' caches twice a lap (to the consumer as it reads, back to the
 * producer as it overwrites), and on a virtual machine each crossing is a
 * remote miss; that, not the copy, bounds a two-process transfer.  Streamed
 * lines go to memory once and come back once, with no ownership to move,
 * and they leave the producer's cache (the traced program's) as it was.
 * The price: an awake consumer sees records a batch at a time, so a
 * producer that streams must flush when it goes idle, as one with a
 * sleeping consumer must already.  Returns 0, or -EOPNOTSUPP where the
 * CPU has no such stores (nothing changes).
 */
int xflow_ring_producer_stream(struct xflow_ring_producer *p);
#define XFLOW_RING_STREAM_WIDE 2

/*
 * Copy one slot (slot_size bytes at @slot) into the ring.  Returns 0, or
 * -ENOBUFS when the ring is full: the record is dropped and counted.
 * Never blocks; makes a system call only through the notifier, at most once
 * per batch and only when the consumer sleeps.
 */
static inline int xflow_ring_push(struct xflow_ring_producer *p, const void *slot);

/*
 * The same with the slot size @n known at compile time, so the copy becomes
 * a few moves instead of a call.  @n must equal the ring's slot size.
 */
static inline int xflow_ring_push_n(struct xflow_ring_producer *p, const void *slot,
				    size_t n);

/* Push one record (the ring's slot size must be XFLOW_RECORD_SIZE). */
static inline int xflow_ring_push_record(struct xflow_ring_producer *p,
					 const struct xflow_record *r);

/*
 * Push the @n records at @r in order, as many as there is room for: the
 * first k are published (a streaming producer's with its batch, as one
 * pushed alone), the other n - k dropped and counted as a full ring drops
 * one.  Returns k, or -EINVAL when the slot size is not XFLOW_RECORD_SIZE.
 * One look at the consumer's index, one copy of each contiguous stretch
 * and one count towards the batch for the whole run: for a producer that
 * moves records out of other rings a run at a time.
 */
static inline long xflow_ring_push_records(struct xflow_ring_producer *p,
					   const struct xflow_record *r, size_t n);

/*
 * Slots free right now (re-reads the consumer's index).  For producers that
 * may wait — tests and benchmarks measuring a consumer that keeps up — not
 * for hooks, which push and let the ring count drops.
 */
uint32_t xflow_ring_free_slots(struct xflow_ring_producer *p);

/* Wake a sleeping consumer for whatever was published since the last
 * notification (call when the producer goes idle). */
void xflow_ring_flush(struct xflow_ring_producer *p);

/*
 * Say that records wait outside the ring for room in it (a producer that
 * feeds the ring from queues of its own, as an agent does from its
 * targets' lanes): @t, on the records' clock, is a time before which every
 * record stamped has been published (or dropped and counted), so that a
 * consumer merging this ring with others can wait for what is still to
 * come instead of taking it for late; 0: nothing waits.  Call after
 * xflow_ring_flush(), so that what it claims is published.  Header field
 * held_before was padding before (always 0): an older producer says
 * nothing, and an older consumer does not look.
 */
void xflow_ring_set_held(struct xflow_ring_producer *p, uint64_t t);

/*
 * Consumer.  Embed it.  Once corrupt, it stays corrupt and reads nothing.
 */
struct xflow_ring_consumer {
	struct xflow_ring_hdr *hdr; /* shared, hostile */
	const unsigned char *slots;
	size_t region_size;
	uint32_t slot_size; /* private copies of the geometry, validated */
	uint32_t nslots;
	uint32_t mask;
	enum xflow_clock_kind clock;
	uint64_t cons;      /* next index to read (private) */
	uint64_t prod_seen; /* the highest producer index seen */
	uint64_t bad_records;
	uint32_t spin;       /* polls of `prod` before sleeping in xflow_ring_wait() */
	uint32_t wake_batch; /* records that end the spin early */
	int corrupt;        /* 0, or the negative errno that made it corrupt */
	char corrupt_why[96];
	struct xflow_notifier *notifier;
};

/*
 * Attach as the consumer of a region of @size bytes written by a peer.
 * @expect_slot_size: 0 accepts any valid size.  Returns 0, or -EPROTO
 * (bad magic or version) or -EINVAL (impossible geometry), with the reason
 * in c->corrupt_why.
 */
int xflow_ring_consumer_init(struct xflow_ring_consumer *c, void *region,
			     size_t size, uint32_t expect_slot_size,
			     struct xflow_notifier *notifier);

/*
 * Copy up to @max slots into @out (max * slot_size bytes, private memory)
 * and release them to the producer.  Returns the number copied (0: empty),
 * or the ring's negative errno once it is corrupt (-EPROTO: an index is
 * impossible; see c->corrupt_why).
 */
long xflow_ring_pop(struct xflow_ring_consumer *c, void *out, size_t max);

/*
 * Pop and decode up to @max records (slot size XFLOW_RECORD_SIZE).  A record
 * that does not decode makes the ring corrupt (-EBADMSG): the records before
 * it are returned first, and the ring is read no further.
 */
long xflow_ring_pop_records(struct xflow_ring_consumer *c, struct xflow_record *out,
			    size_t max);

/*
 * Wait for records: spin until wake_batch records are there (or the spin
 * ends with some), else sleep until the producer notifies or @timeout_ms
 * passes.  Call it when a pop came back short.  Returns 1 if records are
 * (or may be) available, 0 on timeout, negative errno on error.
 */
int xflow_ring_wait(struct xflow_ring_consumer *c, int timeout_ms);

/*
 * For a consumer in an event loop (polling the notifier's pollfd instead of
 * calling xflow_ring_wait()): announce that it is going to sleep.  Returns
 * 1 when records arrived meanwhile (pop again rather than sleep), 0 when
 * armed: the producer will notify within a batch or at its next flush.
 * Without this the producer never notifies, as it never sees a sleeper.
 */
int xflow_ring_arm(struct xflow_ring_consumer *c);

/*
 * Nonzero when the producer has published nothing this consumer has not
 * read, by one relaxed look at its index: for a reader of many rings that
 * passes the idle ones by.  A hint only (a record may come right after);
 * xflow_ring_pop() looks again, and checks what it finds.
 */
static inline int xflow_ring_idle(const struct xflow_ring_consumer *c)
{
	return c->hdr && atomic_load_explicit(&c->hdr->prod, memory_order_relaxed) == c->cons;
}

/* Records the producer says it dropped.  Producer-written: informative
 * only, never used for indexing. */
uint64_t xflow_ring_dropped(const struct xflow_ring_consumer *c);

/* What xflow_ring_set_held() said last (0: nothing held).  Read it before
 * popping: every record it speaks of is then in the ring.  Producer-
 * written: any value may come, so a consumer only waits by it, and for a
 * bounded time. */
uint64_t xflow_ring_held_before(const struct xflow_ring_consumer *c);

/* --- inline fast path --------------------------------------------------- */

void xflow_ring__notify_check(struct xflow_ring_producer *p);

/* Copy @n bytes (a multiple of 8; @dst 8-aligned) with non-temporal stores. */
static inline void xflow_ring__stream_copy(unsigned char *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
	/* Unrolled where n is a constant (a record): the loop's own counting
	 * was as many instructions as the stores. */
#pragma GCC unroll 16
	for (size_t i = 0; i < n; i += 8) {
		long long w;
		__builtin_memcpy(&w, (const unsigned char *)src + i, sizeof(w));
		/* movnti writes from a general register: asm rather than the
		 * builtin, which the in-process runtime's -mgeneral-regs-only
		 * build does not have. */
		__asm__ volatile("movnti %1, %0" : "=m"(*(long long *)(void *)(dst + i)) : "r"(w));
	}
#else
	__builtin_memcpy(dst, src, n); /* unreachable: streaming is refused */
#endif
}

#if defined(__x86_64__) && defined(__SSE2__)
/* 32 bytes, unaligned in memory: what one wide streaming store writes. */
typedef long long xflow_ring__v4di __attribute__((vector_size(32), aligned(1)));

/*
 * xflow_ring__stream_copy() for a run of records, with 32-byte streaming
 * stores where @dst is 32-byte aligned (8-byte ones before and after):
 * what the AVX2 CPUs have (xflow_ring_producer_stream() checks).  Why:
 * in a model of the agent and its monitor (88-byte records through a ring
 * another core reads, a Xeon under KVM) runs moved with 8-byte streaming
 * stores cost the producer about twice as much.  Not inline where it is called: a
 * function of another target; it clears the upper halves as it returns.
 * Hidden from builds without SSE (the in-process runtime's).
 */
__attribute__((target("avx2"), noinline, unused)) static void
xflow_ring__stream_copy_wide(unsigned char *dst, const void *src, size_t n)
{
	const unsigned char *s = src;
	size_t i = 0;
	for (; i < n && ((uintptr_t)(dst + i) & 31); i += 8) {
		long long w;
		__builtin_memcpy(&w, s + i, sizeof(w));
		__asm__ volatile("movnti %1, %0" : "=m"(*(long long *)(void *)(dst + i)) : "r"(w));
	}
	for (; i + 32 <= n; i += 32) {
		xflow_ring__v4di v;
		__builtin_memcpy(&v, s + i, sizeof(v));
		__asm__ volatile("vmovntdq %1, %0" : "=m"(*(xflow_ring__v4di *)(void *)(dst + i)) : "x"(v));
	}
	for (; i < n; i += 8) {
		long long w;
		__builtin_memcpy(&w, s + i, sizeof(w));
		__asm__ volatile("movnti %1, %0" : "=m"(*(long long *)(void *)(dst + i)) : "r"(w));
	}
}
#define XFLOW_RING__WIDE 1
#else
#define XFLOW_RING__WIDE 0
#endif

static inline int xflow_ring_push_n(struct xflow_ring_producer *p, const void *slot,
				    size_t n)
{
	uint64_t nslots = (uint64_t)p->mask + 1;

	/* A wrong size would write past the slot (and, at the last slot, past
	 * the region); the compare is free next to the copy. */
	if (__builtin_expect(n != p->slot_size, 0))
		return -EINVAL;
	if (p->prod - p->cons_cache >= nslots) {
		/* Acquire: the consumer's copies out of the slots below `cons`
		 * are complete before we overwrite them. */
		p->cons_cache = atomic_load_explicit(&p->hdr->cons, memory_order_acquire);
		if (p->prod - p->cons_cache >= nslots) {
			/* Full: a consumer asleep must wake now, whatever
			 * the batch count says, or it sleeps on a full ring. */
			xflow_ring__notify_check(p);
			p->dropped++;
			/* Relaxed: a statistic, ordered with nothing. */
			atomic_store_explicit(&p->hdr->dropped, p->dropped, memory_order_relaxed);
			return -ENOBUFS;
		}
	}
	unsigned char *dst = p->slots + (size_t)(p->prod & p->mask) * p->slot_size;
	p->prod++;
	if (p->stream) {
		/* Published with the batch, in xflow_ring__notify_check(). */
		xflow_ring__stream_copy(dst, slot, n);
	} else {
		__builtin_memcpy(dst, slot, n);
		/* Release: the slot's bytes are visible before the index that
		 * publishes them. */
		atomic_store_explicit(&p->hdr->prod, p->prod, memory_order_release);
	}
	if (++p->unnotified >= p->batch)
		xflow_ring__notify_check(p);
	return 0;
}

static inline long xflow_ring_push_records(struct xflow_ring_producer *p,
					   const struct xflow_record *r, size_t n)
{
	uint64_t nslots = (uint64_t)p->mask + 1;

	if (__builtin_expect(p->slot_size != XFLOW_RECORD_SIZE, 0))
		return -EINVAL;
	/* An index the consumer could not have written counts as a full
	 * ring, never as room. */
	uint64_t used = p->prod - p->cons_cache;
	uint64_t room = used < nslots ? nslots - used : 0;
	if (room < n) {
		/* Acquire, as in xflow_ring_push_n(): the consumer's copies
		 * out of the slots it freed are complete. */
		p->cons_cache = atomic_load_explicit(&p->hdr->cons, memory_order_acquire);
		used = p->prod - p->cons_cache;
		room = used < nslots ? nslots - used : 0;
	}
	size_t k = n < room ? n : (size_t)room;
	/* The slots are contiguous but for one wrap: at most two copies. */
	size_t first = (size_t)(p->prod & p->mask);
	size_t run1 = k < nslots - first ? k : (size_t)(nslots - first);
	unsigned char *dst = p->slots + first * XFLOW_RECORD_SIZE;
	/* Wire bytes equal the struct on little-endian hosts (record.c). */
	if (p->stream) {
		/* Published with the batch, in xflow_ring__notify_check(). */
#if XFLOW_RING__WIDE
		if (p->stream == XFLOW_RING_STREAM_WIDE) {
			xflow_ring__stream_copy_wide(dst, r, run1 * XFLOW_RECORD_SIZE);
			xflow_ring__stream_copy_wide(p->slots, r + run1, (k - run1) * XFLOW_RECORD_SIZE);
		} else
#endif
		{
			xflow_ring__stream_copy(dst, r, run1 * XFLOW_RECORD_SIZE);
			xflow_ring__stream_copy(p->slots, r + run1, (k - run1) * XFLOW_RECORD_SIZE);
		}
		p->prod += k;
	} else {
		__builtin_memcpy(dst, r, run1 * XFLOW_RECORD_SIZE);
		__builtin_memcpy(p->slots, r + run1, (k - run1) * XFLOW_RECORD_SIZE);
		p->prod += k;
		/* Release: the slots' bytes are visible before the index that
		 * publishes them. */
		atomic_store_explicit(&p->hdr->prod, p->prod, memory_order_release);
	}
	p->unnotified += (uint32_t)k;
	if (k < n) {
		p->dropped += n - k;
		/* Relaxed: a statistic, ordered with nothing. */
		atomic_store_explicit(&p->hdr->dropped, p->dropped, memory_order_relaxed);
		/* Full: a consumer asleep must wake now (xflow_ring_push_n). */
		xflow_ring__notify_check(p);
	} else if (p->unnotified >= p->batch) {
		xflow_ring__notify_check(p);
	}
	return (long)k;
}

static inline int xflow_ring_push(struct xflow_ring_producer *p, const void *slot)
{
	return xflow_ring_push_n(p, slot, p->slot_size);
}

static inline int xflow_ring_push_record(struct xflow_ring_producer *p,
					 const struct xflow_record *r)
{
	/* Wire bytes equal the struct on little-endian hosts (record.c). */
	return xflow_ring_push_n(p, r, XFLOW_RECORD_SIZE);
}

#endif
