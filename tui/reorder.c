/*
 * The model's reorder window (tui/reorder.h): a queue per thread, a heap
 * over their heads.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "tui/reorder.h"

#define NIL XFT_RQ_NIL
#define LOOSE XFT_RQ_LOOSE

/* Slots past this many bytes are mapped on huge pages (a hint). */
#define SLOTS_HUGE ((size_t)2 << 20)

/* The window's slots: a record's slot is reached at random (the free
 * list's order is the order records left in), so with 4 KiB pages a
 * window of megabytes missed the TLB at most pushes and pops; on huge
 * pages (a hint the kernel may decline) it does not. */
static int slots_alloc(struct xft_reorder *q, size_t n)
{
	size_t bytes = n * sizeof(*q->slots);
	if (bytes < SLOTS_HUGE) {
		/* Zero: a slot's data words are written only when a record
		 * has some (xft_reorder__slot_take). */
		q->slots = aligned_alloc(64, bytes);
		if (q->slots)
			memset(q->slots, 0, bytes);
		return q->slots ? 0 : -ENOMEM;
	}
	bytes = (bytes + SLOTS_HUGE - 1) & ~(SLOTS_HUGE - 1);
	void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return -ENOMEM;
	madvise(m, bytes, MADV_HUGEPAGE);
	q->slots = m;
	q->slots_mapped = bytes;
	return 0;
}

static uint64_t stream_key(const struct xflow_record *r)
{
	return (uint64_t)r->domain_id << 32 | r->thread_id;
}

static uint32_t key_hash(uint64_t k)
{
	k *= UINT64_C(0x9e3779b97f4a7c15);
	return (uint32_t)(k >> 32);
}

int xft_reorder_init(struct xft_reorder *q, uint32_t max_pending, uint32_t max_streams, uint64_t window_ns)
{
	memset(q, 0, sizeof(*q));
	q->window_ns = window_ns;
	if (!max_pending || !max_streams || max_pending >= LOOSE || max_streams >= LOOSE / 2)
		return -EINVAL;
	uint32_t ts = 1;
	while (ts < 2 * max_streams)
		ts <<= 1;
	q->max_pending = max_pending;
	q->max_streams = max_streams;
	q->table_mask = ts - 1;
	slots_alloc(q, max_pending);
	q->streams = calloc(max_streams, sizeof(*q->streams));
	q->table = calloc(ts, sizeof(*q->table));
	q->tails = calloc(max_streams, sizeof(*q->tails));
	/* Every record held may be loose, and every stream a head. */
	q->heap = calloc((size_t)max_pending + max_streams, sizeof(*q->heap));
	if (!q->slots || !q->streams || !q->table || !q->tails || !q->heap) {
		xft_reorder_fini(q);
		return -ENOMEM;
	}
	xft_reorder_reset(q);
	return 0;
}

void xft_reorder_fini(struct xft_reorder *q)
{
	if (q->slots_mapped)
		munmap(q->slots, q->slots_mapped);
	else
		free(q->slots);
	free(q->streams);
	free(q->table);
	free(q->tails);
	free(q->heap);
	memset(q, 0, sizeof(*q));
}

size_t xft_reorder_bytes(const struct xft_reorder *q)
{
	return (size_t)q->max_pending * sizeof(*q->slots) +
	       (size_t)q->max_streams * (sizeof(*q->streams) + sizeof(*q->tails)) +
	       ((size_t)q->table_mask + 1) * sizeof(*q->table) +
	       ((size_t)q->max_pending + q->max_streams) * sizeof(*q->heap);
}

void xft_reorder_reset(struct xft_reorder *q)
{
	for (uint32_t i = 0; i < q->max_pending; i++)
		q->slots[i].next = i + 1 < q->max_pending ? i + 1 : NIL;
	q->free_head = 0;
	q->npending = 0;
	q->nstreams = 0;
	memset(q->table, 0, ((size_t)q->table_mask + 1) * sizeof(*q->table));
	q->nheap = 0;
	q->ntails = 0;
	q->seq = 0;
	q->last_stream = NIL;
}

static int entry_less(const struct xft_rq_entry *a, const struct xft_rq_entry *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

static void heap_up(struct xft_reorder *q, uint32_t i, struct xft_rq_entry e)
{
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (!entry_less(&e, &q->heap[parent]))
			break;
		q->heap[i] = q->heap[parent];
		i = parent;
	}
	q->heap[i] = e;
}

