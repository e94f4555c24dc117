/*
 * drivers/xen/netfront/netfront.c: the guest half of the split network
 * driver, after Linux 2.6.16-xen.
 *
 * Transmit: network_start_xmit() grants dom0 read access to the page that
 * holds the frame, puts a netif_tx_request on the shared tx ring and
 * notifies the backend when RING_PUSH_REQUESTS_AND_CHECK_NOTIFY says it is
 * needed.  network_tx_buf_gc() takes the responses back, revokes the grants
 * and frees the skbs.  Receive: the guest posts granted pages on the rx ring;
 * netif_poll() takes the filled ones and hands the frames up.
 *
 * The flags written here use bits 0-3 only; bits 4-15 stay zero for a tracer.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "linux/mm.h"
#include "linux/netdevice.h"
#include "net/tcp.h"
#include "xen/xenbus.h"

#define TX_RING_SIZE NET_TX_RING_SIZE
#define RX_RING_SIZE NET_RX_RING_SIZE

struct netfront_info {
	struct net_device netdev;
	struct xenbus_device *xbdev;

	spinlock_t tx_lock;
	pthread_cond_t tx_room;
	struct netif_tx_front_ring tx;
	struct netif_rx_front_ring rx;

	/*
	 * tx_skbs[0] heads the list of free ids; a free entry holds the next
	 * free id, a used one the skb in flight, as in Linux.
	 */
	struct sk_buff *tx_skbs[TX_RING_SIZE + 1];
	grant_ref_t grant_tx_ref[TX_RING_SIZE + 1];

	void *rx_pages[RX_RING_SIZE];
	grant_ref_t grant_rx_ref[RX_RING_SIZE];

	pthread_t irq_thread;
	bool running;
	unsigned long tx_bad_rsp, rx_bad_rsp;
};

static struct netfront_info netfront;

static void add_id_to_freelist(struct sk_buff **list, unsigned short id)
{
	list[id] = list[0];
	list[0] = (struct sk_buff *)(uintptr_t)id;
}

static unsigned short get_id_from_freelist(struct sk_buff **list)
{
	unsigned short id = (unsigned short)(uintptr_t)list[0];

	list[0] = list[id];
	return id;
}

/* Free entries hold small ids, in-use ones pointers (never in page 0). */
static bool is_free_id(struct sk_buff *entry)
{
	return (uintptr_t)entry < PAGE_SIZE;
}

/*
 * Reaps tx responses: called with tx_lock held.  As large as Linux's, which
 * is not inlined into its callers either.
 */
static noinline void network_tx_buf_gc(struct net_device *dev)
{
	struct netfront_info *np = netdev_priv(dev);
	RING_IDX cons, prod;

	do {
		prod = np->tx.sring->rsp_prod;
		rmb(); /* Ensure we see responses up to 'prod'. */
		if (RING_RESPONSE_PROD_OVERFLOW(&np->tx, prod)) {
			np->tx_bad_rsp++;
			return; /* a broken backend: take nothing from it */
		}
		for (cons = np->tx.rsp_cons; cons != prod; cons++) {
			struct netif_tx_response *txrsp = RING_GET_RESPONSE(&np->tx, cons);
			unsigned short id = txrsp->id;
			struct sk_buff *skb;

			if (id == 0 || id > TX_RING_SIZE || is_free_id(np->tx_skbs[id])) {
				np->tx_bad_rsp++;
				continue;
			}
			skb = np->tx_skbs[id];
			if (txrsp->status != NETIF_RSP_OKAY)
				dev->stats.tx_dropped++;
			gnttab_end_foreign_access(np->grant_tx_ref[id]);
			np->grant_tx_ref[id] = GRANT_INVALID_REF;
			add_id_to_freelist(np->tx_skbs, id);
			truth_note(ST_NETWORK_TX_BUF_GC, skb_tag(skb), skb);
			dev_kfree_skb(skb);
		}
		np->tx.rsp_cons = prod;

		/*
		 * Set a new event, then check for race with update of tx_cons.
		 * Asking for an event halfway through what is in flight batches
		 * the notifications; one must always be asked for, however few
		 * buffers are pending.
		 */
		np->tx.sring->rsp_event = prod + ((np->tx.sring->req_prod - prod) >> 1) + 1;
		mb(); /* rsp_event is visible before we re-read rsp_prod */
	} while (prod != np->tx.sring->rsp_prod);
	pthread_cond_broadcast(&np->tx_room);
}

