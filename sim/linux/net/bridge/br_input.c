/* net/bridge/br_input.c: frames arriving on a bridge port. */
#include "net/br_private.h"
#include "sim/gate.h"

static void br_forward_cb(void *arg)
{
	struct sk_buff *skb = arg;

	br_forward(*br_skb_cb_to(skb), skb);
}

/* After the PRE_ROUTING hook: look the destination up and forward. */
int br_handle_frame_finish(struct sk_buff *skb)
{
	const struct net_bridge_port *dst = br_fdb_get(skb);

	if (!dst || dst->dev == skb->dev) {
		kfree_skb(skb);
		return 0;
	}
	*br_skb_cb_to(skb) = dst;
	sim_gate(ST_BR_FORWARD, br_forward_cb, skb);
	return 0;
}

/* NF_HOOK(PF_BRIDGE, NF_BR_PRE_ROUTING, skb, skb->dev, NULL, br_handle_frame_finish) */
static void br_pre_routing_hook(void *arg)
{
	struct sk_buff *skb = arg;

	if (br_nf_pre_routing(NF_BR_PRE_ROUTING, &skb, skb->dev, NULL,
			      br_handle_frame_finish) == NF_ACCEPT)
		br_handle_frame_finish(skb);
}

/* The bridge's receive hook, called by netif_receive_skb(). */
int br_handle_frame(struct net_bridge_port *p, struct sk_buff *skb)
{
	(void)p;
	sim_gate(ST_BR_NF_PRE_ROUTING, br_pre_routing_hook, skb);
	return 0;
}
