/*
 * The stages a message passes, in the order it passes them: the functions of
 * seed 001's Table 2 for the network path (plus the two points where the
 * guest frees its side), and their equivalents for the block path.
 *
 * Each stage has a rank; a message must pass the stages in increasing rank.
 * Stages of equal rank (the guest freeing the transmitted clone and the
 * retransmit-queue original) may come in either order.
 */
#ifndef SIM_STAGE_H
#define SIM_STAGE_H

#include <stdbool.h>

enum sim_path { SIM_PATH_NET, SIM_PATH_BLK };

enum sim_stage {
	/* Network, domU (guest). */
	ST_ALLOC_SKB_FROM_CACHE,
	ST_TCP_SENDMSG,
	ST_TCP_SET_SKB_TSO_SEGS,
	ST_SKB_CLONE,
	ST_U_DEV_QUEUE_XMIT,
	ST_NETWORK_START_XMIT,
	/* Network, dom0. */
	ST_NETBK_FILL_FRAGS,
	ST_NETIF_RX,
	ST_NETIF_RECEIVE_SKB,
	ST_BR_NF_PRE_ROUTING,
	ST_BR_FORWARD,
	ST_BR_NF_POST_ROUTING,
	ST_BR_DEV_QUEUE_PUSH_XMIT,
	ST_0_DEV_QUEUE_XMIT,
	ST_SKGEXMIT,
	ST_FREETXDESCRIPTORS,
	/* Network, back in domU. */
	ST_NETWORK_TX_BUF_GC,
	ST_TCP_CLEAN_RTX_QUEUE,
	/* Block. */
	ST_SUBMIT_BIO,
	ST_BLKIF_QUEUE_REQUEST,
	ST_DISPATCH_RW_BLOCK_IO,
	ST_MAKE_REQUEST,
	ST_DO_SIMDISK_REQUEST,
	ST_END_BLOCK_IO_OP,
	ST_MAKE_RESPONSE,
	ST_BLKIF_INT,
	ST_COUNT
};

/* For sim_gate() and net_device.xmit_stage: no stage, call at once. */
#define ST_NO_GATE ST_COUNT

struct sim_stage_info {
	const char *name;   /* the function, as in the truth file */
	enum sim_path path;
	bool dom0;          /* passed in dom0 (else in the guest) */
	int rank;           /* order along the path */
	bool delayable;     /* --delay may name it */
};

extern const struct sim_stage_info sim_stages[ST_COUNT];

/* The stage of @path named @name on side @dom0, or -1. */
int sim_stage_lookup(enum sim_path path, bool dom0, const char *name);

/* Names a delayable stage for --delay: "dom0:dev_queue_xmit" or a unique name. */
int sim_stage_by_delay_name(const char *name);

static inline const char *sim_path_name(enum sim_path p)
{
	return p == SIM_PATH_NET ? "net" : "blk";
}

#endif
