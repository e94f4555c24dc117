/* The bridge (net/bridge/): dom0's xenbr0 joining the vifs and the NIC. */
#ifndef SIM_NET_BR_PRIVATE_H
#define SIM_NET_BR_PRIVATE_H

#include "linux/netdevice.h"

#define NF_BR_PRE_ROUTING 0
#define NF_BR_FORWARD 2
#define NF_BR_POST_ROUTING 4
#define NF_DROP 0
#define NF_ACCEPT 1
#define NF_STOLEN 2

/* The uplink port's "address": frames for the world. */
#define BR_UPLINK 0xffff

struct net_bridge_port {
	struct net_device *dev;
	uint16_t port_no;
	uint16_t addr; /* the guest behind a vif, or BR_UPLINK */
	struct net_bridge_port *next;
};

/* Creates the bridge and hooks it into netif_receive_skb(). */
void br_init(void);
void br_fini(void);

/* Attaches @dev as a port; @addr is the guest behind it or BR_UPLINK. */
int br_add_if(struct net_device *dev, uint16_t addr);

/* The port a frame is for, from its header (the forwarding database). */
struct net_bridge_port *br_fdb_get(const struct sk_buff *skb);

/* br_input.c */
int br_handle_frame(struct net_bridge_port *p, struct sk_buff *skb);
int br_handle_frame_finish(struct sk_buff *skb);

/* br_forward.c */
void br_forward(const struct net_bridge_port *to, struct sk_buff *skb);
int br_dev_queue_push_xmit(struct sk_buff *skb);

/* br_netfilter.c: the bridge's netfilter hooks, as NF_HOOK calls them. */
unsigned int br_nf_pre_routing(unsigned int hook, struct sk_buff **pskb,
			       const struct net_device *in, const struct net_device *out,
			       int (*okfn)(struct sk_buff *));
unsigned int br_nf_post_routing(unsigned int hook, struct sk_buff **pskb,
				const struct net_device *in, const struct net_device *out,
				int (*okfn)(struct sk_buff *));

/* Where the bridge keeps the destination port while the frame is queued. */
static inline const struct net_bridge_port **br_skb_cb_to(struct sk_buff *skb)
{
	return (const struct net_bridge_port **)(void *)skb->cb;
}

#endif
