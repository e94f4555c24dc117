/*
 * The Prometheus exporter's costs (--listen), at 10,000 hops:
 *
 *   - a scrape: what the loop spends gathering the figures (publish), what
 *     the server's thread spends writing them (the first scrape of a
 *     snapshot), and a scrape of a snapshot already written, with the
 *     default metrics-max-hops (64) and the largest (1,024);
 *   - a refresh (collect, model, frame, and the publish when on) with the
 *     exporter off and on, in one run, interleaved, as a ratio: with every
 *     hop moving each refresh, and with every hop idle.
 *
 * Records are fed to the model directly (each hop a START and a QUIT at
 * its own pair of sites), so the figures are the monitor's, not a
 * collector's.  CPU times are the loop thread's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/bench/bench_util.h"
#include "tests/export/httpc.h"
#include "tui/app.h"
#include "tui/metrics.h"
#include "xflow/clock.h"

#define HOPS 10000
#define PER_HOP 10 /* samples per hop per refresh: 200,000 records */
#define ROUNDS 7

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static struct xft_app *app_new(int listen, uint32_t max_series)
{
	struct xft_config cfg;
	char err[512];
	xft_config_defaults(&cfg);
	/* A source the app needs; at one flow a second it adds nothing. */
	snprintf(cfg.collectors[0], sizeof(cfg.collectors[0]), "synthetic:rate=1");
	cfg.ncollectors = 1;
	/* One domain makes every hop, and a domain holds at most half the
	 * table (its share, tui/aggregate.h). */
	cfg.limits.max_hops = 2 * (HOPS + 64);
	cfg.limits.max_flows = 1 << 16;
	cfg.limits.max_pending = 1 << 19;
	if (listen)
		snprintf(cfg.listen, sizeof(cfg.listen), "127.0.0.1:0");
	if (max_series)
		cfg.metrics_max_hops = max_series;
	struct xft_app *app = calloc(1, sizeof(*app));
	if (!app || xft_app_init(app, &cfg, err, sizeof(err))) {
		fprintf(stderr, "bench_export: %s\n", err);
		exit(1);
	}
	return app;
}

static void app_free(struct xft_app *app)
{
	xft_app_fini(app);
	free(app);
}

struct clock {
	uint64_t t, id, now;
};

/* PER_HOP flows through each of HOPS hops, record time running on. */
static void feed(struct xft_app *app, struct clock *c)
{
	struct xflow_record r;
	memset(&r, 0, sizeof(r));
	r.version = XFLOW_RECORD_VERSION;
	for (unsigned k = 0; k < PER_HOP; k++)
		for (unsigned h = 0; h < HOPS; h++) {
			r.flow_id = ++c->id % XFLOW_FLOWID_MAX + 1;
			r.site_id = 2 * h;
			r.flags = XFLOW_REC_START;
			xft_agg_feed(app->agg, &r, c->t += 10);
			r.site_id = 2 * h + 1;
			r.flags = XFLOW_REC_QUIT;
			xft_agg_feed(app->agg, &r, c->t + 1000 + (h * 37 + k * 101) % 50000);
		}
	c->t += 1000000;
}

/* One refresh's CPU, in ms: records of one more second, or none. */
static double refresh(struct xft_app *app, struct clock *c, int moving)
{
	if (moving)
		feed(app, c);
	c->now += 1000000000u;
	uint64_t c0 = cpu_ns();
	xft_app_refresh(app, c->now);
	return (double)(cpu_ns() - c0) / 1e6;
}

static void bench_scrape(uint32_t max_series)
{
	struct xft_app *app = app_new(1, max_series);
	struct clock c = { .t = xflow_monotonic_ns(), .now = xflow_monotonic_ns() + 1000000000u };
	refresh(app, &c, 1);
	refresh(app, &c, 1);
	size_t nh;
	xft_agg_hops(app->agg, &nh);
	double publish[ROUNDS], first[ROUNDS], again[ROUNDS];
	size_t bytes = 0;
	for (int i = 0; i < ROUNDS; i++) {
		feed(app, &c);
		c.now += 1000000000u;
		xft_app_refresh(app, c.now);
		/* The loop's share: gathering the figures once more. */
		uint64_t c0 = cpu_ns();
		xft_metrics_publish(app);
		publish[i] = (double)(cpu_ns() - c0) / 1e6;
		struct http_resp r;
		uint64_t t0 = bench_now_ns();
		if (http_get(xft_metrics_address(app), "GET", "/metrics", &r) || r.status != 200) {
			fprintf(stderr, "bench_export: scrape failed\n");
			exit(1);
		}
		uint64_t t1 = bench_now_ns();
		bytes = r.body_len;
		http_resp_free(&r);
		http_get(xft_metrics_address(app), "GET", "/metrics", &r);
		uint64_t t2 = bench_now_ns();
		http_resp_free(&r);
		first[i] = (double)(t1 - t0) / 1e6;
		again[i] = (double)(t2 - t1) / 1e6;
	}
	printf("scrape at %zu hops, metrics-max-hops %u (%zu folded): loop %.2f ms CPU to gather; "
	       "first scrape %.1f ms (written and sent, %.0f KiB), next ones %.1f ms (sent) (medians of %d)\n",
	       nh, max_series, nh > max_series ? nh - max_series : 0, bench_median(publish, ROUNDS),
	       bench_median(first, ROUNDS), (double)bytes / 1024, bench_median(again, ROUNDS), ROUNDS);
	app_free(app);
}

static void bench_refresh(int moving)
{
	struct xft_app *off = app_new(0, 0), *on = app_new(1, 0);
	struct clock co = { .t = xflow_monotonic_ns(), .now = xflow_monotonic_ns() + 1000000000u }, cn = co;
	/* Warm up: every hop made, every name looked up. */
	for (int i = 0; i < 2; i++) {
		refresh(off, &co, 1);
		refresh(on, &cn, 1);
	}
	double t_off[ROUNDS], t_on[ROUNDS];
	for (int i = 0; i < ROUNDS; i++) {
		t_off[i] = refresh(off, &co, moving);
		t_on[i] = refresh(on, &cn, moving);
	}
	double a = bench_median(t_off, ROUNDS), b = bench_median(t_on, ROUNDS);
	size_t nh;
	xft_agg_hops(on->agg, &nh);
	printf("refresh at %zu hops, %s: exporter off %.2f ms, on %.2f ms CPU (medians of %d): on/off = %.3f\n", nh,
	       moving ? "every hop moving (200,000 records a refresh)" : "every hop idle", a, b, ROUNDS, b / a);
	app_free(off);
	app_free(on);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	bench_warm_up(2000);
	bench_scrape(64);
	bench_scrape(1024);
	bench_refresh(1);
	bench_refresh(0);
	return 0;
}
