/*
 * How the simulated domains' split drivers find each other: what xenbus and
 * the toolstack would tell them (ring pages, event channel, the other end's
 * domain id), gathered at boot by the domain's arch code.
 */
#ifndef SIM_XEN_XENBUS_H
#define SIM_XEN_XENBUS_H

#include "sim/evtchn.h"
#include "sim/hostmem.h"
#include "xen/gnttab.h"

struct xenbus_device {
	domid_t otherend_id;
	struct hostmem *mem;      /* the guest's shared memory */
	struct evtchn evtchn;
	int stop_fd;              /* readable when the domain shuts down */
	int hangup_fd;            /* backend: readable (EOF) when the frontend's domain is gone; -1 in the guest */
};

/* Guest frontends (drivers/xen/netfront, drivers/xen/blkfront). */
struct net_device;
int netfront_probe(struct xenbus_device *dev, struct net_device **out);
void netfront_remove(void);
/* Frames on the tx ring the backend has not answered yet. */
unsigned int netfront_tx_inflight(void);
int blkfront_probe(struct xenbus_device *dev);
void blkfront_remove(void);
/* The guest's disk (xvda), and how many of its requests are not done. */
struct gendisk *blkfront_disk(void);
unsigned int blkfront_inflight(void);
struct sim_knobs;

/* Dom0 backends (drivers/xen/netback, drivers/xen/blkback). */
int netback_connect(struct xenbus_device *dev, const struct gnttab_foreign *gnt);
/* Stops the backend threads; then, once the pipeline has drained, free. */
void netback_fini(void);
void netback_free(void);
int blkback_connect(struct xenbus_device *dev, const struct gnttab_foreign *gnt,
		    const struct sim_knobs *k);
void blkback_fini(void);
void blkback_free(void);

#endif