/* Put @e at the root, whose entry is gone, and sift it down. */
static void heap_down(struct xft_reorder *q, struct xft_rq_entry e)
{
	uint32_t i = 0, n = q->nheap;
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && entry_less(&q->heap[c + 1], &q->heap[c]))
			c++;
		if (!entry_less(&q->heap[c], &e))
			break;
		q->heap[i] = q->heap[c];
		i = c;
	}
	q->heap[i] = e;
}

/* The tails heap: streams by mark, min first, each knowing its place. */
static bool tail_less(const struct xft_reorder *q, uint32_t a, uint32_t b)
{
	return q->streams[a].mark < q->streams[b].mark;
}

static void tail_set(struct xft_reorder *q, uint32_t i, uint32_t s)
{
	q->tails[i] = s;
	q->streams[s].tpos = i;
}

static void tail_up(struct xft_reorder *q, uint32_t i)
{
	uint32_t s = q->tails[i];
	while (i > 0) {
		uint32_t parent = (i - 1) / 2;
		if (!tail_less(q, s, q->tails[parent]))
			break;
		tail_set(q, i, q->tails[parent]);
		i = parent;
	}
	tail_set(q, i, s);
}

static void tail_down(struct xft_reorder *q, uint32_t i)
{
	uint32_t s = q->tails[i], n = q->ntails;
	for (;;) {
		uint32_t c = 2 * i + 1;
		if (c >= n)
			break;
		if (c + 1 < n && tail_less(q, q->tails[c + 1], q->tails[c]))
			c++;
		if (!tail_less(q, q->tails[c], s))
			break;
		tail_set(q, i, q->tails[c]);
		i = c;
	}
	tail_set(q, i, s);
}

static void tail_remove_top(struct xft_reorder *q)
{
	q->streams[q->tails[0]].tpos = NIL;
	if (--q->ntails) {
		tail_set(q, 0, q->tails[q->ntails]);
		tail_down(q, 0);
	}
}

/* Stream @s has a new last record at @t, in its order or not. */
static void tail_note(struct xft_reorder *q, uint32_t s, uint64_t t, bool ordered)
{
	struct xft_rq_stream *st = &q->streams[s];
	if (t >= st->tail_t)
		st->tail_t = t;
	st->ordered = st->ordered && ordered;
	st->mark = st->ordered ? st->tail_t : st->tail_t > q->window_ns ? st->tail_t - q->window_ns : 0;
	if (st->tpos == NIL) {
		tail_set(q, q->ntails++, s);
		tail_up(q, st->tpos);
	} else if (st->ordered) {
		/* Its mark only grows: it moves only if it has a child (with
		 * one thread, never). */
		if (2 * st->tpos + 1 < q->ntails)
			tail_down(q, st->tpos);
	} else {
		/* It may have just gone out of order: its mark fell. */
		tail_up(q, st->tpos);
		tail_down(q, st->tpos);
	}
}

bool xft_reorder_watermark(struct xft_reorder *q, uint64_t newest, uint64_t *t)
{
	/* A stream quiet for the window holds nothing back any more. */
	while (q->ntails && q->streams[q->tails[0]].tail_t + q->window_ns <= newest)
		tail_remove_top(q);
	if (!q->ntails)
		return false;
	*t = q->streams[q->tails[0]].mark;
	return true;
}

/* The stream table holds streams whose queues emptied too: when it is
 * full, it is rebuilt with only those that hold records. */
static void streams_compact(struct xft_reorder *q)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < q->nstreams; i++)
		q->streams[i].remap = q->streams[i].head != NIL ? n++ : NIL;
	/* The tails heap is rebuilt below, of the streams kept that were in
	 * it: a stream forgotten holds the watermark back no more, as one
	 * quiet for the window. */
	/* Heap entries name streams by index: renumber them, then move the
	 * streams down (a stream holding records has exactly one entry). */
	for (uint32_t h = 0; h < q->nheap; h++)
		if (!(q->heap[h].ref & LOOSE))
			q->heap[h].ref = q->streams[q->heap[h].ref].remap;
	for (uint32_t i = 0; i < q->nstreams; i++)
		if (q->streams[i].remap != NIL)
			q->streams[q->streams[i].remap] = q->streams[i];
	q->nstreams = n;
	memset(q->table, 0, ((size_t)q->table_mask + 1) * sizeof(*q->table));
	q->ntails = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t h = key_hash(q->streams[i].key) & q->table_mask;
		while (q->table[h])
			h = (h + 1) & q->table_mask;
		q->table[h] = i + 1;
		if (q->streams[i].tpos != NIL) {
			tail_set(q, q->ntails++, i);
			tail_up(q, q->ntails - 1);
		}
	}
}

