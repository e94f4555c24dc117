/*
 * Following threads' record numbers (tui/seq_gap.h): gaps, wraps, threads
 * apart by domain and id, a step back, and a full set.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tui/seq_gap.h"

static struct xflow_record rec(uint16_t dom, uint32_t tid, uint32_t seq)
{
	struct xflow_record r;
	memset(&r, 0, sizeof(r));
	r.version = XFLOW_RECORD_VERSION;
	r.domain_id = dom;
	r.thread_id = tid;
	r.thread_seq = seq;
	r.flags = XFLOW_REC_SEQ_COUNTS_LOST;
	return r;
}

static uint32_t check(struct xft_seqs *s, uint16_t dom, uint32_t tid, uint32_t seq, uint64_t t, uint64_t *prev)
{
	struct xflow_record r = rec(dom, tid, seq);
	*prev = UINT64_MAX;
	return xft_seqs_check(s, &r, t, prev);
}

Test(seq_gap, a_skipped_number_is_a_loss_between_two_times)
{
	struct xft_seqs s;
	uint64_t prev;
	cr_assert_eq(xft_seqs_init(&s, 16), 0);
	cr_assert_eq(check(&s, 1, 10, 7, 100, &prev), 0, "a thread's first record says nothing");
	cr_assert_eq(check(&s, 1, 10, 8, 200, &prev), 0);
	cr_assert_eq(check(&s, 1, 10, 12, 300, &prev), 3, "9, 10 and 11 were lost");
	cr_assert_eq(prev, 200, "after the record of time 200");
	cr_assert_eq(check(&s, 1, 10, 13, 400, &prev), 0);
	cr_assert_eq(s.gaps, 1);
	cr_assert_eq(s.lost, 3);
	xft_seqs_fini(&s);
}

static uint32_t note_from(struct xft_seqs *s, uint16_t dom, uint32_t tid, uint32_t first, uint32_t seq, uint64_t t,
			  uint64_t *prev)
{
	struct xflow_record r = rec(dom, tid, seq);
	r.flags |= XFLOW_REC_LOSS_NOTE;
	r.ndata = 1;
	r.data[0] = first;
	*prev = UINT64_MAX;
	return xft_seqs_check(s, &r, t, prev);
}

/* A note as the agent writes it for a thread it has seen keep @seq - 1. */
static uint32_t note(struct xft_seqs *s, uint16_t dom, uint32_t tid, uint32_t seq, uint64_t t, uint64_t *prev)
{
	struct xflow_record r = rec(dom, tid, seq);
	r.flags |= XFLOW_REC_LOSS_NOTE;
	r.ndata = 1;
	r.data[0] = seq;
	*prev = UINT64_MAX;
	return xft_seqs_check(s, &r, t, prev);
}

/* Records lost after a thread's last one: its agent's note, numbered as
 * the last of them, is one gap of them all, the note included; the
 * thread's next record follows on from it. */
Test(seq_gap, a_loss_note_counts_the_tail_it_ends_and_the_thread_goes_on)
{
	struct xft_seqs s;
	uint64_t prev;
	cr_assert_eq(xft_seqs_init(&s, 16), 0);
	check(&s, 1, 10, 7, 100, &prev);
	check(&s, 1, 10, 8, 200, &prev);
	cr_assert_eq(note(&s, 1, 10, 11, 900, &prev), 3, "9, 10 and 11 were lost");
	cr_assert_eq(prev, 200, "after the record of time 200");
	cr_assert_eq(check(&s, 1, 10, 12, 1000, &prev), 0, "the next record follows the note");
	cr_assert_eq(check(&s, 1, 10, 14, 1100, &prev), 1, "and a later gap is seen as ever");
	cr_assert_eq(s.gaps, 2);
	cr_assert_eq(s.lost, 4);
	cr_assert_eq(s.restarts, 0);
	xft_seqs_fini(&s);
}

/* A note always stands for one lost record at least; one seen twice (or
 * stepping back) counts nothing more, and the thread is followed on. */
Test(seq_gap, a_note_is_one_loss_at_least_and_never_counted_twice)
{
	struct xft_seqs s;
	uint64_t prev;
	cr_assert_eq(xft_seqs_init(&s, 16), 0);
	check(&s, 1, 10, 8, 200, &prev);
	cr_assert_eq(note(&s, 1, 10, 9, 300, &prev), 1, "the note's own number");
	cr_assert_eq(note(&s, 1, 10, 9, 310, &prev), 0, "the same note again");
	cr_assert_eq(check(&s, 1, 10, 10, 400, &prev), 0);
	cr_assert_eq(s.lost, 1);
	/* A thread first seen by its note lost what the note names. */
	cr_assert_eq(note(&s, 1, 11, 50, 500, &prev), 1);
	cr_assert_eq(prev, 500);
	cr_assert_eq(check(&s, 1, 11, 51, 600, &prev), 0);
	cr_assert_eq(s.lost, 2);
	cr_assert_eq(s.gaps, 2);
	xft_seqs_fini(&s);
}

/* A stream none of whose records got through (a kernel CPU stream, which
 * numbers from 0 at its load): its note names the first number too, and
 * the whole of it is counted; across the numbers' wrap as well.  A thread
 * already followed counts from what it last saw, whatever the note says
 * of its first. */
