/*
 * tui/reorder.h — the model's reorder window: records held until they can
 * be applied in time order, merged from the threads that wrote them.
 *
 * Each thread's records (one domain_id and thread_id) come in the order the
 * thread wrote them: a lane, a ring buffer and the transport all keep it.
 * So the window keeps one queue per thread, in arrival order, and a binary
 * heap over the queues' heads only: holding a record costs a copy into a
 * slot and a link, releasing one a sift over the heads of the threads that
 * have records waiting (a handful), where one heap of every record held
 * moved each record (100 bytes) down some 16 levels of a heap far larger
 * than the caches.  A record older than the last of its thread's queue (a
 * thread whose clock stepped back, a source that does not keep order, the
 * model's loss markers, a thread past max_streams) gets a heap entry of its
 * own, so that the order released is always the same: by time, then by
 * arrival.
 *
 * When to release is the caller's: by the window, and, since each thread
 * is in order, by the watermark below (a k-way merge of the threads: a
 * record older than the last record of every thread still writing cannot
 * be overtaken).
 *
 * Memory is fixed at init; the feed path never allocates.  Not
 * thread-safe.
 */
#ifndef XFLOW_TUI_REORDER_H
#define XFLOW_TUI_REORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "xflow/record.h"

/* The types below are public only for the inline paths of a push and a
 * pop (a record's common case, once a record each: a call apiece and
 * the work for many threads cost as much as the rest of the window). */
#define XFT_RQ_NIL UINT32_MAX
/* A heap entry's ref: a stream's index, or a loose slot's with this bit. */
#define XFT_RQ_LOOSE 0x80000000u
/* How many records ahead of the one leaving a queue's slot is fetched: a
 * look at the window lets a run of records go, each applied in some tens
 * of nanoseconds, and a slot written a millisecond before is out of the
 * caches by then (the agent and the target share them), a miss longer
 * than one record's apply.  A power of two. */
#define XFT_RQ_AHEAD 8u

/*
 * Two cache lines (aligned so): the first has all but the record's data
 * words, the second those.  A record without data (most: a hit that
 * stores nothing) is held in one line: the window holds a record's ndata
 * words and zeros after them (a valid record's own, xflow/record.h; the
 * model reads no more), and a slot's words are written only when the
 * record taken or the one before it in the slot has some.  A held record
 * is read once, when it leaves, from where a slot XFT_RQ_AHEAD before it
 * in its queue had it fetched.
 */
struct xft_rq_slot {
	uint64_t t;
	uint64_t seq;
	uint32_t next;     /* the next slot of its queue, or of the free list */
	uint32_t ahead;    /* the slot XFT_RQ_AHEAD after it in its queue, or
	                    * NIL: a hint only, for the fetch, never followed */
	struct xflow_record r;
	uint8_t pad[16];
};
_Static_assert(sizeof(struct xft_rq_slot) == 128, "a slot is two cache lines");
_Static_assert(offsetof(struct xft_rq_slot, r.data) == 64, "a record's data words are the second line");

struct xft_rq_stream {
	uint64_t key;    /* domain << 32 | thread */
	uint64_t tail_t; /* time of its last record */
	uint64_t mark;   /* what it lets the watermark pass: tail_t while in
	                  * order, else tail_t - window (no further than the
	                  * window would) */
	uint32_t head, tail;
	uint32_t remap;  /* its index after streams_compact() */
	uint32_t tpos;   /* its place in the tails heap, or NIL */
	bool ordered;    /* every record so far said so, and came in order */
	/* Its last XFT_RQ_AHEAD slots, by how many were ever linked
	 * (nlinked): the one XFT_RQ_AHEAD back learns its ahead at each
	 * link, while it is still in the queue (nheld, the records the
	 * queue holds, says so; once gone it may be another's). */
	uint32_t nlinked, nheld;
	uint32_t back[XFT_RQ_AHEAD];
};

/* A heap entry: the time and arrival of a queue's head or of a loose
 * record. */
struct xft_rq_entry {
	uint64_t t, seq;
	uint32_t ref;
};

