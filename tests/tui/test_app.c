/*
 * The application and its loop: set-up errors, what the collectors tell
 * the model, and whole runs of the libuv loop with the batch renderers
 * (text and JSON), iterations, SIGUSR1 and the exit snapshot.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* The batch JSON renderer, asking for a snapshot after its first object. */
static void json_frame_then_signal(struct xft_app *app)
{
	xft_renderer_batch_json.frame(app);
	if (renders++ == 0)
		raise(SIGUSR1);
}

/* Issue 19 item 11: in batch mode a snapshot that cannot be written is
 * said on standard error and in the next JSON object's note, and the run
 * ends with status 1. */
Test(app, batch_snapshot_failure_is_said)
{
	struct xft_app *app = loop_app(3);
	snprintf(app->cfg.snapshot_dir, sizeof(app->cfg.snapshot_dir), "/nonexistent-xft-dir");
	struct xft_renderer r = xft_renderer_batch_json;
	r.frame = json_frame_then_signal;
	renders = 0;
	char errpath[] = "/tmp/xft-err-XXXXXX";
	int efd = mkstemp(errpath);
	cr_assert(efd >= 0);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	dup2(efd, STDERR_FILENO);
	int rc;
	char *text = run_loop(app, &r, &rc);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(efd);
	char *errs = jl_read_file(errpath, NULL);
	unlink(errpath);
	cr_expect_eq(rc, 1, "exit status %d", rc);
	cr_expect(errs && strstr(errs, "xflowtop: snapshot failed: /nonexistent-xft-dir/xflowtop-"), "stderr: %s",
		  errs ? errs : "(none)");
	/* Objects 1, 2 and 3: the second carries the failure, once. */
	char *line = text, *next;
	unsigned k = 0, notes = 0;
	for (; line && *line; line = next, k++) {
		next = strchr(line, '\n');
		cr_assert(next);
		*next++ = '\0';
		struct jl_value v;
		char err[160];
		cr_assert_eq(jl_parse(line, strlen(line), &v, err, sizeof(err)), 0, "%s", err);
		const struct jl_value *note = jl_get(&v, "note");
		if (note && note->type == JL_STRING && strstr(note->string, "snapshot failed: /nonexistent-xft-dir/")) {
			cr_expect_eq(k, 1, "the note came with object %u", k + 1);
			notes++;
		}
		jl_free(&v);
	}
	cr_expect_eq(k, 3);
	cr_expect_eq(notes, 1);
	free(text);
	free(errs);
	apptest_free(app);
}

static int init_with_flows(struct xft_app *app, const char *collector, const char *flows, char *err, size_t errlen)
{
	struct xft_config cfg;
	xft_config_defaults(&cfg);
	snprintf(cfg.collectors[0], sizeof(cfg.collectors[0]), "%s", collector);
	cfg.ncollectors = 1;
	cfg.limits.max_flows = 1024;
	snprintf(cfg.flow_files[0], sizeof(cfg.flow_files[0]), "%s", flows);
	cfg.nflow_files = 1;
	memset(app, 0, sizeof(*app));
	return xft_app_init(app, &cfg, err, errlen);
}

/* Issue 19 item 7: every -f file is read and checked at start, whatever
 * the collectors, and refused with its error; one no collector weaves is
 * said so in the header. */
