/*
 * The memo of the scheduler join (tui/sched_join_memo.c), each way it
 * answers a split: moved along a piece, crossed over a breakpoint at t1,
 * at t0 on the sender's side or on the receiver's, at both ends at once,
 * or made anew when the hop changed its shape.  Whichever way, the split
 * must be the one a join with no memo makes (a fresh join fed the same
 * trace).  The memo is looked at (tui/sched_join_priv.h) to see which way
 * was taken, so that no test passes for want of reaching its path.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tui/sched_join.h"
#include "tui/sched_join_priv.h"

enum { RUN, RUNNABLE, BLOCKED };

#define BASE 10000
#define PERIOD 2000
#define CYCLES 12
#define ERR 100

/* The start of cycle @c. */
#define B(c) ((uint64_t)BASE + (uint64_t)(c) * PERIOD)

static void rs(struct xft_sj *j, uint64_t t, unsigned pcpu, unsigned vcpu, unsigned from, unsigned to)
{
	struct xflow_sched_event e = { .t_ns = t, .kind = XFLOW_SCHED_RUNSTATE, .pcpu = (uint16_t)pcpu,
				       .from = (uint8_t)from, .to = (uint8_t)to, .dom = 1, .vcpu = (uint16_t)vcpu };
	xft_sj_event(j, &e);
}

static void ev(struct xft_sj *j, uint64_t t, unsigned kind, unsigned pcpu, uint32_t arg)
{
	struct xflow_sched_event e = { .t_ns = t, .kind = (uint16_t)kind, .pcpu = (uint16_t)pcpu, .arg = arg };
	xft_sj_event(j, &e);
}

/* Domain 1's two vCPUs, each on a pCPU of its own, every PERIOD: the
 * receiver (vCPU 1) waits [0, 200) and runs, Xen interrupting it over
 * [700, 800); the sender (vCPU 0) waits [1000, 1200) and runs, Xen
 * interrupting it over [1250, 1300), and notifies (evtchn_op) at @hc.
 * Then a record of the receiver at B(5) + 100, while it waits 100 from
 * either run, makes the clock error ERR. */
static struct xft_sj *join_hc(uint64_t hc)
{
	struct xft_sj_limits l = { .max_vcpus = 4, .per_vcpu = 256, .per_vcpu_hc = 64, .max_pcpus = 2 };
	struct xft_sj *j;
	cr_assert_eq(xft_sj_new(&l, &j), 0);
	for (unsigned c = 0; c < CYCLES; c++) {
		rs(j, B(c), 1, 1, c ? RUN : BLOCKED, RUNNABLE);
		rs(j, B(c) + 200, 1, 1, RUNNABLE, RUN);
		ev(j, B(c) + 800, XFLOW_SCHED_XEN, 1, 100);
		rs(j, B(c) + 1000, 0, 0, c ? RUN : BLOCKED, RUNNABLE);
		rs(j, B(c) + 1200, 0, 0, RUNNABLE, RUN);
		ev(j, B(c) + 1300, XFLOW_SCHED_XEN, 0, 50);
		ev(j, B(c) + hc, XFLOW_SCHED_HYPERCALL, 0, 32);
	}
	rs(j, B(CYCLES), 1, 1, RUN, RUNNABLE); /* the watermark */
	struct xft_sj_end a = { B(5) - 500, 1, 0 }, b = { B(5) + 100, 1, 1 };
	struct xft_split s;
	xft_sj_split(j, &a, &b, 1, &s, NULL);
	cr_assert_eq(xft_sj_stats(j)->clock_error_ns, ERR);
	return j;
}

/* Notifying at 1900: far from any change, so tn has no clock window. */
static struct xft_sj *join(void)
{
	return join_hc(1900);
}

/* The trace of the join under test (as_anew() makes a fresh one). */
static uint64_t trace_hc = 1900;

/* The hop from the sender at @t0 to the receiver at @t1. */
static struct xft_split hop(struct xft_sj *j, uint64_t t0, uint64_t t1)
{
	struct xft_sj_end a = { t0, 1, 0 }, b = { t1, 1, 1 };
	struct xft_split s;
	struct xft_culprit c;
	xft_sj_split(j, &a, &b, 0, &s, &c);
	return s;
}

