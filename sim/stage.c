/* The stage table: see stage.h. */
#include "sim/stage.h"

#include <string.h>

#define NET_U(n, r, d) { n, SIM_PATH_NET, false, r, d }
#define NET_0(n, r, d) { n, SIM_PATH_NET, true, r, d }
#define BLK_U(n, r, d) { n, SIM_PATH_BLK, false, r, d }
#define BLK_0(n, r, d) { n, SIM_PATH_BLK, true, r, d }

const struct sim_stage_info sim_stages[ST_COUNT] = {
	[ST_ALLOC_SKB_FROM_CACHE] = NET_U("alloc_skb_from_cache", 1, false),
	[ST_TCP_SENDMSG] = NET_U("tcp_sendmsg", 2, false),
	[ST_TCP_SET_SKB_TSO_SEGS] = NET_U("tcp_set_skb_tso_segs", 3, true),
	[ST_SKB_CLONE] = NET_U("skb_clone", 4, true),
	[ST_U_DEV_QUEUE_XMIT] = NET_U("dev_queue_xmit", 5, true),
	[ST_NETWORK_START_XMIT] = NET_U("network_start_xmit", 6, true),
	[ST_NETBK_FILL_FRAGS] = NET_0("netbk_fill_frags", 7, true),
	[ST_NETIF_RX] = NET_0("netif_rx", 8, true),
	[ST_NETIF_RECEIVE_SKB] = NET_0("netif_receive_skb", 9, true),
	[ST_BR_NF_PRE_ROUTING] = NET_0("br_nf_pre_routing", 10, true),
	[ST_BR_FORWARD] = NET_0("br_forward", 11, true),
	[ST_BR_NF_POST_ROUTING] = NET_0("br_nf_post_routing", 12, true),
	[ST_BR_DEV_QUEUE_PUSH_XMIT] = NET_0("br_dev_queue_push_xmit", 13, true),
	[ST_0_DEV_QUEUE_XMIT] = NET_0("dev_queue_xmit", 14, true),
	[ST_SKGEXMIT] = NET_0("SkGeXmit", 15, true),
	[ST_FREETXDESCRIPTORS] = NET_0("FreeTxDescriptors", 16, true),
	[ST_NETWORK_TX_BUF_GC] = NET_U("network_tx_buf_gc", 17, false),
	[ST_TCP_CLEAN_RTX_QUEUE] = NET_U("tcp_clean_rtx_queue", 17, false),
	[ST_SUBMIT_BIO] = BLK_U("submit_bio", 1, false),
	[ST_BLKIF_QUEUE_REQUEST] = BLK_U("blkif_queue_request", 2, false),
	[ST_DISPATCH_RW_BLOCK_IO] = BLK_0("dispatch_rw_block_io", 3, false),
	[ST_MAKE_REQUEST] = BLK_0("__make_request", 4, false),
	[ST_DO_SIMDISK_REQUEST] = BLK_0("do_simdisk_request", 5, false),
	[ST_END_BLOCK_IO_OP] = BLK_0("end_block_io_op", 6, false),
	[ST_MAKE_RESPONSE] = BLK_0("make_response", 7, false),
	[ST_BLKIF_INT] = BLK_U("blkif_int", 8, false),
};

int sim_stage_lookup(enum sim_path path, bool dom0, const char *name)
{
	for (int i = 0; i < ST_COUNT; i++)
		if (sim_stages[i].path == path && sim_stages[i].dom0 == dom0 &&
		    strcmp(sim_stages[i].name, name) == 0)
			return i;
	return -1;
}

int sim_stage_by_delay_name(const char *name)
{
	bool dom0 = false, sided = false;
	int found = -1;

	/* dev_queue_xmit runs in both domains: "domU:" / "dom0:" pick one. */
	if (strncmp(name, "dom0:", 5) == 0) {
		dom0 = sided = true;
		name += 5;
	} else if (strncmp(name, "domU:", 5) == 0) {
		sided = true;
		name += 5;
	}
	for (int i = 0; i < ST_COUNT; i++) {
		if (!sim_stages[i].delayable || strcmp(sim_stages[i].name, name) != 0)
			continue;
		if (sided && sim_stages[i].dom0 != dom0)
			continue;
		if (found >= 0)
			return -2; /* ambiguous */
		found = i;
	}
	return found;
}
