/*
 * net/ipv4/tcp_input.c: processing ACKs.  The peer acknowledges each segment
 * on its own (as with SACK); the acknowledged original leaves the write
 * queue and is freed, ending its flow in the guest.
 */
#include "net/tcp.h"

void tcp_clean_rtx_queue(struct sock *sk, uint32_t msg, uint16_t seg)
{
	struct sk_buff *skb, *head = (struct sk_buff *)(void *)&sk->sk_write_queue;

	spin_lock(&sk->sk_lock);
	for (skb = head->next; skb != head; skb = skb->next) {
		struct truth_tag *tag = skb_tag(skb);

		if (tag->msg != msg || tag->seg != seg)
			continue;
		__skb_unlink(skb, &sk->sk_write_queue);
		sk->segs_acked++;
		pthread_cond_broadcast(&sk->sk_wait);
		spin_unlock(&sk->sk_lock);
		truth_note(ST_TCP_CLEAN_RTX_QUEUE, tag, skb);
		__kfree_skb(skb);
		return;
	}
	spin_unlock(&sk->sk_lock);
}

void tcp_ack(struct sock *sk, const struct simwire_hdr *ack)
{
	tcp_clean_rtx_queue(sk, ack->msg, ack->seg);
}
