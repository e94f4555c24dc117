/*
 * net/ipv4/tcp.c: the send system call.  tcp_sendmsg() cuts the message into
 * MSS-sized segments, each in its own skb allocated from the cache, copies the
 * user's bytes in, queues them on the write queue and pushes them out.
 */
#include "net/tcp.h"

#include <errno.h>
#include <string.h>
#include <time.h>

#include "linux/mm.h"

#define MAX_TCP_HEADER 128

struct sock *tcp_sk;

void tcp_sock_init(struct sock *sk, struct net_device *dev, uint16_t guest)
{
	pthread_condattr_t ca;

	memset(sk, 0, sizeof(*sk));
	spin_lock_init(&sk->sk_lock);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sk->sk_wait, &ca);
	pthread_condattr_destroy(&ca);
	skb_queue_head_init(&sk->sk_write_queue);
	sk->sk_dev = dev;
	sk->guest = guest;
	sk->mss = TCP_MSS;
	tcp_sk = sk;
}

static void sk_wait_timeout(struct sock *sk, int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_nsec += (long)ms * 1000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_cond_timedwait(&sk->sk_wait, &sk->sk_lock, &ts);
}

/* Waits for acknowledged segments to give memory back (sk_stream_wait_memory). */
static struct sk_buff *sk_stream_alloc_pskb(struct sock *sk, unsigned int size)
{
	struct sk_buff *skb;

	while (!(skb = alloc_skb_from_cache(skbuff_head_cache, size + MAX_TCP_HEADER))) {
		spin_lock(&sk->sk_lock);
		if (sk->stopping) {
			spin_unlock(&sk->sk_lock);
			return NULL;
		}
		sk_wait_timeout(sk, 10);
		spin_unlock(&sk->sk_lock);
	}
	skb_reserve(skb, MAX_TCP_HEADER);
	return skb;
}

int tcp_sendmsg(struct sock *sk, uint32_t msgno, uint32_t size)
{
	uint32_t nseg = (size + sk->mss - 1) / sk->mss;
	if (nseg > UINT16_MAX)
		return -EMSGSIZE;
	for (uint32_t seg = 0; seg < nseg; seg++) {
		uint32_t copy = seg + 1 < nseg ? sk->mss : size - seg * sk->mss;
		struct simwire_hdr *th;
		struct truth_tag *tag;
		struct sk_buff *skb;
		unsigned char *p;

		skb = sk_stream_alloc_pskb(sk, sizeof(*th) + copy);
		if (!skb)
			return -EINTR;
		tag = skb_tag(skb);
		*tag = (struct truth_tag){ sk->guest, msgno, (uint16_t)seg, (uint16_t)nseg };
		truth_note_at(ST_ALLOC_SKB_FROM_CACHE, tag, skb, skb->tstamp);

		/* Copy the user's bytes, then the header in front of them. */
		th = (struct simwire_hdr *)(void *)skb_put(skb, sizeof(*th));
		p = skb_put(skb, copy);
		memset(p, (int)(msgno + seg) & 0xff, copy);
		*th = (struct simwire_hdr){
			.magic = SIMWIRE_MAGIC, .type = SIMWIRE_DATA, .guest = sk->guest,
			.seg = (uint16_t)seg, .nseg = (uint16_t)nseg, .msg = msgno, .len = copy,
		};
		skb->ip_summed = CHECKSUM_HW;
		skb->sk = sk;
		truth_note(ST_TCP_SENDMSG, tag, skb);

		/* skb_entail(): the original stays queued until acknowledged. */
		spin_lock(&sk->sk_lock);
		__skb_queue_tail(&sk->sk_write_queue, skb);
		sk->segs_sent++;
		spin_unlock(&sk->sk_lock);
		tcp_push(sk, skb);
	}
	return 0;
}

bool tcp_wait_all_acked(struct sock *sk, int timeout_ms)
{
	struct timespec end, now;
	bool done;

	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += timeout_ms / 1000;
	spin_lock(&sk->sk_lock);
	while (sk->sk_write_queue.qlen) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec)
			break;
		sk_wait_timeout(sk, 50);
	}
	done = sk->sk_write_queue.qlen == 0;
	spin_unlock(&sk->sk_lock);
	return done;
}
