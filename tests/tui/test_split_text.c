/*
 * The hop split in words and cells (tui/split_text.c), on splits made by
 * hand: percentages that add up to 100 however they round, bars that fill
 * their width in proportion, empty, all-unknown and huge splits, the
 * sentence of each state, the culprit, the header's status, and buffers
 * too small for what they are asked.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "tui/split_text.h"

static struct xft_split split_of(uint64_t run, uint64_t wait, uint64_t notify, uint64_t backend, uint64_t blocked,
				 uint64_t offline, uint64_t xen, uint64_t unknown)
{
	struct xft_split s = { { run, wait, notify, backend, blocked, offline, xen, unknown } };
	return s;
}

static int sum(const int *v, int n)
{
	int t = 0;
	for (int i = 0; i < n; i++)
		t += v[i];
	return t;
}

/* A small deterministic generator: the same splits on every run. */
static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

Test(split_text, percentages_add_up_to_100_and_round_the_largest_remainders)
{
	int pct[XFT_NSTATES];
	struct xft_split s = split_of(1, 1, 1, 0, 0, 0, 0, 0);
	xft_split_percent(&s, pct);
	cr_assert_eq(pct[XFT_ST_RUN], 34, "the tie goes to the earlier state");
	cr_assert_eq(pct[XFT_ST_WAIT], 33);
	cr_assert_eq(pct[XFT_ST_NOTIFY], 33);
	cr_assert_eq(pct[XFT_ST_BACKEND], 0);
	s = split_of(2, 0, 0, 0, 0, 0, 0, 1);
	xft_split_percent(&s, pct);
	cr_assert_eq(pct[XFT_ST_RUN], 67);
	cr_assert_eq(pct[XFT_ST_UNKNOWN], 33);
	/* 0.4 % each for five states and the rest to one: rounded alone, the
	 * five would be 0 and the total 98. */
	s = split_of(4, 4, 4, 4, 4, 980, 0, 0);
	xft_split_percent(&s, pct);
	cr_assert_eq(sum(pct, XFT_NSTATES), 100);
	cr_assert_eq(pct[XFT_ST_OFFLINE], 98);
	uint64_t x = 88172645463325252u;
	for (int k = 0; k < 2000; k++) {
		for (int i = 0; i < XFT_NSTATES; i++)
			s.ns[i] = next(&x) % 4 == 0 ? 0 : next(&x) % (k % 2 ? 1000u : 10000000000u);
		if (!xft_split_total(&s))
			s.ns[XFT_ST_RUN] = 1;
		xft_split_percent(&s, pct);
		cr_assert_eq(sum(pct, XFT_NSTATES), 100, "split %d", k);
		double tot = 0;
		for (int i = 0; i < XFT_NSTATES; i++)
			tot += (double)s.ns[i];
		for (int i = 0; i < XFT_NSTATES; i++) {
			double exact = (double)s.ns[i] / tot * 100;
			cr_assert_lt(fabs(pct[i] - exact), 1.0, "split %d state %d: %d%% for %.3f%%", k, i, pct[i], exact);
			cr_assert(s.ns[i] || !pct[i], "a state without time got a share");
		}
	}
}

