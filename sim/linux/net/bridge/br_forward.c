/* net/bridge/br_forward.c: sending a frame out of a bridge port. */
#include "net/br_private.h"
#include "sim/gate.h"

static void dev_queue_xmit_cb(void *arg)
{
	dev_queue_xmit(arg);
}

/*
 * The POST_ROUTING hook's okfn: hand the frame to the port's device.  Linux
 * reaches it only through NF_HOOK's okfn pointer, so it is never inlined;
 * here the hook's caller is in this file.
 */
noinline int br_dev_queue_push_xmit(struct sk_buff *skb)
{
	truth_note(ST_BR_DEV_QUEUE_PUSH_XMIT, skb_tag(skb), skb);
	sim_gate(ST_0_DEV_QUEUE_XMIT, dev_queue_xmit_cb, skb);
	return 0;
}

static void br_push_xmit_cb(void *arg)
{
	br_dev_queue_push_xmit(arg);
}

/* NF_HOOK(PF_BRIDGE, NF_BR_POST_ROUTING, skb, NULL, skb->dev, br_dev_queue_push_xmit) */
static void br_post_routing_hook(void *arg)
{
	struct sk_buff *skb = arg;

	if (br_nf_post_routing(NF_BR_POST_ROUTING, &skb, NULL, skb->dev,
			       br_dev_queue_push_xmit) == NF_ACCEPT)
		sim_gate(ST_BR_DEV_QUEUE_PUSH_XMIT, br_push_xmit_cb, skb);
}

/* After the FORWARD hook (which has nothing to do on this bridge). */
static int br_forward_finish(struct sk_buff *skb)
{
	sim_gate(ST_BR_NF_POST_ROUTING, br_post_routing_hook, skb);
	return 0;
}

static void __br_forward(const struct net_bridge_port *to, struct sk_buff *skb)
{
	skb->dev = to->dev;
	br_forward_finish(skb);
}

void br_forward(const struct net_bridge_port *to, struct sk_buff *skb)
{
	truth_note(ST_BR_FORWARD, skb_tag(skb), skb);
	__br_forward(to, skb);
}
