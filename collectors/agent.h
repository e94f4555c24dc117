/*
 * collectors/agent.h — the agent collector (collectors/agent.c): records
 * from xflow-agents through their rings, driven by the control protocol.
 */
#ifndef XFLOW_COLLECTORS_AGENT_H
#define XFLOW_COLLECTORS_AGENT_H

#include "xflow/collector.h"

extern const struct xflow_collector_ops xflow_collector_agent;

#endif
