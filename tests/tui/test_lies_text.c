/*
 * A domain's lies in words (tui/lies_text.h): every kind has its key and
 * its count, the sentence names only those that are not 0, and a short
 * buffer is cut, never overrun.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tui/lies_text.h"

Test(lies_text, keys_and_counts_agree)
{
	struct xflow_domain_lies l = { .other_domain = 1, .time_past = 2, .time_future = 3, .flood = 4,
				       .never_started = 5, .after_end = 6, .stats = 7, .hop_share = 8,
				       .handoff_share = 9 };
	static const char *const want[] = { "other_domain", "time_past", "time_future", "flood", "never_started",
					    "after_end", "stats", "hop_share", "handoff_share" };
	cr_assert_eq(sizeof(want) / sizeof(want[0]), XFT_LIE_KINDS);
	uint64_t sum = 0;
	for (unsigned k = 0; k < XFT_LIE_KINDS; k++) {
		cr_expect_str_eq(xft_lie_key(k), want[k]);
		cr_expect_eq(xft_lie_count(&l, k), k + 1);
		sum += xft_lie_count(&l, k);
	}
	cr_expect_eq(sum, xflow_domain_lies_total(&l));
	cr_expect_str_eq(xft_lie_key(XFT_LIE_KINDS), "?");
}

Test(lies_text, names_only_what_was_told)
{
	char buf[256];
	struct xflow_domain_lies l = { 0 };
	xft_lies_text(&l, buf, sizeof(buf));
	cr_expect_str_eq(buf, "");
	l.time_future = 1;
	l.after_end = 12;
	xft_lies_text(&l, buf, sizeof(buf));
	cr_expect_str_eq(buf, "lies: 1 stamped in the future, 12 after their flow's end");
	char small[10];
	memset(small, 'x', sizeof(small));
	xft_lies_text(&l, small, sizeof(small));
	cr_expect_eq(strlen(small), sizeof(small) - 1);
	xft_lies_text(&l, small, 0);
}
