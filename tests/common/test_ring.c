/*
 * The shared-memory ring: two real processes, exact drop accounting, the
 * notification handshake, and a consumer facing a hostile producer.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/lib/testlib.h"
#include "xflow/ring.h"
#include "xflow/shm.h"

/* A record whose contents can be checked: data[0] is the sequence number,
 * data[1] a checksum of it and of the other fields. */
static void make_record(struct xflow_record *r, uint64_t seq)
{
	memset(r, 0, sizeof(*r));
	r->version = XFLOW_RECORD_VERSION;
	r->timestamp = seq * 7;
	r->flow_id = seq & XFLOW_FLOWID_MAX;
	r->site_id = (uint32_t)(seq % 977);
	r->flow_kind = (uint16_t)(seq % 3);
	r->ndata = 2;
	r->data[0] = seq;
	uint64_t st = seq;
	r->data[1] = test_rand_next(&st);
}

static int record_ok(const struct xflow_record *r, uint64_t seq)
{
	struct xflow_record want;
	make_record(&want, seq);
	return memcmp(r, &want, sizeof(want)) == 0;
}

struct ring_pair {
	struct xflow_shm shm;
	struct xflow_eventfd_notifier en;
};

static void ring_pair_make(struct ring_pair *rp, uint32_t nslots)
{
	size_t size = xflow_ring_region_size(XFLOW_RECORD_SIZE, nslots);
	cr_assert_eq(xflow_shm_create("test-ring", size, &rp->shm), 0);
	cr_assert_eq(xflow_ring_format(rp->shm.base, size, XFLOW_RECORD_SIZE, nslots,
				       XFLOW_CLOCK_MONOTONIC), 0);
	cr_assert_eq(xflow_eventfd_notifier_init(&rp->en, -1), 0);
}

/* The child: produce @n records as fast as it can (streamed with @stream),
 * then flush and exit with 0.  With @wait_for_room it never lets the ring
 * overflow: the model of a consumer that keeps up. */
static void child_produce(struct ring_pair *rp, uint64_t n, uint32_t batch, int stream,
			  int wait_for_room)
{
	struct xflow_ring_producer p;
	if (xflow_ring_producer_init(&p, rp->shm.base, rp->shm.size, &rp->en.base, batch))
		_exit(10);
	if (stream && xflow_ring_producer_stream(&p))
		_exit(11);
	struct xflow_record r;
	for (uint64_t i = 0; i < n; i++) {
		make_record(&r, i);
		while (wait_for_room && xflow_ring_free_slots(&p) == 0) {
			xflow_ring_flush(&p);
			sched_yield();
		}
		xflow_ring_push_record(&p, &r);
	}
	xflow_ring_flush(&p);
	_exit(0);
}

static void ten_million_records(int stream)
{
	const uint64_t N = 10 * 1000 * 1000;
	struct ring_pair rp;
	ring_pair_make(&rp, 1u << 14);

	pid_t pid = fork();
	cr_assert_neq(pid, -1);
	if (pid == 0)
		child_produce(&rp, N, 64, stream, 1);

	struct xflow_ring_consumer c;
	cr_assert_eq(xflow_ring_consumer_init(&c, rp.shm.base, rp.shm.size, XFLOW_RECORD_SIZE,
					      &rp.en.base), 0);
	static struct xflow_record buf[1024];
	uint64_t next = 0, bad = 0;
	int child_done = 0;
	while (next < N) {
		long n = xflow_ring_pop_records(&c, buf, 1024);
		cr_assert_geq(n, 0, "ring corrupt: %s", c.corrupt_why);
		for (long i = 0; i < n; i++, next++)
			if (!record_ok(&buf[i], next))
				bad++;
		if (n == 0) {
			int st;
			if (!child_done && waitpid(pid, &st, WNOHANG) == pid) {
				child_done = 1;
				cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
				continue;
			}
			if (child_done && atomic_load(&c.hdr->prod) == c.cons)
				break;
			xflow_ring_wait(&c, 10);
		}
	}
	if (!child_done)
		waitpid(pid, NULL, 0);
	uint64_t dropped = xflow_ring_dropped(&c);
	cr_expect_eq(bad, 0, "%lu records out of order or damaged", (unsigned long)bad);
	cr_expect_eq(next + dropped, N, "received %lu + dropped %lu != %lu", (unsigned long)next,
		     (unsigned long)dropped, (unsigned long)N);
	cr_expect_eq(dropped, 0, "the consumer kept up, yet %lu records were dropped",
		     (unsigned long)dropped);
	xflow_shm_release(&rp.shm);
	rp.en.base.ops->close(&rp.en.base);
}

