/*
 * xflowtop's costs: records per second into the aggregation model on one
 * core with 1K and 1M live flows, and the monitor's CPU per refresh when
 * records arrive at 1M/s (synthetic collector: collect, model, frame, and
 * the hops and slowest-flows views drawn into the off-screen canvas the
 * curses renderer copies).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collectors/builtin.h"
#include "tests/bench/bench_util.h"
#include "tui/aggregate.h"
#include "tui/app.h"
#include "xflow/clock.h"

#define POINTS 16
#define RUNS 3

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * @live flows in flight at once: each round gives every live slot its next
 * point; after POINTS rounds the slot's flow quits and a new one starts.
 */
static double feed_rate(uint32_t live, uint64_t nrecords, struct xft_agg_stats *st_out)
{
	struct xft_agg_limits l;
	xft_agg_limits_default(&l);
	l.max_flows = live + live / 4 + 1024;
	l.max_path = POINTS;
	l.max_pending = 65536;
	l.window_ns = 1000000; /* 1 ms of record time: 10K records */
	struct xft_agg *a;
	if (xft_agg_new(&l, NULL, NULL, &a)) {
		fprintf(stderr, "bench_tui: cannot allocate a model for %u flows\n", live);
		exit(1);
	}
	struct xflow_record r;
	memset(&r, 0, sizeof(r));
	r.version = XFLOW_RECORD_VERSION;
	uint64_t t = 1000000000, n = 0, c0 = cpu_ns();
	for (uint64_t round = 0; n < nrecords; round++) {
		uint32_t point = (uint32_t)(round % POINTS);
		uint64_t gen = round / POINTS;
		for (uint32_t s = 0; s < live && n < nrecords; s++, n++) {
			r.flow_id = (gen * live + s) % XFLOW_FLOWID_MAX + 1;
			r.site_id = point;
			r.flags = point == 0 ? XFLOW_REC_START : point == POINTS - 1 ? XFLOW_REC_QUIT : 0;
			t += 100;
			xft_agg_feed(a, &r, t);
			if ((n & 4095) == 0)
				xft_agg_tick(a, t);
		}
	}
	xft_agg_drain(a);
	uint64_t c1 = cpu_ns();
	*st_out = *xft_agg_stats(a);
	xft_agg_free(a);
	return (double)nrecords / ((double)(c1 - c0) / 1e9);
}

static void bench_feed(uint32_t live, uint64_t nrecords, int runs)
{
	double rates[RUNS];
	struct xft_agg_stats st;
	for (int i = 0; i < runs; i++)
		rates[i] = feed_rate(live, nrecords, &st);
	printf("aggregation, %8u live flows: %6.2f M records/s on one core (median of %d, %llu records; "
	       "flows finished %llu, evicted %llu, hops %s; model %.0f MiB)\n",
	       live, bench_median(rates, runs) / 1e6, runs, (unsigned long long)nrecords,
	       (unsigned long long)st.flows_finished, (unsigned long long)st.flows_evicted,
	       st.hops_dropped ? "dropped!" : "all kept", (double)st.memory_bytes / (1 << 20));
}

static void bench_refresh(void)
{
	struct xft_config cfg;
	char err[256];
	xft_config_defaults(&cfg);
	/* 62,500 flows/s of 16 points: 1M records/s. */
	snprintf(cfg.collectors[0], sizeof(cfg.collectors[0]), "synthetic:rate=62500");
	cfg.ncollectors = 1;
	struct xft_app *app = calloc(1, sizeof(*app));
	if (!app || xft_app_init(app, &cfg, err, sizeof(err))) {
		fprintf(stderr, "bench_tui: %s\n", err);
		exit(1);
	}
	xft_canvas_resize(&app->canvas, 50, 160);
	uint64_t now = xflow_monotonic_ns();
	enum { REFRESHES = 6 };
	double ingest[REFRESHES], view[REFRESHES];
	uint64_t recs = 0;
	for (int i = 0; i < REFRESHES; i++) {
		now += 1000000000u; /* one second of records per refresh */
		uint64_t before = app->records;
		/* A refresh is: collect and advance the model (here with the
		 * frame held back), then rows, quantiles, sort and the views. */
		app->ui.paused = 1;
		uint64_t c0 = cpu_ns();
		xft_app_refresh(app, now);
		uint64_t c1 = cpu_ns();
		app->ui.paused = 0;
		xft_frame_build(&app->frame, app->agg, &app->sites);
		xft_app_order(app);
		app->ui.view = XFT_VIEW_HOPS;
		xft_ui_draw(app, &app->canvas);
		app->ui.view = XFT_VIEW_FLOWS;
		xft_ui_draw(app, &app->canvas);
		uint64_t c2 = cpu_ns();
		ingest[i] = (double)(c1 - c0) / 1e6;
		view[i] = (double)(c2 - c1) / 1e6;
		recs = app->records - before;
	}
	/* The first refreshes warm the site cache and histograms up. */
	double in = bench_median(ingest + 2, REFRESHES - 2), vw = bench_median(view + 2, REFRESHES - 2);
	printf("refresh at %.2f M records/s (1-s refresh, 160x50): %.1f ms CPU = %.1f %% of a core; "
	       "of which collect+model %.1f ms, frame+hops+slowest views %.2f ms (median of %d)\n",
	       (double)recs / 1e6, in + vw, (in + vw) / 10.0, in, vw, REFRESHES - 2);
	xft_app_fini(app);
	free(app);
}

static void count_emit(void *ctx, const struct xflow_record *r, uint64_t t)
{
	(void)r;
	(void)t;
	++*(uint64_t *)ctx;
}

/* What the synthetic collector itself costs to make 1M records, so the
 * model's share of a refresh can be told apart. */
static void bench_generate(void)
{
	const struct xflow_collector_ops *ops = &xflow_collector_synthetic;
	struct xflow_collector *c;
	char err[128];
	if (ops->open("rate=62500", &c, err, sizeof(err)))
		return;
	uint64_t n = 0, now = xflow_monotonic_ns() + 1000000000u, c0 = cpu_ns();
	while (ops->read(c, now, count_emit, &n, 4096) > 0)
		;
	uint64_t c1 = cpu_ns();
	ops->close(c);
	printf("synthetic collector alone: %.1f ms CPU to generate %.2f M records\n", (double)(c1 - c0) / 1e6,
	       (double)n / 1e6);
}

int main(void)
{
	bench_feed(1000, 8000000, RUNS);
	bench_feed(1000000, 24000000, 1);
	bench_refresh();
	bench_generate();
	return 0;
}