/* The stream of @key, made if need be; NIL when none can be. */
static uint32_t stream_of(struct xft_reorder *q, uint64_t key)
{
	/* A thread's records come in runs (a lane is read a batch at a
	 * time): the stream of the record before is checked first, by its
	 * key, which stays right whatever streams_compact() moved. */
	uint32_t last = q->last_stream;
	if (last < q->nstreams && q->streams[last].key == key)
		return last;
	uint32_t h = key_hash(key) & q->table_mask;
	for (uint32_t s; (s = q->table[h]) != 0; h = (h + 1) & q->table_mask)
		if (q->streams[s - 1].key == key)
			return q->last_stream = s - 1;
	if (q->nstreams == q->max_streams) {
		streams_compact(q);
		if (q->nstreams == q->max_streams)
			return NIL;
		h = key_hash(key) & q->table_mask;
		while (q->table[h])
			h = (h + 1) & q->table_mask;
	}
	uint32_t s = q->nstreams++;
	q->streams[s] = (struct xft_rq_stream){ .key = key, .head = NIL, .tail = NIL, .tpos = NIL, .ordered = true };
	q->table[h] = s + 1;
	return q->last_stream = s;
}


static void push_loose(struct xft_reorder *q, uint32_t i)
{
	q->loose++;
	heap_up(q, q->nheap++, (struct xft_rq_entry){ .t = q->slots[i].t, .seq = q->slots[i].seq, .ref = LOOSE | i });
}

void xft_reorder__push(struct xft_reorder *q, const struct xflow_record *r, uint64_t t, bool ordered)
{
	uint32_t i = xft_reorder__slot_take(q, r, t);
	uint32_t s = stream_of(q, stream_key(r));
	if (s == NIL) {
		push_loose(q, i);
		return;
	}
	struct xft_rq_stream *st = &q->streams[s];
	bool in_order = t >= st->tail_t;
	if (st->head == NIL) {
		st->head = st->tail = i;
		xft_reorder__ahead_note(q, st, i);
		heap_up(q, q->nheap++, (struct xft_rq_entry){ .t = t, .seq = q->slots[i].seq, .ref = s });
	} else if (t >= q->slots[st->tail].t) {
		/* The common case: behind its thread's last record, and no
		 * merge heap work at all. */
		q->slots[st->tail].next = i;
		st->tail = i;
		xft_reorder__ahead_note(q, st, i);
	} else {
		push_loose(q, i);
	}
	tail_note(q, s, t, ordered && in_order);
}

void xft_reorder_push_loose(struct xft_reorder *q, const struct xflow_record *r, uint64_t t)
{
	push_loose(q, xft_reorder__slot_take(q, r, t));
}

const struct xflow_record *xft_reorder__pop(struct xft_reorder *q, uint64_t *t)
{
	struct xft_rq_entry top = q->heap[0];
	uint32_t i;
	if (top.ref & LOOSE) {
		i = top.ref & ~LOOSE;
		q->nheap--;
		if (q->nheap)
			heap_down(q, q->heap[q->nheap]);
	} else {
		struct xft_rq_stream *st = &q->streams[top.ref];
		i = st->head;
		st->head = q->slots[i].next;
		st->nheld--;
		if (st->head != NIL) {
			/* The thread's next record takes its place (its slot
			 * fetched for when it leaves, as in xft_reorder_pop()). */
			struct xft_rq_entry e = { .ref = top.ref };
			xft_reorder__next_head(q, &q->slots[i], &q->slots[st->head], &e);
			if (q->nheap == 1)
				q->heap[0] = e; /* the only thread holding records */
			else
				heap_down(q, e);
		} else {
			st->tail = NIL;
			q->nheap--;
			if (q->nheap)
				heap_down(q, q->heap[q->nheap]);
		}
	}
	struct xft_rq_slot *sl = &q->slots[i];
	xft_reorder__slot_give(q, i);
	*t = sl->t;
	return &sl->r;
}