Test(ring, ten_million_records_between_processes_none_lost_or_reordered, .timeout = 120)
{
	ten_million_records(0);
}

Test(ring, ten_million_streamed_records_none_lost_or_reordered, .timeout = 120)
{
	ten_million_records(1);
}

Test(ring, exact_drop_count_when_the_consumer_is_stopped)
{
	const uint32_t S = 256;
	const uint64_t N = 10000;
	struct ring_pair rp;
	ring_pair_make(&rp, S);

	pid_t pid = fork();
	if (pid == 0)
		child_produce(&rp, N, 1, 0, 0);
	int st;
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	struct xflow_ring_consumer c;
	cr_assert_eq(xflow_ring_consumer_init(&c, rp.shm.base, rp.shm.size, XFLOW_RECORD_SIZE,
					      NULL), 0);
	cr_assert_eq(xflow_ring_dropped(&c), N - S);
	static struct xflow_record buf[512];
	long n = xflow_ring_pop_records(&c, buf, 512);
	cr_assert_eq(n, S);
	for (long i = 0; i < n; i++)
		cr_assert(record_ok(&buf[i], (uint64_t)i), "record %ld", i);
	cr_assert_eq(xflow_ring_pop_records(&c, buf, 512), 0);
	xflow_shm_release(&rp.shm);
	rp.en.base.ops->close(&rp.en.base);
}

static void slow_consumer(int stream)
{
	const uint64_t N = 2000000;
	struct ring_pair rp;
	ring_pair_make(&rp, 1024);

	pid_t pid = fork();
	if (pid == 0)
		child_produce(&rp, N, 16, stream, 0);

	struct xflow_ring_consumer c;
	cr_assert_eq(xflow_ring_consumer_init(&c, rp.shm.base, rp.shm.size, XFLOW_RECORD_SIZE,
					      &rp.en.base), 0);
	static struct xflow_record buf[64];
	uint64_t got = 0, gaps = 0, expect = 0, damaged = 0;
	int done = 0;
	for (;;) {
		long n = xflow_ring_pop_records(&c, buf, 64);
		cr_assert_geq(n, 0, "%s", c.corrupt_why);
		for (long i = 0; i < n; i++) {
			uint64_t seq = buf[i].data[0];
			if (seq < expect || !record_ok(&buf[i], seq))
				damaged++;
			gaps += seq - expect;
			expect = seq + 1;
			got++;
		}
		if (n == 0 && done)
			break;
		if (!done && waitpid(pid, NULL, WNOHANG) == pid)
			done = 1;
		/* A deliberately slow consumer: the producer must drop. */
		if (n)
			usleep(20);
	}
	gaps += N - expect; /* drops after the last record received */
	uint64_t dropped = xflow_ring_dropped(&c);
	cr_expect_eq(damaged, 0);
	cr_expect_gt(dropped, 0, "the test needs a consumer that falls behind");
	cr_expect_eq(got + dropped, N);
	cr_expect_eq(gaps, dropped, "gaps in the sequence %lu, drop count %lu",
		     (unsigned long)gaps, (unsigned long)dropped);
	xflow_shm_release(&rp.shm);
	rp.en.base.ops->close(&rp.en.base);
}

Test(ring, slow_consumer_gaps_add_up_to_the_drop_count, .timeout = 60)
{
	slow_consumer(0);
}

Test(ring, streamed_slow_consumer_gaps_add_up_to_the_drop_count, .timeout = 60)
{
	slow_consumer(1);
}

/* Push records @from .. @to - 1 of the checkable sequence. */
static void push_seq(struct xflow_ring_producer *p, uint64_t from, uint64_t to)
{
	struct xflow_record r;
	for (uint64_t i = from; i < to; i++) {
		make_record(&r, i);
		cr_assert_eq(xflow_ring_push_record(p, &r), 0, "record %lu", (unsigned long)i);
	}
}

