/*
 * The monitor's figures on /metrics (tui/metrics.c): an app on the
 * synthetic collector with --listen, scraped over loopback; what is
 * served must equal the model, hops past metrics-max-hops are folded and
 * counted, every series has the host label.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectors/xentrace.h"
#include "tests/export/expocheck.h"
#include "tests/export/httpc.h"
#include "tests/tui/apptest.h"
#include "tui/app.h"
#include "tui/report.h"
#include "tui/metrics.h"
#include "xflow/clock.h"

static struct xft_app *app_on(const char *collector, const char *xentrace, const char *host, uint32_t max_hops)
{
	struct xft_config cfg;
	char err[512];
	xft_config_defaults(&cfg);
	if (collector) {
		snprintf(cfg.collectors[0], sizeof(cfg.collectors[0]), "%s", collector);
		cfg.ncollectors = 1;
	}
	if (xentrace) {
		cr_assert_eq(xft_config_set(&cfg, "xentrace", xentrace, err, sizeof(err)), 0, "%s", err);
		cr_assert_eq(xft_config_set(&cfg, "cpu-hz", "1G", err, sizeof(err)), 0, "%s", err);
	}
	cfg.limits.max_flows = 4096;
	cfg.limits.max_pending = 4096;
	cfg.limits.max_hops = 256;
	snprintf(cfg.listen, sizeof(cfg.listen), "127.0.0.1:0");
	if (host)
		snprintf(cfg.host, sizeof(cfg.host), "%s", host);
	if (max_hops)
		cfg.metrics_max_hops = max_hops;
	struct xft_app *app = calloc(1, sizeof(*app));
	cr_assert(app);
	cr_assert_eq(xft_app_init(app, &cfg, err, sizeof(err)), 0, "%s", err);
	return app;
}

static struct xft_app *app_new(const char *host, uint32_t max_hops)
{
	return app_on("synthetic", NULL, host, max_hops);
}

static void app_free(struct xft_app *app)
{
	xft_app_fini(app);
	free(app);
}

/* /metrics, checked as Prometheus would read it. */
static char *scrape(struct xft_app *app, struct expo_stats *st)
{
	struct http_resp r;
	cr_assert_eq(http_get(xft_metrics_address(app), "GET", "/metrics", &r), 0);
	cr_assert_eq(r.status, 200, "%s", r.raw);
	char why[256];
	cr_assert_eq(expo_check(r.body, r.body_len, "host", st, why, sizeof(why)), 0, "%s", why);
	char *body = strdup(r.body);
	http_resp_free(&r);
	return body;
}