static struct memo *memo_of(struct xft_sj *j)
{
	struct xft_sj_end a = { 0, 1, 0 }, b = { 0, 1, 1 };
	return memo_slot(j, memo_end(&a), memo_end(&b));
}

/* @s is the split a join with no memo makes of the hop [t0, t1]. */
static void as_anew(const struct xft_split *s, uint64_t t0, uint64_t t1)
{
	struct xft_sj *f = join_hc(trace_hc);
	struct xft_split r = hop(f, t0, t1);
	xft_sj_free(f);
	for (unsigned k = 0; k < XFT_NSTATES; k++)
		cr_assert_eq(s->ns[k], r.ns[k], "[%lu, %lu] %s: %lu, anew %lu", (unsigned long)t0, (unsigned long)t1,
			     xft_state_name(k), (unsigned long)s->ns[k], (unsigned long)r.ns[k]);
	for (unsigned k = 0; k < XFT_UNK_NREASONS; k++)
		cr_assert_eq(s->unknown_ns[k], r.unknown_ns[k], "[%lu, %lu] '?' %s: %lu, anew %lu", (unsigned long)t0,
			     (unsigned long)t1, xft_unknown_reason_name(k), (unsigned long)s->unknown_ns[k],
			     (unsigned long)r.unknown_ns[k]);
}

/* Split [t0, t1] after [p0, p1], and check it against a split anew. */
static struct memo *after(struct xft_sj *j, uint64_t p0, uint64_t p1, uint64_t t0, uint64_t t1)
{
	struct xft_split s = hop(j, p0, p1);
	as_anew(&s, p0, p1);
	struct memo *m = memo_of(j);
	cr_assert(m->valid && !m->sums0 && !m->sums1, "[%lu, %lu] made a memo", (unsigned long)p0,
		  (unsigned long)p1);
	s = hop(j, t0, t1);
	as_anew(&s, t0, t1);
	return m;
}

/* t1 steps over the receiver's interrupt (two entries). */
Test(sched_join_memo, t1_crossing_an_interrupt_is_the_split_anew)
{
	struct xft_sj *j = join();
	struct memo *m = after(j, B(3) + 1500, B(4) + 500, B(3) + 1510, B(4) + 850);
	cr_assert(m->sums1 && m->t1 == B(4) + 850, "t1 crossed");
	cr_assert(!m->sums0 && m->t0 == B(3) + 1500, "t0 did not");
	xft_sj_free(j);
}

/* t1 steps into its clock window: within ERR of the receiver's wait. */
Test(sched_join_memo, t1_crossing_into_its_clock_window_is_the_split_anew)
{
	struct xft_sj *j = join();
	struct memo *m = after(j, B(3) + 1500, B(4) + 500, B(3) + 1510, B(4) + 1950);
	cr_assert(m->sums1 && m->own1 && m->t1 == B(4) + 1950, "t1 crossed into a window");
	struct xft_split s = hop(j, B(3) + 1520, B(4) + 1990);
	as_anew(&s, B(3) + 1520, B(4) + 1990);
	xft_sj_free(j);
}

/* t0 steps over the sender's interrupt and out of its clock window, short
 * of the notification at 1900. */
Test(sched_join_memo, t0_crossing_on_the_sender_is_the_split_anew)
{
	struct xft_sj *j = join();
	struct memo *m = after(j, B(3) + 1260, B(4) + 500, B(3) + 1400, B(4) + 510);
	cr_assert(m->cross0 == CROSS0_SENDER && m->sums0 && !m->own0 && m->t0 == B(3) + 1400, "t0 crossed");
	cr_assert(!m->sums1, "t1 did not");
	xft_sj_free(j);
}

/* No evtchn_op in the hop: the receiver, awake at t0, is charged all of
 * it, and t0 steps over the receiver's interrupt. */
Test(sched_join_memo, t0_crossing_on_the_awake_receiver_is_the_split_anew)
{
	struct xft_sj *j = join();
	struct memo *m = after(j, B(4) + 350, B(4) + 1500, B(4) + 850, B(4) + 1505);
	cr_assert(m->cross0 == CROSS0_AWAKE && m->sums0 && m->t0 == B(4) + 850, "t0 crossed");
	xft_sj_free(j);
}

