/*
 * The woven test program of tests/bench/pipeline.sh: one thread running
 * requests of three calls (begin, two steps, end: four records each, the
 * step called twice) at a given pace in records a second, or as fast as it
 * goes (0), for a given time.  The script weaves tests/bench/pipeline.xml
 * into it and counts what reaches the monitor.
 *
 *   pipeline_gen RATE SECONDS
 *
 * Ahead of its pace it sleeps a tenth of a millisecond at a time, so that
 * what it does not need of its core is the agent's and the monitor's.
 * It waits a little before its first request, so that the agent and the
 * monitor are measured from their steady state, and after its last one,
 * so that they can be measured before it exits (the agent leaves with its
 * last target).  It says "go" and "done" on standard error.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

struct req {
	uint64_t id;
	uint64_t steps;
};

/* The sites: each call's entry.  The empty asm keeps the calls and the
 * stores in them (the compiler would fold them into the loop). */
__attribute__((noinline)) void req_begin(struct req *r)
{
	r->steps = 0;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void req_step(struct req *r)
{
	r->steps++;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void req_end(struct req *r)
{
	r->id++;
	__asm__ volatile("" ::: "memory");
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: pipeline_gen RECORDS_PER_SECOND SECONDS\n");
		return 2;
	}
	double rate = atof(argv[1]), secs = atof(argv[2]);
	struct req r = { 0, 0 };
	usleep(500000);
	fprintf(stderr, "gen: go\n");
	uint64_t t0 = now_ns(), n = 0, end = t0 + (uint64_t)(secs * 1e9);
	for (;;) {
		uint64_t t = now_ns();
		if (t >= end)
			break;
		/* Ahead of the pace: give the core to the agent and the
		 * monitor (two cores on the machines this was written on). */
		if (rate > 0 && n >= (uint64_t)((double)(t - t0) * rate / 4e9)) {
			struct timespec nap = { 0, 100000 };
			nanosleep(&nap, NULL);
			continue;
		}
		/* Requests due by now at 4 records each; unpaced, 256 more. */
		uint64_t due = rate > 0 ? (uint64_t)((double)(t - t0) * rate / 4e9) : n + 256;
		for (; n < due; n++) {
			req_begin(&r);
			req_step(&r);
			req_step(&r);
			req_end(&r);
		}
	}
	double took = (double)(now_ns() - t0) / 1e9;
	fprintf(stderr, "gen: done: requests %llu records %llu seconds %.3f\n", (unsigned long long)n,
		(unsigned long long)n * 4, took);
	sleep(3);
	return 0;
}
