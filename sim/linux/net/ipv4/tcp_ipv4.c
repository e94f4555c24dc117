/*
 * net/ipv4/tcp_ipv4.c: the receive entry of TCP.  The only segments a guest
 * receives are the peer's ACKs, all for the one connection.
 */
#include "net/tcp.h"

int tcp_v4_rcv(struct sk_buff *skb)
{
	const struct simwire_hdr *th = (const void *)skb->data;

	if (skb->len >= sizeof(*th) && th->magic == SIMWIRE_MAGIC &&
	    th->type == SIMWIRE_ACK && tcp_sk)
		tcp_ack(tcp_sk, th);
	kfree_skb(skb);
	return 0;
}
