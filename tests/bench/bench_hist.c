/*
 * Cost of recording one latency into a histogram, against the same loop
 * that only sums the values (the loop's own cost), in the same run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "tests/bench/bench_util.h"
#include "xflow/histogram.h"

#define N (10 * 1000 * 1000)
#define RUNS 7

int main(void)
{
	uint64_t *vals = malloc(N * sizeof(*vals));
	uint64_t st = 1;
	for (int i = 0; i < N; i++) {
		/* Log-normal latencies around 10 us, spanning ns to seconds. */
		st = st * 6364136223846793005ull + 1442695040888963407ull;
		double u1 = ((double)(st >> 11) + 1) * 0x1.0p-53;
		st = st * 6364136223846793005ull + 1442695040888963407ull;
		double u2 = (double)(st >> 11) * 0x1.0p-53;
		vals[i] = (uint64_t)exp(9.2 + 2.0 * sqrt(-2 * log(u1)) * cos(6.283185307 * u2));
	}
	static struct xflow_hist h;
	double rec[RUNS], base[RUNS];
	for (int r = 0; r < RUNS; r++) {
		uint64_t t0 = bench_now_ns(), sum = 0;
		for (int i = 0; i < N; i++) {
			sum += vals[i];
			BENCH_KEEP(sum);
		}
		uint64_t t1 = bench_now_ns();
		xflow_hist_init(&h);
		for (int i = 0; i < N; i++)
			xflow_hist_record(&h, vals[i]);
		uint64_t t2 = bench_now_ns();
		BENCH_KEEP(h.count);
		base[r] = (double)(t1 - t0) / N;
		rec[r] = (double)(t2 - t1) / N;
	}
	double b = bench_median(base, RUNS), r = bench_median(rec, RUNS);
	printf("\nhistogram: record %.2f ns/value (loop alone %.2f ns; median of %d x %d);"
	       " p50 %lu ns p99 %lu ns; %zu bytes\n", r, b, RUNS, N,
	       (unsigned long)xflow_hist_quantile(&h, 0.5), (unsigned long)xflow_hist_quantile(&h, 0.99),
	       sizeof(h));
	free(vals);
	return 0;
}