struct xft_reorder {
	uint32_t max_pending, max_streams;
	struct xft_rq_slot *slots;     /* max_pending records */
	size_t slots_mapped;           /* bytes mapped for them (huge pages), or 0 */
	uint32_t free_head;            /* free slots, linked */
	uint32_t npending;
	struct xft_rq_stream *streams; /* max_streams queues */
	uint32_t nstreams;
	uint32_t *table;               /* (domain, thread) -> stream + 1; 0: empty */
	uint32_t table_mask;
	uint32_t last_stream;          /* the stream pushed to last (stream_of) */
	uint32_t *tails;               /* streams by mark, min first: the watermark */
	uint32_t ntails;
	uint64_t window_ns;
	struct xft_rq_entry *heap;     /* min on (t, seq): queue heads and loose records */
	uint32_t nheap;
	uint64_t seq;                  /* arrival order */
	uint64_t loose;                /* records that took an entry of their own */
};

/* Take the memory for @max_pending records from at most @max_streams
 * threads at once (both >= 1), for a window of @window_ns.  0 or -ENOMEM /
 * -EINVAL. */
int xft_reorder_init(struct xft_reorder *q, uint32_t max_pending, uint32_t max_streams, uint64_t window_ns);
void xft_reorder_fini(struct xft_reorder *q);
size_t xft_reorder_bytes(const struct xft_reorder *q);
/* Forget every record held. */
void xft_reorder_reset(struct xft_reorder *q);

static inline uint32_t xft_reorder_count(const struct xft_reorder *q)
{
	return q->npending;
}

static inline bool xft_reorder_full(const struct xft_reorder *q)
{
	return q->npending == q->max_pending;
}

/* A slot for @r at @t from the free list, not yet linked anywhere (the
 * caller made room). */
static inline uint32_t xft_reorder__slot_take(struct xft_reorder *q, const struct xflow_record *r, uint64_t t)
{
	uint32_t i = q->free_head;
	struct xft_rq_slot *sl = &q->slots[i];
	q->free_head = sl->next;
	/* The next push takes the next free slot: mostly one a pop just
	 * read, but after a burst of pushes one freed long ago, whose
	 * first line is fetched now, a record ahead. */
	if (q->free_head != XFT_RQ_NIL)
		__builtin_prefetch(&q->slots[q->free_head], 1);
	q->npending++;
	bool data = sl->r.ndata | r->ndata;
	sl->t = t;
	sl->seq = q->seq++;
	sl->next = XFT_RQ_NIL;
	sl->ahead = XFT_RQ_NIL;
	memcpy(&sl->r, r, offsetof(struct xflow_record, data));
	if (data) {
		/* Its words, then zeros: what a record says past ndata is
		 * never held, so none of it is left for the slot's next. */
		unsigned n = r->ndata < XFLOW_RECORD_MAX_DATA ? r->ndata : XFLOW_RECORD_MAX_DATA;
		memcpy(sl->r.data, r->data, n * sizeof(r->data[0]));
		memset(sl->r.data + n, 0, (XFLOW_RECORD_MAX_DATA - n) * sizeof(r->data[0]));
	}
	return i;
}

/* Slot @i back to the free list, first: the next push takes it while it
 * is in the caches. */
static inline void xft_reorder__slot_give(struct xft_reorder *q, uint32_t i)
{
	q->slots[i].next = q->free_head;
	q->free_head = i;
	q->npending--;
}

/* Slot @i is the last of @st's queue now: the slot XFT_RQ_AHEAD before
 * it (written as many records ago, in the caches) learns of it. */
static inline void xft_reorder__ahead_note(struct xft_reorder *q, struct xft_rq_stream *st, uint32_t i)
{
	uint32_t at = st->nlinked++ & (XFT_RQ_AHEAD - 1);
	if (st->nheld++ >= XFT_RQ_AHEAD)
		q->slots[st->back[at]].ahead = i;
	st->back[at] = i;
}

/* The lines of the slot XFT_RQ_AHEAD after @sl, which leaves now, fetched
 * for when that one leaves. */
static inline void xft_reorder__fetch_ahead(const struct xft_reorder *q, const struct xft_rq_slot *sl)
{
	if (sl->ahead != XFT_RQ_NIL)
		__builtin_prefetch(&q->slots[sl->ahead]);
}

/* @sl's successor @nx takes its place at the head of its queue: its
 * first line was fetched XFT_RQ_AHEAD records ago, its data words (if it
 * has any) are fetched now, for when it leaves, a record later. */
