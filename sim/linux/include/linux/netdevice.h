/*
 * Network devices and the core transmit/receive entry points of
 * net/core/dev.c, as Linux 2.6.16 has them.
 */
#ifndef SIM_LINUX_NETDEVICE_H
#define SIM_LINUX_NETDEVICE_H

#include "linux/skbuff.h"
#include "sim/stage.h"

#define NETDEV_TX_OK 0
#define NETDEV_TX_BUSY 1
#define NET_RX_SUCCESS 0
#define NET_RX_DROP 1

struct net_bridge_port;

struct net_device_stats {
	unsigned long rx_packets, tx_packets, rx_bytes, tx_bytes, tx_dropped, rx_dropped;
};

struct net_device {
	char name[16];
	int ifindex;
	int (*hard_start_xmit)(struct sk_buff *skb, struct net_device *dev);
	/*
	 * The stage hard_start_xmit stands for, so that dev_queue_xmit()
	 * enters it through its delay gate.
	 */
	enum sim_stage xmit_stage;
	spinlock_t xmit_lock;
	struct net_bridge_port *br_port;
	struct net_device_stats stats;
	void *priv;
};

static inline void *netdev_priv(const struct net_device *dev)
{
	return dev->priv;
}

void dev_init(struct net_device *dev, const char *name, void *priv,
	      int (*xmit)(struct sk_buff *, struct net_device *), enum sim_stage xmit_stage);

int dev_queue_xmit(struct sk_buff *skb);
int netif_rx(struct sk_buff *skb);
int netif_receive_skb(struct sk_buff *skb);

/* Starts and stops the thread that drains the backlog queue (net_rx_action). */
int net_dev_init(void);
void net_dev_fini(void);

/* Set by the bridge when it loads: where netif_receive_skb() hands bridged frames. */
extern int (*br_handle_frame_hook)(struct net_bridge_port *p, struct sk_buff *skb);

#endif