Test(split_text, an_empty_split_has_no_percentages_no_cells_and_no_words)
{
	struct xft_split s = { { 0 } };
	int pct[XFT_NSTATES];
	unsigned char cells[16];
	char buf[64] = "x";
	xft_split_percent(&s, pct);
	cr_assert_eq(sum(pct, XFT_NSTATES), 0);
	cr_assert_eq(xft_split_cells(&s, 16, cells), 0);
	cr_assert_eq(xft_split_bar_text(&s, 16, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "");
	cr_assert_eq(xft_split_percent_text(&s, -1, buf, sizeof(buf)), 0);
	cr_assert_str_eq(buf, "");
	cr_assert_eq(xft_split_biggest(&s), -1);
	cr_assert_eq(xft_split_cause_text(&s, NULL, NULL, buf, sizeof(buf)), -1);
	cr_assert_str_eq(buf, "");
	cr_assert_eq(xft_split_total(&s), 0);
}

Test(split_text, bars_fill_their_width_in_proportion_and_in_state_order)
{
	struct xft_split s = split_of(3, 1, 0, 0, 0, 0, 0, 0);
	char buf[64];
	cr_assert_eq(xft_split_bar_text(&s, 8, buf, sizeof(buf)), 8);
	cr_assert_str_eq(buf, "======##");
	s = split_of(0, 5, 0, 10, 0, 0, 0, 5);
	cr_assert_eq(xft_split_bar_text(&s, 4, buf, sizeof(buf)), 4);
	cr_assert_str_eq(buf, "#++?");
	cr_assert_eq(xft_split_cells(&s, 0, (unsigned char *)buf), 0, "no width, no cells");
	cr_assert_eq(xft_split_cells(&s, -3, (unsigned char *)buf), 0);
	uint64_t x = 2463534242u;
	unsigned char cells[200];
	for (int k = 0; k < 500; k++) {
		for (int i = 0; i < XFT_NSTATES; i++)
			s.ns[i] = next(&x) % 3 == 0 ? 0 : next(&x) % 100000;
		s.ns[XFT_ST_XEN] += 1;
		int width = 1 + (int)(next(&x) % 200);
		cr_assert_eq(xft_split_cells(&s, width, cells), width);
		int n[XFT_NSTATES] = { 0 };
		for (int c = 0; c < width; c++) {
			cr_assert_lt(cells[c], XFT_NSTATES);
			if (c)
				cr_assert_geq(cells[c], cells[c - 1], "states in their order");
			n[cells[c]]++;
		}
		double tot = (double)xft_split_total(&s);
		for (int i = 0; i < XFT_NSTATES; i++)
			cr_assert_lt(fabs(n[i] - (double)s.ns[i] / tot * width), 1.0, "width %d state %d", width, i);
	}
}

Test(split_text, one_glyph_per_state_and_all_unknown_is_all_question_marks)
{
	for (int i = 0; i < XFT_NSTATES; i++)
		for (int k = i + 1; k < XFT_NSTATES; k++)
			cr_assert_neq(xft_state_glyph(i), xft_state_glyph(k), "states %d and %d look alike", i, k);
	struct xft_split s = split_of(0, 0, 0, 0, 0, 0, 0, 123456);
	char buf[64];
	xft_split_bar_text(&s, 10, buf, sizeof(buf));
	cr_assert_str_eq(buf, "??????????");
	xft_split_percent_text(&s, -1, buf, sizeof(buf));
	cr_assert_str_eq(buf, "?unknown 100%");
	xft_split_cause_text(&s, NULL, NULL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "123.5us not attributable (?)");
}

Test(split_text, huge_values_saturate_instead_of_wrapping)
{
	struct xft_split s = split_of(UINT64_MAX, UINT64_MAX, 0, 0, 0, 0, 0, 0);
	cr_assert_eq(xft_split_total(&s), UINT64_MAX);
	int pct[XFT_NSTATES];
	xft_split_percent(&s, pct);
	cr_assert_eq(pct[XFT_ST_RUN], 50);
	cr_assert_eq(pct[XFT_ST_WAIT], 50);
	char buf[32];
	xft_split_bar_text(&s, 6, buf, sizeof(buf));
	cr_assert_str_eq(buf, "===###");
	struct xft_split acc = split_of(UINT64_MAX - 1, 5, 0, 0, 0, 0, 0, 0);
	xft_split_add(&acc, &s);
	cr_assert_eq(acc.ns[XFT_ST_RUN], UINT64_MAX);
	cr_assert_eq(acc.ns[XFT_ST_WAIT], UINT64_MAX);
	struct xft_split small = split_of(1, 2, 3, 4, 5, 6, 7, 15);
	for (int r = 0; r < XFT_UNK_NREASONS; r++)
		small.unknown_ns[r] = (uint64_t)r + 1;
	acc = small;
	xft_split_add(&acc, &small);
	for (int i = 0; i < XFT_NSTATES - 1; i++)
		cr_assert_eq(acc.ns[i], 2u * (unsigned)(i + 1));
	for (int r = 0; r < XFT_UNK_NREASONS; r++)
		cr_assert_eq(acc.unknown_ns[r], 2u * (unsigned)(r + 1), "the reasons are summed with the states");
	cr_assert_eq(acc.ns[XFT_ST_UNKNOWN], 30);
	acc.unknown_ns[XFT_UNK_CLOCK] = UINT64_MAX - 1;
	xft_split_add(&acc, &small);
	cr_assert_eq(acc.unknown_ns[XFT_UNK_CLOCK], UINT64_MAX, "and saturate as they do");
}

Test(split_text, percentages_biggest_first_tiny_ones_said_and_cut_at_whole_items)
{
	struct xft_split s = split_of(300, 620, 0, 0, 0, 0, 3, 77);
	char buf[128];
	xft_split_percent_text(&s, -1, buf, sizeof(buf));
	cr_assert_str_eq(buf, "#wait 62% =run 30% ?unknown 8% *xen <1%");
	/* Room for two items and part of a third: the third is left out. */
	size_t n = xft_split_percent_text(&s, 24, buf, sizeof(buf));
	cr_assert_str_eq(buf, "#wait 62% =run 30%");
	cr_assert_eq(n, strlen(buf));
	cr_assert_eq(xft_split_percent_text(&s, 5, buf, sizeof(buf)), 0, "not even one fits");
	cr_assert_str_eq(buf, "");
	/* A buffer too small stops at a whole item too. */
	char small[12];
	xft_split_percent_text(&s, -1, small, sizeof(small));
	cr_assert_str_eq(small, "#wait 62%");
}

Test(split_text, each_state_has_its_sentence)
{
	struct xft_culprit c = { .wait_ns = 1200000, .domain = 0, .vcpu = 1, .pcpu = 1 };
	static const struct {
		enum xft_state st;
		const char *text;
	} want[] = {
		{ XFT_ST_RUN, "ran 1.20ms on its vCPU" },
		{ XFT_ST_WAIT, "waited 1.20ms for pCPU1, which ran d0v1" },
		{ XFT_ST_NOTIFY, "notify 1.20ms until linux0 woke" },
		{ XFT_ST_BACKEND, "backend 1.20ms: linux0 ran until the hop ended" },
		{ XFT_ST_BLOCKED, "blocked 1.20ms after its wake" },
		{ XFT_ST_OFFLINE, "offline 1.20ms (paused, or parked by a cap)" },
		{ XFT_ST_XEN, "1.20ms in Xen itself" },
		{ XFT_ST_UNKNOWN, "1.20ms not attributable (?)" },
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct xft_split s = { { 0 } };
		s.ns[want[i].st] = 1200000;
		s.ns[(want[i].st + 1) % XFT_NSTATES] = 1000; /* a smaller one is not named */
		char buf[128];
		int st = xft_split_cause_text(&s, &c, "linux0", buf, sizeof(buf));
		cr_assert_eq(st, (int)want[i].st);
		cr_assert_str_eq(buf, want[i].text);
		cr_assert_eq(xft_split_state_text(&s, &c, want[i].st, "linux0", buf, sizeof(buf)), strlen(want[i].text));
	}
}

Test(split_text, the_wait_sentence_says_what_it_knows_of_the_culprit)
{
	struct xft_split s = split_of(10, 4900000, 0, 0, 0, 0, 0, 0);
	char buf[128];
	xft_split_cause_text(&s, NULL, NULL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "waited 4.90ms for a physical CPU");
	struct xft_culprit none = { 0 };
	xft_split_cause_text(&s, &none, NULL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "waited 4.90ms for a physical CPU", "wait_ns 0 is no culprit");
	struct xft_culprit part = { .wait_ns = 3000000, .domain = 2, .vcpu = 0, .pcpu = 3 };
	xft_split_cause_text(&s, &part, NULL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "waited 4.90ms for pCPU3, which ran d2v0 for 3.00ms of it");
	struct xft_culprit idle = { .wait_ns = 4900000, .domain = 32767, .vcpu = 2, .pcpu = 0 };
	xft_split_cause_text(&s, &idle, NULL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "waited 4.90ms for pCPU0, which ran idlev2");
	s = split_of(0, 0, 800000, 0, 0, 0, 0, 0);
	xft_split_cause_text(&s, NULL, NULL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "notify 800.0us until the receiver woke");
	xft_split_cause_text(&s, NULL, "", buf, sizeof(buf));
	cr_assert_str_eq(buf, "notify 800.0us until the receiver woke");
	cr_assert_eq(xft_split_state_text(&s, NULL, XFT_ST_WAIT, NULL, buf, sizeof(buf)), 0, "no wait, no words");
	cr_assert_str_eq(buf, "");
	cr_assert_eq(xft_split_state_text(&s, NULL, (enum xft_state)99, NULL, buf, sizeof(buf)), 0);
}

Test(split_text, sentences_are_cut_to_their_buffer)
{
	struct xft_split s = split_of(0, 0, 0, 0, 4900000, 0, 0, 0);
	char buf[8];
	cr_assert_eq(xft_split_cause_text(&s, NULL, NULL, buf, sizeof(buf)), XFT_ST_BLOCKED);
	cr_assert_str_eq(buf, "blocked");
	cr_assert_eq(xft_split_state_text(&s, NULL, XFT_ST_BLOCKED, NULL, buf, sizeof(buf)), 7);
	char one[1] = { 'x' };
	cr_assert_eq(xft_split_state_text(&s, NULL, XFT_ST_BLOCKED, NULL, one, 1), 0);
	cr_assert_eq(one[0], '\0');
	cr_assert_eq(xft_split_bar_text(&s, 40, one, 1), 0);
	cr_assert_eq(one[0], '\0');
	char five[5];
	cr_assert_eq(xft_split_bar_text(&s, 40, five, sizeof(five)), 4, "the bar shortened to its buffer");
	cr_assert_str_eq(five, "----");
	/* No buffer at all: nothing written. */
	cr_assert_eq(xft_sched_status_text(NULL, NULL, 0), 0);
	cr_assert_eq(xft_culprit_text(NULL, 5, NULL, 0), 0);
}

Test(split_text, the_flow_s_biggest_cause_over_its_gaps)
{
	struct xft_point path[4] = { { 0 } };
	struct xft_gap_split gaps[3] = { 0 };
	struct xft_flow_summary f = { .npoints = 4, .path = path };
	uint32_t g = 99;
	int st = -5;
	cr_assert_eq(xft_flow_biggest_gap(&f, &g, &st), -1, "no gaps: no split");
	f.gaps = gaps;
	cr_assert_eq(xft_flow_biggest_gap(&f, &g, &st), -1, "every gap empty");
	gaps[0].split.ns[XFT_ST_RUN] = 500;
	gaps[1].split.ns[XFT_ST_RUN] = 600;
	gaps[1].split.ns[XFT_ST_BLOCKED] = 700;
	gaps[2].split.ns[XFT_ST_WAIT] = 650;
	cr_assert_eq(xft_flow_biggest_gap(&f, &g, &st), 0);
	cr_assert_eq(g, 1);
	cr_assert_eq(st, XFT_ST_BLOCKED);
	/* The last gap counts (npoints - 1 of them), and no more. */
	gaps[2].split.ns[XFT_ST_WAIT] = 900;
	cr_assert_eq(xft_flow_biggest_gap(&f, &g, &st), 0);
	cr_assert_eq(g, 2);
	cr_assert_eq(st, XFT_ST_WAIT);
	f.npoints = 2;
	cr_assert_eq(xft_flow_biggest_gap(&f, &g, &st), 0);
	cr_assert_eq(g, 0);
	f.npoints = 1;
	cr_assert_eq(xft_flow_biggest_gap(&f, &g, &st), -1, "one point, no gap");
}

Test(split_text, the_culprit_of_a_hop_s_wait)
{
	char buf[128];
	struct xft_culprit c = { .wait_ns = 800, .domain = 0, .vcpu = 1, .pcpu = 1 };
	cr_assert_eq(xft_culprit_text(&c, 0, buf, sizeof(buf)), 0, "no wait");
	cr_assert_str_eq(buf, "");
	xft_culprit_text(&c, 1000, buf, sizeof(buf));
	cr_assert_str_eq(buf, "waited for pCPU1, which ran d0v1 (80% of the wait)");
	xft_culprit_text(&c, 500, buf, sizeof(buf));
	cr_assert_str_eq(buf, "waited for pCPU1, which ran d0v1 (100% of the wait)", "never more than all of it");
	xft_culprit_text(NULL, 1000, buf, sizeof(buf));
	cr_assert_str_eq(buf, "waited, but no switch record names the holder");
}

Test(split_text, the_header_s_word_on_the_join)
{
	char buf[64];
	struct xft_sched_status st = { 0 };
	xft_sched_status_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "sched: not joined");
	xft_sched_status_text(NULL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "sched: not joined");
	st.joined = 1;
	st.clock_error_ns = UINT64_MAX;
	xft_sched_status_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "sched: joined, clock not yet measured");
	st.clock_error_ns = 1200;
	st.clock_bound_ns = 3100;
	xft_sched_status_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "sched clock \u00b13.10us", "the bound, not the error seen");
	st.trace_lost = 12;
	xft_sched_status_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "sched clock \u00b13.10us, lost 12");
	st.clock_bound_ns = 0;
	st.trace_lost = 0;
	xft_sched_status_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "sched clock \u00b10ns", "a proven zero is not 'not measured'");
	/* Measured, not bounded: what was seen, as a floor. */
	st.clock_error_ns = 0;
	st.clock_bound_ns = UINT64_MAX;
	xft_sched_status_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "sched clock \u22650ns off, not bounded");
	st.clock_error_ns = 1200;
	st.trace_lost = 3;
	xft_sched_status_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "sched clock \u22651.20us off, not bounded, lost 3");
}

