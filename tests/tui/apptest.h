/*
 * tests/tui/apptest.h — an xflowtop app on the synthetic collector, for the
 * unit tests.  Header-only.
 */
#ifndef XFLOW_TESTS_APPTEST_H
#define XFLOW_TESTS_APPTEST_H

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "tui/app.h"
#include "xflow/clock.h"

/* An app reading @collector; it is refreshed once as if @secs seconds had
 * passed (the synthetic collector generates flows up to the time asked). */
static inline struct xft_app *apptest_new(const char *collector, double secs)
{
	struct xft_config cfg;
	char err[512];
	xft_config_defaults(&cfg);
	snprintf(cfg.collectors[0], sizeof(cfg.collectors[0]), "%s", collector);
	cfg.ncollectors = 1;
	cfg.limits.max_flows = 4096;
	cfg.limits.max_pending = 4096;
	cfg.limits.max_hops = 256;
	struct xft_app *app = calloc(1, sizeof(*app));
	cr_assert(app);
	cr_assert_eq(xft_app_init(app, &cfg, err, sizeof(err)), 0, "%s", err);
	if (secs > 0) {
		uint64_t now = xflow_monotonic_ns() + (uint64_t)(secs * 1e9);
		xft_app_refresh(app, now);
	}
	return app;
}

static inline void apptest_free(struct xft_app *app)
{
	xft_app_fini(app);
	free(app);
}

/* Row @y of the app's canvas after drawing at @rows x @cols. */
static inline void apptest_draw(struct xft_app *app, int rows, int cols)
{
	cr_assert_eq(xft_canvas_resize(&app->canvas, rows, cols), 0);
	xft_ui_draw(app, &app->canvas);
}

static inline int apptest_screen_has(struct xft_app *app, const char *text)
{
	char line[4096];
	for (int y = 0; y < app->canvas.rows; y++) {
		xft_canvas_row(&app->canvas, y, line, sizeof(line));
		if (strstr(line, text))
			return 1;
	}
	return 0;
}

#endif
