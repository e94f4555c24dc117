/*
 * The kernel backend's loss notes, as bookkeeping (guestrt/hook/kernel/kn_tail.h):
 * when the two reads of the streams' map around an emptied ring buffer
 * prove that numbers after a stream's last kept record were lost, and the
 * note that says so.  The map reads and the ring buffer are the kernel's
 * (tests/e2e/kernel_gaps.sh runs them).
 */
#include <criterion/criterion.h>
#include <string.h>

#include "guestrt/hook/kernel/kn_tail.h"
#include "xflow/record.h"

static struct xflow_record rec(uint32_t cpu, uint32_t level, uint32_t seq)
{
	struct xflow_record r;
	memset(&r, 0, sizeof(r));
	r.version = XFLOW_RECORD_VERSION;
	r.flags = XFLOW_REC_SEQ_COUNTS_LOST;
	r.thread_id = XK_STREAM(cpu, level);
	r.thread_seq = seq;
	r.flow_id = 1;
	return r;
}

/* Both reads say @next for @cpu's @level, no run in flight. */
static void settled(struct kn_tail *t, uint32_t cpu, uint32_t level, uint32_t next)
{
	t->a[cpu].next[level] = t->b[cpu].next[level] = next;
	t->a[cpu].busy[level] = t->b[cpu].busy[level] = 0;
	kn_tail_settle(t);
}

#define S(cpu, level) ((cpu) * XK_SEQ_LEVELS + (level))

Test(kn_tail, numbers_after_the_last_kept_are_noted_first_to_last)
{
	struct kn_tail t;
	cr_assert_eq(kn_tail_init(&t, 4), 0);
	struct xflow_record r = rec(2, 1, 0);
	kn_tail_kept(&t, &r);
	r = rec(2, 1, 1);
	kn_tail_kept(&t, &r);
	settled(&t, 2, 1, 2);
	cr_assert_eq(kn_tail_lost(&t, S(2, 1)), 0, "everything numbered was kept");
	settled(&t, 2, 1, 7);
	cr_assert_eq(kn_tail_lost(&t, S(2, 1)), 5, "2 to 6 were lost");
	struct xflow_record n;
	kn_tail_note(&t, S(2, 1), 9, 12345, &n);
	cr_assert_eq(n.thread_id, XK_STREAM(2, 1));
	cr_assert_eq(n.thread_seq, 6, "the note is the last lost");
	cr_assert_eq(n.ndata, 1);
	cr_assert_eq(n.data[0], 2, "and names the first");
	cr_assert_eq(n.domain_id, 9);
	cr_assert_eq(n.timestamp, 12345);
	unsigned char w[XFLOW_RECORD_SIZE];
	struct xflow_record back;
	xflow_record_encode(&n, w);
	cr_assert_eq(xflow_record_decode(w, sizeof(w), &back, NULL), 0, "the note is a valid record");
	kn_tail_noted(&t, S(2, 1));
	cr_assert_eq(kn_tail_lost(&t, S(2, 1)), 0, "noted once");
	r = rec(2, 1, 7);
	kn_tail_kept(&t, &r);
	settled(&t, 2, 1, 8);
	cr_assert_eq(kn_tail_lost(&t, S(2, 1)), 0, "the stream goes on from the note");
	kn_tail_fini(&t);
}

/* A stream that kept nothing: its numbers began at 0, its note says so. */
Test(kn_tail, a_stream_that_kept_nothing_is_noted_from_zero)
{
	struct kn_tail t;
	cr_assert_eq(kn_tail_init(&t, 2), 0);
	settled(&t, 1, 0, 3);
	cr_assert_eq(kn_tail_lost(&t, S(1, 0)), 3);
	struct xflow_record n;
	kn_tail_note(&t, S(1, 0), 0, 1, &n);
	cr_assert_eq(n.data[0], 0);
	cr_assert_eq(n.thread_seq, 2);
	cr_assert_eq(kn_tail_lost(&t, S(0, 0)), 0, "a stream that numbered nothing lost nothing");
	kn_tail_fini(&t);
}

