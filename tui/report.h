/*
 * tui/report.h — the frame as text tables, as JSON, and as a Chrome/Perfetto
 * trace.  Batch mode prints these each interval; snapshots write them to
 * files.  The JSON is described by tui/snapshot-schema.json and xflowtop(1).
 */
#ifndef XFLOW_TUI_REPORT_H
#define XFLOW_TUI_REPORT_H

#include <stdio.h>

#include "tui/app.h"
#include "tui/json.h"

#define XFT_SNAPSHOT_SCHEMA "xflowtop-snapshot/5"

/* One table of the frame, @width columns wide, at most @max rows (0: all). */
void xft_report_hops_text(struct xft_app *app, FILE *f, int width, size_t max);
void xft_report_flows_text(struct xft_app *app, FILE *f, int width, size_t max);
/* The domains the collectors see: id, name, live or gone, counts, how
 * each is reached (in full, last). */
void xft_report_domains_text(struct xft_app *app, FILE *f);
/* A flow's path as the paper's Table 2. */
void xft_report_path_text(struct xft_app *app, FILE *f, const struct xft_flow_row *r);
/* The summary lines (like the TUI's header, for files). */
void xft_report_summary_text(struct xft_app *app, FILE *f);

/* The hypervisor's state (xentrace), when a collector gives one: a status
 * line, then with @tables the vcpu and event tables (@width columns), then
 * the collector's own text (xentrace: comparable line for line with
 * `xenalyze --summary`), lost records and unknown events.  Nothing when
 * there is none. */
void xft_report_hv_text(struct xft_app *app, FILE *f, int width, int tables);

/* Where the shown hops' time went (tui/hop_split.h): per hop, a bar and
 * the states' shares over all its flows and over its slowest 1 %, and who
 * held the CPU it waited for; one line instead when no scheduler trace is
 * joined.  @width: the bars' cells. */
void xft_report_split_text(struct xft_app *app, FILE *f, int width);
/* Each gap of @r's path by state, and its biggest cause; nothing when the
 * flow has no split (gaps NULL). */
void xft_report_gaps_text(struct xft_app *app, FILE *f, const struct xft_flow_row *r, int width);
/* The scheduler join's status line for batch text, in the words of
 * tui/split_text.h (xft_sched_batch_text). */
void xft_report_sched_text(struct xft_app *app, FILE *f);

/* The whole text report of a snapshot. */
int xft_report_text(struct xft_app *app, FILE *f);

enum xft_report_flags {
	XFT_REPORT_HISTOGRAMS = 1u << 0, /* hop histograms (snapshots) */
	XFT_REPORT_BATCH = 1u << 1,      /* add "iteration" */
};
/* The frame as one JSON object. */
void xft_report_json(struct xft_app *app, struct xft_json *j, unsigned flags);
int xft_report_json_file(struct xft_app *app, FILE *f);
/* The slowest flows as trace-event JSON for Perfetto / chrome://tracing. */
int xft_report_trace(struct xft_app *app, FILE *f);

/* Write @path atomically: @fill writes into memory, which goes to a
 * temporary file in the same directory, synced and renamed over @path only
 * when @fill returned 0 and every byte was written.  The old file stays
 * whole otherwise, and the error is the system's (ENOSPC, EDQUOT...). */
int xft_write_atomic(const char *path, int (*fill)(void *arg, FILE *f), void *arg, char *err,
		     size_t errlen);

#endif