/* Pop what is published and check it is exactly records @from .. @to - 1. */
static void expect_seq(struct xflow_ring_consumer *c, uint64_t from, uint64_t to)
{
	static struct xflow_record buf[256];
	long n = xflow_ring_pop_records(c, buf, 256);
	cr_assert_eq(n, (long)(to - from), "published %ld records, expected %lu", n,
		     (unsigned long)(to - from));
	for (long i = 0; i < n; i++)
		cr_assert(record_ok(&buf[i], from + (uint64_t)i), "record %lu",
			  (unsigned long)(from + (uint64_t)i));
}

Test(ring, streamed_records_are_published_a_batch_at_a_time_and_at_flush)
{
	size_t size = xflow_ring_region_size(XFLOW_RECORD_SIZE, 256);
	void *region = test_guarded_alloc(size);
	xflow_ring_format(region, size, XFLOW_RECORD_SIZE, 256, XFLOW_CLOCK_TSC);
	struct xflow_ring_producer p;
	struct xflow_ring_consumer c;
	cr_assert_eq(xflow_ring_producer_init(&p, region, size, NULL, 64), 0);
	cr_assert_eq(xflow_ring_producer_stream(&p), 0);
	cr_assert_eq(xflow_ring_consumer_init(&c, region, size, XFLOW_RECORD_SIZE, NULL), 0);

	push_seq(&p, 0, 63);
	expect_seq(&c, 0, 0); /* most of a batch: nothing yet */
	push_seq(&p, 63, 64);
	expect_seq(&c, 0, 64); /* the batch's last record publishes it */
	push_seq(&p, 64, 69);
	expect_seq(&c, 64, 64);
	xflow_ring_flush(&p);
	expect_seq(&c, 64, 69); /* flush publishes a partial batch */
	/* Batches keep their boundaries across a flush and the wrap. */
	push_seq(&p, 69, 69 + 64 * 3 + 10);
	expect_seq(&c, 69, 69 + 64 * 3);
	push_seq(&p, 69 + 64 * 3 + 10, 69 + 64 * 4);
	expect_seq(&c, 69 + 64 * 3, 69 + 64 * 4);
	test_guarded_free(region, size);
}

/* What a producer says waits outside the ring (xflow_ring_set_held):
 * nothing in a fresh ring, then what it said last, at a fixed place in
 * the header (a monitor and an agent of other builds read it there). */
Test(ring, the_time_held_outside_the_ring_is_said_in_the_header)
{
	size_t size = xflow_ring_region_size(XFLOW_RECORD_SIZE, 64);
	void *region = test_guarded_alloc(size);
	memset(region, 0xa5, size);
	xflow_ring_format(region, size, XFLOW_RECORD_SIZE, 64, XFLOW_CLOCK_TSC);
	struct xflow_ring_producer p;
	struct xflow_ring_consumer c;
	cr_assert_eq(xflow_ring_producer_init(&p, region, size, NULL, 64), 0);
	cr_assert_eq(xflow_ring_consumer_init(&c, region, size, XFLOW_RECORD_SIZE, NULL), 0);
	cr_assert_eq(xflow_ring_held_before(&c), 0, "a fresh ring holds nothing back");
	cr_assert_eq(offsetof(struct xflow_ring_hdr, held_before), 80);
	xflow_ring_set_held(&p, 123456789);
	cr_assert_eq(xflow_ring_held_before(&c), 123456789);
	uint64_t raw;
	memcpy(&raw, (char *)region + 80, sizeof(raw));
	cr_assert_eq(raw, 123456789, "little-endian at offset 80");
	xflow_ring_set_held(&p, 0);
	cr_assert_eq(xflow_ring_held_before(&c), 0);
	test_guarded_free(region, size);
}

