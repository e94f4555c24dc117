/*
 * timer-lateness: how late this machine's timers fire, for the Xen lab.
 *
 *   timer-lateness [--sleep US] [--count N]
 *
 * Sleeps N times (default 200) until an absolute CLOCK_MONOTONIC deadline
 * US microseconds ahead (default 5000), with a timer slack of 1 ns, and
 * prints how far past each deadline it woke, as quantiles in microseconds:
 *
 *   timer-lateness: 200 sleeps of 5000 us: late p50 412 p90 1210 p99 3020 max 4411 us
 *
 * Under QEMU's TCG a guest's timers fire late by a varying amount, and a
 * delay made of timers (netem's qdisc watchdog) can never deliver early,
 * only late.  Phase C of make xen-check bounds the hop netem delays by the
 * delay plus this lateness, measured in dom0 in the same run, rather than
 * by a nominal tolerance the emulator cannot promise.  A sleeping process
 * also waits to be scheduled after its timer fires, so this errs on the
 * late side: a looser bound, never a tighter one.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* The value below which a share @q of the sorted @v lies (nearest rank). */
static int64_t quantile(const int64_t *v, size_t n, double q)
{
	size_t k = (size_t)(q * (double)n + 0.999999);

	if (k == 0)
		k = 1;
	return v[(k > n ? n : k) - 1];
}

static long long up_us(int64_t ns)
{
	return (long long)((ns + 999) / 1000);
}

static int parse_count(const char *opt, const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "timer-lateness: %s '%s': a whole number from %ld to %ld\n", opt, s, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	long sleep_us = 5000, count = 200;
	int64_t *late;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			printf("usage: timer-lateness [--sleep US] [--count N]\n");
			return 0;
		}
		if (i + 1 < argc && !strcmp(argv[i], "--sleep")) {
			if (parse_count("--sleep", argv[++i], 1, 10000000, &sleep_us))
				return 2;
		} else if (i + 1 < argc && !strcmp(argv[i], "--count")) {
			if (parse_count("--count", argv[++i], 1, 1000000, &count))
				return 2;
		} else {
			fprintf(stderr, "timer-lateness: unknown argument '%s' (--help)\n", argv[i]);
			return 2;
		}
	}
	late = calloc((size_t)count, sizeof(*late));
	if (!late) {
		fprintf(stderr, "timer-lateness: out of memory\n");
		return 1;
	}
	/* The kernel's default slack (50 us) is lateness asked for, not met. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	for (long i = 0; i < count; i++) {
		int64_t due = now_ns() + sleep_us * 1000;
		struct timespec ts = { .tv_sec = due / 1000000000, .tv_nsec = due % 1000000000 };
		int rc;

		while ((rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)) == EINTR)
			;
		if (rc) {
			fprintf(stderr, "timer-lateness: clock_nanosleep: %s\n", strerror(rc));
			free(late);
			return 1;
		}
		late[i] = now_ns() - due;
	}
	qsort(late, (size_t)count, sizeof(*late), cmp_i64);
	/* Rounded up: the figures are used as upper bounds. */
	printf("timer-lateness: %ld sleeps of %ld us: late p50 %lld p90 %lld p99 %lld max %lld us\n", count,
	       sleep_us, up_us(quantile(late, (size_t)count, 0.5)), up_us(quantile(late, (size_t)count, 0.9)),
	       up_us(quantile(late, (size_t)count, 0.99)), up_us(late[count - 1]));
	free(late);
	return 0;
}