Test(split_text, the_join_s_counts_name_why_records_were_lost)
{
	char buf[512];
	struct xft_sched_status st = { .joined = 1, .trace_records = 1000, .hops_split = 900, .hops_pending = 3 };
	xft_sched_lost_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "");
	xft_sched_counts_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "1000 scheduler records, 0 lost; 900 hop samples split, 3 waiting for the trace");
	st.lost_records = 10;
	st.too_old = 2;
	st.trace_lost = 12;
	st.split_early = 5;
	xft_sched_counts_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "1000 scheduler records, 12 lost (10 lost before the join, 2 splits older than the "
			      "timelines keep); 900 hop samples split, 3 waiting for the trace, 5 split before the "
			      "trace came (the queue was full)");
	st.xen_idle = 4;
	xft_sched_counts_text(&st, buf, sizeof(buf));
	cr_assert(strstr(buf, "(the queue was full), 4 interrupts on pCPUs running no vCPU (in no hop)"), "%s", buf);
	st.xen_idle = 0;
	st.lost_records = st.too_old = 0;
	st.no_vcpu_room = st.trace_lost = 7;
	xft_sched_lost_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, " (7 events of vCPUs beyond the limit)");
	/* Cut short, still terminated, never past the buffer. */
	char small[12];
	size_t n = xft_sched_counts_text(&st, small, sizeof(small));
	cr_assert_eq(n, strlen(small));
	cr_assert_str_eq(small, "1000 schedu");
	n = xft_sched_lost_text(&st, small, sizeof(small));
	cr_assert_eq(n, strlen(small));
	cr_assert_eq(xft_sched_counts_text(NULL, buf, sizeof(buf)), 0);
	cr_assert_eq(xft_sched_lost_text(&st, buf, 0), 0);
}

