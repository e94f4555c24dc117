/*
 * xflow/clock.h — timestamps for hooks and their conversion to nanoseconds.
 *
 * Hooks read the TSC (a dozen nanoseconds, no system call) when it is
 * invariant — constant rate, not stopped in deep C-states, the CPUID bit
 * Linux calls constant_tsc/nonstop_tsc — and CLOCK_MONOTONIC otherwise.
 * xflow_clock_init() decides, calibrates the TSC against CLOCK_MONOTONIC,
 * and says why it fell back.  Records carry raw ticks and the ring header
 * says which clock they count (xflow/ring.h); the consumer converts with one
 * calibration, so records from every producer share one time line.
 */
#ifndef XFLOW_CLOCK_H
#define XFLOW_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "xflow/ring.h"

struct xflow_clock {
	enum xflow_clock_kind kind;
	uint64_t tsc_hz;     /* measured TSC frequency (XFLOW_CLOCK_TSC) */
	uint64_t base_tick;  /* a (tick, ns) pair taken at calibration */
	uint64_t base_ns;
	uint64_t mult;       /* nanoseconds per tick, fixed point 32.32 */
	uint64_t first_tick; /* the calibration's first pair: what */
	uint64_t first_ns;   /* xflow_clock_refine() measures the rate from */
	char why[128];       /* the reason for the clock kind chosen */
};

enum xflow_clock_flags {
	XFLOW_CLOCK_FORCE_MONOTONIC = 1u << 0, /* do not use the TSC */
};

/*
 * Choose and calibrate (about 20 ms when the TSC is used).  The environment
 * variable XFLOW_CLOCK=monotonic forces the fallback as the flag does.
 * Returns 0 (never fails: CLOCK_MONOTONIC is always there).
 */
int xflow_clock_init(struct xflow_clock *c, unsigned flags);

/*
 * Measure the TSC's rate again, from the calibration's first pair to a
 * fresh one, and convert from that pair on.  A calibration of 20 ms is
 * off by up to 1e-4 (a pair's error of tens of nanoseconds over 20 ms, or
 * more when preempted), and converted times gain that much on
 * CLOCK_MONOTONIC, and on anything placed on it (Xen's trace, another
 * domain's clock): 0.2 ppm measured here, 12 us a minute.  After T
 * seconds the rate is off by a pair's error over T.  Each call moves the
 * times converted from then on by what they had drifted since the call
 * before (called about once a second: well under a microsecond once the
 * rate is known).  A pair whose TSC bracket is wide (the thread was
 * preempted) is not used.  Nothing for CLOCK_MONOTONIC.  Not to be called
 * while another thread converts with @c.
 */
void xflow_clock_refine(struct xflow_clock *c);

/* One (TSC, CLOCK_MONOTONIC) pair taken together: clock_gettime bracketed
 * by two TSC reads, *tsc the bracket's midpoint.  What a CLOCK_MONOTONIC
 * agent sends as its TSC anchor (xflow/control.h), and what calibration
 * measures with. */
void xflow_clock_pair(uint64_t *tsc, uint64_t *ns);

/* True when CPUID says the TSC is invariant. */
int xflow_tsc_invariant(void);

static inline uint64_t xflow_tsc_read(void)
{
	uint32_t lo, hi;
	__asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

static inline uint64_t xflow_monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Now, in the clock's ticks. */
static inline uint64_t xflow_clock_ticks(const struct xflow_clock *c)
{
	return c->kind == XFLOW_CLOCK_TSC ? xflow_tsc_read() : xflow_monotonic_ns();
}

/* Ticks of this clock to CLOCK_MONOTONIC nanoseconds. */
static inline uint64_t xflow_clock_to_ns(const struct xflow_clock *c, uint64_t ticks)
{
	if (c->kind != XFLOW_CLOCK_TSC)
		return ticks;
	/* Signed delta: ticks taken just before calibration convert too. */
	int64_t d = (int64_t)(ticks - c->base_tick);
	__int128 ns = ((__int128)d * (__int128)c->mult) >> 32;
	return c->base_ns + (uint64_t)(int64_t)ns;
}

#endif
