/*
 * How long the flow language front end takes for a 10,000-advice unit (the
 * budget is one second for `xflowc check`): parse, expand, check, emit and
 * verify, from a buffer, median of 5 runs, wall clock and CPU time.  And
 * for a megabyte of attributes, held to the same budget: elements with as
 * many as an element may have (FL_XML_MAX_ATTRS), and one element with
 * 100,000, which is refused (it took 53 s when the lookup was quadratic).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xflow/flowlang.h"

#define NADVICE 10000
#define RUNS 5

static char *make_unit(size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	fputs("<flows>\n<xflow name=\"netflow\">\n"
	      "<start><pointcut>access(sk_buff.data) AND within_function(alloc_skb_from_cache@linuxU)</pointcut></start>\n"
	      "<quit><pointcut>access(sk_buff.%) AND within_function(__kfree_skb)</pointcut></quit>\n"
	      "</xflow>\n", f);
	for (int i = 0; i < NADVICE; i++)
		fprintf(f, "<advice>\n<pointcut>access(sk_buff.len) AND within_function(f%d@linuxU) AND "
			   "target(skb) AND xflow(netflow, skb, id)</pointcut>\n<before>\nlong long tsc;\n"
			   "DO_RDTSC(tsc);\nif (skb-&gt;len &gt; %d &amp;&amp; (id &amp; 1) == 0)\n"
			   "  STORE_DATA3($pc$, tsc, id);\n</before>\n</advice>\n", i, i);
	fputs("</flows>\n", f);
	fclose(f);
	return buf;
}

static double now(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* @n elements of @per attributes each, "a0='0' a1='1' ...". */
static char *make_attrs(unsigned n, unsigned per, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	fputs("<flows>\n", f);
	for (unsigned e = 0; e < n; e++) {
		fputs("<xflow", f);
		for (unsigned i = 0; i < per; i++)
			fprintf(f, " a%u='%u'", i, i);
		fputs("/>\n", f);
	}
	fputs("</flows>\n", f);
	fclose(f);
	return buf;
}

/* Medians of RUNS compiles of @buf: wall and CPU seconds.  -1 when the
 * outcome is not the one expected (@ok: compiles clean, or has errors). */
static int measure(const char *buf, size_t len, bool ok, size_t nadvice, double *wall, double *cpu)
{
	double t[RUNS], c[RUNS];
	for (int r = 0; r < RUNS; r++) {
		double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
		struct xflow_unit *u;
		if (xflow_unit_new(&u, NULL) < 0)
			return -1;
		xflow_unit_add_buffer(u, "bench.xml", buf, len);
		bool clean = xflow_unit_compile(u) == 0 && xflow_unit_advice_count(u) == nadvice;
		if (clean != ok) {
			xflow_unit_print_diags(u, stderr);
			xflow_unit_free(u);
			return -1;
		}
		xflow_unit_free(u);
		t[r] = now(CLOCK_MONOTONIC) - t0;
		c[r] = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
	}
	qsort(t, RUNS, sizeof(t[0]), cmp);
	qsort(c, RUNS, sizeof(c[0]), cmp);
	*wall = t[RUNS / 2];
	*cpu = c[RUNS / 2];
	return 0;
}

int main(void)
{
	size_t len;
	char *buf = make_unit(&len);
	double wall, cpu;
	int rc = 0;
	if (measure(buf, len, true, NADVICE + 2, &wall, &cpu) < 0)
		return 1;
	printf("xflowc front end: %d advices (%.1f MB) in %.1f ms wall, %.1f ms CPU (medians of %d)\n",
	       NADVICE, (double)len / 1e6, wall * 1e3, cpu * 1e3, RUNS);
	/* Judged on CPU time: a busy machine must not fail the budget. */
	rc |= cpu < 1.0 ? 0 : 1;
	free(buf);

	/* Both have errors: unknown attributes, and too many of them. */
	static const struct {
		unsigned elements, attrs;
		const char *what;
	} attrs[] = { { 1500, 64, "1500 elements of 64 attributes" },
		      { 1, 100000, "one element of 100,000 attributes (refused)" } };
	for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++) {
		buf = make_attrs(attrs[i].elements, attrs[i].attrs, &len);
		if (measure(buf, len, false, 0, &wall, &cpu) < 0)
			return 1;
		printf("xflowc front end: %s, %.1f MB: %.1f ms wall, %.1f ms CPU\n", attrs[i].what,
		       (double)len / 1e6, wall * 1e3, cpu * 1e3);
		rc |= cpu < 1.0 ? 0 : 1;
		free(buf);
	}
	return rc;
}
