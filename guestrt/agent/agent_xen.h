/*
 * guestrt/agent/agent_xen.h — the agent's side of the Xen transport
 * (xflow/xen.h): its offer in xenstore, the two vchan servers, and the
 * pump that moves records from the agent's own ring into the rec vchan.
 *
 * The hit path is the local one, unchanged: records go into the agent's
 * ring in its own memory; between slices the pump copies what the rec
 * vchan has room for.  When the vchan is full records wait in the ring,
 * and when the ring is full the producer drops and counts them as usual.
 */
#ifndef XFLOW_GUESTRT_AGENT_AGENT_XEN_H
#define XFLOW_GUESTRT_AGENT_AGENT_XEN_H

#include <stdbool.h>
#include <stdint.h>

#include "xflow/ring.h"

struct libxenvchan;

struct agent_xen {
	uint32_t domid;
	char name[64];
	char base[64];              /* /local/domain/<id>/data/xflow */
	struct libxenvchan *ctl;    /* until a monitor arrives; then the conn's */
	struct libxenvchan *rec;
	bool offered;
	struct xflow_ring_consumer own; /* reads the agent's own ring */
	uint64_t pumped;
};

/* Learn this domain's id and name from xenstore.  0, or a negative errno
 * with the reason in @why. */
int agent_xen_init(struct agent_xen *x, char *why, size_t whylen);

/* Create both vchan servers (offered to dom0) and announce them: the
 * "agent" node is written last.  0, or a negative errno with @err set. */
int agent_xen_offer(struct agent_xen *x, char *err, size_t errlen);

/* A monitor mapped the control vchan (libxenvchan's cli_live). */
bool agent_xen_monitor_arrived(const struct agent_xen *x);

/* Mark the offer taken (a second monitor leaves it alone). */
void agent_xen_mark_busy(struct agent_xen *x);

/* Start pumping a freshly formatted ring at @region (the agent's own). */
int agent_xen_pump_start(struct agent_xen *x, void *region, size_t size);

/* Move what fits from the agent's ring into the rec vchan.  Returns the
 * records moved, or -EPIPE when the monitor's end is gone. */
/* Records still in the agent's ring, not yet moved into the record vchan. */
bool agent_xen_pending(struct agent_xen *x);
long agent_xen_pump(struct agent_xen *x);

/* Withdraw the offer: close the rec vchan (and the ctl one if it is still
 * ours) and remove the xenstore directory. */
void agent_xen_withdraw(struct agent_xen *x);

#endif
