/*
 * drivers/xen/netback/netback.c: dom0's half of the split network driver,
 * after Linux 2.6.16-xen.
 *
 * Transmit (guest -> world): net_tx_action() copies each netif_tx_request
 * off the shared ring, maps the granted page and builds an skb whose linear
 * part holds the headers and whose one fragment is the guest's page
 * (netbk_fill_frags), then passes it to netif_rx().  As with 2.6.16's mapped
 * pages, the tx response is sent only when dom0 frees the skb, from its
 * destructor; the guest then frees its clone.
 *
 * Receive (world -> guest): netif_be_start_xmit() is the vif's
 * hard_start_xmit; net_rx_action() copies frames into the pages the guest
 * posted on the rx ring and responds.
 *
 * netback reads netif_tx_request.flags through NETTXF_KNOWN_MASK only: bits
 * 4-15 are not ours (a tracer carries flow ids there).
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "linux/netdevice.h"
#include "net/br_private.h"
#include "net/simwire.h"
#include "sim/gate.h"
#include "xen/xenbus.h"

#define MAX_PENDING_REQS NET_TX_RING_SIZE
#define PKT_PROT_LEN 64
#define ETH_HLEN 14

struct pending_tx_info {
	netif_tx_request_t req;
	struct netif *netif;
	unsigned char *page; /* the guest's page, mapped */
};

typedef struct netif {
	domid_t domid;
	struct xenbus_device *xbdev;
	struct gnttab_foreign gnt;
	struct net_device dev; /* vif<domid>.0 */

	struct netif_tx_back_ring tx;
	struct netif_rx_back_ring rx;
	spinlock_t tx_rsp_lock;  /* responses come from any thread */
	spinlock_t rx_lock;
	struct sk_buff_head rx_queue;

	struct pending_tx_info pending_tx_info[MAX_PENDING_REQS];
	uint16_t pending_ring[MAX_PENDING_REQS];
	unsigned int pending_prod, pending_cons; /* free indexes in pending_ring */

	atomic_bool connected;
	pthread_t thread;
	unsigned long bad_req, rx_dropped;
	struct netif *next;
} netif_t;

#define MASK_PEND_IDX(i) ((i) & (MAX_PENDING_REQS - 1))

static struct {
	spinlock_t lock;
	netif_t *list;
} netbk = { .lock = PTHREAD_MUTEX_INITIALIZER };

static void make_tx_response(netif_t *netif, const netif_tx_request_t *txp, int16_t st)
{
	RING_IDX i;
	struct netif_tx_response *resp;
	int notify;

	spin_lock(&netif->tx_rsp_lock);
	i = netif->tx.rsp_prod_pvt;
	resp = RING_GET_RESPONSE(&netif->tx, i);
	resp->id = txp->id;
	resp->status = st;
	netif->tx.rsp_prod_pvt = ++i;
	RING_PUSH_RESPONSES_AND_CHECK_NOTIFY(&netif->tx, notify);
	if (notify)
		notify_remote_via_evtchn(&netif->xbdev->evtchn);
	spin_unlock(&netif->tx_rsp_lock);
}

/*
 * The skb built from a guest's request is gone: unmap its page, answer the
 * request and free the pending slot (netif_idx_release in 2.6.16).
 */
static void netif_idx_release(struct sk_buff *skb)
{
	struct pending_tx_info *info = skb_shinfo(skb)->destructor_arg;
	netif_t *netif = info->netif;

	info->page = NULL;
	make_tx_response(netif, &info->req, NETIF_RSP_OKAY);
	spin_lock(&netif->tx_rsp_lock);
	netif->pending_ring[MASK_PEND_IDX(netif->pending_prod++)] =
		(uint16_t)(info - netif->pending_tx_info);
	spin_unlock(&netif->tx_rsp_lock);
}

/*
 * Fills the new skb from the request: the headers into its linear part, the
 * rest left in the guest's page as a fragment.  The one place netback looks
 * at the request's flags.
 */