/* The batch line scripts read (tests/e2e/sched_demo.sh, the Xen lab's
 * phase C): its words and fields in their order. */
Test(split_text, the_batch_line_keeps_its_fields)
{
	char buf[512];
	struct xft_sched_status st = { 0 };
	xft_sched_batch_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "sched not joined");
	st = (struct xft_sched_status){ .joined = 1, .clock_error_ns = UINT64_MAX, .clock_bound_ns = UINT64_MAX,
					.trace_records = 1000, .hops_split = 900, .hops_pending = 3 };
	xft_sched_batch_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "sched joined, clock not measured yet; trace records 1000, lost 0; hops split 900, "
			      "pending 3, split early 0");
	st.clock_error_ns = 1200;
	st.lost_records = st.trace_lost = 4;
	st.split_early = 2;
	xft_sched_batch_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "sched joined, clock \u22651.2 \u00b5s off, not bounded; trace records 1000, lost 4 (4 "
			      "lost before the join); hops split 900, pending 3, split early 2");
	st.clock_bound_ns = 3100;
	xft_sched_batch_text(&st, buf, sizeof(buf));
	cr_assert_str_eq(buf, "sched joined, clock \u00b13.1 \u00b5s; trace records 1000, lost 4 (4 lost before the "
			      "join); hops split 900, pending 3, split early 2");
	char small[8];
	cr_assert_eq(xft_sched_batch_text(&st, small, sizeof(small)), 7);
	cr_assert_str_eq(small, "sched j");
}