struct xennet_gnttab_make_txreq {
	struct netfront_info *np;
	struct sk_buff *skb;
	struct netif_tx_request *tx; /* the request made, NULL if none */
};

/*
 * gnttab_foreach_grant_in_range()'s callback: grants the backend the frame
 * and puts a request for it on the ring (not yet pushed).  Called with
 * tx_lock held and a free slot.  The caller sets the request's flags.
 */
static void xennet_tx_setup_grant(unsigned long gfn, unsigned int offset, unsigned int len,
				  void *data)
{
	struct xennet_gnttab_make_txreq *info = data;
	struct netfront_info *np = info->np;
	struct netif_tx_request *tx;
	unsigned short id;
	int ref;

	ref = gnttab_grant_foreign_access(np->xbdev->otherend_id, gfn, 1);
	if (unlikely(ref < 0))
		return;
	id = get_id_from_freelist(np->tx_skbs);
	np->tx_skbs[id] = info->skb;
	np->grant_tx_ref[id] = (grant_ref_t)ref;

	tx = RING_GET_REQUEST(&np->tx, np->tx.req_prod_pvt++);
	tx->id = id;
	tx->gref = (grant_ref_t)ref;
	tx->offset = (uint16_t)offset;
	tx->size = (uint16_t)len;
	info->tx = tx;
}

/* Sleeps until responses may have freed ring slots, or 100 ms pass. */
static int tx_room_wait(struct netfront_info *np)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 100000000;
	ts.tv_sec += ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_cond_timedwait(&np->tx_room, &np->tx_lock, &ts);
	/* Shutting down with the backend gone: give up rather than hang. */
	return poll(&(struct pollfd){ .fd = np->xbdev->stop_fd, .events = POLLIN }, 1, 0) > 0 ? -1 : 0;
}

/*
 * The vif's hard_start_xmit.  A frame always fits in one page here (TCP sends
 * MSS-sized segments), so it takes one request and no NETTXF_more_data.
 */
static int network_start_xmit(struct sk_buff *skb, struct net_device *dev)
{
	struct netfront_info *np = netdev_priv(dev);
	struct xennet_gnttab_make_txreq info = { .np = np, .skb = skb };
	struct netif_tx_request *tx;
	unsigned int len = skb->len; /* skb may be freed once it is on the ring */
	int notify;

	truth_note(ST_NETWORK_START_XMIT, skb_tag(skb), skb);
	if (unlikely(((uintptr_t)skb->data & ~PAGE_MASK) + skb->len > PAGE_SIZE)) {
		dev->stats.tx_dropped++;
		kfree_skb(skb);
		return NETDEV_TX_OK;
	}

	spin_lock(&np->tx_lock);
	/* A full ring stops the queue: wait for responses to free slots. */
	while (RING_FULL(&np->tx)) {
		network_tx_buf_gc(dev);
		if (!RING_FULL(&np->tx))
			break;
		if (tx_room_wait(np) < 0) {
			spin_unlock(&np->tx_lock);
			dev->stats.tx_dropped++;
			kfree_skb(skb);
			return NETDEV_TX_OK;
		}
	}
	/*
	 * As Linux 4.x does it: the grant callback takes a ring slot and fills
	 * in the request; the flags are set here, where the skb is known.
	 */
	gnttab_foreach_grant_in_range(skb->data, skb->len, xennet_tx_setup_grant, &info);
	tx = info.tx;
	if (unlikely(!tx)) {
		spin_unlock(&np->tx_lock);
		dev->stats.tx_dropped++;
		kfree_skb(skb);
		return NETDEV_TX_OK;
	}
	/*
	 * One store, bits 0-3 only: a tracer that puts a flow id in bits 4-15
	 * right after the program's write of the field is not overwritten by
	 * a second write.
	 */
	tx->flags = skb->ip_summed == CHECKSUM_HW ? /* local packet? */
		NETTXF_csum_blank | NETTXF_data_validated : 0;

	RING_PUSH_REQUESTS_AND_CHECK_NOTIFY(&np->tx, notify);
	if (notify)
		notify_remote_via_evtchn(&np->xbdev->evtchn);

	network_tx_buf_gc(dev);
	spin_unlock(&np->tx_lock);

	dev->stats.tx_bytes += len;
	dev->stats.tx_packets++;
	return NETDEV_TX_OK;
}

