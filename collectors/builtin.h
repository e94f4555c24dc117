/*
 * collectors/builtin.h — the collectors compiled into xflowtop.
 */
#ifndef XFLOW_COLLECTORS_BUILTIN_H
#define XFLOW_COLLECTORS_BUILTIN_H

#include "xflow/collector.h"

/* Deterministic flows along the XenLASY paper's Table 2 path, with known
 * per-hop latencies: for tests, benchmarks and trying the UI. */
extern const struct xflow_collector_ops xflow_collector_synthetic;

/* The built-in collectors, NULL-terminated, in the order --help lists them. */
extern const struct xflow_collector_ops *const xflow_collectors_builtin[];

/* The built-in collector called @name, or NULL. */
const struct xflow_collector_ops *xflow_collector_find(const char *name);

/* The synthetic path, for tests that check what the monitor reports. */
struct xflow_synthetic_point {
	int dom0;             /* 1: in dom0, 0: in the guest */
	const char *file;
	uint32_t line;
	const char *function;
	uint64_t gap_ns;      /* median time from the previous point */
};
extern const struct xflow_synthetic_point xflow_synthetic_path[];
extern const unsigned xflow_synthetic_npoints;

#endif
