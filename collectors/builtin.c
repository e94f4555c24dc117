/*
 * The table of built-in collectors.  Adding one is one line here.
 */
#include <string.h>

#include "collectors/agent_collector.h"
#include "collectors/builtin.h"
#include "xflow/session.h"
#include "collectors/xentrace_collector.h"

const struct xflow_collector_ops *const xflow_collectors_builtin[] = {
	&xflow_collector_synthetic,
	&xflow_collector_agent,
	&xflow_collector_xentrace,
	&xflow_collector_replay,
	NULL,
};

const struct xflow_collector_ops *xflow_collector_find(const char *name)
{
	for (const struct xflow_collector_ops *const *c = xflow_collectors_builtin; *c; c++)
		if (strcmp((*c)->name, name) == 0)
			return *c;
	return NULL;
}
