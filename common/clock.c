/*
 * Clock choice and TSC calibration.
 */
#include <cpuid.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xflow/clock.h"

#define CALIBRATION_NS 20000000u /* 20 ms: ~1e-4 relative error is plenty for hops */

int xflow_tsc_invariant(void)
{
	unsigned a, b, c, d;
	if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
		return 0;
	__get_cpuid(0x80000007u, &a, &b, &c, &d);
	return (d >> 8) & 1; /* "Invariant TSC" */
}

/* The narrowest bracket of a few tries puts the pair within tens of ns:
 * a try that was interrupted or migrated shows as a wide bracket, the
 * ticks it spans returned. */
static uint64_t pair_bracket(uint64_t *tsc, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 8; i++) {
		uint64_t t0 = xflow_tsc_read();
		uint64_t n = xflow_monotonic_ns();
		uint64_t t1 = xflow_tsc_read();
		if (t1 - t0 < best) {
			best = t1 - t0;
			*tsc = t0 + (t1 - t0) / 2;
			*ns = n;
		}
	}
	return best;
}

void xflow_clock_pair(uint64_t *tsc, uint64_t *ns)
{
	(void)pair_bracket(tsc, ns);
}

static void use_monotonic(struct xflow_clock *c, const char *why)
{
	c->kind = XFLOW_CLOCK_MONOTONIC;
	c->mult = UINT64_C(1) << 32;
	snprintf(c->why, sizeof(c->why), "CLOCK_MONOTONIC: %s", why);
}

int xflow_clock_init(struct xflow_clock *c, unsigned flags)
{
	const char *env = getenv("XFLOW_CLOCK");

	memset(c, 0, sizeof(*c));
	if ((flags & XFLOW_CLOCK_FORCE_MONOTONIC) || (env && strcmp(env, "monotonic") == 0)) {
		use_monotonic(c, "requested");
		return 0;
	}
	if (!xflow_tsc_invariant()) {
		use_monotonic(c, "the TSC is not invariant on this CPU (no CPUID 0x80000007 EDX bit 8)");
		return 0;
	}

	uint64_t t0, n0, t1, n1;
	xflow_clock_pair(&t0, &n0);
	do {
		xflow_clock_pair(&t1, &n1);
	} while (n1 - n0 < CALIBRATION_NS);
	if (t1 <= t0) {
		use_monotonic(c, "the TSC did not advance during calibration");
		return 0;
	}
	c->kind = XFLOW_CLOCK_TSC;
	c->tsc_hz = (uint64_t)((double)(t1 - t0) * 1e9 / (double)(n1 - n0));
	c->mult = (uint64_t)(((unsigned __int128)(n1 - n0) << 32) / (t1 - t0));
	c->base_tick = t1;
	c->base_ns = n1;
	c->first_tick = t0;
	c->first_ns = n0;
	snprintf(c->why, sizeof(c->why), "TSC: invariant, %.3f MHz", (double)c->tsc_hz / 1e6);
	return 0;
}

/* A pair's bracket wider than this many ns is not used to refine: a
 * clock_gettime() takes tens of nanoseconds, a preemption microseconds. */
#define REFINE_BRACKET_NS 2000u

void xflow_clock_refine(struct xflow_clock *c)
{
	if (c->kind != XFLOW_CLOCK_TSC)
		return;
	uint64_t t, n;
	uint64_t bracket = pair_bracket(&t, &n);
	if (t <= c->first_tick || n <= c->first_ns || bracket > (uint64_t)REFINE_BRACKET_NS * c->tsc_hz / 1000000000u)
		return;
	c->mult = (uint64_t)(((unsigned __int128)(n - c->first_ns) << 32) / (t - c->first_tick));
	c->tsc_hz = (uint64_t)((double)(t - c->first_tick) * 1e9 / (double)(n - c->first_ns));
	c->base_tick = t;
	c->base_ns = n;
}
