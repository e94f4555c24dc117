/*
 * tests/e2e/collector_pump.h — read a collector for a while, as xflowtop's
 * loop does: poll its descriptors, then read() until nothing is ready.
 * Shared by the end-to-end programs that drive a collector themselves.
 */
#ifndef XFLOW_TESTS_E2E_COLLECTOR_PUMP_H
#define XFLOW_TESTS_E2E_COLLECTOR_PUMP_H

#include <poll.h>

#include "xflow/clock.h"
#include "xflow/collector.h"

/* Deliver what @c has to @emit for @ms milliseconds. */
static inline void e2e_pump(const struct xflow_collector_ops *ops, struct xflow_collector *c,
			    xflow_collector_emit_fn emit, void *ctx, int ms)
{
	uint64_t end = xflow_monotonic_ns() + (uint64_t)ms * 1000000u;
	while (xflow_monotonic_ns() < end) {
		int fds[64];
		int n = ops->pollfds(c, fds, 64);
		struct pollfd p[64];
		for (int i = 0; i < n; i++)
			p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
		poll(p, (nfds_t)n, 20);
		while (ops->read(c, xflow_monotonic_ns(), emit, ctx, 4096) > 0)
			;
	}
}

#endif