Test(seq_gap, a_note_of_a_thread_never_seen_counts_every_number_it_names)
{
	struct xft_seqs s;
	uint64_t prev;
	cr_assert_eq(xft_seqs_init(&s, 16), 0);
	cr_assert_eq(note_from(&s, 1, 0x80000004u, 0, 9, 500, &prev), 10, "numbers 0 to 9");
	cr_assert_eq(prev, 500);
	cr_assert_eq(check(&s, 1, 0x80000004u, 10, 600, &prev), 0, "the stream goes on from the note");
	cr_assert_eq(note_from(&s, 1, 0x80000005u, UINT32_MAX - 1, 2, 700, &prev), 5, "across the wrap");
	check(&s, 1, 12, 20, 800, &prev);
	cr_assert_eq(note_from(&s, 1, 12, 25, 30, 900, &prev), 10, "21 to 30: the thread's own view");
	cr_assert_eq(s.lost, 25);
	cr_assert_eq(s.gaps, 3);
	xft_seqs_fini(&s);
}

Test(seq_gap, threads_are_told_apart_by_domain_and_id)
{
	struct xft_seqs s;
	uint64_t prev;
	cr_assert_eq(xft_seqs_init(&s, 16), 0);
	check(&s, 1, 10, 0, 1, &prev);
	check(&s, 2, 10, 50, 2, &prev);
	check(&s, 1, 11, 90, 3, &prev);
	cr_assert_eq(check(&s, 1, 10, 1, 4, &prev), 0);
	cr_assert_eq(check(&s, 2, 10, 51, 5, &prev), 0);
	cr_assert_eq(check(&s, 1, 11, 91, 6, &prev), 0);
	cr_assert_eq(check(&s, 2, 10, 53, 7, &prev), 1);
	cr_assert_eq(prev, 5);
	cr_assert_eq(s.lost, 1);
	xft_seqs_fini(&s);
}

Test(seq_gap, numbers_wrap_and_a_step_back_is_a_new_producer)
{
	struct xft_seqs s;
	uint64_t prev;
	cr_assert_eq(xft_seqs_init(&s, 16), 0);
	check(&s, 1, 10, UINT32_MAX - 1, 1, &prev);
	cr_assert_eq(check(&s, 1, 10, UINT32_MAX, 2, &prev), 0);
	cr_assert_eq(check(&s, 1, 10, 0, 3, &prev), 0, "the wrap is no gap");
	cr_assert_eq(check(&s, 1, 10, 2, 4, &prev), 1, "1 was lost after the wrap");
	cr_assert_eq(check(&s, 1, 10, 0, 5, &prev), 0, "back to 0: a new lane");
	cr_assert_eq(s.restarts, 1);
	cr_assert_eq(check(&s, 1, 10, 1, 6, &prev), 0, "followed from there");
	xft_seqs_fini(&s);
}

Test(seq_gap, a_full_set_lets_the_oldest_thread_go_and_says_so)
{
	struct xft_seqs s;
	uint64_t prev;
	/* One set: the ninth thread takes the place of the one written the
	 * longest ago. */
	cr_assert_eq(xft_seqs_init(&s, 1), 0);
	cr_assert_eq(s.nsets, 1);
	for (uint32_t tid = 1; tid <= XFT_SEQ_WAYS; tid++)
		check(&s, 1, tid, 0, 100 + tid, &prev);
	check(&s, 1, 1, 1, 200, &prev); /* thread 2 is now the oldest */
	check(&s, 1, 99, 0, 300, &prev);
	cr_assert_eq(s.forgotten, 1);
	cr_assert_eq(check(&s, 1, 1, 3, 400, &prev), 1, "thread 1 is still followed");
	cr_assert_eq(check(&s, 1, 2, 5, 500, &prev), 0, "thread 2 starts afresh");
	cr_assert_eq(s.forgotten, 2);
	xft_seqs_clear(&s);
	cr_assert_eq(s.lost + s.gaps + s.forgotten, 0);
	cr_assert_eq(check(&s, 1, 1, 9, 600, &prev), 0, "cleared: nothing followed");
	xft_seqs_fini(&s);
}

/* A guest inventing thread ids fills the set with its own: it takes one
 * place from the other domains, then evicts its own threads, and the
 * other domains' threads stay followed. */
Test(seq_gap, a_domain_flooding_threads_evicts_its_own)
{
	struct xft_seqs s;
	uint64_t prev;
	cr_assert_eq(xft_seqs_init(&s, 1), 0);
	for (uint32_t tid = 1; tid <= XFT_SEQ_WAYS; tid++)
		check(&s, 1, tid, 0, 100 + tid, &prev);
	for (uint32_t tid = 1000; tid < 1100; tid++)
		check(&s, 2, tid, 0, 200 + tid, &prev);
	cr_assert_eq(s.forgotten, 1 + 99, "domain 1's oldest thread, then the flood's own, not %lu",
		     (unsigned long)s.forgotten);
	uint32_t seen = 0;
	for (uint32_t tid = 2; tid <= XFT_SEQ_WAYS; tid++)
		seen += check(&s, 1, tid, 2, 2000, &prev) == 1;
	cr_assert_eq(seen, XFT_SEQ_WAYS - 1, "a gap on each of domain 1's other threads seen, not %u", seen);
	xft_seqs_fini(&s);
}