Test(ring, streamed_full_ring_publishes_what_it_holds_and_counts_drops)
{
	const uint32_t S = 128;
	size_t size = xflow_ring_region_size(XFLOW_RECORD_SIZE, S);
	void *region = test_guarded_alloc(size);
	xflow_ring_format(region, size, XFLOW_RECORD_SIZE, S, XFLOW_CLOCK_TSC);
	struct xflow_ring_producer p;
	struct xflow_ring_consumer c;
	cr_assert_eq(xflow_ring_producer_init(&p, region, size, NULL, 48), 0);
	cr_assert_eq(xflow_ring_producer_stream(&p), 0);
	cr_assert_eq(xflow_ring_consumer_init(&c, region, size, XFLOW_RECORD_SIZE, NULL), 0);
	push_seq(&p, 0, S);
	/* 128 is not a multiple of the batch: the last 32 are unpublished
	 * until the push that finds the ring full publishes them. */
	struct xflow_record r;
	make_record(&r, S);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(xflow_ring_push_record(&p, &r), -ENOBUFS);
	cr_assert_eq(xflow_ring_dropped(&c), 10);
	expect_seq(&c, 0, S);
	test_guarded_free(region, size);
}

/* Records @from .. @to - 1 of the checkable sequence as one run. */
static long push_run(struct xflow_ring_producer *p, uint64_t from, uint64_t to)
{
	static struct xflow_record run[512];
	cr_assert_leq(to - from, 512);
	for (uint64_t i = from; i < to; i++)
		make_record(&run[i - from], i);
	return xflow_ring_push_records(p, run, (size_t)(to - from));
}

/* A run takes the room there is, re-reading the consumer's index only
 * when the room it knew is short; the slots wrap; the rest is counted. */
static void runs_fill_the_room(int stream)
{
	const uint32_t S = 128;
	size_t size = xflow_ring_region_size(XFLOW_RECORD_SIZE, S);
	void *region = test_guarded_alloc(size);
	xflow_ring_format(region, size, XFLOW_RECORD_SIZE, S, XFLOW_CLOCK_TSC);
	struct xflow_ring_producer p;
	struct xflow_ring_consumer c;
	cr_assert_eq(xflow_ring_producer_init(&p, region, size, NULL, 32), 0);
	if (stream)
		cr_assert_eq(xflow_ring_producer_stream(&p), 0);
	/* The 8-byte stores of a CPU without the wide ones, here too. */
	if (stream == 2)
		p.stream = 1;
	cr_assert_eq(xflow_ring_consumer_init(&c, region, size, XFLOW_RECORD_SIZE, NULL), 0);

	cr_assert_eq(push_run(&p, 0, 100), 100);
	static struct xflow_record buf[256];
	cr_assert_eq(xflow_ring_pop_records(&c, buf, 90), 90);
	for (int i = 0; i < 90; i++)
		cr_assert(record_ok(&buf[i], (uint64_t)i), "record %d", i);
	/* 118 free (90 read): 100 .. 217 go in, 28 before the wrap and 90
	 * after it; 32 are dropped. */
	cr_assert_eq(push_run(&p, 100, 250), 118);
	cr_assert_eq(xflow_ring_dropped(&c), 32);
	xflow_ring_flush(&p);
	expect_seq(&c, 90, 218);
	/* Full again after a whole lap: a run finds no room at all. */
	cr_assert_eq(push_run(&p, 218, 218 + S), S);
	cr_assert_eq(push_run(&p, 400, 410), 0);
	cr_assert_eq(xflow_ring_dropped(&c), 42);
	xflow_ring_flush(&p);
	expect_seq(&c, 218, 218 + S);
	test_guarded_free(region, size);
}

Test(ring, runs_fill_the_room_in_order_across_the_wrap_and_count_the_rest)
{
	runs_fill_the_room(0);
}

Test(ring, streamed_runs_fill_the_room_in_order_across_the_wrap_and_count_the_rest)
{
	runs_fill_the_room(1);
}

Test(ring, narrow_streamed_runs_fill_the_room_in_order_across_the_wrap_and_count_the_rest)
{
	runs_fill_the_room(2);
}

