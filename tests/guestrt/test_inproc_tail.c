/*
 * When the agent writes a loss note for a lane (guestrt/hook/inproc/inproc_tail.c):
 * only when the lane was emptied with no hit running, is still the thread's
 * it followed, and its seq is past the last record kept; or when the thread
 * exited.  Exactly the numbers lost, once.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "guestrt/hook/inproc/inproc_tail.h"

static void keep(struct ip_tail *t, uint32_t tid, uint32_t seq)
{
	struct xflow_record r;
	memset(&r, 0, sizeof(r));
	r.version = XFLOW_RECORD_VERSION;
	r.flow_id = 1;
	r.flags = XFLOW_REC_SEQ_COUNTS_LOST;
	r.thread_id = tid;
	r.thread_seq = seq;
	ip_tail_kept(t, &r);
}

static struct ip_tail_seen idle(uint32_t tid, uint32_t seq)
{
	return (struct ip_tail_seen){ .seq = seq, .tid = tid, .busy = false, .drained = true };
}

Test(inproc_tail, an_idle_lane_past_its_last_record_is_noted_once_and_exactly)
{
	struct ip_tail t = { 0 };
	struct ip_tail_seen s = idle(5, 12);
	cr_assert_eq(ip_tail_idle_lost(&t, &s), 0, "no record kept yet: where the thread began is not known");
	keep(&t, 5, 7);
	keep(&t, 5, 8);
	cr_assert_eq(ip_tail_idle_lost(&t, &s), 3, "9, 10 and 11 were lost");
	struct xflow_record n;
	ip_tail_note(&t, s.seq, 4, 999, &n);
	cr_assert_eq(n.thread_seq, 11, "the note is the last lost record");
	cr_assert_eq(n.thread_id, 5);
	cr_assert_eq(n.domain_id, 4);
	cr_assert_eq(n.timestamp, 999);
	cr_assert_eq(n.flags, XFLOW_REC_SEQ_COUNTS_LOST | XFLOW_REC_LOSS_NOTE);
	cr_assert_eq(n.flow_id, 0);
	cr_assert_eq(n.flow_kind, XFLOW_FLOW_KIND_NONE);
	cr_assert_eq(n.ndata, 1);
	cr_assert_eq(n.data[0], 9, "the first lost");
	unsigned char w[XFLOW_RECORD_SIZE];
	struct xflow_record back;
	xflow_record_encode(&n, w);
	cr_assert_eq(xflow_record_decode(w, sizeof(w), &back, NULL), 0, "a note decodes");
	ip_tail_noted(&t, &n);
	cr_assert_eq(ip_tail_idle_lost(&t, &s), 0, "noted once");
	keep(&t, 5, 12);
	s.seq = 13;
	cr_assert_eq(ip_tail_idle_lost(&t, &s), 0, "the thread followed on from the note");
}

Test(inproc_tail, a_hit_running_a_ring_not_emptied_or_another_thread_say_nothing)
{
	struct ip_tail t = { 0 };
	keep(&t, 5, 8);
	struct ip_tail_seen s = idle(5, 9);
	cr_assert_eq(ip_tail_idle_lost(&t, &s), 0, "seq is one past the last kept: nothing lost");
	s.seq = 11;
	s.busy = true;
	cr_assert_eq(ip_tail_idle_lost(&t, &s), 0, "the running hit may hold a number unpublished");
	s.busy = false;
	s.drained = false;
	cr_assert_eq(ip_tail_idle_lost(&t, &s), 0, "what is left in the ring may hold the numbers");
	s.drained = true;
	s.tid = 6;
	cr_assert_eq(ip_tail_idle_lost(&t, &s), 0, "another thread's lane now");
	s.tid = 5;
	keep(&t, 5, 12);
	cr_assert_eq(ip_tail_idle_lost(&t, &s), 0, "records kept since the look are past it");
	s.seq = 5;
	cr_assert_eq(ip_tail_idle_lost(&t, &s), 0, "a step back (a lane begun again) is no loss");
	s.seq = 14;
	cr_assert_eq(ip_tail_idle_lost(&t, &s), 1, "13 was lost");
}

Test(inproc_tail, an_exited_thread_s_tail_is_noted_before_the_next_thread_s_records)
{
	struct ip_tail t = { 0 };
	ip_tail_exit(&t, 5, 10);
	cr_assert(!t.exited, "a thread none of whose records was kept");
	keep(&t, 5, 8);
	ip_tail_exit(&t, 6, 10);
	cr_assert(!t.exited, "another thread's exit");
	ip_tail_exit(&t, 5, 10);
	cr_assert_eq(ip_tail_exit_lost(&t), 1, "9 was lost");
	struct ip_tail_seen s = idle(5, 10);
	cr_assert_eq(ip_tail_idle_lost(&t, &s), 0, "the exit's note, not an idle one");
	struct xflow_record n;
	ip_tail_note(&t, t.exit_seq, 4, 1, &n);
	cr_assert_eq(n.thread_seq, 9);
	ip_tail_noted(&t, &n);
	cr_assert(!t.known && !t.exited, "the lane waits for its next thread");
	keep(&t, 7, 10);
	s = idle(7, 12);
	cr_assert_eq(ip_tail_idle_lost(&t, &s), 1, "the next thread is followed from its first record");
	/* An exit with nothing lost is forgotten; one whose note the next
	 * thread's record overtook is given up. */
	ip_tail_exit(&t, 7, 11);
	cr_assert_eq(ip_tail_exit_lost(&t), 0);
	keep(&t, 7, 8);
	ip_tail_exit(&t, 7, 10);
	keep(&t, 8, 10);
	cr_assert(!t.exited);
	cr_assert_eq(ip_tail_exit_lost(&t), 0);
}
