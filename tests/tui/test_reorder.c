/*
 * The model's reorder window (tui/reorder.h): whatever the threads, their
 * order and the records out of it, records leave by time and then by
 * arrival, exactly as one heap of every record would let them go; more
 * threads than streams, a thread coming back, and reuse after a reset.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tui/reorder.h"

static struct xflow_record rec(uint16_t dom, uint32_t tid, uint64_t tag)
{
	struct xflow_record r;
	memset(&r, 0, sizeof(r));
	r.domain_id = dom;
	r.thread_id = tid;
	r.ndata = 1; /* the window holds ndata words, no more */
	r.data[0] = tag;
	return r;
}

/* The reference: the records held, the oldest found by a scan. */
struct ref {
	uint64_t t[4096], arrival[4096], tag[4096];
	uint32_t n;
	uint64_t next_arrival;
};

static void ref_push(struct ref *f, uint64_t t, uint64_t tag)
{
	f->t[f->n] = t;
	f->arrival[f->n] = f->next_arrival++;
	f->tag[f->n] = tag;
	f->n++;
}

static void ref_pop(struct ref *f, uint64_t *t, uint64_t *tag)
{
	uint32_t m = 0;
	for (uint32_t i = 1; i < f->n; i++)
		if (f->t[i] < f->t[m] || (f->t[i] == f->t[m] && f->arrival[i] < f->arrival[m]))
			m = i;
	*t = f->t[m];
	*tag = f->tag[m];
	f->n--;
	f->t[m] = f->t[f->n];
	f->arrival[m] = f->arrival[f->n];
	f->tag[m] = f->tag[f->n];
}

static void pop_both(struct xft_reorder *q, struct ref *f)
{
	uint64_t t, rt, rtag, oldest;
	cr_assert(xft_reorder_oldest(q, &oldest));
	const struct xflow_record *r = xft_reorder_pop(q, &t);
	ref_pop(f, &rt, &rtag);
	cr_assert_eq(t, rt, "released time %lu, the reference's %lu", (unsigned long)t, (unsigned long)rt);
	cr_assert_eq(oldest, t, "oldest() named the record released");
	cr_assert_eq(r->data[0], rtag, "released record %lu, the reference's %lu (time %lu)",
		     (unsigned long)r->data[0], (unsigned long)rtag, (unsigned long)t);
}

/* What the window fetches ahead names what it says: for each slot of a
 * queue the one XFT_RQ_AHEAD after it there, or nothing.  It is not
 * followed for the order, only fetched: a wrong one costs time, and one
 * past the slots reads outside them. */
static void hints_check(const struct xft_reorder *q)
{
	uint32_t nfree = 0;
	for (uint32_t i = q->free_head; i != XFT_RQ_NIL; i = q->slots[i].next)
		nfree++;
	cr_assert_eq(nfree, q->max_pending - xft_reorder_count(q));
	for (uint32_t s = 0; s < q->nstreams; s++) {
		uint32_t run[4096], n = 0;
		for (uint32_t i = q->streams[s].head; i != XFT_RQ_NIL; i = q->slots[i].next)
			run[n++] = i;
		for (uint32_t k = 0; k < n; k++) {
			uint32_t a = q->slots[run[k]].ahead;
			cr_assert(a == XFT_RQ_NIL || (k + XFT_RQ_AHEAD < n && a == run[k + XFT_RQ_AHEAD]),
				  "slot %u of a queue names slot %u ahead", k, a);
		}
	}
}

/* @threads threads in @doms domains, each mostly in time order, one record
 * in @back stamped before its thread's last, with ties; popped whenever more
 * than @hold are held, or at random. */
