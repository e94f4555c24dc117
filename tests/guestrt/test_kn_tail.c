/*
 * The kernel backend's loss notes, as bookkeeping (guestrt/hook/kernel/kn_tail.h):
 * once a stream's ring was read up to the next number it had published,
 * the numbers after its last kept record were lost, and the note says so.
 * The rings and the streams' map are the kernel's (tests/e2e/kernel_gaps.sh
 * runs them).
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

/* @cpu's @level was read up to @next. */
static void settled(struct kn_tail *t, uint32_t cpu, uint32_t level, uint32_t next)
{
	kn_tail_seen(t, cpu * XK_SEQ_LEVELS + level, next);
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

/* Each stream's note is its own: another stream's numbers, seen or kept,
 * change nothing of it, and a stream seen at what it kept lost nothing. */
Test(kn_tail, streams_are_noted_apart)
{
	struct kn_tail t;
	cr_assert_eq(kn_tail_init(&t, 2), 0);
	struct xflow_record r = rec(0, 0, 4);
	kn_tail_kept(&t, &r);
	settled(&t, 0, 0, 5);
	settled(&t, 1, 0, 9);
	settled(&t, 0, 1, 2);
	cr_assert_eq(kn_tail_lost(&t, S(0, 0)), 0, "stream (0, 0) kept its last");
	cr_assert_eq(kn_tail_lost(&t, S(1, 0)), 9, "stream (1, 0) kept nothing of 9");
	cr_assert_eq(kn_tail_lost(&t, S(0, 1)), 2, "stream (0, 1) kept nothing of 2");
	kn_tail_noted(&t, S(1, 0));
	cr_assert_eq(kn_tail_lost(&t, S(1, 0)), 0);
	cr_assert_eq(kn_tail_lost(&t, S(0, 1)), 2, "noting one stream notes no other");
	settled(&t, 5, 0, 9);
	cr_assert_eq(kn_tail_lost(&t, S(5, 0)), 0, "no such CPU");
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

/* The program's flow ids (kabi.h XK_FLOW_ID): each stream gives out its
 * own, so they must be odd, within the record's 48 bits and distinct
 * across streams and counts. */
Test(kn_tail, the_streams_flow_ids_are_odd_and_distinct)
{
	enum { NCPU = 6, BITS = 3, COUNTS = 50 };
	static uint64_t seen[NCPU * XK_SEQ_LEVELS * COUNTS];
	size_t n = 0;
	for (uint32_t c = 0; c < NCPU; c++)
		for (uint32_t l = 0; l < XK_SEQ_LEVELS; l++)
			for (uint64_t k = 0; k < COUNTS; k++) {
				uint64_t id = XK_FLOW_ID(k, c, l, BITS);
				cr_assert(id & 1, "odd");
				cr_assert(id <= XFLOW_FLOWID_MAX);
				for (size_t i = 0; i < n; i++)
					cr_assert_neq(seen[i], id, "cpu %u level %u count %llu repeats an id", c, l,
						      (unsigned long long)k);
				seen[n++] = id;
			}
	cr_assert_eq(XK_FLOW_ID(1ull << 44, 1, 0, 1), XK_FLOW_ID(0, 1, 0, 1),
		     "a stream's ids wrap after 2^(45 - cpu_bits)");
}
