/*
 * net/bridge/br_netfilter.c: the bridge's netfilter hooks.  There are no
 * iptables rules on this host, so each hook checks the frame and accepts it;
 * the caller (NF_HOOK) then runs okfn.
 */
#include "net/br_private.h"
#include "net/simwire.h"

static unsigned int br_nf_check(const struct sk_buff *skb)
{
	const struct simwire_hdr *th = (const void *)skb->data;

	return skb->len - skb->data_len >= sizeof(*th) && th->magic == SIMWIRE_MAGIC ?
		NF_ACCEPT : NF_DROP;
}

unsigned int br_nf_pre_routing(unsigned int hook, struct sk_buff **pskb,
			       const struct net_device *in, const struct net_device *out,
			       int (*okfn)(struct sk_buff *))
{
	struct sk_buff *skb = *pskb;
	unsigned int verdict;

	(void)hook, (void)in, (void)out, (void)okfn;
	truth_note(ST_BR_NF_PRE_ROUTING, skb_tag(skb), skb);
	verdict = br_nf_check(skb);
	if (verdict == NF_DROP)
		kfree_skb(skb);
	return verdict;
}

unsigned int br_nf_post_routing(unsigned int hook, struct sk_buff **pskb,
				const struct net_device *in, const struct net_device *out,
				int (*okfn)(struct sk_buff *))
{
	struct sk_buff *skb = *pskb;
	unsigned int verdict;

	(void)hook, (void)in, (void)out, (void)okfn;
	truth_note(ST_BR_NF_POST_ROUTING, skb_tag(skb), skb);
	verdict = br_nf_check(skb);
	if (verdict == NF_DROP)
		kfree_skb(skb);
	return verdict;
}
