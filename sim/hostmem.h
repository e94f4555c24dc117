/*
 * The memory a guest shares with dom0: one memfd per guest, created by the
 * launcher and inherited by both processes, so that nothing is named in
 * /dev/shm and the memory disappears with the last process that maps it.
 *
 * Layout, in pages:
 *
 *   0          shared_info stand-in: magic, domain id, event channel state
 *   1          netif_tx shared ring   (struct netif_tx_sring)
 *   2          netif_rx shared ring   (struct netif_rx_sring)
 *   3          blkif shared ring      (struct blkif_sring)
 *   4 .. 5     grant table            (grant_entry_v1_t[GNTTAB_NR_ENTRIES])
 *   6 ..       guest "RAM": the pages the guest allocates I/O buffers from
 *              (skb data, rx buffers, block pages) and grants to dom0
 *
 * Dom0 maps the whole file, as a privileged domain may, but touches guest RAM
 * only through a grant reference the guest wrote into the grant table.
 */
#ifndef SIM_HOSTMEM_H
#define SIM_HOSTMEM_H

#include <stddef.h>
#include <stdint.h>

#include "sim/evtchn.h"

#define HOSTMEM_MAGIC 0x78656e73696d3031ULL /* "xensim01" */

#define HOSTMEM_PAGE 4096UL
#define HOSTMEM_PG_INFO 0
#define HOSTMEM_PG_NET_TX 1
#define HOSTMEM_PG_NET_RX 2
#define HOSTMEM_PG_BLK 3
#define HOSTMEM_PG_GNTTAB 4
#define HOSTMEM_GNTTAB_PAGES 2
#define HOSTMEM_PG_RAM (HOSTMEM_PG_GNTTAB + HOSTMEM_GNTTAB_PAGES)
#define HOSTMEM_RAM_PAGES 4096 /* 16 MiB of I/O buffers per guest */
#define HOSTMEM_PAGES (HOSTMEM_PG_RAM + HOSTMEM_RAM_PAGES)
#define HOSTMEM_SIZE (HOSTMEM_PAGES * HOSTMEM_PAGE)

/* Event channels of a guest: one per device, as netfront and blkfront bind. */
enum { HOSTMEM_EVTCHN_NET, HOSTMEM_EVTCHN_BLK, HOSTMEM_NR_EVTCHN };

struct hostmem_info {
	uint64_t magic;
	uint32_t domid;
	uint32_t ram_pages;
	struct evtchn_shared evtchn[HOSTMEM_NR_EVTCHN];
};

/* A guest's shared memory, mapped. */
struct hostmem {
	uint8_t *base;
	size_t size;
};

/* Creates the memfd of guest @domid, sized and initialised; returns the fd. */
int hostmem_create(uint32_t domid);

/* Maps an inherited memfd and checks it belongs to @domid. */
int hostmem_map(struct hostmem *hm, int fd, uint32_t domid);

void hostmem_unmap(struct hostmem *hm);

static inline void *hostmem_page(const struct hostmem *hm, size_t pg)
{
	return hm->base + pg * HOSTMEM_PAGE;
}

static inline struct hostmem_info *hostmem_info(const struct hostmem *hm)
{
	return hostmem_page(hm, HOSTMEM_PG_INFO);
}

#endif