Test(ring, runs_are_published_at_once_or_streamed_with_the_batch)
{
	size_t size = xflow_ring_region_size(XFLOW_RECORD_SIZE, 256);
	void *region = test_guarded_alloc(size);
	xflow_ring_format(region, size, XFLOW_RECORD_SIZE, 256, XFLOW_CLOCK_TSC);
	struct xflow_ring_producer p;
	struct xflow_ring_consumer c;
	cr_assert_eq(xflow_ring_producer_init(&p, region, size, NULL, 64), 0);
	cr_assert_eq(xflow_ring_consumer_init(&c, region, size, XFLOW_RECORD_SIZE, NULL), 0);
	cr_assert_eq(push_run(&p, 0, 5), 5);
	expect_seq(&c, 0, 5); /* plain stores: published with the run */
	cr_assert_eq(xflow_ring_producer_stream(&p), 0);
	cr_assert_eq(push_run(&p, 5, 60), 55);
	expect_seq(&c, 5, 5); /* streamed, short of the batch: not yet */
	cr_assert_eq(push_run(&p, 60, 75), 15);
	expect_seq(&c, 5, 75); /* the run that completes the batch publishes */
	cr_assert_eq(push_run(&p, 75, 80), 5);
	xflow_ring_flush(&p);
	expect_seq(&c, 75, 80);
	test_guarded_free(region, size);
}

Test(ring, a_run_into_the_wrong_slot_size_or_an_impossible_consumer_index_writes_nothing)
{
	size_t size = xflow_ring_region_size(32, 4);
	void *region = test_guarded_alloc(size);
	xflow_ring_format(region, size, 32, 4, XFLOW_CLOCK_TSC);
	struct xflow_ring_producer p;
	xflow_ring_producer_init(&p, region, size, NULL, 1);
	cr_assert_eq(push_run(&p, 0, 1), -EINVAL);
	test_guarded_free(region, size);

	/* Once the ring is full, a consumer index ahead of the producer's,
	 * or more than a lap behind it, is no room: nothing overwritten,
	 * the run counted as dropped. */
	size = xflow_ring_region_size(XFLOW_RECORD_SIZE, 16);
	region = test_guarded_alloc(size);
	xflow_ring_format(region, size, XFLOW_RECORD_SIZE, 16, XFLOW_CLOCK_TSC);
	struct xflow_ring_hdr *h = region;
	cr_assert_eq(xflow_ring_producer_init(&p, region, size, NULL, 1), 0);
	cr_assert_eq(push_run(&p, 0, 16), 16);
	unsigned char before[16 * XFLOW_RECORD_SIZE];
	memcpy(before, (unsigned char *)region + XFLOW_RING_HDR_SIZE, sizeof(before));
	atomic_store(&h->cons, 1000);
	cr_assert_eq(push_run(&p, 16, 20), 0);
	atomic_store(&h->cons, UINT64_MAX - 100);
	cr_assert_eq(push_run(&p, 20, 24), 0);
	cr_assert_eq(memcmp(before, (unsigned char *)region + XFLOW_RING_HDR_SIZE, sizeof(before)), 0);
	cr_assert_eq(atomic_load(&h->dropped), 8);
	test_guarded_free(region, size);
}

/* A notifier that only counts, to observe the batching policy. */
struct counting_notifier {
	struct xflow_notifier base;
	int notified;
};
static int count_notify(struct xflow_notifier *n)
{
	((struct counting_notifier *)n)->notified++;
	return 0;
}
static int count_wait(struct xflow_notifier *n, int timeout_ms)
{
	(void)n;
	(void)timeout_ms;
	return 0;
}
static const struct xflow_notifier_ops counting_ops = {
	.name = "counting", .notify = count_notify, .wait = count_wait,
};

