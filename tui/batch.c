/*
 * Batch renderers: plain text tables (like `top -b` and `xentop -b`) or
 * one JSON object per line, each interval, on standard output.
 */
#include <stdio.h>
#include <time.h>

#include "tui/app.h"
#include "tui/report.h"

#define BATCH_WIDTH 100
#define BATCH_FLOWS 10

static void text_frame(struct xft_app *app)
{
	char stamp[16];
	time_t t = time(NULL);
	struct tm tm;
	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%H:%M:%S", &tm);
	const char *note = app->nothing_woven ? XFT_NOTHING_WOVEN : app->note;
	printf("xflowtop - %s, iteration %lu%s%s\n", stamp, app->iteration, note ? " - " : "", note ? note : "");
	xft_report_summary_text(app, stdout);
	xft_report_sched_text(app, stdout);
	if (app->ndomains) {
		printf("\nDOMAINS\n");
		xft_report_domains_text(app, stdout);
	}
	printf("\nHOPS\n");
	xft_report_hops_text(app, stdout, BATCH_WIDTH, 0);
	if (app->frame.sched.joined) {
		printf("\nHOP SPLIT (where the time went: all flows, and the slowest 1 %%)\n");
		xft_report_split_text(app, stdout, 30);
	}
	printf("\nSLOWEST FLOWS\n");
	xft_report_flows_text(app, stdout, BATCH_WIDTH, BATCH_FLOWS);
	if (app->frame.nflow_shown) {
		printf("\nSLOWEST PATH: ");
		xft_report_path_text(app, stdout, &app->frame.flows[app->frame.flow_order[0]]);
		if (app->frame.sched.joined)
			xft_report_gaps_text(app, stdout, &app->frame.flows[app->frame.flow_order[0]], 30);
	}
	if (app->hv) {
		/* The collector's summary (xentrace: as `xenalyze --summary`). */
		printf("\nHYPERVISOR\n");
		xft_report_hv_text(app, stdout, BATCH_WIDTH, 1);
	}
	printf("\n");
	fflush(stdout);
}

static void json_frame(struct xft_app *app)
{
	struct xft_json j;
	xft_json_init(&j, stdout, 0);
	xft_report_json(app, &j, XFT_REPORT_BATCH);
	xft_json_end(&j);
	fflush(stdout);
	app->pending_note[0] = '\0'; /* said once */
}

/* No screen to show it on: standard error, which a script sees apart
 * from the tables. */
static void text_failed(struct xft_app *app, const char *what)
{
	(void)app;
	fprintf(stderr, "xflowtop: %s\n", what);
}

/* Standard error, and the "note" of the next object. */
static void json_failed(struct xft_app *app, const char *what)
{
	text_failed(app, what);
	snprintf(app->pending_note, sizeof(app->pending_note), "%s", what);
}

const struct xft_renderer xft_renderer_batch_text = {
	.name = "batch",
	.frame = text_frame,
	.failed = text_failed,
};

const struct xft_renderer xft_renderer_batch_json = {
	.name = "json",
	.frame = json_frame,
	.failed = json_failed,
};