Test(split_text, a_hop_s_culprits_over_all_and_the_tail)
{
	char buf[256];
	struct xft_hop_split sp = { 0 };
	cr_assert_eq(xft_hop_culprits_text(&sp, buf, sizeof(buf)), 0, "no wait, no words");
	cr_assert_str_eq(buf, "");
	sp.tail.ns[XFT_ST_WAIT] = 100;
	sp.culprit_tail = (struct xft_culprit){ .wait_ns = 100, .domain = 3, .vcpu = 0, .pcpu = 2 };
	xft_hop_culprits_text(&sp, buf, sizeof(buf));
	cr_assert_str_eq(buf, "p99+: waited for pCPU2, which ran d3v0 (100% of the wait)", "only the tail waited");
	sp.all.ns[XFT_ST_WAIT] = 1000;
	sp.culprit_all = (struct xft_culprit){ .wait_ns = 250, .domain = 0, .vcpu = 1, .pcpu = 1 };
	xft_hop_culprits_text(&sp, buf, sizeof(buf));
	cr_assert_str_eq(buf, "waited for pCPU1, which ran d0v1 (25% of the wait); p99+: waited for pCPU2, which ran d3v0 "
			      "(100% of the wait)");
	sp.tail.ns[XFT_ST_WAIT] = 0;
	xft_hop_culprits_text(&sp, buf, sizeof(buf));
	cr_assert_str_eq(buf, "waited for pCPU1, which ran d0v1 (25% of the wait)");
	sp.culprit_all.wait_ns = 0;
	xft_hop_culprits_text(&sp, buf, sizeof(buf));
	cr_assert_str_eq(buf, "waited, but no switch record names the holder");
}

