/* The SysKonnect sk98lin NIC (drivers/net/sk98lin/skge.c): dom0's uplink. */
#ifndef SIM_LINUX_SKGE_H
#define SIM_LINUX_SKGE_H

#include "linux/netdevice.h"

struct sim_knobs;

/* Brings up the NIC; the peer beyond it acknowledges every data frame. */
int skge_probe(const struct sim_knobs *k, struct net_device **out);

/* Stops the NIC's "hardware", completing what it holds. */
void skge_remove(void);

#endif