/* t0's piece ends below t1's, which begins here past the receiver's
 * interrupt (801; the line halfway between the ends, 675, is below it);
 * t1 goes on in its piece, and t0, crossing the interrupt to 850, is past
 * where t1's piece began but far from t1: the line is drawn again halfway
 * between t0 and t1, and t0 crosses rather than the hop being made anew. */
Test(sched_join_memo, t0_crossing_past_the_line_t1_has_left_is_the_split_anew)
{
	struct xft_sj *j = join();
	struct memo *m = after(j, B(4) + 350, B(4) + 1000, B(4) + 360, B(4) + 1400);
	cr_assert(m->valid && !m->sums0 && !m->sums1 && m->t1 == B(4) + 1000, "t1 went on in its piece");
	cr_assert(m->lo1 <= B(4) + 850, "t1's piece began below 850: %lu", (unsigned long)(m->lo1 - B(4)));
	struct xft_split s = hop(j, B(4) + 850, B(4) + 1405);
	as_anew(&s, B(4) + 850, B(4) + 1405);
	cr_assert(m->valid && m->sums0 && m->t0 == B(4) + 850 && m->cross0 == CROSS0_AWAKE, "t0 crossed");
	cr_assert(m->lo1 > B(4) + 850 + ERR && m->lo1 <= B(4) + 1405, "the line drawn again: %lu",
		  (unsigned long)(m->lo1 - B(4)));
	for (uint64_t k = 1; k < 40; k++) {
		uint64_t t0 = B(4) + 850 + 5 * k, t1 = B(4) + 1405 + 11 * k;
		s = hop(j, t0, t1);
		as_anew(&s, t0, t1);
	}
	xft_sj_free(j);
}

Test(sched_join_memo, both_ends_crossing_in_one_split_is_the_split_anew)
{
	struct xft_sj *j = join();
	struct memo *m = after(j, B(3) + 1260, B(4) + 500, B(3) + 1400, B(4) + 850);
	cr_assert(m->sums0 && m->sums1 && m->t0 == B(3) + 1400 && m->t1 == B(4) + 850, "both crossed");
	xft_sj_free(j);
}

/* t1 past the sender's next evtchn_op makes it tn: a hop of another
 * shape, made anew (its memo charges t0 to the sender now). */
Test(sched_join_memo, t1_past_a_new_notification_is_made_anew)
{
	struct xft_sj *j = join();
	struct memo *m = after(j, B(4) + 350, B(4) + 1500, B(4) + 360, B(4) + 1950);
	cr_assert(!m->sums0 && !m->sums1 && m->cross0 == CROSS0_SENDER, "made anew");
	xft_sj_free(j);
}

/* t0 past tn leaves the hop no evtchn_op: another shape, made anew. */
Test(sched_join_memo, t0_past_the_notification_is_made_anew)
{
	struct xft_sj *j = join();
	struct memo *m = after(j, B(3) + 1500, B(4) + 500, B(3) + 1950, B(4) + 505);
	cr_assert(!m->sums0 && !m->sums1 && m->cross0 == CROSS0_AWAKE, "made anew");
	xft_sj_free(j);
}

/* Notifying at 1260, within ERR of the sender's run at 1200, tn has a
 * window [1160, 1360): t0's own window, past the change at 1000, grows
 * into it, and the two are one. */
Test(sched_join_memo, t0_window_meeting_tns_window_is_the_split_anew)
{
	trace_hc = 1260;
	struct xft_sj *j = join_hc(trace_hc);
	struct memo *m = after(j, B(3) + 1050, B(4) + 500, B(3) + 1110, B(4) + 505);
	cr_assert(m->sums0 && m->own0 && m->t0 == B(3) + 1110, "t0 crossed into tn's window");
	cr_assert(m->t0 + ERR >= m->tnwin0, "the windows met");
	for (uint64_t t0 = B(3) + 1000; t0 < B(3) + 1260; t0 += 7) {
		struct xft_split s = hop(j, t0, B(4) + 510);
		as_anew(&s, t0, B(4) + 510);
	}
	xft_sj_free(j);
}

