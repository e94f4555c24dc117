/*
 * How long the flow language front end takes for a 10,000-advice unit (the
 * budget is one second for `xflowc check`): parse, expand, check, emit and
 * verify, from a buffer, median of 5 runs, wall clock and CPU time.
 */
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

int main(void)
{
	size_t len;
	char *buf = make_unit(&len);
	double t[RUNS], c[RUNS];
	for (int r = 0; r < RUNS; r++) {
		double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
		struct xflow_unit *u;
		if (xflow_unit_new(&u, NULL) < 0)
			return 1;
		xflow_unit_add_buffer(u, "bench.xml", buf, len);
		if (xflow_unit_compile(u) < 0 || xflow_unit_advice_count(u) != NADVICE + 2) {
			xflow_unit_print_diags(u, stderr);
			return 1;
		}
		xflow_unit_free(u);
		t[r] = now(CLOCK_MONOTONIC) - t0;
		c[r] = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
	}
	qsort(t, RUNS, sizeof(t[0]), cmp);
	qsort(c, RUNS, sizeof(c[0]), cmp);
	printf("xflowc front end: %d advices (%.1f MB) in %.1f ms wall, %.1f ms CPU "
	       "(medians of %d; wall min %.1f, max %.1f)\n",
	       NADVICE, (double)len / 1e6, t[RUNS / 2] * 1e3, c[RUNS / 2] * 1e3, RUNS,
	       t[0] * 1e3, t[RUNS - 1] * 1e3);
	free(buf);
	/* Judged on CPU time: a busy machine must not fail the budget. */
	return c[RUNS / 2] < 1.0 ? 0 : 1;
}
