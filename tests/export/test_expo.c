/*
 * The text exposition format (export/expo.c): a snapshot written exactly as
 * Prometheus reads it, and big ones checked by an independent reader.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "export/export.h"
#include "tests/export/expocheck.h"

static const struct xfx_family f_total = { "x_things_total", XFX_COUNTER, "Things, with a \\ and a\nnewline." };
static const struct xfx_family f_gauge = { "x_level", XFX_GAUGE, "A level." };
static const struct xfx_family f_empty = { "x_nothing", XFX_GAUGE, "Never sampled." };
static const struct xfx_family f_hist = { "x_latency_seconds", XFX_HISTOGRAM, "Latency." };

Test(expo, counters_and_gauges_exactly)
{
	struct xfx_snap *s;
	cr_assert_eq(xfx_snap_new(&s), 0);
	xfx_snap_reset(s, "dom0-\"a\"");
	xfx_snap_family(s, &f_total);
	xfx_snap_label(s, "domain", "linuxU");
	xfx_snap_u64(s, 18446744073709551615ull);
	xfx_snap_family(s, &f_empty);
	xfx_snap_family(s, &f_gauge);
	xfx_snap_seconds(s, 1500000);
	xfx_snap_label(s, "kind", "d");
	xfx_snap_double(s, 0.1);
	xfx_snap_label(s, "kind", "inf");
	xfx_snap_double(s, INFINITY);
	char *text;
	size_t len;
	cr_assert_eq(xfx_snap_format(s, &text, &len), 0);
	cr_assert_str_eq(text,
			 "# HELP x_things_total Things, with a \\\\ and a\\nnewline.\n"
			 "# TYPE x_things_total counter\n"
			 "x_things_total{host=\"dom0-\\\"a\\\"\",domain=\"linuxU\"} 18446744073709551615\n"
			 "# HELP x_level A level.\n"
			 "# TYPE x_level gauge\n"
			 "x_level{host=\"dom0-\\\"a\\\"\"} 0.0015\n"
			 "x_level{host=\"dom0-\\\"a\\\"\",kind=\"d\"} 0.1\n"
			 "x_level{host=\"dom0-\\\"a\\\"\",kind=\"inf\"} +Inf\n");
	cr_assert_eq(len, strlen(text));
	free(text);
	xfx_snap_free(s);
}

Test(expo, histogram_is_cumulative_with_inf_sum_and_count)
{
	struct xfx_snap *s;
	cr_assert_eq(xfx_snap_new(&s), 0);
	xfx_snap_reset(s, "h");
	xfx_snap_family(s, &f_hist);
	uint64_t b[XFX_NBUCKETS + 1] = { 0 };
	b[0] = 2;  /* <= 1 us */
	b[5] = 3;  /* <= 2 us */
	b[XFX_NBUCKETS] = 1; /* > 10 s */
	xfx_snap_label(s, "from", "a:f");
	xfx_snap_label(s, "to", "b:g");
	xfx_snap_hist(s, b, 6, 10000000123ull);
	char *text;
	size_t len;
	cr_assert_eq(xfx_snap_format(s, &text, &len), 0);
	cr_assert(strstr(text, "x_latency_seconds_bucket{host=\"h\",from=\"a:f\",to=\"b:g\",le=\"1e-06\"} 2\n"));
	cr_assert(strstr(text, "le=\"1.8e-06\"} 2\n"));
	cr_assert(strstr(text, "le=\"2e-06\"} 5\n"));
	cr_assert(strstr(text, "le=\"0.002\"} 5\n"));
	cr_assert(strstr(text, "le=\"10\"} 5\n"));
	cr_assert(strstr(text, "le=\"+Inf\"} 6\n"));
	cr_assert(strstr(text, "x_latency_seconds_sum{host=\"h\",from=\"a:f\",to=\"b:g\"} 10.000000123\n"));
	cr_assert(strstr(text, "x_latency_seconds_count{host=\"h\",from=\"a:f\",to=\"b:g\"} 6\n"));
	struct expo_stats st;
	char why[256];
	cr_assert_eq(expo_check(text, len, "host", &st, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(st.samples, XFX_NBUCKETS + 3);
	free(text);
	xfx_snap_free(s);
}

Test(expo, a_large_snapshot_with_hostile_labels_reads_back)
{
	struct xfx_snap *s;
	cr_assert_eq(xfx_snap_new(&s), 0);
	xfx_snap_reset(s, "h\xff\n");
	xfx_snap_family(s, &f_hist);
	uint64_t b[XFX_NBUCKETS + 1];
	for (unsigned i = 0; i <= XFX_NBUCKETS; i++)
		b[i] = i;
	unsigned n = 0;
	for (unsigned i = 0; i < 500; i++) {
		char from[64], to[64];
		snprintf(from, sizeof(from), "d%u:\"f\\%u\n\xc3", i, i);
		snprintf(to, sizeof(to), "d:g%u", i);
		xfx_snap_label(s, "from", from);
		xfx_snap_label(s, "to", to);
		cr_assert_eq(xfx_snap_hist(s, b, XFX_NBUCKETS * (XFX_NBUCKETS + 1) / 2, i), 0);
		n++;
	}
	xfx_snap_family(s, &f_total);
	xfx_snap_u64(s, 1);
	char *text;
	size_t len;
	cr_assert_eq(xfx_snap_format(s, &text, &len), 0);
	struct expo_stats st;
	char why[256];
	cr_assert_eq(expo_check(text, len, "host", &st, why, sizeof(why)), 0, "%s", why);
	cr_assert_eq(st.families, 2);
	cr_assert_eq(st.series, n + 1);
	free(text);
	xfx_snap_free(s);
}

Test(expo, the_checker_refuses_what_prometheus_refuses)
{
	/* The reader the tests lean on must itself fail bad text. */
	static const char *const bad[] = {
		"x 1\n",                                                       /* no TYPE */
		"# HELP x h\n# TYPE x gauge\nx{host=\"a} 1\n",                 /* unterminated */
		"# HELP x h\n# TYPE x gauge\nx{host=\"a\\t\"} 1\n",            /* bad escape */
		"# HELP x h\n# TYPE x gauge\nx{host=\"\xff\"} 1\n",            /* not UTF-8 */
		"# HELP x h\n# TYPE x gauge\nx{host=\"a\"} one\n",             /* not a float */
		"# HELP x h\n# TYPE x gauge\nx{host=\"a\"} 1\nx{host=\"a\"} 2\n", /* twice */
		"# HELP x h\n# TYPE x histogram\nx_bucket{host=\"a\",le=\"1\"} 2\n"
		"x_bucket{host=\"a\",le=\"+Inf\"} 1\nx_count{host=\"a\"} 1\n",  /* decreasing */
		"# HELP x h\n# TYPE x histogram\nx_bucket{host=\"a\",le=\"+Inf\"} 2\nx_count{host=\"a\"} 1\n",
		"# HELP x h\n# TYPE x gauge\nx{domain=\"a\"} 1\n",             /* host not first */
		"# HELP x h\n# TYPE x gauge\nx{host=\"a\"} 1",                 /* no final newline */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct expo_stats st;
		char why[256];
		cr_assert_neq(expo_check(bad[i], strlen(bad[i]), "host", &st, why, sizeof(why)), 0, "case %zu", i);
	}
}