/* Posts rx request @id with its page granted writable to the backend. */
static bool network_post_rx_buffer(struct netfront_info *np, unsigned short id)
{
	struct netif_rx_request *req;
	int ref;

	ref = gnttab_grant_foreign_access(np->xbdev->otherend_id,
					  virt_to_mfn(np->rx_pages[id]), 0);
	if (ref < 0)
		return false;
	np->grant_rx_ref[id] = (grant_ref_t)ref;
	req = RING_GET_REQUEST(&np->rx, np->rx.req_prod_pvt);
	req->id = id;
	req->gref = (grant_ref_t)ref;
	np->rx.req_prod_pvt++;
	return true;
}

static void network_alloc_rx_buffers_push(struct netfront_info *np)
{
	int notify;

	RING_PUSH_REQUESTS_AND_CHECK_NOTIFY(&np->rx, notify);
	if (notify)
		notify_remote_via_evtchn(&np->xbdev->evtchn);
}

/* Takes the filled rx buffers, re-posts them and passes the frames up. */
static noinline void netif_poll(struct netfront_info *np)
{
	struct sk_buff_head rxq;
	struct sk_buff *skb;
	int more_to_do;

	skb_queue_head_init(&rxq);
	do {
		RING_IDX i, rp = np->rx.sring->rsp_prod;

		rmb(); /* Ensure we see queued responses up to 'rp'. */
		if (RING_RESPONSE_PROD_OVERFLOW(&np->rx, rp)) {
			np->rx_bad_rsp++;
			break;
		}
		for (i = np->rx.rsp_cons; i != rp; i++) {
			struct netif_rx_response *rx = RING_GET_RESPONSE(&np->rx, i);
			unsigned short id = rx->id;

			if (id >= RX_RING_SIZE || np->grant_rx_ref[id] == GRANT_INVALID_REF) {
				np->rx_bad_rsp++;
				continue;
			}
			gnttab_end_foreign_access(np->grant_rx_ref[id]);
			np->grant_rx_ref[id] = GRANT_INVALID_REF;
			if (rx->status > 0 && rx->offset + rx->status <= (int)PAGE_SIZE &&
			    (skb = alloc_skb((unsigned int)rx->status))) {
				memcpy(skb_put(skb, (unsigned int)rx->status),
				       (unsigned char *)np->rx_pages[id] + rx->offset,
				       (size_t)rx->status);
				skb->dev = &np->netdev;
				__skb_queue_tail(&rxq, skb);
				np->netdev.stats.rx_packets++;
			} else {
				np->netdev.stats.rx_dropped++;
			}
			network_post_rx_buffer(np, id);
		}
		np->rx.rsp_cons = rp;
		network_alloc_rx_buffers_push(np);
		RING_FINAL_CHECK_FOR_RESPONSES(&np->rx, more_to_do);
	} while (more_to_do);

	/* netif_receive_skb() -> ip_rcv() -> tcp_v4_rcv(), shortened. */
	while ((skb = __skb_dequeue(&rxq)))
		tcp_v4_rcv(skb);
}

