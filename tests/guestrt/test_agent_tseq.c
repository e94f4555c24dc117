/*
 * The ptrace backend's record numbers (guestrt/agent/agent_tseq.c): a
 * record the agent's full ring drops keeps its number, and a thread whose
 * last records it dropped gets one loss note, numbered as the last of
 * them, once the ring has room; a note the ring has no room for waits and
 * is not counted as a drop.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "guestrt/agent/agent_priv.h"

struct fx {
	struct agent *a;
	void *region;
	struct xflow_ring_consumer c;
};

static void fx_init(struct fx *f, uint32_t slots)
{
	f->a = calloc(1, sizeof(*f->a));
	cr_assert_not_null(f->a);
	size_t size = xflow_ring_region_size(XFLOW_RECORD_SIZE, slots);
	f->region = aligned_alloc(64, (size + 63) & ~(size_t)63);
	cr_assert_not_null(f->region);
	cr_assert_eq(xflow_ring_format(f->region, size, XFLOW_RECORD_SIZE, slots, XFLOW_CLOCK_MONOTONIC), 0);
	cr_assert_eq(xflow_ring_producer_init(&f->a->prod, f->region, size, NULL, 1), 0);
	cr_assert_eq(xflow_ring_consumer_init(&f->c, f->region, size, XFLOW_RECORD_SIZE, NULL), 0);
	xflow_clock_init(&f->a->clock, XFLOW_CLOCK_FORCE_MONOTONIC);
	f->a->o.domain_id = 3;
}

static void fx_fini(struct fx *f)
{
	free(f->region);
	free(f->a);
}

static int push(struct fx *f, uint32_t tid)
{
	struct xflow_record r;
	memset(&r, 0, sizeof(r));
	r.version = XFLOW_RECORD_VERSION;
	r.flow_id = 1;
	r.domain_id = 3;
	r.thread_id = tid;
	return agent_tseq_push(f->a, &r);
}

static long pop(struct fx *f, struct xflow_record *out, size_t max)
{
	return xflow_ring_pop_records(&f->c, out, max);
}

Test(agent_tseq, a_thread_s_dropped_tail_gets_one_note_when_the_ring_has_room)
{
	struct fx f;
	fx_init(&f, 2);
	cr_assert_eq(push(&f, 5), 0);
	cr_assert_eq(push(&f, 5), 0);
	cr_assert_eq(push(&f, 5), -ENOBUFS, "the ring of two is full");
	cr_assert_eq(push(&f, 5), -ENOBUFS);
	cr_assert_eq(f.a->prod.dropped, 2);
	agent_tseq_notes(f.a);
	cr_assert_eq(f.a->prod.dropped, 2, "a note with no room waits, and is no drop");
	cr_assert_eq(f.a->notes, 0);
	struct xflow_record got[4];
	cr_assert_eq(pop(&f, got, 4), 2);
	cr_assert_eq(got[1].thread_seq, 1);
	agent_tseq_notes(f.a);
	cr_assert_eq(f.a->notes, 1);
	cr_assert_eq(pop(&f, got, 4), 1);
	cr_assert_eq(got[0].flags, XFLOW_REC_SEQ_COUNTS_LOST | XFLOW_REC_LOSS_NOTE);
	cr_assert_eq(got[0].thread_seq, 3, "numbered as the last record lost (2 and 3 were)");
	cr_assert_eq(got[0].ndata, 1);
	cr_assert_eq(got[0].data[0], 2, "and naming the first");
	cr_assert_eq(got[0].thread_id, 5);
	cr_assert_eq(got[0].domain_id, 3);
	cr_assert_eq(got[0].flow_id, 0);
	cr_assert_eq(got[0].flow_kind, XFLOW_FLOW_KIND_NONE);
	agent_tseq_notes(f.a);
	cr_assert_eq(pop(&f, got, 4), 0, "noted once");
	cr_assert_eq(push(&f, 5), 0);
	cr_assert_eq(pop(&f, got, 4), 1);
	cr_assert_eq(got[0].thread_seq, 4, "the thread's next record follows the note");
	fx_fini(&f);
}

Test(agent_tseq, a_gap_a_later_record_shows_needs_no_note)
{
	struct fx f;
	fx_init(&f, 2);
	struct xflow_record got[4];
	cr_assert_eq(push(&f, 5), 0);
	cr_assert_eq(push(&f, 6), 0);
	cr_assert_eq(push(&f, 5), -ENOBUFS);
	cr_assert_eq(pop(&f, got, 4), 2);
	cr_assert_eq(push(&f, 5), 0, "number 2: the gap at 1 shows the loss");
	agent_tseq_notes(f.a);
	cr_assert_eq(f.a->notes, 0);
	cr_assert_eq(pop(&f, got, 4), 1);
	cr_assert_eq(got[0].thread_seq, 2);
	cr_assert_eq(got[0].flags, XFLOW_REC_SEQ_COUNTS_LOST);
	fx_fini(&f);
}