/* Whatever may still be on its way says nothing: a run holding the level
 * in either read, or a number taken between them. */
Test(kn_tail, a_run_in_flight_proves_nothing)
{
	struct kn_tail t;
	cr_assert_eq(kn_tail_init(&t, 1), 0);
	settled(&t, 0, 2, 5);
	t.a[0].busy[2] = 1;
	cr_assert_eq(kn_tail_lost(&t, S(0, 2)), 0, "busy before");
	settled(&t, 0, 2, 5);
	t.b[0].busy[2] = 1;
	kn_tail_settle(&t);
	cr_assert_eq(kn_tail_lost(&t, S(0, 2)), 0, "busy after");
	settled(&t, 0, 2, 5);
	t.b[0].next[2] = 6;
	cr_assert_eq(kn_tail_lost(&t, S(0, 2)), 0, "a number taken between the reads");
	settled(&t, 0, 2, 5);
	t.a[0].busy[1] = 1;
	cr_assert_eq(kn_tail_lost(&t, S(0, 2)), 5, "another level busy before is another stream's");
	kn_tail_fini(&t);
}

/* A run of any stream busy after the ring was emptied may hold the ring
 * buffer's head, uncommitted, with other streams' committed records
 * behind it, unread: no stream is concluded until none is busy. */
Test(kn_tail, any_run_in_flight_after_the_ring_was_emptied_holds_every_stream)
{
	struct kn_tail t;
	cr_assert_eq(kn_tail_init(&t, 2), 0);
	settled(&t, 0, 0, 5);
	cr_assert_eq(kn_tail_lost(&t, S(0, 0)), 5);
	t.b[1].busy[3] = 1;
	kn_tail_settle(&t);
	cr_assert_eq(kn_tail_lost(&t, S(0, 0)), 0, "CPU 1's interrupt level was running");
	t.b[1].busy[3] = 0;
	kn_tail_settle(&t);
	cr_assert_eq(kn_tail_lost(&t, S(0, 0)), 5);
	kn_tail_fini(&t);
}

/* Records that are no stream's (unnumbered, a task's thread_id, a CPU
 * past the map) change nothing; a stream behind what the agent kept (a
 * reload not seen yet) and the numbers' wrap are handled. */
Test(kn_tail, foreign_records_steps_back_and_the_wrap)
{
	struct kn_tail t;
	cr_assert_eq(kn_tail_init(&t, 2), 0);
	struct xflow_record r = rec(0, 0, 40);
	r.flags = 0;
	kn_tail_kept(&t, &r);
	r = rec(0, 0, 40);
	r.thread_id = 1234;
	kn_tail_kept(&t, &r);
	r = rec(5, 0, 40);
	kn_tail_kept(&t, &r);
	settled(&t, 0, 0, 0);
	cr_assert_eq(kn_tail_lost(&t, S(0, 0)), 0, "nothing of those counted as stream 0's");
	cr_assert_eq(kn_tail_lost(&t, S(5, 0)), 0, "no such CPU");
	r = rec(0, 0, 40);
	kn_tail_kept(&t, &r);
	settled(&t, 0, 0, 3);
	cr_assert_eq(kn_tail_lost(&t, S(0, 0)), 0, "a stream behind the last kept: another program's");
	r = rec(1, 3, UINT32_MAX - 1);
	kn_tail_kept(&t, &r);
	settled(&t, 1, 3, 2);
	cr_assert_eq(kn_tail_lost(&t, S(1, 3)), 3, "UINT32_MAX, 0 and 1");
	struct xflow_record n;
	kn_tail_note(&t, S(1, 3), 0, 1, &n);
	cr_assert_eq(n.data[0], UINT32_MAX);
	cr_assert_eq(n.thread_seq, 1);
	kn_tail_fini(&t);
}