static void mixed(uint32_t max_streams, uint32_t threads, uint16_t doms, unsigned back, uint32_t hold,
		  unsigned seed)
{
	static struct ref f;
	memset(&f, 0, sizeof(f));
	struct xft_reorder q;
	cr_assert_eq(xft_reorder_init(&q, 2048, max_streams, 1000), 0);
	uint64_t last[64] = { 0 };
	srand(seed);
	for (uint64_t tag = 0; tag < 20000; tag++) {
		uint32_t th = (uint32_t)rand() % threads;
		uint16_t dom = (uint16_t)(th % doms);
		uint64_t t = last[th] + (uint64_t)(rand() % 4); /* 0: a tie */
		if (back && rand() % back == 0 && t > 50)
			t -= 50; /* out of its thread's order */
		else
			last[th] = t;
		if (xft_reorder_full(&q) || xft_reorder_count(&q) > hold || rand() % 3 == 0) {
			if (xft_reorder_count(&q))
				pop_both(&q, &f);
		}
		struct xflow_record r = rec(dom, th, tag);
		xft_reorder_push(&q, &r, t, true);
		ref_push(&f, t, tag);
		cr_assert_eq(xft_reorder_count(&q), f.n);
		if (tag % 7 == 0)
			hints_check(&q);
	}
	while (xft_reorder_count(&q))
		pop_both(&q, &f);
	uint64_t t;
	cr_assert_not(xft_reorder_oldest(&q, &t), "empty at the end");
	if (back)
		cr_assert_gt(q.loose, 0, "some records were out of their thread's order");
	xft_reorder_fini(&q);
}

Test(reorder, threads_in_order_leave_by_time_then_arrival)
{
	mixed(64, 8, 2, 0, 500, 1);
}

Test(reorder, records_out_of_their_threads_order_still_leave_by_time)
{
	mixed(64, 8, 3, 7, 300, 2);
}

Test(reorder, more_threads_than_streams)
{
	/* 40 threads through 4 streams: the table is rebuilt with the busy
	 * ones, the rest go loose. */
	mixed(4, 40, 5, 0, 200, 3);
	mixed(4, 40, 5, 11, 1000, 4);
}

Test(reorder, threads_are_told_apart_by_domain)
{
	struct xft_reorder q;
	cr_assert_eq(xft_reorder_init(&q, 16, 16, 1000), 0);
	/* Same thread id, two domains: two streams, merged by time. */
	struct xflow_record a = rec(1, 7, 100), b = rec(2, 7, 200);
	xft_reorder_push(&q, &a, 50, true);
	xft_reorder_push(&q, &b, 10, true);
	cr_assert_eq(q.loose, 0, "the earlier record of domain 2 is not out of domain 1's order");
	uint64_t t;
	cr_assert_eq(xft_reorder_pop(&q, &t)->data[0], 200);
	cr_assert_eq(t, 10);
	cr_assert_eq(xft_reorder_pop(&q, &t)->data[0], 100);
	xft_reorder_fini(&q);
}

Test(reorder, full_and_reset)
{
	struct xft_reorder q;
	cr_assert_eq(xft_reorder_init(&q, 3, 2, 1000), 0);
	for (uint64_t i = 0; i < 3; i++) {
		struct xflow_record r = rec(0, (uint32_t)i, i);
		cr_assert_not(xft_reorder_full(&q));
		xft_reorder_push(&q, &r, 10 - i, true);
	}
	cr_assert(xft_reorder_full(&q));
	cr_assert_eq(q.loose, 1, "the third thread found no stream");
	uint64_t t;
	cr_assert_eq(xft_reorder_pop(&q, &t)->data[0], 2);
	xft_reorder_reset(&q);
	cr_assert_eq(xft_reorder_count(&q), 0);
	cr_assert_not(xft_reorder_oldest(&q, &t));
	/* Every slot is free again, every stream too. */
	for (uint64_t i = 0; i < 3; i++) {
		struct xflow_record r = rec(0, 9, i);
		xft_reorder_push(&q, &r, 100 + i, true);
	}
	cr_assert_eq(xft_reorder_count(&q), 3);
	for (uint64_t i = 0; i < 3; i++)
		cr_assert_eq(xft_reorder_pop(&q, &t)->data[0], i);
	xft_reorder_fini(&q);
	cr_assert_eq(xft_reorder_init(&q, 0, 4, 1000), -EINVAL);
}