static noinline void netbk_fill_frags(struct sk_buff *skb)
{
	struct pending_tx_info *info = skb_shinfo(skb)->destructor_arg;
	netif_tx_request_t *txp = &info->req;
	unsigned int hlen = txp->size < PKT_PROT_LEN ? txp->size : PKT_PROT_LEN;
	const struct simwire_hdr *th;

	memcpy(skb_put(skb, hlen), info->page + txp->offset, hlen);
	th = (const void *)skb->data;
	if (hlen >= sizeof(*th) && th->magic == SIMWIRE_MAGIC && th->type == SIMWIRE_DATA)
		*skb_tag(skb) = (struct truth_tag){ th->guest, th->msg, th->seg, th->nseg };
	truth_note(ST_NETBK_FILL_FRAGS, skb_tag(skb), skb);

	if (txp->size > hlen) {
		skb_frag_t *frag = &skb_shinfo(skb)->frags[0];

		frag->page = info->page;
		frag->page_offset = (uint16_t)(txp->offset + hlen);
		frag->size = (uint16_t)(txp->size - hlen);
		skb_shinfo(skb)->nr_frags = 1;
		skb->len += frag->size;
		skb->data_len = frag->size;
	}
	switch (txp->flags & NETTXF_KNOWN_MASK & (NETTXF_csum_blank | NETTXF_data_validated)) {
	case 0:
		skb->ip_summed = CHECKSUM_NONE;
		break;
	case NETTXF_data_validated:
		skb->ip_summed = CHECKSUM_UNNECESSARY;
		break;
	default:
		skb->ip_summed = CHECKSUM_HW; /* the NIC completes the checksum */
		break;
	}
}

static void netif_rx_cb(void *arg)
{
	netif_rx(arg);
}

static void net_tx_submit(void *arg)
{
	struct sk_buff *skb = arg;
	struct pending_tx_info *info = skb_shinfo(skb)->destructor_arg;

	netbk_fill_frags(skb);
	skb->dev = &info->netif->dev;
	info->netif->dev.stats.rx_packets++;
	sim_gate(ST_NETIF_RX, netif_rx_cb, skb);
}

/* Takes the requests the guest queued; returns false if it misbehaved. */
static bool net_tx_action(netif_t *netif)
{
	int work_to_do;

	RING_FINAL_CHECK_FOR_REQUESTS(&netif->tx, work_to_do);
	while (work_to_do) {
		RING_IDX i = netif->tx.req_cons, rp = netif->tx.sring->req_prod;

		rmb(); /* Ensure that we see the requests before we copy them. */
		if (RING_REQUEST_PROD_OVERFLOW(&netif->tx, rp)) {
			fprintf(stderr, "netback: vif%u.0: frontend produced %u requests, more than the ring holds; disconnecting\n",
				netif->domid, rp - netif->tx.rsp_prod_pvt);
			return false;
		}
		for (; i != rp; i++) {
			struct pending_tx_info *info;
			netif_tx_request_t txreq;
			struct sk_buff *skb;
			uint16_t pending_idx;
			unsigned char *page;

			spin_lock(&netif->tx_rsp_lock);
			if (netif->pending_prod == netif->pending_cons) {
				spin_unlock(&netif->tx_rsp_lock);
				break; /* retried when a response frees a slot */
			}
			pending_idx = netif->pending_ring[MASK_PEND_IDX(netif->pending_cons)];
			spin_unlock(&netif->tx_rsp_lock);

			RING_COPY_REQUEST(&netif->tx, i, &txreq);
			netif->tx.req_cons = i + 1;

			if (txreq.size < ETH_HLEN || txreq.offset + txreq.size > PAGE_SIZE ||
			    !(page = gnttab_map_grant_ref(&netif->gnt, txreq.gref, false))) {
				netif->bad_req++;
				make_tx_response(netif, &txreq, NETIF_RSP_ERROR);
				continue;
			}
			skb = alloc_skb(PKT_PROT_LEN + 16);
			if (!skb) {
				make_tx_response(netif, &txreq, NETIF_RSP_DROPPED);
				continue;
			}
			skb_reserve(skb, 16);
			spin_lock(&netif->tx_rsp_lock);
			netif->pending_cons++;
			spin_unlock(&netif->tx_rsp_lock);
			info = &netif->pending_tx_info[pending_idx];
			info->req = txreq;
			info->netif = netif;
			info->page = page;
			skb_shinfo(skb)->destructor_arg = info;
			skb->destructor = netif_idx_release;
			sim_gate(ST_NETBK_FILL_FRAGS, net_tx_submit, skb);
		}
		if (i != rp)
			break; /* out of pending slots */
		RING_FINAL_CHECK_FOR_REQUESTS(&netif->tx, work_to_do);
	}
	return true;
}