/* The value of the sample whose line starts with @series; -1 if none. */
static double value(const char *body, const char *series)
{
	size_t n = strlen(series);
	for (const char *p = body; (p = strstr(p, series)); p += n)
		if ((p == body || p[-1] == '\n') && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	return -1;
}

/* Sum of every sample of @name (with any labels). */
static double sum_of(const char *body, const char *name)
{
	double s = 0;
	size_t n = strlen(name);
	for (const char *p = body; (p = strstr(p, name)); p += n)
		if ((p == body || p[-1] == '\n') && p[n] == '{')
			s += strtod(strchr(p, '}') + 2, NULL);
	return s;
}

static unsigned count_of(const char *body, const char *prefix)
{
	unsigned k = 0;
	for (const char *p = body; (p = strstr(p, prefix)); p += strlen(prefix))
		k += p == body || p[-1] == '\n';
	return k;
}

static void hop_series(struct xft_app *app, const struct xft_hop *h, const char *suffix, char *out, size_t len)
{
	snprintf(out, len, "xflowtop_hop_latency_seconds%s{host=\"testhost\",from=\"%s:%s\",to=\"%s:%s\"}", suffix,
		 xft_sites_domain(&app->sites, h->key.from_domain), xft_sites_group_name(&app->sites, h->key.from_group),
		 xft_sites_domain(&app->sites, h->key.to_domain), xft_sites_group_name(&app->sites, h->key.to_group));
}

Test(metrics, what_is_served_is_the_model)
{
	struct xft_app *app = app_new("testhost", 0);
	xft_app_refresh(app, xflow_monotonic_ns() + 2000000000u);
	struct expo_stats st;
	char *body = scrape(app, &st);
	const struct xft_agg_stats *a = xft_agg_stats(app->agg);
	cr_assert_gt(a->flows_finished, 100);
	cr_assert_eq(value(body, "xflowtop_flows_finished_total{host=\"testhost\"}"), (double)a->flows_finished);
	cr_assert_eq(value(body, "xflowtop_flows_started_total{host=\"testhost\"}"), (double)a->flows_started_events);
	cr_assert_eq(value(body, "xflowtop_flows_partial_total{host=\"testhost\"}"), (double)a->flows_partial_events);
	cr_assert_eq(value(body, "xflowtop_records_total{host=\"testhost\"}"), (double)a->records);
	cr_assert_eq(value(body, "xflowtop_keyed_handoffs_total{host=\"testhost\",outcome=\"joined\"}"),
		     (double)a->join_joined);
	cr_assert_eq(count_of(body, "xflowtop_keyed_handoffs_total{"), 6, "one series per outcome");
	cr_assert_eq(value(body, "xflowtop_keyed_handoff_negative_hops_total{host=\"testhost\"}"),
		     (double)a->join_negative_hops);
	size_t nh;
	const struct xft_hop *hops = xft_agg_hops(app->agg, &nh);
	cr_assert_gt(nh, 5);
	cr_assert_eq(value(body, "xflowtop_hops{host=\"testhost\"}"), (double)nh);
	cr_assert_eq(value(body, "xflowtop_hops_folded{host=\"testhost\"}"), 0);
	cr_assert_eq(count_of(body, "xflowtop_hop_latency_seconds_count{"), nh, "one series per hop");
	/* Each hop's series carries its count and its sum. */
	for (size_t i = 0; i < nh; i++) {
		char series[512];
		hop_series(app, &hops[i], "_count", series, sizeof(series));
		cr_assert_eq(value(body, series), (double)hops[i].hist.count, "%s", series);
		hop_series(app, &hops[i], "_sum", series, sizeof(series));
		cr_assert_float_eq(value(body, series), (double)hops[i].hist.sum / 1e9, 1e-9, "%s", series);
	}
	cr_assert_eq(value(body, "xflowtop_domain_up{host=\"testhost\",domain=\"linuxU\"}"), 1);
	cr_assert_gt(value(body, "xflowtop_domain_records_total{host=\"testhost\",domain=\"linux0\"}"), 0);
	cr_assert_eq(value(body, "xflowtop_collector_up{host=\"testhost\",collector=\"synthetic\"}"), 1);
	cr_assert_eq(sum_of(body, "xflowtop_collector_records_total"), (double)app->records);
	cr_assert_gt(sum_of(body, "xflowtop_aspect_hits_total"), 0);
	cr_assert_eq(value(body, "xflowtop_exporter_scrapes_total{host=\"testhost\"}"), 0,
		     "as of the last publish, before this scrape");
	free(body);

	/* The next refresh publishes the next figures. */
	uint64_t before = a->flows_finished;
	xft_app_refresh(app, xflow_monotonic_ns() + 4000000000u);
	body = scrape(app, &st);
	cr_assert_gt(xft_agg_stats(app->agg)->flows_finished, before);
	cr_assert_eq(value(body, "xflowtop_flows_finished_total{host=\"testhost\"}"),
		     (double)xft_agg_stats(app->agg)->flows_finished);
	cr_assert_eq(value(body, "xflowtop_exporter_scrapes_total{host=\"testhost\"}"), 1);
	free(body);
	app_free(app);
}

Test(metrics, hops_past_the_limit_are_folded_and_counted)
{
	struct xft_app *app = app_new("h", 3);
	xft_app_refresh(app, xflow_monotonic_ns() + 2000000000u);
	struct expo_stats st;
	char *body = scrape(app, &st);
	size_t nh;
	const struct xft_hop *hops = xft_agg_hops(app->agg, &nh);
	cr_assert_gt(nh, 3);
	cr_assert_eq(value(body, "xflowtop_hops_folded{host=\"h\"}"), (double)(nh - 3));
	cr_assert_eq(count_of(body, "xflowtop_hop_latency_seconds_count{"), 4, "three hops and (other)");
	uint64_t all = 0, rest = 0;
	for (size_t i = 0; i < nh; i++) {
		all += hops[i].hist.count;
		rest += i >= 3 ? hops[i].hist.count : 0;
	}
	cr_assert_eq(sum_of(body, "xflowtop_hop_latency_seconds_count"), (double)all, "nothing lost by folding");
	cr_assert_eq(value(body, "xflowtop_hop_latency_seconds_count{host=\"h\",from=\"(other)\",to=\"(other)\"}"),
		     (double)rest);
	free(body);
	app_free(app);
}

/* Hop samples in the model, all hops together. */
static uint64_t all_samples(struct xft_app *app)
{
	size_t nh;
	const struct xft_hop *hops = xft_agg_hops(app->agg, &nh);
	uint64_t all = 0;
	for (size_t k = 0; k < nh; k++)
		all += hops[k].hist.count;
	return all;
}

Test(metrics, series_follow_the_model_refresh_after_refresh_and_through_a_rename)
{
	struct xft_app *app = app_new("h", 4);
	struct expo_stats st;
	for (int i = 1; i <= 3; i++) {
		xft_app_refresh(app, xflow_monotonic_ns() + (uint64_t)i * 1000000000u);
		char *body = scrape(app, &st);
		cr_assert_eq(sum_of(body, "xflowtop_hop_latency_seconds_count"), (double)all_samples(app), "refresh %d", i);
		free(body);
	}
	/* A domain's name learnt late: its hops move to series of the new
	 * name (while there is room), nothing is counted twice. */
	xft_sites_set_domain(&app->sites, 1, "guest7");
	xft_metrics_publish(app);
	char *body = scrape(app, &st);
	cr_assert_eq(sum_of(body, "xflowtop_hop_latency_seconds_count"), (double)all_samples(app));
	cr_assert_null(strstr(body, "\"linuxU:"), "a series still has the old name");
	free(body);
	app_free(app);
}

Test(metrics, host_defaults_to_the_host_name)
{
	char name[256] = "";
	gethostname(name, sizeof(name) - 1);
	struct xft_app *app = app_new(NULL, 0);
	struct expo_stats st;
	char *body = scrape(app, &st);
	char series[400];
	snprintf(series, sizeof(series), "xflowtop_flows_started_total{host=\"%s\"}", name);
	cr_assert_geq(value(body, series), 0, "no %s", series);
	cr_assert_gt(st.families, 20);
	free(body);
	app_free(app);
}

/* A configuration on the synthetic collector with a small model. */
static void synthetic_config(struct xft_config *cfg)
{
	xft_config_defaults(cfg);
	snprintf(cfg->collectors[0], sizeof(cfg->collectors[0]), "synthetic");
	cfg->ncollectors = 1;
	cfg->limits.max_hops = 64;
}

Test(metrics, a_busy_port_fails_the_start_with_the_reason)
{
	struct xft_app *first = app_new("a", 0);
	struct xft_config cfg;
	char err[512];
	synthetic_config(&cfg);
	snprintf(cfg.listen, sizeof(cfg.listen), "%s", xft_metrics_address(first));
	struct xft_app *app = calloc(1, sizeof(*app));
	cr_assert_neq(xft_app_init(app, &cfg, err, sizeof(err)), 0);
	cr_assert(strstr(err, "--listen") && strstr(err, "address already in use"), "%s", err);
	xft_app_fini(app);
	free(app);
	app_free(first);
}

Test(metrics, no_listen_no_exporter)
{
	struct xft_config cfg;
	char err[512];
	synthetic_config(&cfg);
	struct xft_app *app = calloc(1, sizeof(*app));
	cr_assert_eq(xft_app_init(app, &cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_null(xft_metrics_address(app));
	xft_app_refresh(app, xflow_monotonic_ns() + 1000000000u);
	app_free(app);
}

Test(metrics, xentrace_runstates_and_wake_to_run_per_domain)
{
	char trace[64];
	snprintf(trace, sizeof(trace), "/tmp/xft-metrics-XXXXXX");
	int fd = mkstemp(trace);
	cr_assert_geq(fd, 0);
	FILE *f = fdopen(fd, "w");
	struct xentrace_writer *w;
	cr_assert_eq(xentrace_writer_new(&w, f, 2, 4096), 0);
	/* As a scheduler traces it: d1v0 runs on cpu 0, blocks at 5000, is
	 * woken at 8000 and runs on cpu 1 at 8500 (500 cycles of a 1 GHz
	 * TSC), the idle vcpus taking turns. */
	static const struct {
		unsigned cpu;
		uint64_t tsc;
		unsigned dom, vcpu;
		enum xentrace_runstate from, to;
	} ev[] = {
		{ 1, 200, XENTRACE_IDLE_DOMAIN, 1, XENTRACE_RS_RUNNING, XENTRACE_RS_RUNNABLE },
		{ 1, 300, XENTRACE_IDLE_DOMAIN, 1, XENTRACE_RS_RUNNABLE, XENTRACE_RS_RUNNING },
		{ 1, 8000, 1, 0, XENTRACE_RS_BLOCKED, XENTRACE_RS_RUNNABLE },
		{ 1, 8400, XENTRACE_IDLE_DOMAIN, 1, XENTRACE_RS_RUNNING, XENTRACE_RS_RUNNABLE },
		{ 1, 8500, 1, 0, XENTRACE_RS_RUNNABLE, XENTRACE_RS_RUNNING },
		{ 1, 9500, 1, 0, XENTRACE_RS_RUNNING, XENTRACE_RS_BLOCKED },
		{ 0, 100, XENTRACE_IDLE_DOMAIN, 0, XENTRACE_RS_RUNNING, XENTRACE_RS_RUNNABLE },
		{ 0, 1000, 1, 0, XENTRACE_RS_RUNNABLE, XENTRACE_RS_RUNNING },
		{ 0, 5000, 1, 0, XENTRACE_RS_RUNNING, XENTRACE_RS_BLOCKED },
		{ 0, 5000, XENTRACE_IDLE_DOMAIN, 0, XENTRACE_RS_RUNNABLE, XENTRACE_RS_RUNNING },
	};
	for (size_t i = 0; i < sizeof(ev) / sizeof(ev[0]); i++) {
		xentrace_writer_runstate(w, ev[i].cpu, ev[i].tsc, ev[i].dom, ev[i].vcpu, ev[i].from, ev[i].to);
		if (i == 5)
			xentrace_writer_flush_cpu(w, 1);
	}
	cr_assert_eq(xentrace_writer_close(w), 0);
	fclose(f);
	struct xft_app *app = app_on(NULL, trace, "x", 0);
	for (int i = 0; i < 10 && !app->src[0].ended; i++)
		xft_app_refresh(app, xflow_monotonic_ns() + (uint64_t)(i + 1) * 1000000000u);
	xft_app_refresh(app, xflow_monotonic_ns() + 20000000000u);
	cr_assert_not_null(app->hv);
	uint64_t running = 0;
	for (uint32_t i = 0; i < app->hv->nvcpus; i++)
		if (app->hv->vcpus[i].domain == 1)
			running += app->hv->vcpus[i].ns[XFLOW_HV_RUNNING];
	cr_assert_gt(running, 0);
	struct expo_stats st;
	char *body = scrape(app, &st);
	cr_assert_float_eq(value(body, "xflowtop_xen_domain_runstate_seconds_total{host=\"x\",domid=\"1\",state=\"running\"}"),
			   (double)running / 1e9, 1e-12, "%s", body);
	cr_assert_float_eq(value(body, "xflowtop_xen_domain_runstate_seconds_total{host=\"x\",domid=\"1\",state=\"runnable\"}"),
			   5e-7, 1e-12);
	cr_assert_eq(value(body, "xflowtop_xen_domain_wake_to_run_seconds_count{host=\"x\",domid=\"1\"}"), 1, "%s", body);
	cr_assert_float_eq(value(body, "xflowtop_xen_domain_wake_to_run_seconds_sum{host=\"x\",domid=\"1\"}"), 5e-7,
			   1e-12);
	cr_assert_eq(value(body, "xflowtop_xen_domain_wake_to_run_seconds_bucket{host=\"x\",domid=\"1\",le=\"4.5e-07\"}"), -1,
		     "no bound below 1 us");
	cr_assert_eq(value(body, "xflowtop_xen_domain_wake_to_run_seconds_bucket{host=\"x\",domid=\"1\",le=\"1e-06\"}"), 1);
	cr_assert_eq(value(body, "xflowtop_xen_domain_wake_to_run_seconds_count{host=\"x\",domid=\"32767\"}"), -1,
		     "the idle domain never woke");
	cr_assert_eq(value(body, "xflowtop_xen_trace_records_total{host=\"x\"}"), (double)app->hv->records);
	free(body);
	app_free(app);
	unlink(trace);
}

/* --- where the hops' time went (issue 24) -------------------------------------
 * Nothing on this branch fills the split yet: the tests write the
 * contract's structs into the model's hops and status directly, as the
 * model will once it joins a trace. */

static struct xft_hop *model_hops(struct xft_app *app, size_t *n)
{
	return (struct xft_hop *)xft_agg_hops(app->agg, n);
}

static struct xft_sched_status *model_sched(struct xft_app *app)
{
	return (struct xft_sched_status *)xft_agg_sched_status(app->agg);
}

static void state_series(struct xft_app *app, const struct xft_hop *h, const char *host, const char *state, char *out,
			 size_t len)
{
	char from[256], to[256];
	snprintf(from, sizeof(from), "%s:%s", xft_sites_domain(&app->sites, h->key.from_domain),
		 xft_sites_group_name(&app->sites, h->key.from_group));
	snprintf(to, sizeof(to), "%s:%s", xft_sites_domain(&app->sites, h->key.to_domain),
		 xft_sites_group_name(&app->sites, h->key.to_group));
	snprintf(out, len, "xflowtop_hop_state_seconds_total{host=\"%s\",from=\"%s\",to=\"%s\",state=\"%s\"}", host,
		 from, to, state);
}

Test(metrics, hop_states_are_bounded_like_the_hops_and_only_grow)
{
	struct xft_app *app = app_new("h", 3);
	xft_app_refresh(app, xflow_monotonic_ns() + 2000000000u);
	struct expo_stats st;
	char *body = scrape(app, &st);
	cr_assert_eq(count_of(body, "xflowtop_hop_state_seconds_total{"), 0, "nothing split, no series");
	cr_assert_eq(value(body, "xflowtop_sched_joined{host=\"h\"}"), 0);
	cr_assert_null(strstr(body, "xflowtop_sched_clock_error_seconds{"), "no error before it is measured");
	cr_assert_null(strstr(body, "xflowtop_sched_clock_bound_seconds{"), "no bound before it is proven");
	free(body);

	size_t nh;
	struct xft_hop *hops = model_hops(app, &nh);
	cr_assert_gt(nh, 4);
	double other_wait = 0, all_wait = 0;
	for (size_t i = 0; i < nh; i++) {
		hops[i].split.all.ns[XFT_ST_WAIT] = (i + 1) * 1000000u;
		hops[i].split.all.ns[XFT_ST_RUN] = 500000;
		hops[i].split.all.ns[XFT_ST_UNKNOWN] = 250000;
		all_wait += (double)(i + 1) * 1e-3;
		other_wait += i >= 3 ? (double)(i + 1) * 1e-3 : 0;
	}
	*model_sched(app) = (struct xft_sched_status){ .joined = 1, .clock_error_ns = 2500, .clock_bound_ns = 7500,
						       .trace_records = 1234, .trace_lost = 5, .hops_split = 77,
						       .hops_pending = 3 };
	xft_metrics_publish(app);
	body = scrape(app, &st);
	cr_assert_eq(count_of(body, "xflowtop_hop_state_seconds_total{"), 4 * XFT_NSTATES,
		     "three hops and (other), every state: %s", body);
	char series[1024];
	state_series(app, &hops[1], "h", "wait", series, sizeof(series));
	cr_assert_float_eq(value(body, series), 2e-3, 1e-12, "%s", series);
	state_series(app, &hops[0], "h", "unknown", series, sizeof(series));
	cr_assert_float_eq(value(body, series), 2.5e-4, 1e-12, "'?' is \"unknown\" in a label");
	cr_assert_null(strstr(body, "state=\"?\""));
	state_series(app, &hops[2], "h", "notify", series, sizeof(series));
	cr_assert_eq(value(body, series), 0, "states without time are there, at 0");
	cr_assert_float_eq(value(body, "xflowtop_hop_state_seconds_total{host=\"h\",from=\"(other)\",to=\"(other)\","
				       "state=\"wait\"}"),
			   other_wait, 1e-9, "the hops past the bound are summed into (other)");
	cr_assert_float_eq(sum_of(body, "xflowtop_hop_state_seconds_total"), all_wait + (double)nh * (5e-4 + 2.5e-4),
			   1e-9, "nothing lost by folding");
	cr_assert_eq(value(body, "xflowtop_sched_joined{host=\"h\"}"), 1);
	cr_assert_float_eq(value(body, "xflowtop_sched_clock_error_seconds{host=\"h\"}"), 2.5e-6, 1e-15);
	cr_assert_float_eq(value(body, "xflowtop_sched_clock_bound_seconds{host=\"h\"}"), 7.5e-6, 1e-15);
	cr_assert_eq(value(body, "xflowtop_sched_trace_records_total{host=\"h\"}"), 1234);
	cr_assert_eq(value(body, "xflowtop_sched_trace_lost_total{host=\"h\"}"), 5);
	cr_assert_eq(value(body, "xflowtop_sched_hops_split_total{host=\"h\"}"), 77);
	cr_assert_eq(value(body, "xflowtop_sched_hops_pending{host=\"h\"}"), 3);

	/* More time split: every counter grows or stays, none goes back. */
	hops[0].split.all.ns[XFT_ST_WAIT] += 4000000;
	hops[nh - 1].split.all.ns[XFT_ST_BLOCKED] += 1000000;
	xft_metrics_publish(app);
	char *again = scrape(app, &st);
	for (const char *p = body; (p = strstr(p, "\nxflowtop_hop_state_seconds_total{")); p++) {
		char name[1024];
		const char *end = strchr(p + 1, ' ');
		snprintf(name, sizeof(name), "%.*s", (int)(end - p - 1), p + 1);
		cr_assert_geq(value(again, name), value(body, name), "%s went back", name);
	}
	state_series(app, &hops[0], "h", "wait", series, sizeof(series));
	cr_assert_float_eq(value(again, series), 5e-3, 1e-12);
	cr_assert_float_eq(value(again, "xflowtop_hop_state_seconds_total{host=\"h\",from=\"(other)\",to=\"(other)\","
					"state=\"blocked\"}"),
			   1e-3, 1e-12);
	free(again);
	free(body);
	app_free(app);
}

/* The series of @h's '?' for @reason, on host "h". */
static void unknown_series(struct xft_app *app, const struct xft_hop *h, const char *reason, char *out, size_t len)
{
	char from[256], to[256];
	snprintf(from, sizeof(from), "%s:%s", xft_sites_domain(&app->sites, h->key.from_domain),
		 xft_sites_group_name(&app->sites, h->key.from_group));
	snprintf(to, sizeof(to), "%s:%s", xft_sites_domain(&app->sites, h->key.to_domain),
		 xft_sites_group_name(&app->sites, h->key.to_group));
	snprintf(out, len, "xflowtop_hop_unknown_seconds_total{host=\"h\",from=\"%s\",to=\"%s\",reason=\"%s\"}", from,
		 to, reason);
}

/* The '?' of each hop by its reasons, under the same bound: all five for
 * every slot the states have, adding up to its "unknown" state. */
Test(metrics, hop_unknown_says_why_under_the_same_bound)
{
	struct xft_app *app = app_new("h", 3);
	xft_app_refresh(app, xflow_monotonic_ns() + 2000000000u);
	struct expo_stats st;
	size_t nh;
	struct xft_hop *hops = model_hops(app, &nh);
	cr_assert_gt(nh, 4);
	for (size_t i = 0; i < nh; i++) {
		hops[i].split.all.ns[XFT_ST_RUN] = 500000;
		hops[i].split.all.ns[XFT_ST_UNKNOWN] = 250000 + i * 1000;
		hops[i].split.all.unknown_ns[XFT_UNK_CLOCK] = 200000;
		hops[i].split.all.unknown_ns[XFT_UNK_EARLY] = 50000 + i * 1000;
	}
	model_sched(app)->joined = 1;
	xft_metrics_publish(app);
	char *body = scrape(app, &st);
	cr_assert(strstr(body, "# HELP xflowtop_hop_unknown_seconds_total Time of the hops in state unknown by why"),
		  "%s", body);
	cr_assert(strstr(body, "# TYPE xflowtop_hop_unknown_seconds_total counter"));
	cr_assert_eq(count_of(body, "xflowtop_hop_unknown_seconds_total{"), 4 * XFT_UNK_NREASONS,
		     "three hops and (other), every reason");
	char series[1024];
	unknown_series(app, &hops[1], "clock", series, sizeof(series));
	cr_assert_float_eq(value(body, series), 2e-4, 1e-12, "%s", series);
	unknown_series(app, &hops[1], "early", series, sizeof(series));
	cr_assert_float_eq(value(body, series), 5.1e-5, 1e-12, "%s", series);
	unknown_series(app, &hops[1], "no_trace", series, sizeof(series));
	cr_assert_eq(value(body, series), 0, "reasons without time are there, at 0");
	cr_assert_float_eq(sum_of(body, "xflowtop_hop_unknown_seconds_total"),
			   sum_of(body, "xflowtop_hop_state_seconds_total") - (double)nh * 5e-4, 1e-9,
			   "the reasons add up to the unknown, folded or not");
	cr_assert_float_eq(value(body, "xflowtop_hop_unknown_seconds_total{host=\"h\",from=\"(other)\",to=\"(other)\","
				       "reason=\"clock\"}"),
			   (double)(nh - 3) * 2e-4, 1e-9, "the hops past the bound are summed into (other)");
	free(body);
	app_free(app);
}

Test(metrics, hop_state_labels_are_escaped)
{
	struct xft_app *app = app_new("h", 0);
	xft_app_refresh(app, xflow_monotonic_ns() + 2000000000u);
	xft_sites_set_domain(&app->sites, 1, "gu\"est\\7");
	size_t nh;
	struct xft_hop *hops = model_hops(app, &nh);
	size_t k = 0;
	while (k < nh && hops[k].key.from_domain != 1)
		k++;
	cr_assert_lt(k, nh, "no hop from domain 1");
	hops[k].split.all.ns[XFT_ST_WAIT] = 7000;
	xft_metrics_publish(app);
	struct expo_stats st;
	char *body = scrape(app, &st); /* read back as Prometheus would */
	char want[512];
	snprintf(want, sizeof(want), "from=\"gu\\\"est\\\\7:%s\"", xft_sites_group_name(&app->sites, hops[k].key.from_group));
	cr_assert_not_null(strstr(body, want), "no %s in the state series", want);
	const char *p = strstr(body, "xflowtop_hop_state_seconds_total{");
	cr_assert_not_null(p);
	cr_assert_not_null(strstr(p, "state=\"wait\"} 7e-06"), "%s", p);
	free(body);
	app_free(app);
}

/* Issue 30 item 7: a domain's lies, where its drops are: the Domains
 * view (a LIES column, the kinds after the source), the batch text, the
 * JSON and /metrics, each kind under one name. */
Test(metrics, a_domains_lies_everywhere_its_drops_are)
{
	struct xft_app *app = app_new("h", 0);
	xft_app_refresh(app, xflow_monotonic_ns() + 1000000000u);
	cr_assert_gt(app->ndomains, 0);
	struct xflow_domain_info *d = &app->domains[0].info;
	d->lies = (struct xflow_domain_lies){ .other_domain = 3, .time_future = 1, .never_started = 7, .stats = 2 };
	const char *name = d->name;

	xft_ui_key(app, '6');
	apptest_draw(app, 24, 200);
	cr_expect(apptest_screen_has(app, "LIES"), "no LIES column");
	cr_expect(apptest_screen_has(app, "    13  live"), "the row's lies are not 13");
	cr_expect(apptest_screen_has(app, "lies: 3 naming another domain, 1 stamped in the future, 7 of flows it ne"),
		  "the kinds are not after the source");

	char *txt = NULL;
	size_t tlen = 0;
	FILE *f = open_memstream(&txt, &tlen);
	xft_report_domains_text(app, f);
	fclose(f);
	cr_expect(strstr(txt, " LIES ") && strstr(txt, "; lies: 3 naming another domain, 1 stamped in the future, "
					       "7 of flows it never started, 2 STATS replies refused"), "%s", txt);
	free(txt);

	f = open_memstream(&txt, &tlen);
	cr_assert_eq(xft_report_json_file(app, f), 0);
	fclose(f);
	/* Without its layout's blanks. */
	size_t w = 0;
	for (size_t r = 0; txt[r]; r++)
		if (txt[r] != ' ' && txt[r] != '\n')
			txt[w++] = txt[r];
	txt[w] = 0;
	cr_expect(strstr(txt, "\"lies\":{\"other_domain\":3,\"time_past\":0,\"time_future\":1,\"flood\":0,"
			      "\"never_started\":7,\"after_end\":0,\"stats\":2,\"hop_share\":0,\"handoff_share\":0}"),
		  "%s", txt);
	free(txt);

	xft_metrics_publish(app);
	struct expo_stats st;
	char *body = scrape(app, &st);
	char series[256];
	snprintf(series, sizeof(series), "xflowtop_domain_records_lies_total{host=\"h\",domain=\"%s\",kind=\"other_domain\"}",
		 name);
	cr_expect_eq(value(body, series), 3, "%s", series);
	snprintf(series, sizeof(series), "xflowtop_domain_records_lies_total{host=\"h\",domain=\"%s\",kind=\"never_started\"}",
		 name);
	cr_expect_eq(value(body, series), 7, "%s", series);
	snprintf(series, sizeof(series), "xflowtop_domain_records_lies_total{host=\"h\",domain=\"%s\",kind=\"flood\"}",
		 name);
	cr_expect_eq(value(body, series), 0, "%s", series);
	snprintf(series, sizeof(series), "xflowtop_domain_records_lies_total{host=\"h\",domain=\"%s\",kind=\"stats\"}",
		 name);
	cr_expect_eq(value(body, series), 2, "%s", series);
	free(body);
	app_free(app);
}

/* What the model refused a domain for wanting more than its share of the
 * hop table (tui/aggregate.h) is in its row, with its lies. */
Test(metrics, a_domains_hops_past_its_share_are_in_its_row)
{
	struct xft_app *app = app_new("h", 0);
	xft_app_refresh(app, xflow_monotonic_ns() + 1000000000u);
	cr_assert_gt(app->ndomains, 0);
	uint16_t dom = app->domains[0].info.id;
	/* Ever new pairs of sites in its name: far more hops than the
	 * table of 256 holds. */
	uint64_t t = xflow_monotonic_ns();
	for (uint32_t i = 0; i < 1000; i++) {
		struct xflow_record r = { .version = XFLOW_RECORD_VERSION, .domain_id = dom, .site_id = 50000 + 2 * i,
					  .flow_id = UINT64_C(1) << 40 | i, .flags = XFLOW_REC_START };
		xft_agg_feed(app->agg, &r, t);
		r.site_id++;
		r.flags = XFLOW_REC_QUIT;
		xft_agg_feed(app->agg, &r, t + 1000);
		t += 2000;
	}
	xft_agg_drain(app->agg);
	xft_app_refresh(app, xflow_monotonic_ns() + 2000000000u);
	const struct xft_domain_row *row = NULL;
	for (unsigned i = 0; i < app->ndomains; i++)
		if (app->domains[i].info.id == dom)
			row = &app->domains[i];
	cr_assert_not_null(row);
	struct xft_agg_refused ref;
	xft_agg_domain_refused(app->agg, dom, &ref);
	cr_expect_gt(ref.hops, 0);
	cr_expect_eq(row->info.lies.hop_share, ref.hops, "row %lu, model %lu", (unsigned long)row->info.lies.hop_share,
		     (unsigned long)ref.hops);
	app_free(app);
}