Test(ring, busy_consumer_costs_no_notifications_and_a_sleep_costs_one)
{
	size_t size = xflow_ring_region_size(32, 1024);
	void *region = test_guarded_alloc(size);
	cr_assert_eq(xflow_ring_format(region, size, 32, 1024, XFLOW_CLOCK_TSC), 0);
	struct counting_notifier cn = { .base.ops = &counting_ops };
	struct xflow_ring_producer p;
	cr_assert_eq(xflow_ring_producer_init(&p, region, size, &cn.base, 64), 0);
	struct xflow_ring_hdr *h = region;
	unsigned char slot[32] = { 0 };

	/* Consumer awake: no notification however much is pushed. */
	for (int i = 0; i < 500; i++)
		cr_assert_eq(xflow_ring_push(&p, slot), 0);
	cr_assert_eq(cn.notified, 0);

	/* Consumer asleep: nothing until a whole batch is published. */
	atomic_store(&h->consumer_sleeping, 1);
	while (p.unnotified != 63)
		xflow_ring_push(&p, slot);
	cr_assert_eq(cn.notified, 0);
	xflow_ring_push(&p, slot);
	cr_assert_eq(cn.notified, 1);
	/* The producer took the flag: more batches before the consumer is
	 * back cost nothing more. */
	cr_assert_eq(atomic_load(&h->consumer_sleeping), 0);
	for (int i = 0; i < 200; i++)
		xflow_ring_push(&p, slot);
	cr_assert_eq(cn.notified, 1);

	/* Flush notifies a sleeper for a partial batch, and only then. */
	atomic_store(&h->consumer_sleeping, 1);
	xflow_ring_push(&p, slot);
	xflow_ring_flush(&p);
	cr_assert_eq(cn.notified, 2);
	atomic_store(&h->consumer_sleeping, 1);
	xflow_ring_flush(&p);
	cr_assert_eq(cn.notified, 2, "nothing unpublished: no notification");
	test_guarded_free(region, size);
}

Test(ring, a_sleeper_is_woken_before_and_when_the_ring_fills)
{
	size_t size = xflow_ring_region_size(32, 16);
	void *region = test_guarded_alloc(size);
	xflow_ring_format(region, size, 32, 16, XFLOW_CLOCK_TSC);
	struct counting_notifier cn = { .base.ops = &counting_ops };
	struct xflow_ring_producer p;
	/* A batch larger than the ring would let it fill unannounced. */
	cr_assert_eq(xflow_ring_producer_init(&p, region, size, &cn.base, 1000), 0);
	cr_assert_eq(p.batch, 8);
	struct xflow_ring_hdr *h = region;
	unsigned char slot[32] = { 0 };
	atomic_store(&h->consumer_sleeping, 1);
	for (int i = 0; i < 8; i++)
		xflow_ring_push(&p, slot);
	cr_assert_eq(cn.notified, 1, "half the ring is a batch");
	for (int i = 0; i < 8; i++)
		xflow_ring_push(&p, slot);
	/* The consumer went back to sleep without reading: the push that
	 * finds the ring full wakes it, whatever the batch count. */
	atomic_store(&h->consumer_sleeping, 1);
	cr_assert_eq(xflow_ring_push(&p, slot), -ENOBUFS);
	cr_assert_eq(cn.notified, 2);
	cr_assert_eq(p.dropped, 1);
	test_guarded_free(region, size);
}

Test(ring, wait_returns_at_once_when_records_are_pending)
{
	size_t size = xflow_ring_region_size(XFLOW_RECORD_SIZE, 16);
	void *region = test_guarded_alloc(size);
	xflow_ring_format(region, size, XFLOW_RECORD_SIZE, 16, XFLOW_CLOCK_TSC);
	struct xflow_eventfd_notifier en;
	cr_assert_eq(xflow_eventfd_notifier_init(&en, -1), 0);
	struct xflow_ring_producer p;
	struct xflow_ring_consumer c;
	xflow_ring_producer_init(&p, region, size, &en.base, 1000);
	cr_assert_eq(xflow_ring_consumer_init(&c, region, size, XFLOW_RECORD_SIZE, &en.base), 0);
	cr_assert_eq(xflow_ring_wait(&c, 0), 0, "empty ring: timeout");
	struct xflow_record r;
	make_record(&r, 1);
	xflow_ring_push_record(&p, &r);
	/* No notification was sent (batch 1000), but the re-check of `prod`
	 * after raising the flag must see the record. */
	cr_assert_eq(xflow_ring_wait(&c, 1000), 1);
	cr_assert_eq(atomic_load(&((struct xflow_ring_hdr *)region)->consumer_sleeping), 0);
	en.base.ops->close(&en.base);
	test_guarded_free(region, size);
}