/* --- why '?' ---------------------------------------------------------------- */

/* 88 % run, 12 % '?': 8 % of it within the clock error, 3 % lost, 1 % past
 * the watermark. */
static struct xft_split with_reasons(void)
{
	struct xft_split s = split_of(880, 0, 0, 0, 0, 0, 0, 120);
	s.unknown_ns[XFT_UNK_CLOCK] = 80;
	s.unknown_ns[XFT_UNK_LOST] = 30;
	s.unknown_ns[XFT_UNK_EARLY] = 10;
	return s;
}

Test(split_text, the_unknown_names_its_biggest_reasons)
{
	struct xft_split s = with_reasons();
	char buf[128];
	xft_split_percent_text(&s, -1, buf, sizeof(buf));
	cr_assert_str_eq(buf, "=run 88% ?unknown 12% (clock 8%, lost 3%)");
	cr_assert_eq(xft_unknown_reasons_text(&s, 5, buf, sizeof(buf)), strlen("clock 8%, lost 3%, early 1%"));
	cr_assert_str_eq(buf, "clock 8%, lost 3%, early 1%", "all five add up to the '?' share");
	xft_unknown_reasons_text(&s, 1, buf, sizeof(buf));
	cr_assert_str_eq(buf, "clock 8%");
	/* A '?' under 1 %: its reasons are too. */
	s = split_of(100000, 0, 0, 0, 0, 0, 0, 30);
	s.unknown_ns[XFT_UNK_OLD] = 20;
	s.unknown_ns[XFT_UNK_NO_TRACE] = 10;
	xft_split_percent_text(&s, -1, buf, sizeof(buf));
	cr_assert_str_eq(buf, "=run 100% ?unknown <1% (old <1%, no_trace <1%)");
	/* No reason known: the '?' alone, as before. */
	s = split_of(880, 0, 0, 0, 0, 0, 0, 120);
	cr_assert_eq(xft_unknown_reasons_text(&s, 2, buf, sizeof(buf)), 0);
	xft_split_percent_text(&s, -1, buf, sizeof(buf));
	cr_assert_str_eq(buf, "=run 88% ?unknown 12%");
}

