/*
 * linux0: the simulated dom0.
 *
 * Brings up the NIC (peth0) and the bridge (xenbr0), then for each guest
 * maps the memory it shares, connects a netback (vif<id>.0, a bridge port)
 * and a blkback (backed by simdisk<id>), and serves them until SIGTERM.
 * A guest that dies is noticed through its xenbus connection (EOF) and its
 * backends disconnect; the others carry on.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "linux/blkdev.h"
#include "linux/mm.h"
#include "linux/skge.h"
#include "net/br_private.h"
#include "sim/arch/boot.h"
#include "sim/gate.h"
#include "xen/hypervisor.h"
#include "xen/xenbus.h"

#define DOM0_RAM_PAGES 16384 /* 64 MiB, touched only as used */

uint32_t xen_domid;

struct dom0_guest {
	struct hostmem mem;
	struct gnttab_foreign gnt;
	struct xenbus_device netdev, blkdev;
};

static struct {
	struct boot_info bi;
	struct dom0_guest guests[KNOBS_MAX_GUESTS];
	void *ram;
} dom0;

static int connect_guest(struct dom0_guest *dg, const struct boot_guest *bg, int stop_fd)
{
	struct hostmem_info *info;
	int rc;

	rc = hostmem_map(&dg->mem, bg->memfd, bg->domid);
	if (rc < 0)
		return rc;
	close(bg->memfd);
	info = hostmem_info(&dg->mem);
	dg->gnt = (struct gnttab_foreign){
		.domid = (domid_t)bg->domid,
		.table = hostmem_page(&dg->mem, HOSTMEM_PG_GNTTAB),
		.nr_entries = HOSTMEM_GNTTAB_PAGES * PAGE_SIZE / sizeof(grant_entry_v1_t),
		.ram = hostmem_page(&dg->mem, HOSTMEM_PG_RAM),
		.ram_pages = info->ram_pages < HOSTMEM_RAM_PAGES ? info->ram_pages : HOSTMEM_RAM_PAGES,
	};
	dg->netdev = (struct xenbus_device){ .otherend_id = (domid_t)bg->domid, .mem = &dg->mem,
					     .stop_fd = stop_fd, .hangup_fd = bg->xenbus_fd };
	dg->blkdev = dg->netdev;
	rc = evtchn_bind(&dg->netdev.evtchn, &info->evtchn[HOSTMEM_EVTCHN_NET], 1,
			 bg->net_local, bg->net_remote);
	if (rc == 0)
		rc = evtchn_bind(&dg->blkdev.evtchn, &info->evtchn[HOSTMEM_EVTCHN_BLK], 1,
				 bg->blk_local, bg->blk_remote);
	if (rc == 0)
		rc = netback_connect(&dg->netdev, &dg->gnt);
	if (rc == 0)
		rc = blkback_connect(&dg->blkdev, &dg->gnt, &dom0.bi.knobs);
	return rc;
}

int main(int argc, char **argv)
{
	struct net_device *peth0;
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (boot_parse(&dom0.bi, argc, argv, "linux0", 1) < 0)
		return 2;
	xen_domid = 0;
	if (boot_signals(&dom0.bi) < 0 || boot_sched(&dom0.bi, "linux0") < 0)
		return 1;
	if (dom0.bi.knobs.truth && truth_open(dom0.bi.knobs.truth, 0) < 0) {
		fprintf(stderr, "linux0: cannot write %s.0: %s\n", dom0.bi.knobs.truth, strerror(errno));
		return 1;
	}
	dom0.ram = mmap(NULL, DOM0_RAM_PAGES * PAGE_SIZE, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (dom0.ram == MAP_FAILED) {
		fprintf(stderr, "linux0: no memory\n");
		return 1;
	}
	mem_init(dom0.ram, DOM0_RAM_PAGES);
	skb_init();
	if ((rc = sim_gate_init(&dom0.bi.knobs, true, 0)) < 0 || (rc = net_dev_init()) < 0 ||
	    (rc = skge_probe(&dom0.bi.knobs, &peth0)) < 0) {
		fprintf(stderr, "linux0: boot failed: %s\n", strerror(-rc));
		return 1;
	}
	br_init();
	br_add_if(peth0, BR_UPLINK);
	for (uint32_t i = 0; i < dom0.bi.nguests; i++) {
		rc = connect_guest(&dom0.guests[i], &dom0.bi.guests[i], dom0.bi.stop_fd);
		if (rc < 0) {
			fprintf(stderr, "linux0: cannot connect guest %u: %s\n",
				dom0.bi.guests[i].domid, strerror(-rc));
			return 1;
		}
	}

	/* Serve until told to stop. */
	while (!boot_stopping())
		poll(&(struct pollfd){ .fd = dom0.bi.stop_fd, .events = POLLIN }, 1, -1);

	/*
	 * Stop taking requests, give what is in the pipeline a moment to
	 * finish, then stop the stages in pipeline order: the backlog, the
	 * delay lines, the NIC's transmit engine, the disks.  Each runs what it
	 * still holds; what is handed to a stage already stopped is dropped.
	 */
	netback_fini();
	blkback_fini();
	for (int i = 0; i < 200 && skb_in_use() > 0; i++)
		usleep(10000);
	net_dev_fini();
	sim_gate_fini();
	skge_remove();
	simdisk_remove_all();
	br_fini();
	netback_free();
	blkback_free();
	for (uint32_t i = 0; i < dom0.bi.nguests; i++)
		hostmem_unmap(&dom0.guests[i].mem);
	truth_thread_flush();
	truth_close();
	fprintf(stderr, "linux0: stopped; %ld skbs and %zu pages still allocated\n",
		skb_in_use(), mm_pages_in_use());
	munmap(dom0.ram, DOM0_RAM_PAGES * PAGE_SIZE);
	return 0;
}
