/*
 * The application and its loop: set-up errors, what the collectors tell
 * the model, and whole runs of the libuv loop with the batch renderers
 * (text and JSON), iterations, SIGUSR1 and the exit snapshot.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tui/apptest.h"
#include "tests/tui/jsonlite.h"

Test(app, init_needs_a_collector)
{
	struct xft_config cfg;
	struct xft_app *app = calloc(1, sizeof(*app));
	char err[512];
	xft_config_defaults(&cfg);
	cr_assert_neq(xft_app_init(app, &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "no collector"), "%s", err);
	xft_app_fini(app);
	snprintf(cfg.collector_paths[0], XFT_SPEC_LEN, "/nonexistent-plugins");
	cfg.ncollector_paths = 1;
	cfg.demo = 1;
	cr_assert_neq(xft_app_init(app, &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "/nonexistent-plugins"), "%s", err);
	xft_app_fini(app);
	free(app);
}

Test(app, collectors_inform_the_model)
{
	struct xft_app *app = apptest_new("synthetic:rate=500,guests=2", 1.0);
	cr_assert_eq(app->cfg.limits.carried_bits[0], 12, "the id crosses in 12 bits");
	cr_assert_eq(app->ndomains, 3);
	cr_assert_eq(app->naspects, 2);
	cr_assert_gt(app->records, 0);
	cr_assert_gt(app->frame.st.handoffs_matched, 0, "flows cross domains");
	cr_assert_str_eq(xft_sites_domain(&app->sites, 2), "linuxU2");
	apptest_free(app);
}

/* Run the loop with @r, stdout to a file; returns its contents. */
static char *run_loop(struct xft_app *app, const struct xft_renderer *r, int *rc)
{
	char path[] = "/tmp/xft-out-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	dup2(fd, STDOUT_FILENO);
	*rc = xft_app_run(app, r);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	close(fd);
	char *text = jl_read_file(path, NULL);
	unlink(path);
	return text;
}

static struct xft_app *loop_app(long iterations)
{
	struct xft_app *app = apptest_new("synthetic:rate=2000", 0);
	app->cfg.refresh_s = 0.05;
	app->cfg.iterations = iterations;
	return app;
}

Test(app, batch_text_runs_n_iterations)
{
	struct xft_app *app = loop_app(3);
	int rc;
	char *text = run_loop(app, &xft_renderer_batch_text, &rc);
	cr_assert_eq(rc, 0);
	cr_assert(text);
	int n = 0;
	for (const char *p = text; (p = strstr(p, "\nHOPS\n")); p++)
		n++;
	cr_assert_eq(n, 3, "%s", text);
	cr_assert(strstr(text, "SLOWEST FLOWS"));
	cr_assert(strstr(text, "iteration 3"));
	cr_assert_eq(app->iteration, 3);
	free(text);
	apptest_free(app);
}

Test(app, batch_json_one_object_per_line)
{
	struct xft_app *app = loop_app(2);
	int rc;
	char *text = run_loop(app, &xft_renderer_batch_json, &rc);
	cr_assert_eq(rc, 0);
	char *nl = strchr(text, '\n');
	cr_assert(nl);
	struct jl_value v;
	char err[160];
	cr_assert_eq(jl_parse(text, (size_t)(nl - text), &v, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(jl_get(&v, "iteration")->number, 1);
	jl_free(&v);
	cr_assert_eq(jl_parse(nl + 1, strlen(nl + 1) - 1, &v, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(jl_get(&v, "iteration")->number, 2);
	jl_free(&v);
	free(text);
	apptest_free(app);
}

static int renders;
static void frame_then_signal(struct xft_app *app)
{
	/* The first frame asks for a snapshot, the way `kill -USR1` does. */
	if (renders++ == 0)
		raise(SIGUSR1);
	(void)app;
}
static const struct xft_renderer signalling = { .name = "test", .frame = frame_then_signal };

Test(app, sigusr1_and_exit_snapshots)
{
	char dir[] = "/tmp/xft-app-XXXXXX";
	cr_assert(mkdtemp(dir));
	struct xft_app *app = loop_app(3);
	snprintf(app->cfg.snapshot_dir, sizeof(app->cfg.snapshot_dir), "%s", dir);
	snprintf(app->cfg.snapshot_on_exit, sizeof(app->cfg.snapshot_on_exit), "%s/last", dir);
	renders = 0;
	cr_assert_eq(xft_app_run(app, &signalling), 0);
	cr_assert(strstr(app->ui.message, "snapshot: "), "%s", app->ui.message);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "test $(ls %s/xflowtop-*.trace.json | wc -l) = 1 && test -s %s/last.json && "
			      "test -s %s/last.txt && test -s %s/last.trace.json", dir, dir, dir, dir);
	cr_assert_eq(system(cmd), 0, "snapshot files missing");
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
	apptest_free(app);
}