/* The event channel's interrupt handler, on a thread of its own. */
static void *netif_int(void *arg)
{
	struct netfront_info *np = arg;
	struct pollfd pfd[2] = {
		{ .fd = evtchn_fd(&np->xbdev->evtchn), .events = POLLIN },
		{ .fd = np->xbdev->stop_fd, .events = POLLIN },
	};

	pthread_setname_np(pthread_self(), "netfront-irq");
	for (;;) {
		int n = evtchn_wait(&np->xbdev->evtchn, pfd, 2, 100);

		if (n > 0 && (pfd[1].revents & POLLIN))
			break;
		if (n > 0 && (pfd[0].revents & POLLIN))
			evtchn_ack(&np->xbdev->evtchn);
		/* On a timeout too: a lost event must not wedge the device. */
		spin_lock(&np->tx_lock);
		network_tx_buf_gc(&np->netdev);
		spin_unlock(&np->tx_lock);
		netif_poll(np);
	}
	truth_thread_flush();
	return NULL;
}

int netfront_probe(struct xenbus_device *xbdev, struct net_device **out)
{
	struct netfront_info *np = &netfront;
	struct netif_tx_sring *txs = hostmem_page(xbdev->mem, HOSTMEM_PG_NET_TX);
	struct netif_rx_sring *rxs = hostmem_page(xbdev->mem, HOSTMEM_PG_NET_RX);
	int rc;

	dev_init(&np->netdev, "eth0", np, network_start_xmit, ST_NETWORK_START_XMIT);
	np->xbdev = xbdev;
	spin_lock_init(&np->tx_lock);
	pthread_cond_init(&np->tx_room, NULL);

	for (unsigned short i = 0; i <= TX_RING_SIZE; i++) {
		np->tx_skbs[i] = (struct sk_buff *)(uintptr_t)(i + 1);
		np->grant_tx_ref[i] = GRANT_INVALID_REF;
	}

	/* setup_device(): the frontend initialises the shared rings. */
	SHARED_RING_INIT(txs);
	FRONT_RING_INIT(&np->tx, txs, PAGE_SIZE);
	SHARED_RING_INIT(rxs);
	FRONT_RING_INIT(&np->rx, rxs, PAGE_SIZE);

	for (unsigned short i = 0; i < RX_RING_SIZE; i++) {
		np->rx_pages[i] = alloc_page();
		if (!np->rx_pages[i] || !network_post_rx_buffer(np, i))
			return -ENOMEM;
	}
	network_alloc_rx_buffers_push(np);

	rc = pthread_create(&np->irq_thread, NULL, netif_int, np);
	if (rc)
		return -rc;
	np->running = true;
	*out = &np->netdev;
	return 0;
}

unsigned int netfront_tx_inflight(void)
{
	struct netfront_info *np = &netfront;
	unsigned int n;

	spin_lock(&np->tx_lock);
	network_tx_buf_gc(&np->netdev);
	n = np->tx.req_prod_pvt - np->tx.rsp_cons;
	spin_unlock(&np->tx_lock);
	return n;
}

void netfront_remove(void)
{
	struct netfront_info *np = &netfront;

	if (np->running)
		pthread_join(np->irq_thread, NULL);
	np->running = false;
	/* Frames dom0 never answered (it stopped first). */
	for (unsigned short id = 1; id <= TX_RING_SIZE; id++)
		if (!is_free_id(np->tx_skbs[id])) {
			dev_kfree_skb(np->tx_skbs[id]);
			add_id_to_freelist(np->tx_skbs, id);
		}
	if (np->tx_bad_rsp || np->rx_bad_rsp)
		fprintf(stderr, "netfront: %lu bad tx and %lu bad rx responses ignored\n",
			np->tx_bad_rsp, np->rx_bad_rsp);
}