/* Copies queued frames into the buffers the guest posted; rx_lock held. */
static void net_rx_action(netif_t *netif)
{
	bool pushed = false;
	int notify;

	while (netif->rx_queue.qlen) {
		struct sk_buff *skb;
		struct netif_rx_response *resp;
		netif_rx_request_t req;
		unsigned char *page;
		RING_IDX rp = netif->rx.sring->req_prod;

		rmb(); /* requests are read after the index that publishes them */
		if (netif->rx.req_cons == rp || RING_REQUEST_CONS_OVERFLOW(&netif->rx, netif->rx.req_cons)) {
			/* No buffer: ask to be notified when the guest posts one. */
			netif->rx.sring->req_event = netif->rx.req_cons + 1;
			mb(); /* req_event is visible before we look again */
			if (netif->rx.sring->req_prod != rp)
				continue;
			break;
		}
		RING_COPY_REQUEST(&netif->rx, netif->rx.req_cons, &req);
		netif->rx.req_cons++;
		skb = __skb_dequeue(&netif->rx_queue);
		page = gnttab_map_grant_ref(&netif->gnt, req.gref, true);
		resp = RING_GET_RESPONSE(&netif->rx, netif->rx.rsp_prod_pvt);
		resp->id = req.id;
		resp->offset = 0;
		resp->flags = NETRXF_data_validated;
		if (page && skb->len <= PAGE_SIZE) {
			memcpy(page, skb->data, skb->len); /* gnttab_copy */
			resp->status = (int16_t)skb->len;
		} else {
			netif->bad_req++;
			resp->status = NETIF_RSP_ERROR;
		}
		netif->rx.rsp_prod_pvt++;
		pushed = true;
		kfree_skb(skb);
	}
	if (pushed) {
		RING_PUSH_RESPONSES_AND_CHECK_NOTIFY(&netif->rx, notify);
		if (notify)
			notify_remote_via_evtchn(&netif->xbdev->evtchn);
	}
}

/* The vif's hard_start_xmit: frames the bridge sends towards the guest. */
static int netif_be_start_xmit(struct sk_buff *skb, struct net_device *dev)
{
	netif_t *netif = netdev_priv(dev);

	/* Only linear frames fit the copy below; ACKs are. */
	if (!atomic_load(&netif->connected) || skb->data_len) {
		netif->rx_dropped++;
		kfree_skb(skb);
		return NETDEV_TX_OK;
	}
	spin_lock(&netif->rx_lock);
	__skb_queue_tail(&netif->rx_queue, skb);
	net_rx_action(netif);
	spin_unlock(&netif->rx_lock);
	return NETDEV_TX_OK;
}

static void netif_disconnect(netif_t *netif)
{
	struct sk_buff *skb;

	atomic_store(&netif->connected, false);
	spin_lock(&netif->rx_lock);
	while ((skb = __skb_dequeue(&netif->rx_queue)))
		kfree_skb(skb);
	spin_unlock(&netif->rx_lock);
}