Test(app, flow_files_are_checked_at_start, .timeout = 20)
{
	struct xft_app *app = calloc(1, sizeof(*app));
	char err[1024] = "";
	cr_expect_eq(init_with_flows(app, "synthetic", "/nonexistent.xml", err, sizeof(err)), -ENOENT);
	cr_expect(strstr(err, "flow file /nonexistent.xml: No such file or directory"), "%s", err);
	xft_app_fini(app);
	cr_expect_eq(init_with_flows(app, "synthetic", "flows/bad/malformed.xml", err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "flows/bad/malformed.xml:6:1: error: malformed XML"), "%s", err);
	xft_app_fini(app);
	char fifo[] = "/tmp/xft-flows-fifo-XXXXXX";
	cr_assert_not_null(mkdtemp(fifo));
	char path[64];
	snprintf(path, sizeof(path), "%s/f.xml", fifo);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_expect_eq(init_with_flows(app, "synthetic", path, err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "not a regular file (a FIFO)"), "%s", err);
	xft_app_fini(app);
	unlink(path);
	rmdir(fifo);
	/* Good, but the synthetic collector weaves nothing: said. */
	cr_assert_eq(init_with_flows(app, "synthetic", "flows/netflow.xml", err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(app->nwoven, 0);
	cr_assert_eq(xft_canvas_resize(&app->canvas, 24, 200), 0);
	xft_ui_draw(app, &app->canvas);
	cr_expect(apptest_screen_has(app, "Flow files: none (not woven, no collector weaves flows: flows/netflow.xml)"));
	xft_app_fini(app);
	free(app);
}

/*
 * A collector that loses its one descriptor on its first read, as the agent
 * collector closes an agent's connection when the agent was killed, and
 * whose first read comes before the loop's first poll (the renderer's
 * first draw reads).  libuv then registered the poll's closed descriptor:
 * epoll_ctl failed with EBADF and libuv aborted (issue 30, item 5: one
 * xflowtop of six, their agents killed, died of SIGABRT).  The loop must
 * stop polling what a collector no longer names, and run to its end.
 */
struct losing {
	int fd[2];
	int reads;
};

static int losing_open(const char *options, struct xflow_collector **out, char *err, size_t errlen)
{
	(void)options;
	(void)err;
	(void)errlen;
	struct losing *l = calloc(1, sizeof(*l));
	if (!l || pipe(l->fd) != 0)
		return -ENOMEM;
	*out = (struct xflow_collector *)l;
	return 0;
}

static int losing_pollfds(struct xflow_collector *c, int *fds, int max)
{
	struct losing *l = (struct losing *)c;
	if (l->fd[0] < 0 || max < 1)
		return 0;
	fds[0] = l->fd[0];
	return 1;
}

static long losing_read(struct xflow_collector *c, uint64_t now, xflow_collector_emit_fn emit, void *ctx, size_t max)
{
	struct losing *l = (struct losing *)c;
	(void)now, (void)emit, (void)ctx, (void)max;
	if (l->reads++ == 0 && l->fd[0] >= 0) {
		close(l->fd[0]);
		close(l->fd[1]);
		l->fd[0] = l->fd[1] = -1;
	}
	return 0;
}

static void losing_close(struct xflow_collector *c)
{
	free(c);
}

static const struct xflow_collector_ops losing_ops = {
	.abi = XFLOW_COLLECTOR_ABI,
	.name = "losing",
	.help = "loses its descriptor on its first read",
	.open = losing_open,
	.pollfds = losing_pollfds,
	.read = losing_read,
	.close = losing_close,
};

static void draw_reading(struct xft_app *app)
{
	xft_app_collect(app, xflow_monotonic_ns(), 100);
}
static const struct xft_renderer reading_first = { .name = "test", .draw = draw_reading };

Test(app, a_descriptor_a_collector_lost_is_not_polled, .timeout = 20)
{
	struct xft_app *app = loop_app(3);
	char err[256];
	cr_assert_eq(xft_registry_add(&app->reg, &losing_ops, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(xft_app_add_source(app, "losing", err, sizeof(err)), 0, "%s", err);
	int rc;
	char *out = run_loop(app, &reading_first, &rc);
	cr_expect_eq(rc, 0);
	free(out);
	apptest_free(app);
}

/*
 * What the domain rows say.
 */

/* A weave that reaches no site is said only once no domain's plan is on
 * the way: an agent over Xen answers its plan seconds after the start,
 * and until then its aspects count no sites. */
Test(app, nothing_woven_waits_for_the_domains_planning)
{
	struct xft_app *app = apptest_new("synthetic:rate=2000", 0);
	app->naspects = 1;
	app->aspects[0].info = (struct xflow_aspect_info){ .name = "xflow netflow", .sites = 0, .enabled = 1 };
	app->ndomains = 2;
	app->domains[0].info = (struct xflow_domain_info){ .id = 0, .name = "dom0" };
	app->domains[1].info = (struct xflow_domain_info){ .id = 5, .name = "linuxU", .planning = 1 };
	cr_expect_eq(xft_app_nothing_woven(app), 0, "said while linuxU is still planning");
	app->domains[1].info.planning = 0;
	cr_expect_eq(xft_app_nothing_woven(app), 1, "not said once every domain is planned");
	app->aspects[0].info.sites = 3;
	cr_expect_eq(xft_app_nothing_woven(app), 0, "said with 3 sites woven");
	app->aspects[0].info.sites = 0;
	app->ndomains = 0;
	cr_expect_eq(xft_app_nothing_woven(app), 0, "said with no domain at all");
	apptest_free(app);
}

/* The model counts its refusals by domain id; two sources speaking of the
 * same domains must not each add them to their row, or the header's and
 * the JSON's totals count each refusal twice. */
Test(app, the_model_s_refusals_are_added_to_one_row_per_domain)
{
	struct xft_config cfg;
	char err[512];
	xft_config_defaults(&cfg);
	snprintf(cfg.collectors[0], sizeof(cfg.collectors[0]), "synthetic:rate=5000");
	snprintf(cfg.collectors[1], sizeof(cfg.collectors[1]), "synthetic:rate=5000");
	cfg.ncollectors = 2;
	cfg.limits.max_flows = 4096;
	cfg.limits.max_pending = 4096;
	cfg.limits.max_hops = 16; /* small: the domains' shares fill */
	struct xft_app *app = calloc(1, sizeof(*app));
	cr_assert(app);
	cr_assert_eq(xft_app_init(app, &cfg, err, sizeof(err)), 0, "%s", err);
	uint64_t now = xflow_monotonic_ns();
	for (int i = 1; i <= 4; i++)
		xft_app_refresh(app, now + (uint64_t)i * 500000000u);
	uint64_t refused = 0;
	for (unsigned d = 0; d < app->ndomains; d++) {
		uint16_t id = app->domains[d].info.id;
		struct xft_agg_refused ref;
		xft_agg_domain_refused(app->agg, id, &ref);
		uint64_t rows = 0, nrows = 0;
		for (unsigned e = 0; e < app->ndomains; e++)
			if (app->domains[e].info.id == id) {
				rows += app->domains[e].info.lies.hop_share;
				nrows++;
			}
		cr_assert_eq(nrows, 2, "domain %u has %lu rows, not one per source", id, (unsigned long)nrows);
		cr_expect_eq(rows, ref.hops, "domain %u: rows say %lu hops refused, the model %lu", id,
			     (unsigned long)rows, (unsigned long)ref.hops);
		refused += ref.hops;
	}
	cr_assert_gt(refused, 0, "no hop was refused: the test shows nothing");
	apptest_free(app);
}

/* A quit signal that comes once the loop has ended (a second Ctrl-C, or
 * timeout(1)'s signal sent to the child and then to its whole group) must
 * not find its default action, which kills, while the shutdown still
 * commits the session and lets the agents go; once the shutdown is done
 * it is taken, and the signal mask is what it was. */
Test(app, a_quit_signal_during_the_shutdown_does_not_kill_it)
{
	sigset_t before, after;
	pthread_sigmask(SIG_SETMASK, NULL, &before);
	struct xft_app *app = loop_app(2);
	int rc;
	free(run_loop(app, &xft_renderer_batch_text, &rc));
	cr_assert_eq(rc, 0);
	/* Here a killed test process would be a crash, not a failure. */
	raise(SIGINT);
	raise(SIGTERM);
	raise(SIGUSR1);
	sigset_t pending;
	sigpending(&pending);
	cr_expect(sigismember(&pending, SIGINT) && sigismember(&pending, SIGTERM), "the quit signals wait");
	apptest_free(app);
	sigpending(&pending);
	cr_expect(!sigismember(&pending, SIGINT) && !sigismember(&pending, SIGUSR1), "taken by the shutdown's end");
	pthread_sigmask(SIG_SETMASK, NULL, &after);
	cr_expect(!sigismember(&after, SIGINT) && !sigismember(&after, SIGTERM) && !sigismember(&after, SIGHUP),
		  "the mask is what it was");
	cr_expect_eq(sigismember(&after, SIGUSR1), sigismember(&before, SIGUSR1));
}
