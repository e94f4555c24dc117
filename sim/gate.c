/* Injected delays: see gate.h. */
#include "sim/gate.h"

#include <stdio.h>

static struct delayline *gate_lines[ST_COUNT];

int sim_gate_init(const struct sim_knobs *k, bool dom0, uint32_t domid)
{
	for (int i = 0; i < ST_COUNT; i++) {
		int rc;

		/* FreeTxDescriptors is delayed by the NIC itself (skge.c). */
		if (!k->delay_ns[i] || sim_stages[i].dom0 != dom0 || i == ST_FREETXDESCRIPTORS)
			continue;
		rc = delayline_new(&gate_lines[i], sim_stages[i].name, k->delay_ns[i], k->jitter_pct,
				   k->seed * 1000003u + domid * 101u + (unsigned)i);
		if (rc < 0)
			return rc;
	}
	return 0;
}

void sim_gate(enum sim_stage st, delayline_fn *fn, void *arg)
{
	if (st < ST_COUNT && gate_lines[st])
		delayline_put(gate_lines[st], fn, arg, 0);
	else
		fn(arg);
}

void sim_gate_fini(void)
{
	/* In pipeline order, so that items a line releases reach later lines. */
	for (int i = 0; i < ST_COUNT; i++) {
		delayline_free(gate_lines[i]);
		gate_lines[i] = NULL;
	}
}
