/*
 * net/core/dev.c: the device-independent transmit and receive paths.
 *
 * dev_queue_xmit() hands a frame to its device's driver.  netif_rx() is the
 * receive entry for drivers running in interrupt context (netback here): it
 * only queues the frame on the backlog; the NET_RX softirq, here a thread of
 * its own, drains the backlog through netif_receive_skb().  That hand-off is
 * where seed 001's Table 2 finds the time going.
 */
#include "linux/netdevice.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "sim/gate.h"
#include "xen/hypervisor.h"

#define NETDEV_MAX_BACKLOG 10000

int (*br_handle_frame_hook)(struct net_bridge_port *p, struct sk_buff *skb);

/* The per-CPU softnet data of a one-CPU kernel. */
static struct softnet_data {
	struct sk_buff_head input_pkt_queue;
	pthread_cond_t wake;
	pthread_t thread;
	bool running;
	bool stop;
} softnet;

void dev_init(struct net_device *dev, const char *name, void *priv,
	      int (*xmit)(struct sk_buff *, struct net_device *), enum sim_stage xmit_stage)
{
	static int ifindex;

	memset(dev, 0, sizeof(*dev));
	snprintf(dev->name, sizeof(dev->name), "%s", name);
	dev->ifindex = ++ifindex;
	dev->priv = priv;
	dev->hard_start_xmit = xmit;
	dev->xmit_stage = xmit_stage;
	spin_lock_init(&dev->xmit_lock);
}

/* The driver's entry, reached through the delay gate of its stage. */
static void dev_hard_start_xmit(void *arg)
{
	struct sk_buff *skb = arg;
	struct net_device *dev = skb->dev;

	spin_lock(&dev->xmit_lock);
	if (dev->hard_start_xmit(skb, dev) != NETDEV_TX_OK) {
		dev->stats.tx_dropped++;
		kfree_skb(skb);
	}
	spin_unlock(&dev->xmit_lock);
}

/*
 * Queues a frame for transmission on skb->dev.  There is no qdisc: like a
 * virtual device's noqueue, the frame goes straight to the driver, which
 * waits for room rather than dropping (a stopped queue, in Linux terms).
 */
int dev_queue_xmit(struct sk_buff *skb)
{
	truth_note(is_initial_xendomain() ? ST_0_DEV_QUEUE_XMIT : ST_U_DEV_QUEUE_XMIT,
		   skb_tag(skb), skb);
	sim_gate(skb->dev->xmit_stage, dev_hard_start_xmit, skb);
	return NETDEV_TX_OK;
}

/* Queues a received frame on the backlog for the softirq; never blocks. */
int netif_rx(struct sk_buff *skb)
{
	truth_note(ST_NETIF_RX, skb_tag(skb), skb);
	spin_lock(&softnet.input_pkt_queue.lock);
	/* A full backlog drops, as does one whose softirq has stopped for good. */
	if (softnet.input_pkt_queue.qlen >= NETDEV_MAX_BACKLOG || !softnet.running) {
		spin_unlock(&softnet.input_pkt_queue.lock);
		skb->dev->stats.rx_dropped++;
		kfree_skb(skb);
		return NET_RX_DROP;
	}
	__skb_queue_tail(&softnet.input_pkt_queue, skb);
	/* Raise the softirq only when the queue was empty: it drains to empty. */
	if (softnet.input_pkt_queue.qlen == 1)
		pthread_cond_signal(&softnet.wake);
	spin_unlock(&softnet.input_pkt_queue.lock);
	return NET_RX_SUCCESS;
}

/*
 * Delivers a frame to the protocols; here the only one is the bridge, which
 * owns every dom0 device.  Larger than inlining would allow in Linux.
 */
noinline int netif_receive_skb(struct sk_buff *skb)
{
	struct net_device *dev = skb->dev;

	truth_note(ST_NETIF_RECEIVE_SKB, skb_tag(skb), skb);
	skb->input_dev = dev;
	dev->stats.rx_packets++;
	dev->stats.rx_bytes += skb->len;
	if (dev->br_port && br_handle_frame_hook)
		return br_handle_frame_hook(dev->br_port, skb);
	kfree_skb(skb);
	return NET_RX_DROP;
}

static void backlog_deliver(void *arg)
{
	netif_receive_skb(arg);
}

/* The NET_RX softirq: process_backlog() until stopped and drained. */
static void *net_rx_action(void *unused)
{
	(void)unused;
	pthread_setname_np(pthread_self(), "ksoftirqd");
	spin_lock(&softnet.input_pkt_queue.lock);
	for (;;) {
		struct sk_buff *skb = __skb_dequeue(&softnet.input_pkt_queue);

		if (!skb) {
			if (softnet.stop)
				break;
			pthread_cond_wait(&softnet.wake, &softnet.input_pkt_queue.lock);
			continue;
		}
		spin_unlock(&softnet.input_pkt_queue.lock);
		sim_gate(ST_NETIF_RECEIVE_SKB, backlog_deliver, skb);
		spin_lock(&softnet.input_pkt_queue.lock);
	}
	spin_unlock(&softnet.input_pkt_queue.lock);
	truth_thread_flush();
	return NULL;
}

int net_dev_init(void)
{
	int rc;

	skb_queue_head_init(&softnet.input_pkt_queue);
	pthread_cond_init(&softnet.wake, NULL);
	rc = pthread_create(&softnet.thread, NULL, net_rx_action, NULL);
	if (rc)
		return -rc;
	softnet.running = true;
	return 0;
}

void net_dev_fini(void)
{
	if (!softnet.running)
		return;
	spin_lock(&softnet.input_pkt_queue.lock);
	softnet.stop = true;
	pthread_cond_signal(&softnet.wake);
	spin_unlock(&softnet.input_pkt_queue.lock);
	pthread_join(softnet.thread, NULL);
	spin_lock(&softnet.input_pkt_queue.lock);
	softnet.running = false;
	spin_unlock(&softnet.input_pkt_queue.lock);
}