Test(reorder, a_record_leaves_with_its_data_and_zeros_past_it_whatever_its_slot_held)
{
	/* One slot, reused: six words, none, two, none, none, one with a
	 * word past it, none.  A slot writes its second line only when the
	 * record or the one before there has words, and holds no more than
	 * ndata of them. */
	struct xft_reorder q;
	cr_assert_eq(xft_reorder_init(&q, 1, 1, 1000), 0);
	static const uint8_t nd[] = { 6, 0, 2, 0, 0, 1, 0 };
	for (unsigned k = 0; k < sizeof(nd); k++) {
		struct xflow_record r;
		memset(&r, 0, sizeof(r));
		r.thread_id = 5;
		r.flow_id = 100 + k;
		r.ndata = nd[k];
		for (unsigned w = 0; w < nd[k]; w++)
			r.data[w] = 1000 * (k + 1) + w;
		struct xflow_record want = r;
		if (k == 5)
			r.data[4] = 77; /* past its ndata: not held, and not left for the next */
		xft_reorder_push(&q, &r, k, true);
		uint64_t t;
		const struct xflow_record *o = xft_reorder_pop(&q, &t);
		cr_assert_eq(t, k);
		cr_assert_eq(o->flow_id, 100 + k);
		cr_assert_eq(o->ndata, nd[k]);
		cr_assert_eq(memcmp(o->data, want.data, sizeof(want.data)), 0, "record %u: its data words, then zeros", k);
	}
	xft_reorder_fini(&q);
}

Test(reorder, the_watermark_is_the_slowest_thread_still_writing)
{
	struct xft_reorder q;
	cr_assert_eq(xft_reorder_init(&q, 64, 8, 1000), 0);
	uint64_t w;
	cr_assert_not(xft_reorder_watermark(&q, 0, &w), "no thread, no watermark");
	struct xflow_record a = rec(1, 1, 0), b = rec(1, 2, 0), c = rec(1, 3, 0);
	xft_reorder_push(&q, &a, 5000, true);
	xft_reorder_push(&q, &b, 5200, true);
	xft_reorder_push(&q, &a, 5300, true);
	cr_assert(xft_reorder_watermark(&q, 5300, &w));
	cr_assert_eq(w, 5200, "thread 2 has passed only 5200");
	xft_reorder_push(&q, &b, 5400, true);
	cr_assert(xft_reorder_watermark(&q, 5400, &w));
	cr_assert_eq(w, 5300);
	/* A thread that does not say it keeps order moves it no further
	 * than the window does. */
	xft_reorder_push(&q, &c, 5350, false);
	cr_assert(xft_reorder_watermark(&q, 5400, &w));
	cr_assert_eq(w, 4350);
	/* Quiet for the window: threads 1 and 3 hold nothing any more. */
	xft_reorder_push(&q, &b, 6340, true);
	cr_assert(xft_reorder_watermark(&q, 6340, &w));
	cr_assert_eq(w, 5350 - 1000, "thread 3 (5350) is not yet quiet at 6340");
	cr_assert(xft_reorder_watermark(&q, 6400, &w));
	cr_assert_eq(w, 6340, "only thread 2 is left");
	/* A thread that goes back in time is out of order from then on. */
	xft_reorder_push(&q, &b, 6300, true);
	cr_assert(xft_reorder_watermark(&q, 6400, &w));
	cr_assert_eq(w, 6340 - 1000);
	xft_reorder_push(&q, &b, 6500, true);
	cr_assert(xft_reorder_watermark(&q, 6500, &w));
	cr_assert_eq(w, 6500 - 1000, "it stays out of order");
	xft_reorder_fini(&q);
}

/* A run of one thread's records that moves its mark past another
 * thread's still sifts it down the tails heap: the watermark stays the
 * slower thread's. */
Test(reorder, a_run_of_one_thread_passing_another_leaves_the_watermark_to_it)
{
	struct xft_reorder q;
	cr_assert_eq(xft_reorder_init(&q, 64, 8, 1000), 0);
	uint64_t w;
	struct xflow_record a = rec(1, 1, 0), b = rec(1, 2, 0);
	xft_reorder_push(&q, &a, 5000, true);
	xft_reorder_push(&q, &b, 5200, true);
	xft_reorder_push(&q, &a, 5100, true); /* thread 1 still the slower */
	cr_assert(xft_reorder_watermark(&q, 5200, &w));
	cr_assert_eq(w, 5100);
	xft_reorder_push(&q, &a, 5300, true); /* now past thread 2 */
	xft_reorder_push(&q, &a, 5400, true);
	cr_assert(xft_reorder_watermark(&q, 5400, &w));
	cr_assert_eq(w, 5200, "thread 2 has passed only 5200");
	/* And the records leave in time order all the same. */
	uint64_t t, want[] = { 5000, 5100, 5200, 5300, 5400 };
	for (unsigned i = 0; i < 5; i++) {
		xft_reorder_pop(&q, &t);
		cr_assert_eq(t, want[i]);
	}
	cr_assert_eq(xft_reorder_count(&q), 0);
	xft_reorder_fini(&q);
}