/* Notifying at 1350, clear of every change: t0 within ERR of the sender's
 * run at 1200 has a window that reaches past tn, into the receiver's
 * awake side. */
Test(sched_join_memo, t0_window_past_tn_is_the_split_anew)
{
	trace_hc = 1350;
	struct xft_sj *j = join_hc(trace_hc);
	struct memo *m = after(j, B(3) + 1220, B(4) + 500, B(3) + 1280, B(4) + 505);
	cr_assert(m->sums0 && m->own0 && m->t0 == B(3) + 1280, "t0 crossed");
	cr_assert(m->t0 + ERR > m->spill0 && m->spill_awake, "its window reaches past tn");
	for (uint64_t t0 = B(3) + 1100; t0 < B(3) + 1350; t0 += 7) {
		struct xft_split s = hop(j, t0, B(4) + 510);
		as_anew(&s, t0, B(4) + 510);
	}
	xft_sj_free(j);
}

/* Hops sliding over the cycles as a model's flows make them, each a
 * little later than the one before and of a length that drifts, with and
 * without an evtchn_op inside: every split is the split anew, and each
 * way of the memo is taken. */
Test(sched_join_memo, sliding_hops_are_the_splits_anew_every_way)
{
	struct xft_sj *j = join();
	struct memo *m = memo_of(j);
	unsigned hits = 0, cross0s = 0, cross0a = 0, cross1s = 0, anew = 0;
	for (uint64_t i = 0; i < 1400; i++) {
		uint64_t t0 = B(2) + i * 7, t1 = t0 + 600 + (i * 37) % 900;
		int was = m->valid;
		uint64_t m0 = m->t0, m1 = m->t1;
		struct xft_split s = hop(j, t0, t1);
		as_anew(&s, t0, t1);
		/* A memo made anew has no sums yet; one crossed has those of
		 * the end it moved there. */
		int at0 = m->valid && m->sums0 && m->t0 == t0, at1 = m->valid && m->sums1 && m->t1 == t1;
		if (was && m->valid && m->t0 == m0 && m->t1 == m1) {
			hits++;
		} else if (at0 || at1) {
			cross0s += at0 && m->cross0 == CROSS0_SENDER;
			cross0a += at0 && m->cross0 == CROSS0_AWAKE;
			cross1s += at1;
		} else {
			anew++;
		}
	}
	cr_assert(hits && cross0s && cross0a && cross1s && anew,
		  "hits %u, t0 crossed %u (sender) %u (receiver), t1 %u, anew %u", hits, cross0s, cross0a, cross1s, anew);
	xft_sj_free(j);
}

static void split_plus(struct xft_split *sum, const struct xft_split *s)
{
	for (unsigned k = 0; k < XFT_NSTATES; k++)
		sum->ns[k] += s->ns[k];
	for (unsigned k = 0; k < XFT_UNK_NREASONS; k++)
		sum->unknown_ns[k] += s->unknown_ns[k];
}

static void assert_same_sum(const struct xft_split *got, const struct xft_split *want, const char *what)
{
	for (unsigned k = 0; k < XFT_NSTATES; k++)
		cr_assert_eq(got->ns[k], want->ns[k], "%s %s: %lu, anew %lu", what, xft_state_name(k),
			     (unsigned long)got->ns[k], (unsigned long)want->ns[k]);
	for (unsigned k = 0; k < XFT_UNK_NREASONS; k++)
		cr_assert_eq(got->unknown_ns[k], want->unknown_ns[k], "%s '?' %s: %lu, anew %lu", what,
			     xft_unknown_reason_name(k), (unsigned long)got->unknown_ns[k],
			     (unsigned long)want->unknown_ns[k]);
}

/* The sliding hops added to sums as the model adds them
 * (xft_sj_split_add()): to one of two hops' sums in turn, some to a
 * slowest sum too, some to none (a hop forgotten), now and then one of
 * other ends taking the memo's slot.  What the memo owes
 * them meanwhile, once paid (xft_sj_fold(), or xft_sj_reset()), makes
 * each sum the sum of the splits anew. */
