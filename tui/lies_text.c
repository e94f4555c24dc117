/*
 * A domain's lies in words (tui/lies_text.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "tui/lies_text.h"

static const char *const keys[XFT_LIE_KINDS] = {
	"other_domain", "time_past", "time_future", "flood", "never_started", "after_end",
	"stats", "hop_share", "handoff_share",
};

/* The same, as a person reads it. */
static const char *const words[XFT_LIE_KINDS] = {
	"naming another domain", "stamped long past", "stamped in the future", "over its rate (flood)",
	"of flows it never started", "after their flow's end",
	"STATS replies refused", "new hops past its share", "handoffs past its share",
};

const char *xft_lie_key(unsigned k)
{
	return k < XFT_LIE_KINDS ? keys[k] : "?";
}

uint64_t xft_lie_count(const struct xflow_domain_lies *l, unsigned k)
{
	switch (k) {
	case 0: return l->other_domain;
	case 1: return l->time_past;
	case 2: return l->time_future;
	case 3: return l->flood;
	case 4: return l->never_started;
	case 5: return l->after_end;
	case 6: return l->stats;
	case 7: return l->hop_share;
	case 8: return l->handoff_share;
	default: return 0;
	}
}

void xft_lies_text(const struct xflow_domain_lies *l, char *buf, size_t len)
{
	if (!len)
		return;
	buf[0] = 0;
	size_t at = 0;
	for (unsigned k = 0; k < XFT_LIE_KINDS && at < len; k++) {
		uint64_t n = xft_lie_count(l, k);
		if (!n)
			continue;
		int w = snprintf(buf + at, len - at, "%s%" PRIu64 " %s", at ? ", " : "lies: ", n, words[k]);
		if (w < 0)
			break;
		at += (size_t)w;
	}
}
