/*
 * net/ipv4/tcp_output.c: segmentation offload bookkeeping and transmission.
 * A segment is transmitted as a clone (skb_clone) so that the original can
 * stay on the write queue for retransmission until the peer acknowledges it.
 */
#include "net/tcp.h"

#include "sim/gate.h"

/*
 * Tells the device how many MSS-sized segments the skb carries.  Linux calls
 * it from several files and seed 001's Table 2 finds it as a function of its
 * own; ours is small and called from this file only, so it is pinned.
 */
noinline void tcp_set_skb_tso_segs(struct sock *sk, struct sk_buff *skb, unsigned int mss_now)
{
	(void)sk;
	truth_note(ST_TCP_SET_SKB_TSO_SEGS, skb_tag(skb), skb);
	if (skb->len - sizeof(struct simwire_hdr) <= mss_now) {
		skb->tso_segs = 1;
		skb->tso_size = 0;
	} else {
		skb->tso_segs = (unsigned short)((skb->len + mss_now - 1) / mss_now);
		skb->tso_size = (unsigned short)mss_now;
	}
}

/* The IP layer has nothing to add here: the route's device is fixed. */
static void ip_queue_xmit(void *arg)
{
	dev_queue_xmit(arg);
}

static int tcp_transmit_skb(struct sock *sk, struct sk_buff *skb)
{
	struct sk_buff *clone = skb_clone(skb);

	if (unlikely(!clone))
		return -1; /* the retransmit timer would resend it; we have none */
	clone->dev = sk->sk_dev;
	clone->sk = NULL;
	sim_gate(ST_U_DEV_QUEUE_XMIT, ip_queue_xmit, clone);
	return 0;
}

static void tcp_transmit_one(void *arg)
{
	struct sk_buff *skb = arg;

	tcp_transmit_skb(skb->sk, skb);
}

/* tcp_write_xmit() for one segment: the window is never the limit here. */
static void tcp_write_xmit_one(void *arg)
{
	struct sk_buff *skb = arg;

	tcp_set_skb_tso_segs(skb->sk, skb, skb->sk->mss);
	sim_gate(ST_SKB_CLONE, tcp_transmit_one, skb);
}

void tcp_push(struct sock *sk, struct sk_buff *skb)
{
	(void)sk;
	sim_gate(ST_TCP_SET_SKB_TSO_SEGS, tcp_write_xmit_one, skb);
}
