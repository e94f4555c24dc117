/*
 * drivers/net/sk98lin/skge.c: the physical NIC's driver, after Linux
 * 2.6.16's sk98lin, reduced to its transmit path.
 *
 * SkGeXmit() puts a frame in the next transmit descriptor and starts the
 * hardware; when the hardware is done with the descriptor (after the frame's
 * wire time at 1 Gbit/s) it interrupts, and FreeTxDescriptors() reclaims the
 * finished descriptors and frees their skbs, which answers the guest's
 * request (netback's destructor).  The peer on the wire acknowledges each
 * data frame; its ACK comes back in through the receive path (netif_rx).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "linux/skge.h"
#include "net/simwire.h"
#include "sim/delayline.h"
#include "sim/knobs.h"

#define TX_RING_SIZE 256
#define WIRE_NS_PER_BYTE 8 /* 1 Gbit/s */

typedef struct s_TxPort {
	spinlock_t TxDesRingLock;
	pthread_cond_t TxdRoom;
	struct sk_buff *pTxdRing[TX_RING_SIZE];
	unsigned int TxdPut;  /* next descriptor the driver fills */
	unsigned int TxdDone; /* descriptors the hardware has sent */
	unsigned int TxdFree; /* next descriptor the driver reclaims */
} TX_PORT;

typedef struct s_AC {
	struct net_device dev;
	TX_PORT TxPort;
	struct delayline *hw;    /* the transmit engine */
	int64_t TxExtraDelay;    /* --delay FreeTxDescriptors */
	unsigned long acks;
} SK_AC;

static SK_AC skge_ac;

/* The peer answers a data frame that left the wire with an ACK. */
static void SkGePeerAck(SK_AC *pAC, const struct sk_buff *sent)
{
	const struct simwire_hdr *th = (const void *)sent->data;
	struct simwire_hdr *ack;
	struct sk_buff *skb;

	if (sent->len - sent->data_len < sizeof(*th) || th->magic != SIMWIRE_MAGIC ||
	    th->type != SIMWIRE_DATA)
		return;
	skb = alloc_skb(sizeof(*ack));
	if (!skb)
		return; /* a lost ACK: the guest's drain timeout reports it */
	ack = (struct simwire_hdr *)(void *)skb_put(skb, sizeof(*ack));
	*ack = (struct simwire_hdr){ .magic = SIMWIRE_MAGIC, .type = SIMWIRE_ACK,
				     .guest = th->guest, .seg = th->seg, .msg = th->msg };
	skb->dev = &pAC->dev;
	pAC->acks++;
	netif_rx(skb); /* ReceiveIrq() */
}

/*
 * Reclaims the descriptors the hardware has finished, oldest first, and frees
 * their frames.  Called with TxDesRingLock held.
 */
static noinline void FreeTxDescriptors(SK_AC *pAC, TX_PORT *pTxPort)
{
	while (pTxPort->TxdFree != pTxPort->TxdDone) {
		struct sk_buff *skb = pTxPort->pTxdRing[pTxPort->TxdFree % TX_RING_SIZE];

		pTxPort->pTxdRing[pTxPort->TxdFree % TX_RING_SIZE] = NULL;
		pTxPort->TxdFree++;
		truth_note(ST_FREETXDESCRIPTORS, skb_tag(skb), skb);
		SkGePeerAck(pAC, skb);
		dev_kfree_skb_any(skb);
	}
	pthread_cond_broadcast(&pTxPort->TxdRoom);
}

/* The transmit-complete interrupt (SkGeIsr): one descriptor is done. */
static void SkGeTxIrq(void *arg)
{
	SK_AC *pAC = arg;

	spin_lock(&pAC->TxPort.TxDesRingLock);
	pAC->TxPort.TxdDone++;
	FreeTxDescriptors(pAC, &pAC->TxPort);
	spin_unlock(&pAC->TxPort.TxDesRingLock);
}

static int SkGeXmit(struct sk_buff *skb, struct net_device *dev)
{
	SK_AC *pAC = netdev_priv(dev);
	TX_PORT *pTxPort = &pAC->TxPort;
	unsigned int len = skb->len; /* the hardware may free skb any time now */

	truth_note(ST_SKGEXMIT, skb_tag(skb), skb);
	spin_lock(&pTxPort->TxDesRingLock);
	/* XmitFrame(): wait for a free descriptor if the ring is full. */
	while (pTxPort->TxdPut - pTxPort->TxdFree == TX_RING_SIZE) {
		FreeTxDescriptors(pAC, pTxPort);
		if (pTxPort->TxdPut - pTxPort->TxdFree == TX_RING_SIZE)
			pthread_cond_wait(&pTxPort->TxdRoom, &pTxPort->TxDesRingLock);
	}
	pTxPort->pTxdRing[pTxPort->TxdPut % TX_RING_SIZE] = skb;
	pTxPort->TxdPut++;
	spin_unlock(&pTxPort->TxDesRingLock);

	/* Start the transmit engine: it interrupts after the wire time. */
	delayline_put(pAC->hw, SkGeTxIrq, pAC,
		      (int64_t)len * WIRE_NS_PER_BYTE + pAC->TxExtraDelay);
	dev->stats.tx_packets++;
	dev->stats.tx_bytes += len;
	return NETDEV_TX_OK;
}

int skge_probe(const struct sim_knobs *k, struct net_device **out)
{
	SK_AC *pAC = &skge_ac;
	int rc;

	dev_init(&pAC->dev, "peth0", pAC, SkGeXmit, ST_SKGEXMIT);
	spin_lock_init(&pAC->TxPort.TxDesRingLock);
	pthread_cond_init(&pAC->TxPort.TxdRoom, NULL);
	pAC->TxExtraDelay = k->delay_ns[ST_FREETXDESCRIPTORS];
	/* The wire time is the hop into FreeTxDescriptors (its --delay adds to it). */
	rc = delayline_new(&pAC->hw, "FreeTxDescriptors", 0, k->jitter_pct, k->seed ^ 0x736b6765u);
	if (rc < 0)
		return rc;
	*out = &pAC->dev;
	return 0;
}

void skge_remove(void)
{
	delayline_free(skge_ac.hw);
	skge_ac.hw = NULL;
}
