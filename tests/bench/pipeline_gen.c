/*
 * The woven test program of tests/bench/pipeline.sh: threads (one unless
 * told) running requests of three calls (begin, two steps, end: four records each, the
 * step called twice) at a given pace in records a second, or as fast as it
 * goes (0), for a given time.  The script weaves tests/bench/pipeline.xml
 * into it and counts what reaches the monitor.
 *
 *   pipeline_gen RATE SECONDS [THREADS]
 *
 * The pace is shared between the threads. *
 * Ahead of its pace it sleeps a tenth of a millisecond at a time, so that
 * what it does not need of its core is the agent's and the monitor's.
 * It waits a little before its first request, and says "steady" with the
 * records written so far a second after it, so that the agent and the
 * monitor are measured from their steady state; it waits after its last one,
 * so that they can be measured before it exits (the agent leaves with its
 * last target).  It says "go" and "done" on standard error.
 */
#include <pthread.h>
#include <stdatomic.h>
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

struct job {
	double rate, secs; /* the thread's share of the pace */
	uint64_t t0;
	_Atomic uint64_t requests; /* so far */
};

static void *run(void *arg)
{
	struct job *j = arg;
	struct req r = { 0, 0 };
	uint64_t n = 0, end = j->t0 + (uint64_t)(j->secs * 1e9);
	for (;;) {
		uint64_t t = now_ns();
		if (t >= end)
			break;
		/* Requests due by now at 4 records each; unpaced, 256 more. */
		uint64_t due = j->rate > 0 ? (uint64_t)((double)(t - j->t0) * j->rate / 4e9) : n + 256;
		/* Ahead of the pace: give the core to the agent and the
		 * monitor (two cores on the machines this was written on). */
		if (n >= due) {
			struct timespec nap = { 0, 100000 };
			nanosleep(&nap, NULL);
			continue;
		}
		for (; n < due; n++) {
			req_begin(&r);
			req_step(&r);
			req_step(&r);
			req_end(&r);
		}
		atomic_store_explicit(&j->requests, n, memory_order_relaxed);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: pipeline_gen RECORDS_PER_SECOND SECONDS [THREADS]\n");
		return 2;
	}
	double rate = atof(argv[1]), secs = atof(argv[2]);
	int nthreads = argc > 3 ? atoi(argv[3]) : 1;
	if (nthreads < 1 || nthreads > 64) {
		fprintf(stderr, "pipeline_gen: THREADS is 1 to 64\n");
		return 2;
	}
	struct job jobs[64];
	pthread_t tids[64];
	usleep(500000);
	fprintf(stderr, "gen: go\n");
	uint64_t t0 = now_ns();
	for (int i = 0; i < nthreads; i++) {
		jobs[i].rate = rate / nthreads;
		jobs[i].secs = secs;
		jobs[i].t0 = t0;
		atomic_init(&jobs[i].requests, 0);
		if (pthread_create(&tids[i], NULL, run, &jobs[i]) != 0) {
			fprintf(stderr, "pipeline_gen: no thread\n");
			return 1;
		}
	}
	/* Past the monitor's first second (its reorder window starts
	 * cautious): the script measures from here. */
	if (secs > 1.5) {
		usleep(1000000);
		uint64_t so_far = 0;
		for (int i = 0; i < nthreads; i++)
			so_far += atomic_load_explicit(&jobs[i].requests, memory_order_relaxed);
		fprintf(stderr, "gen: steady: records %llu\n", (unsigned long long)so_far * 4);
	}
	uint64_t n = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(tids[i], NULL);
		n += jobs[i].requests;
	}
	double took = (double)(now_ns() - t0) / 1e9;
	fprintf(stderr, "gen: done: requests %llu records %llu seconds %.3f\n", (unsigned long long)n,
		(unsigned long long)n * 4, took);
	sleep(3);
	return 0;
}