Test(ring, push_with_the_wrong_slot_size_is_refused)
{
	size_t size = xflow_ring_region_size(32, 4);
	void *region = test_guarded_alloc(size);
	xflow_ring_format(region, size, 32, 4, XFLOW_CLOCK_TSC);
	struct xflow_ring_producer p;
	xflow_ring_producer_init(&p, region, size, NULL, 1);
	struct xflow_record r;
	make_record(&r, 0);
	/* An 88-byte record into 32-byte slots would overrun the last slot. */
	for (int i = 0; i < 4; i++)
		cr_assert_eq(xflow_ring_push_record(&p, &r), -EINVAL);
	test_guarded_free(region, size);
}

Test(ring, format_and_attach_reject_impossible_geometry)
{
	unsigned char buf[4096] __attribute__((aligned(64)));
	cr_assert_eq(xflow_ring_format(buf, sizeof(buf), 88, 3, XFLOW_CLOCK_TSC), -EINVAL);
	cr_assert_eq(xflow_ring_format(buf, sizeof(buf), 12, 4, XFLOW_CLOCK_TSC), -EINVAL);
	cr_assert_eq(xflow_ring_format(buf, sizeof(buf), 88, 64, XFLOW_CLOCK_TSC), -EINVAL,
		     "does not fit");
	cr_assert_eq(xflow_ring_format(buf, sizeof(buf), 88, 4, 7), -EINVAL);
	cr_assert_eq(xflow_ring_format(buf, sizeof(buf), 88, 32, XFLOW_CLOCK_TSC), 0);
	struct xflow_ring_consumer c;
	cr_assert_eq(xflow_ring_consumer_init(&c, buf, sizeof(buf), 32, NULL), -EINVAL);
	cr_assert(strstr(c.corrupt_why, "slot size 88"));
	cr_assert_eq(xflow_ring_consumer_init(&c, buf, 200, 0, NULL), -EINVAL);
	buf[0] ^= 1;
	cr_assert_eq(xflow_ring_consumer_init(&c, buf, sizeof(buf), 0, NULL), -EPROTO);
	cr_assert(strstr(c.corrupt_why, "magic"));
}

/* --- a hostile producer ------------------------------------------------ */

struct hostile {
	struct xflow_ring_consumer c;
	void *region;
	size_t size;
};

static void hostile_setup(struct hostile *hs, uint32_t nslots)
{
	hs->size = xflow_ring_region_size(XFLOW_RECORD_SIZE, nslots);
	hs->region = test_guarded_alloc(hs->size);
	cr_assert_not_null(hs->region);
	xflow_ring_format(hs->region, hs->size, XFLOW_RECORD_SIZE, nslots, XFLOW_CLOCK_TSC);
	cr_assert_eq(xflow_ring_consumer_init(&hs->c, hs->region, hs->size, XFLOW_RECORD_SIZE,
					      NULL), 0);
}

/* Publish records 0 .. n-1 as an honest producer would; record @bad_at
 * (if below n) gets an impossible ndata. */
static void hostile_publish(struct hostile *hs, int n, int bad_at)
{
	struct xflow_ring_producer p;
	cr_assert_eq(xflow_ring_producer_init(&p, hs->region, hs->size, NULL, 1), 0);
	for (int i = 0; i < n; i++) {
		struct xflow_record r;
		make_record(&r, (uint64_t)i);
		if (i == bad_at)
			r.ndata = 200;
		xflow_ring_push_record(&p, &r);
	}
}

Test(ring_hostile, producer_index_too_far_ahead_is_corruption)
{
	struct hostile hs;
	hostile_setup(&hs, 64);
	struct xflow_ring_hdr *h = hs.region;
	atomic_store(&h->prod, 65);
	struct xflow_record out[8];
	cr_assert_eq(xflow_ring_pop_records(&hs.c, out, 8), -EPROTO);
	cr_assert(strstr(hs.c.corrupt_why, "ahead"), "%s", hs.c.corrupt_why);
	/* Sticky: even a repaired index is not read again. */
	atomic_store(&h->prod, 1);
	cr_assert_eq(xflow_ring_pop_records(&hs.c, out, 8), -EPROTO);
	test_guarded_free(hs.region, hs.size);
}

