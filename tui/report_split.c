/*
 * The scheduler join's status line in batch text (issue 24).  The split
 * itself is written by report.c with tui/split_text.h, for batch text,
 * JSON and snapshots alike.
 */
#include <inttypes.h>

#include "tui/report.h"
#include "tui/split_text.h"

void xft_report_sched_text(struct xft_app *app, FILE *f)
{
	const struct xft_sched_status *s = xft_agg_sched_status(app->agg);
	if (!s->joined) {
		fprintf(f, "sched not joined\n");
		return;
	}
	if (s->clock_error_ns == UINT64_MAX)
		fprintf(f, "sched joined, clock not measured yet");
	else
		fprintf(f, "sched joined, clock \u00b1%.1f \u00b5s", (double)s->clock_error_ns / 1e3);
	char why[160];
	xft_sched_lost_text(s, why, sizeof(why));
	fprintf(f, "; trace records %" PRIu64 ", lost %" PRIu64 "%s; hops split %" PRIu64 ", pending %" PRIu64
		   ", split early %" PRIu64 "\n",
		s->trace_records, s->trace_lost, why, s->hops_split, s->hops_pending, s->split_early);
}
