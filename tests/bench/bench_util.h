/*
 * Small helpers for the benchmark programs.
 */
#ifndef XFLOW_BENCH_UTIL_H
#define XFLOW_BENCH_UTIL_H

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of the calling thread: what a loop cost it, without the time
 * other programs held its CPU (on a machine shared with other work, wall
 * time of a pinned loop is mostly theirs). */
static inline uint64_t bench_thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of the whole process, every thread. */
static inline uint64_t bench_process_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int bench_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median of @n values (sorts them). */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * Spin for @ms milliseconds before the first timing.  On the VM this was
 * written on, the first second or so of a run was measured up to twice as
 * slow as the rest (the vCPU leaving a low clock, or the hypervisor giving
 * it a core), and half a second of spinning was not enough: without this,
 * whatever a benchmark times first looks slow.
 */
static inline void bench_warm_up(unsigned ms)
{
	uint64_t end = bench_now_ns() + (uint64_t)ms * 1000000u;
	volatile uint64_t spin = 0;
	while (bench_now_ns() < end)
		for (int i = 0; i < 1000; i++)
			spin = spin + (uint64_t)i;
}

/* Keep the compiler from deleting a computation whose result is unused. */
#define BENCH_KEEP(x) __asm__ __volatile__("" : : "r"(x) : "memory")

#endif
