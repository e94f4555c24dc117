/*
 * xflowtop with the xentrace collector: the --xentrace and --cpu-hz options
 * and their configuration keys, the Hypervisor view (drawn at 80x24, sorted,
 * its tab shown only with such a collector), the text report and a failing
 * source's exit status, on a trace generated with the writer.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectors/xentrace.h"
#include "tests/tui/apptest.h"
#include "tui/report.h"

#define RUNNING XENTRACE_RS_RUNNING
#define RUNNABLE XENTRACE_RS_RUNNABLE
#define BLOCKED XENTRACE_RS_BLOCKED
#define IDLE XENTRACE_IDLE_DOMAIN

static char trace[64];

static void write_trace(void)
{
	snprintf(trace, sizeof(trace), "/tmp/xft-hv-XXXXXX");
	int fd = mkstemp(trace);
	cr_assert_geq(fd, 0);
	FILE *f = fdopen(fd, "w");
	struct xentrace_writer *w;
	cr_assert_eq(xentrace_writer_new(&w, f, 2, 4096), 0);
	xentrace_writer_runstate(w, 0, 100, IDLE, 0, RUNNING, RUNNABLE);
	xentrace_writer_runstate(w, 0, 1000, 1, 0, RUNNABLE, RUNNING);
	xentrace_writer_runstate(w, 0, 5000, 1, 0, RUNNING, BLOCKED);
	xentrace_writer_runstate(w, 0, 5000, IDLE, 0, RUNNABLE, RUNNING);
	xentrace_writer_runstate(w, 1, 200, IDLE, 1, RUNNING, RUNNABLE);
	xentrace_writer_runstate(w, 1, 300, 2, 0, RUNNABLE, RUNNING);
	for (unsigned i = 0; i < 5; i++) {
		xentrace_writer_vmexit(w, 1, 1000 + 100 * i, 48 /* EPT_VIOLATION */, 0);
		xentrace_writer_vmentry(w, 1, 1050 + 100 * i);
	}
	xentrace_writer_runstate(w, 1, 9000, 2, 0, RUNNING, BLOCKED);
	cr_assert_eq(xentrace_writer_close(w), 0);
	fclose(f);
}

static struct xft_app *app_on(const char *xentrace, const char *hz, int with_synthetic)
{
	struct xft_config cfg;
	char err[512];
	xft_config_defaults(&cfg);
	cr_assert_eq(xft_config_set(&cfg, "xentrace", xentrace, err, sizeof(err)), 0, "%s", err);
	if (hz)
		cr_assert_eq(xft_config_set(&cfg, "cpu-hz", hz, err, sizeof(err)), 0, "%s", err);
	if (with_synthetic) {
		snprintf(cfg.collectors[0], sizeof(cfg.collectors[0]), "synthetic:rate=100");
		cfg.ncollectors = 1;
	}
	cfg.limits.max_flows = 1024;
	cfg.limits.max_pending = 1024;
	cfg.limits.max_hops = 64;
	struct xft_app *app = calloc(1, sizeof(*app));
	cr_assert_eq(xft_app_init(app, &cfg, err, sizeof(err)), 0, "%s", err);
	return app;
}

static unsigned key(struct xft_app *app, int k)
{
	unsigned rx = xft_ui_key(app, k);
	xft_app_react(app, rx & ~(unsigned)XFT_RX_QUIT);
	return rx;
}