Test(split_text, a_narrow_line_drops_the_reasons_before_the_unknown)
{
	struct xft_split s = with_reasons();
	char buf[128];
	xft_split_percent_text(&s, 34, buf, sizeof(buf));
	cr_assert_str_eq(buf, "=run 88% ?unknown 12% (clock 8%)", "one reason where two do not fit");
	xft_split_percent_text(&s, 24, buf, sizeof(buf));
	cr_assert_str_eq(buf, "=run 88% ?unknown 12%", "none where one does not");
	xft_split_percent_text(&s, 20, buf, sizeof(buf));
	cr_assert_str_eq(buf, "=run 88%");
	char small[8];
	cr_assert_eq(xft_unknown_reasons_text(&s, 2, small, sizeof(small)), 0, "whole items only");
	cr_assert_str_eq(small, "");
}

Test(split_text, the_unknown_sentence_says_why)
{
	static const struct {
		enum xft_unknown_reason why;
		const char *text;
	} want[] = {
		{ XFT_UNK_NO_TRACE, "1.20ms not attributable: the trace has no timeline of its vCPU" },
		{ XFT_UNK_LOST, "1.20ms not attributable: the trace lost its vCPU's state (records lost)" },
		{ XFT_UNK_CLOCK, "1.20ms not attributable: within the clock error of a boundary" },
		{ XFT_UNK_OLD, "1.20ms not attributable: older than its vCPU's timeline keeps" },
		{ XFT_UNK_EARLY, "1.20ms not attributable: split before the trace reached it" },
	};
	char buf[128];
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		struct xft_split s = split_of(1000, 0, 0, 0, 0, 0, 0, 1200000);
		s.unknown_ns[want[i].why] = 1200000;
		cr_assert_eq(xft_split_cause_text(&s, NULL, NULL, buf, sizeof(buf)), XFT_ST_UNKNOWN);
		cr_assert_str_eq(buf, want[i].text);
	}
	struct xft_split s = split_of(1000, 0, 0, 0, 0, 0, 0, 1200000);
	s.unknown_ns[XFT_UNK_CLOCK] = 800000;
	s.unknown_ns[XFT_UNK_LOST] = 400000;
	xft_split_cause_text(&s, NULL, NULL, buf, sizeof(buf));
	cr_assert_str_eq(buf, "1.20ms not attributable, 800.0us of it within the clock error of a boundary",
			 "the biggest of several");
	cr_assert_str_eq(xft_unknown_reason_name(XFT_UNK_NO_TRACE), "no_trace");
	cr_assert_str_eq(xft_unknown_reason_name(XFT_UNK_NREASONS), "bad-reason");
}
