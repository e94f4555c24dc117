/*
 * collectors/agent_collector.h — the agent collector (collectors/acoll*.c): records
 * from xflow-agents through their rings, driven by the control protocol.
 */
#ifndef XFLOW_COLLECTORS_AGENT_COLLECTOR_H
#define XFLOW_COLLECTORS_AGENT_COLLECTOR_H

#include "xflow/collector.h"

extern const struct xflow_collector_ops xflow_collector_agent;

#endif