static inline void xft_reorder__next_head(const struct xft_reorder *q, const struct xft_rq_slot *sl,
					  const struct xft_rq_slot *nx, struct xft_rq_entry *e)
{
	e->t = nx->t;
	e->seq = nx->seq;
	xft_reorder__fetch_ahead(q, sl);
	if (nx->r.ndata)
		__builtin_prefetch(nx->r.data);
}

/* The out-of-line part of xft_reorder_push(): any case. */
void xft_reorder__push(struct xft_reorder *q, const struct xflow_record *r, uint64_t t, bool ordered);

/* Hold @r at time @t; @ordered: its producer writes each thread's records
 * in time order (XFLOW_REC_SEQ_COUNTS_LOST says a lane does).  The caller
 * makes room first (not full). */
static inline void xft_reorder_push(struct xft_reorder *q, const struct xflow_record *r, uint64_t t,
				    bool ordered)
{
	/* The common case: the next of a run of one ordered thread's records,
	 * in order, behind its queue's last, and its mark moving no further
	 * than its children's in the tails heap (so the heap is still one).
	 * It is what xft_reorder__push() does then, without its search. */
	uint32_t s = q->last_stream;
	if (ordered && s < q->nstreams) {
		struct xft_rq_stream *st = &q->streams[s];
		uint32_t c = 2 * st->tpos + 1;
		if (st->key == ((uint64_t)r->domain_id << 32 | r->thread_id) && st->ordered &&
		    st->head != XFT_RQ_NIL && t >= st->tail_t && st->tpos != XFT_RQ_NIL &&
		    (c >= q->ntails || q->streams[q->tails[c]].mark >= t) &&
		    (c + 1 >= q->ntails || q->streams[q->tails[c + 1]].mark >= t)) {
			uint32_t i = xft_reorder__slot_take(q, r, t);
			q->slots[st->tail].next = i;
			st->tail = i;
			st->tail_t = st->mark = t;
			xft_reorder__ahead_note(q, st, i);
			return;
		}
	}
	xft_reorder__push(q, r, t, ordered);
}

/* Hold @r at @t apart from any thread (the model's loss markers). */
void xft_reorder_push_loose(struct xft_reorder *q, const struct xflow_record *r, uint64_t t);

/*
 * The watermark: no thread seen within the window of @newest has a record
 * to come before *@t, as far as the threads' own order says.  A thread whose
 * records all came in order, and said they would, holds it at its last
 * record's time; one out of order, or that never said, at that time less
 * the window (it moves the watermark no further than the window does).  A
 * thread quiet for the window, or not yet seen, holds nothing: its next
 * record, if older than what was released, is late, as one older than the
 * window always was.  false when no thread holds it.
 */
bool xft_reorder_watermark(struct xft_reorder *q, uint64_t newest, uint64_t *t);

/* The time of the oldest record held, or false when none is. */
static inline bool xft_reorder_oldest(const struct xft_reorder *q, uint64_t *t)
{
	if (!q->nheap)
		return false;
	*t = q->heap[0].t;
	return true;
}

/* The out-of-line part of xft_reorder_pop(): any case. */
const struct xflow_record *xft_reorder__pop(struct xft_reorder *q, uint64_t *t);

/* Release the oldest record (by time, then arrival; the caller checks one
 * is held): its time in *@t, the record valid until the next push. */
static inline const struct xflow_record *xft_reorder_pop(struct xft_reorder *q, uint64_t *t)
{
	/* The common case: one thread holds records (no heap to sift), and
	 * its next record, if any, takes its head's place. */
	struct xft_rq_entry *top = &q->heap[0];
	if (q->nheap != 1 || (top->ref & XFT_RQ_LOOSE))
		return xft_reorder__pop(q, t);
	struct xft_rq_stream *st = &q->streams[top->ref];
	uint32_t i = st->head;
	struct xft_rq_slot *sl = &q->slots[i];
	st->head = sl->next;
	st->nheld--;
	if (st->head != XFT_RQ_NIL) {
		xft_reorder__next_head(q, sl, &q->slots[st->head], top);
	} else {
		st->tail = XFT_RQ_NIL;
		q->nheap = 0;
	}
	xft_reorder__slot_give(q, i);
	*t = sl->t;
	return &sl->r;
}

#endif