Test(hypervisor, options_and_keys_make_the_collector_spec)
{
	struct xft_config c;
	char err[512], spec[512];
	xft_config_defaults(&c);
	char a0[] = "xflowtop", a1[] = "-b", a2[] = "--xentrace", a3[] = "/tmp/x.trace", a4[] = "--cpu-hz",
	     a5[] = "2.4G";
	char *argv[] = { a0, a1, a2, a3, a4, a5, NULL };
	cr_assert_eq(xft_config_from_args(&c, 6, argv, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(xft_config_xentrace_spec(&c, spec, sizeof(spec)), 0);
	cr_assert_str_eq(spec, "xentrace:file=/tmp/x.trace,cpu-hz=2.4G");
	xft_config_defaults(&c);
	cr_assert_eq(xft_config_parse(&c, "t.conf", "xentrace = -\ncpu-hz = 2400000000\n", err, sizeof(err)), 0,
		     "%s", err);
	cr_assert_eq(xft_config_xentrace_spec(&c, spec, sizeof(spec)), 0);
	cr_assert_str_eq(spec, "xentrace:pipe,cpu-hz=2400000000");
	cr_assert_neq(xft_config_parse(&c, "t.conf", "xentrace = a,b\n", err, sizeof(err)), 0);
	cr_assert(strstr(err, "t.conf:1: bad value 'a,b' for 'xentrace'"), "%s", err);
	cr_assert_neq(xft_config_parse(&c, "t.conf", "cpu-hz = fast\n", err, sizeof(err)), 0);
	cr_assert(strstr(err, "cpu-hz"), "%s", err);
}

Test(hypervisor, the_view_at_80x24)
{
	write_trace();
	struct xft_app *app = app_on(trace, "1G", 1);
	cr_assert(app->have_hv_source);
	apptest_draw(app, 24, 80);
	cr_assert(apptest_screen_has(app, "7 Hypervisor"), "the tab is shown");
	xft_app_refresh(app, xflow_monotonic_ns() + 100000000);
	cr_assert_not_null(app->hv);
	cr_assert(app->hv->complete);
	cr_assert(app->src[1].ended && !app->src[1].failed, "%s", app->src[1].error);
	key(app, '7');
	cr_assert_eq(app->ui.view, XFT_VIEW_HYPERVISOR);
	apptest_draw(app, 24, 80);
	cr_assert(apptest_screen_has(app, "WAKE50"));
	cr_assert(apptest_screen_has(app, "complete"));
	/* d1 ran 4000 of 8900 cycles: 44.9 %. */
	cr_assert(apptest_screen_has(app, "d1    v0    44.9%"));
	cr_assert(apptest_screen_has(app, "EPT_VIOLATION"));
	cr_assert(apptest_screen_has(app, "d2    exit  EPT_VIOLATION            5   250ns   2.8%       50       50       50"));
	for (int y = 0; y < 24; y++) {
		char line[512];
		xft_canvas_row(&app->canvas, y, line, sizeof(line));
		cr_assert_leq(strlen(line), 80 * 3, "row %d", y);
	}
	/* Sort the vcpus by running time, most first: d2 (8700 cycles), then d1 (4000). */
	key(app, '>'), key(app, '>');
	cr_assert_eq(app->ui.list[XFT_VIEW_HYPERVISOR].sort, XFT_VCOL_RUN);
	cr_assert_eq(app->hv->vcpus[app->hv_vcpu_order[0]].domain, 2);
	/* Enter gives the events the focus; sorting applies to them. */
	key(app, XFT_KEY_ENTER);
	cr_assert_eq(app->ui.hv_focus, 1);
	key(app, '>');
	cr_assert_eq(app->ui.hv_events.sort, XFT_ECOL_KIND);
	cr_assert_eq(app->ui.list[XFT_VIEW_HYPERVISOR].sort, XFT_VCOL_RUN, "the vcpus keep theirs");
	/* Search finds in the table with the focus. */
	key(app, '/');
	for (const char *c = "EPT"; *c; c++)
		key(app, *c);
	key(app, XFT_KEY_ENTER);
	cr_assert_eq(app->hv->events[app->hv_event_order[app->ui.hv_events.sel]].code, 48);
	key(app, XFT_KEY_ENTER);
	cr_assert_eq(app->ui.hv_focus, 0);
	key(app, '/');
	key(app, 'd');
	key(app, '1');
	key(app, XFT_KEY_ENTER);
	cr_assert_eq(app->hv->vcpus[app->hv_vcpu_order[app->ui.list[XFT_VIEW_HYPERVISOR].sel]].domain, 1);

	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	cr_assert_eq(xft_report_text(app, f), 0);
	fclose(f);
	cr_assert(strstr(out, "== Hypervisor"), "%s", out);
	cr_assert(strstr(out, "|-- Domain 2 --|"), "%s", out);
	free(out);
	apptest_free(app);
	unlink(trace);
}

Test(hypervisor, no_tab_without_a_collector_that_sees_xen)
{
	struct xft_app *app = apptest_new("synthetic:rate=100", 0.5);
	apptest_draw(app, 24, 80);
	cr_assert_not(apptest_screen_has(app, "Hypervisor"));
	key(app, '7');
	cr_assert_neq(app->ui.view, XFT_VIEW_HYPERVISOR);
	for (int i = 0; i < 7; i++) {
		key(app, '\t');
		cr_assert_neq(app->ui.view, XFT_VIEW_HYPERVISOR);
	}
	apptest_free(app);
}

Test(hypervisor, a_truncated_trace_fails_its_source)
{
	write_trace();
	FILE *in = fopen(trace, "rb");
	char buf[65536];
	size_t n = fread(buf, 1, sizeof(buf), in);
	fclose(in);
	in = fopen(trace, "wb");
	fwrite(buf, 1, n - 5, in);
	fclose(in);
	struct xft_app *app = app_on(trace, "1G", 0);
	xft_app_refresh(app, xflow_monotonic_ns());
	cr_assert(app->src[0].ended);
	cr_assert(app->src[0].failed);
	cr_assert(strstr(app->src[0].error, "truncated"), "%s", app->src[0].error);
	cr_assert_not_null(app->hv, "what was read is shown");
	/* And it is not called complete: the view's status line, the batch
	 * text and the JSON say it is damaged, and where. */
	cr_assert_eq(app->hv->complete, 0);
	app->ui.view = XFT_VIEW_HYPERVISOR;
	apptest_draw(app, 24, 200);
	cr_expect(apptest_screen_has(app, "DAMAGED (offset "), "no damage on the status line");
	cr_expect(!apptest_screen_has(app, ", complete"));
	char *txt = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&txt, &len);
	xft_report_hv_text(app, f, 120, 0);
	fclose(f);
	cr_expect(strstr(txt, "records, DAMAGED (offset ") && strstr(txt, ": truncated: ") && strstr(txt, "skipped "),
		  "%s", txt);
	free(txt);
	f = open_memstream(&txt, &len);
	cr_assert_eq(xft_report_json_file(app, f), 0);
	fclose(f);
	cr_expect(strstr(txt, "\"complete\":false") || strstr(txt, "\"complete\": false"), "%.300s", strstr(txt, "complete"));
	cr_expect(strstr(txt, "\"damage\":\"offset ") || strstr(txt, "\"damage\": \"offset "), "no damage in the JSON");
	free(txt);
	apptest_free(app);
	unlink(trace);
}

Test(hypervisor, no_cpu_hz_is_refused_at_start)
{
	struct xft_config cfg;
	char err[512];
	xft_config_defaults(&cfg);
	cr_assert_eq(xft_config_set(&cfg, "xentrace", "/tmp/whatever.trace", err, sizeof(err)), 0);
	struct xft_app *app = calloc(1, sizeof(*app));
	cr_assert_neq(xft_app_init(app, &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "cpu-hz=HZ is required"), "%s", err);
	xft_app_fini(app);
	free(app);
}