Test(sched_join_memo, sums_the_memo_owes_are_the_sums_of_the_splits_anew)
{
	struct xft_sj *j = join();
	struct memo *m = memo_of(j);
	struct xft_split all[2], tail, want_all[2], want_tail;
	memset(all, 0, sizeof(all));
	memset(want_all, 0, sizeof(want_all));
	memset(&tail, 0, sizeof(tail));
	memset(&want_tail, 0, sizeof(want_tail));
	unsigned owed = 0, paid = 0;
	for (uint64_t i = 0; i < 1400; i++) {
		uint64_t t0 = B(2) + i * 7, t1 = t0 + 600 + (i * 37) % 900;
		unsigned h = (unsigned)(i / 40) % 2;
		int slow = i % 7 == 3, forgotten = i % 11 == 5;
		struct xft_sj_end a = { t0, 1, 0 }, b = { t1, 1, 1 };
		struct xft_culprit c;
		xft_sj_split_add(j, &a, &b, 0, forgotten ? NULL : &all[h], forgotten || !slow ? NULL : &tail, &c);
		owed += m->owed[OWED_ALL].n > 1;
		if (i % 13 == 6) {
			/* A hop to a CPU of no timeline, in the same slot:
			 * the memo is keyed anew for it, made anew for the
			 * next. */
			struct xft_sj_end o = { t1, 1, 2 };
			while (memo_slot(j, memo_end(&a), memo_end(&o)) != m)
				o.cpu++;
			xft_sj_split_add(j, &a, &o, 0, NULL, NULL, &c);
		}
		struct xft_sj *f = join_hc(trace_hc);
		struct xft_split r = hop(f, t0, t1);
		xft_sj_free(f);
		if (!forgotten) {
			split_plus(&want_all[h], &r);
			if (slow)
				split_plus(&want_tail, &r);
		}
		if (i % 300 == 299) {
			xft_sj_fold(j);
			cr_assert(!m->owed[OWED_ALL].to && !m->owed[OWED_TAIL].to, "all paid");
			assert_same_sum(&all[0], &want_all[0], "one hop's");
			assert_same_sum(&all[1], &want_all[1], "the other's");
			assert_same_sum(&tail, &want_tail, "the slowest");
			paid++;
		}
	}
	cr_assert(owed > 100 && paid, "the memo owed %u times", owed);
	/* A reset forgets the memo, not what it owed. */
	xft_sj_reset(j);
	assert_same_sum(&all[0], &want_all[0], "one hop's, reset");
	assert_same_sum(&all[1], &want_all[1], "the other's, reset");
	assert_same_sum(&tail, &want_tail, "the slowest, reset");
	xft_sj_free(j);
}

/* A hop split aside (the gaps of a slowest flow, long after) between the
 * ends the memo is of: the split a join with no memo makes, and the memo
 * is left as it was, so that the next hop in order is still its answer. */
Test(sched_join_memo, a_split_aside_leaves_the_memo_to_the_hops_in_order)
{
	struct xft_sj *j = join();
	struct memo *m = after(j, B(3) + 1500, B(4) + 500, B(3) + 1505, B(4) + 505);
	cr_assert(m->valid && m->t0 == B(3) + 1500 && m->t1 == B(4) + 500, "moved along its piece");
	struct memo before = *m;
	struct xft_sj_end a = { B(1) + 1260, 1, 0 }, b = { B(2) + 850, 1, 1 };
	struct xft_split s;
	struct xft_culprit c;
	xft_sj_split_aside(j, &a, &b, 0, &s, &c);
	as_anew(&s, B(1) + 1260, B(2) + 850);
	cr_assert(memcmp(&before, m, sizeof(before)) == 0, "the memo is as it was");
	cr_assert_eq(memo_get(j, m, memo_end(&a), memo_end(&b), B(3) + 1510, B(4) + 510), MEMO_HIT,
		     "the next hop in order is its answer");
	s = hop(j, B(3) + 1510, B(4) + 510);
	as_anew(&s, B(3) + 1510, B(4) + 510);
	xft_sj_free(j);
}