/* The event channel's interrupt handler, and xenbus watching the frontend. */
static void *netif_be_int(void *arg)
{
	netif_t *netif = arg;
	struct pollfd pfd[3] = {
		{ .fd = evtchn_fd(&netif->xbdev->evtchn), .events = POLLIN },
		{ .fd = netif->xbdev->stop_fd, .events = POLLIN },
		{ .fd = netif->xbdev->hangup_fd, .events = POLLIN },
	};
	char name[16];

	snprintf(name, sizeof(name), "netback%u", netif->domid);
	pthread_setname_np(pthread_self(), name);
	for (;;) {
		int n = evtchn_wait(&netif->xbdev->evtchn, pfd, 3, 100);

		if (n > 0 && (pfd[1].revents & POLLIN))
			break;
		if (n > 0 && (pfd[2].revents & (POLLIN | POLLHUP))) {
			fprintf(stderr, "netback: vif%u.0: frontend gone, disconnecting\n",
				netif->domid);
			netif_disconnect(netif);
			break;
		}
		if (n > 0 && (pfd[0].revents & POLLIN))
			evtchn_ack(&netif->xbdev->evtchn);
		if (!net_tx_action(netif)) {
			netif_disconnect(netif);
			break;
		}
		spin_lock(&netif->rx_lock);
		net_rx_action(netif);
		spin_unlock(&netif->rx_lock);
	}
	truth_thread_flush();
	return NULL;
}

int netback_connect(struct xenbus_device *xbdev, const struct gnttab_foreign *gnt)
{
	netif_t *netif = calloc(1, sizeof(*netif));
	char name[16];
	int rc;

	if (!netif)
		return -ENOMEM;
	netif->domid = xbdev->otherend_id;
	netif->xbdev = xbdev;
	netif->gnt = *gnt;
	snprintf(name, sizeof(name), "vif%u.0", netif->domid);
	dev_init(&netif->dev, name, netif, netif_be_start_xmit, ST_NO_GATE);
	spin_lock_init(&netif->tx_rsp_lock);
	spin_lock_init(&netif->rx_lock);
	skb_queue_head_init(&netif->rx_queue);
	for (unsigned int i = 0; i < MAX_PENDING_REQS; i++)
		netif->pending_ring[i] = (uint16_t)i;
	netif->pending_prod = MAX_PENDING_REQS;

	/* The frontend initialised the shared rings; we only attach. */
	BACK_RING_INIT(&netif->tx, (struct netif_tx_sring *)hostmem_page(xbdev->mem, HOSTMEM_PG_NET_TX), PAGE_SIZE);
	BACK_RING_INIT(&netif->rx, (struct netif_rx_sring *)hostmem_page(xbdev->mem, HOSTMEM_PG_NET_RX), PAGE_SIZE);
	atomic_store(&netif->connected, true);
	br_add_if(&netif->dev, netif->domid);

	rc = pthread_create(&netif->thread, NULL, netif_be_int, netif);
	if (rc) {
		free(netif);
		return -rc;
	}
	spin_lock(&netbk.lock);
	netif->next = netbk.list;
	netbk.list = netif;
	spin_unlock(&netbk.lock);
	return 0;
}

void netback_fini(void)
{
	netif_t *netif;

	spin_lock(&netbk.lock);
	for (netif = netbk.list; netif; netif = netif->next) {
		pthread_join(netif->thread, NULL);
		/* Frames for the guest are dropped from now on, not queued. */
		netif_disconnect(netif);
	}
	spin_unlock(&netbk.lock);
}

void netback_free(void)
{
	while (netbk.list) {
		netif_t *netif = netbk.list;

		netbk.list = netif->next;
		netif_disconnect(netif);
		if (netif->bad_req || netif->rx_dropped)
			fprintf(stderr, "netback: vif%u.0: %lu bad requests, %lu frames for the guest dropped\n",
				netif->domid, netif->bad_req, netif->rx_dropped);
		free(netif);
	}
}
