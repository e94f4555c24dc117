/*
 * The guest's TCP sender: one connection, through the vif, to a peer beyond
 * dom0's NIC that acknowledges every segment.
 */
#ifndef SIM_NET_TCP_H
#define SIM_NET_TCP_H

#include <stdbool.h>

#include "linux/netdevice.h"
#include "net/simwire.h"

struct sock {
	spinlock_t sk_lock;
	pthread_cond_t sk_wait;       /* memory freed, segments acked */
	/* Sent segments wait here, as originals, until acknowledged. */
	struct sk_buff_head sk_write_queue;
	struct net_device *sk_dev;    /* the route: every segment leaves by it */
	uint16_t guest;
	uint32_t mss;
	unsigned long segs_sent, segs_acked;
	bool stopping;
};

void tcp_sock_init(struct sock *sk, struct net_device *dev, uint16_t guest);

/* Sends message @msgno of @size bytes; may sleep for memory.  Returns 0 or -errno. */
int tcp_sendmsg(struct sock *sk, uint32_t msgno, uint32_t size);

/* Segmentation and transmission (tcp_output.c). */
void tcp_set_skb_tso_segs(struct sock *sk, struct sk_buff *skb, unsigned int mss_now);
/* Sends @skb, just queued on the write queue. */
void tcp_push(struct sock *sk, struct sk_buff *skb);

/* The receive side, as far as ACKs go (tcp_ipv4.c, tcp_input.c). */
int tcp_v4_rcv(struct sk_buff *skb);
void tcp_ack(struct sock *sk, const struct simwire_hdr *ack);
void tcp_clean_rtx_queue(struct sock *sk, uint32_t msg, uint16_t seg);

/* The one connection of this guest. */
extern struct sock *tcp_sk;

/* Waits until every segment is acknowledged or @timeout_ms passes. */
bool tcp_wait_all_acked(struct sock *sk, int timeout_ms);

#endif
