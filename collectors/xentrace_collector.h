/*
 * collectors/xentrace_collector.h — the built-in xentrace collector: Xen's
 * trace records from a file or a pipe, giving the hypervisor() summary of
 * xflow/collector.h (see collectors/xentrace_collector.c for its options).
 */
#ifndef XFLOW_COLLECTORS_XENTRACE_COLLECTOR_H
#define XFLOW_COLLECTORS_XENTRACE_COLLECTOR_H

#include "xflow/collector.h"

extern const struct xflow_collector_ops xflow_collector_xentrace;

#endif
