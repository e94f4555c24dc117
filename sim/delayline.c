/* Delay lines: see delayline.h. */
#include "sim/delayline.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "sim/late.h"
#include "sim/prng.h"
#include "sim/truth.h"

struct dl_item {
	int64_t due;
	delayline_fn *fn;
	void *arg;
};

struct delayline {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* on CLOCK_MONOTONIC */
	pthread_t thread;
	struct dl_item *items; /* circular FIFO, grown on demand */
	size_t cap, head, count;
	int64_t delay_ns;
	double jitter;
	struct sim_prng rng;
	bool stop;
	char name[40];
	struct sim_late late;
};

int64_t sim_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void *dl_thread(void *p)
{
	struct delayline *dl = p;

	char thread_name[16];
	size_t n = strnlen(dl->name, sizeof(thread_name) - 1);

	/* A thread's name has 15 characters at most: the line's name cut. */
	memcpy(thread_name, dl->name, n);
	thread_name[n] = 0;
	pthread_setname_np(pthread_self(), thread_name);
	/* Wake at the due time, not up to 50us later (the default slack). */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	pthread_mutex_lock(&dl->lock);
	for (;;) {
		struct dl_item it;

		if (dl->count == 0) {
			if (dl->stop)
				break;
			pthread_cond_wait(&dl->cond, &dl->lock);
			continue;
		}
		it = dl->items[dl->head];
		if (!dl->stop && it.due > sim_now_ns()) {
			struct timespec ts = {
				.tv_sec = it.due / 1000000000,
				.tv_nsec = it.due % 1000000000,
			};

			pthread_cond_timedwait(&dl->cond, &dl->lock, &ts);
			continue;
		}
		dl->head = (dl->head + 1) % dl->cap;
		dl->count--;
		/* Items run at stop are not late, only flushed. */
		if (!dl->stop)
			sim_late_note(&dl->late, sim_now_ns() - it.due);
		pthread_mutex_unlock(&dl->lock);
		it.fn(it.arg);
		pthread_mutex_lock(&dl->lock);
	}
	pthread_mutex_unlock(&dl->lock);
	truth_thread_flush();
	return NULL;
}

int delayline_new(struct delayline **out, const char *name, int64_t delay_ns,
		  double jitter_pct, uint64_t seed)
{
	pthread_condattr_t ca;
	struct delayline *dl;
	int rc;

	dl = calloc(1, sizeof(*dl));
	if (!dl)
		return -ENOMEM;
	dl->cap = 256;
	dl->items = calloc(dl->cap, sizeof(*dl->items));
	if (!dl->items) {
		free(dl);
		return -ENOMEM;
	}
	dl->delay_ns = delay_ns;
	dl->jitter = jitter_pct / 100.0;
	sim_prng_seed(&dl->rng, seed);
	snprintf(dl->name, sizeof(dl->name), "%s", name);
	pthread_mutex_init(&dl->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&dl->cond, &ca);
	pthread_condattr_destroy(&ca);
	rc = pthread_create(&dl->thread, NULL, dl_thread, dl);
	if (rc) {
		free(dl->items);
		free(dl);
		return -rc;
	}
	*out = dl;
	return 0;
}

static int grow(struct delayline *dl)
{
	struct dl_item *n = calloc(dl->cap * 2, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < dl->count; i++)
		n[i] = dl->items[(dl->head + i) % dl->cap];
	free(dl->items);
	dl->items = n;
	dl->head = 0;
	dl->cap *= 2;
	return 0;
}

void delayline_put(struct delayline *dl, delayline_fn *fn, void *arg, int64_t extra_ns)
{
	int64_t d = dl->delay_ns + extra_ns;

	pthread_mutex_lock(&dl->lock);
	if (dl->jitter > 0)
		d += (int64_t)((double)d * dl->jitter * sim_prng_signed_unit(&dl->rng));
	if (dl->count == dl->cap && grow(dl) < 0) {
		/* Out of memory: run it late rather than lose it. */
		pthread_mutex_unlock(&dl->lock);
		fn(arg);
		return;
	}
	dl->items[(dl->head + dl->count) % dl->cap] =
		(struct dl_item){ .due = sim_now_ns() + d, .fn = fn, .arg = arg };
	dl->count++;
	if (dl->count == 1)
		pthread_cond_signal(&dl->cond);
	pthread_mutex_unlock(&dl->lock);
}

void delayline_free(struct delayline *dl)
{
	if (!dl)
		return;
	pthread_mutex_lock(&dl->lock);
	dl->stop = true;
	pthread_cond_signal(&dl->cond);
	pthread_mutex_unlock(&dl->lock);
	pthread_join(dl->thread, NULL);
	if (dl->late.count)
		truth_note_lateness(dl->name, &dl->late);
	pthread_cond_destroy(&dl->cond);
	pthread_mutex_destroy(&dl->lock);
	free(dl->items);
	free(dl);
}