Test(ring_hostile, producer_index_going_back_is_corruption)
{
	struct hostile hs;
	hostile_setup(&hs, 64);
	struct xflow_ring_hdr *h = hs.region;
	struct xflow_record out[8];
	hostile_publish(&hs, 5, -1);
	cr_assert_eq(xflow_ring_pop_records(&hs.c, out, 2), 2);
	atomic_store(&h->prod, 3);
	cr_assert_eq(xflow_ring_pop_records(&hs.c, out, 8), -EPROTO);
	cr_assert(strstr(hs.c.corrupt_why, "went back"));
	test_guarded_free(hs.region, hs.size);
}

Test(ring_hostile, geometry_rewritten_after_attach_is_ignored)
{
	struct hostile hs;
	hostile_setup(&hs, 8);
	struct xflow_ring_hdr *h = hs.region;
	struct xflow_record out[16];
	hostile_publish(&hs, 8, -1);
	/* The producer lies about the geometry after the consumer attached:
	 * the guard page after the region turns any use of it into a crash. */
	h->nslots = 1u << 24;
	h->slot_size = 4096;
	h->region_size = UINT64_MAX;
	h->magic = 0;
	cr_assert_eq(xflow_ring_pop_records(&hs.c, out, 16), 8);
	for (int i = 0; i < 8; i++)
		cr_assert(record_ok(&out[i], (uint64_t)i));
	test_guarded_free(hs.region, hs.size);
}

Test(ring_hostile, bad_record_stops_the_ring_after_the_good_ones)
{
	struct hostile hs;
	hostile_setup(&hs, 16);
	struct xflow_record out[16];
	hostile_publish(&hs, 6, 3);
	cr_assert_eq(xflow_ring_pop_records(&hs.c, out, 16), 3);
	cr_assert_eq(xflow_ring_pop_records(&hs.c, out, 16), -EBADMSG);
	cr_assert(strstr(hs.c.corrupt_why, "record 3 has a bad ndata field"), "%s",
		  hs.c.corrupt_why);
	cr_assert_eq(hs.c.bad_records, 1);
	test_guarded_free(hs.region, hs.size);
}

/* A thread that scribbles random values over the header and the slots
 * while the consumer reads: nothing may be read or written outside the
 * region (guard page, ASan), and the consumer either reads or reports. */
struct scribbler {
	unsigned char *region;
	size_t size;
	atomic_int stop;
	uint64_t seed;
};

static void *scribble(void *arg)
{
	struct scribbler *s = arg;
	uint64_t st = s->seed;
	while (!atomic_load(&s->stop)) {
		uint64_t v = test_rand_next(&st);
		size_t off = (size_t)(test_rand_next(&st) % (s->size - 8)) & ~(size_t)7;
		/* Favour the header, where the indexes live. */
		if (v & 1)
			off &= 255;
		uint64_t val;
		switch ((v >> 1) & 3) {
		case 0: val = 0; break;
		case 1: val = UINT64_MAX; break;
		case 2: val = v >> 40; break;
		default: val = v; break;
		}
		__atomic_store_n((uint64_t *)(s->region + off), val, __ATOMIC_RELAXED);
	}
	return NULL;
}

Test(ring_hostile, random_scribbling_never_escapes_the_region, .timeout = 60)
{
	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct hostile hs;
		hostile_setup(&hs, 32);
		struct scribbler s = { .region = hs.region, .size = hs.size, .seed = seed };
		pthread_t th;
		cr_assert_eq(pthread_create(&th, NULL, scribble, &s), 0);
		struct xflow_record out[64];
		long total = 0;
		for (int i = 0; i < 20000; i++) {
			long n = xflow_ring_pop_records(&hs.c, out, 64);
			if (n < 0)
				break;
			total += n;
			for (long k = 0; k < n; k++)
				cr_assert_leq(out[k].ndata, XFLOW_RECORD_MAX_DATA);
		}
		atomic_store(&s.stop, 1);
		pthread_join(th, NULL);
		/* Whatever was delivered was validated; a corrupt ring says why. */
		if (hs.c.corrupt)
			cr_assert_neq(hs.c.corrupt_why[0], 0);
		(void)total;
		test_guarded_free(hs.region, hs.size);
	}
}
