/*
 * linuxU: a simulated guest domain (domU).
 *
 * Boots like a PV guest: maps the memory it shares with dom0, sets up its
 * grant table and page allocator there, brings up netfront (eth0) and
 * blkfront (xvda), then runs its "applications": a sender writing --size
 * byte messages on a TCP connection --rate times a second, and a writer
 * issuing --block-rate block requests a second, for --duration seconds.  It
 * then waits for every segment to be acknowledged and every block request to
 * complete, and shuts down.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "linux/blkdev.h"
#include "linux/mm.h"
#include "net/tcp.h"
#include "sim/arch/boot.h"
#include "sim/gate.h"
#include "sim/prng.h"
#include "xen/hypervisor.h"
#include "xen/xenbus.h"

#define DRAIN_TIMEOUT_MS 10000

uint32_t xen_domid;

struct guest {
	struct boot_info bi;
	struct hostmem mem;
	struct xenbus_device netdev, blkdev;
	struct sock sk;
	struct net_device *eth0;
	uint32_t msgs_sent;
	uint32_t blk_sent;
	atomic_uint blk_done, blk_failed;
};

static struct guest guest;

static int64_t now_ns(void)
{
	return sim_now_ns();
}

static void sleep_until(int64_t t)
{
	struct timespec ts = { .tv_sec = t / 1000000000, .tv_nsec = t % 1000000000 };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR && !boot_stopping())
		;
}

/* The block writer's completion: the page goes back to the allocator. */
static void blk_end_io(struct bio *bio, int error)
{
	if (error)
		atomic_fetch_add(&guest.blk_failed, 1);
	atomic_fetch_add(&guest.blk_done, 1);
	free_page(bio->bi_page);
	bio_put(bio);
}

static void blk_submit_one(struct guest *g, struct sim_prng *rng)
{
	struct bio *bio = bio_alloc();
	void *page = alloc_page();
	int rw = (sim_prng_next(rng) % 10) < 7 ? WRITE : READ;

	if (!bio || !page) {
		if (bio)
			bio_put(bio);
		if (page)
			free_page(page);
		return;
	}
	if (rw == WRITE)
		memset(page, (int)(g->blk_sent & 0xff), PAGE_SIZE);
	bio->bi_sector = (uint64_t)g->blk_sent * 8; /* request n is at sector 8n */
	bio->bi_page = page;
	bio->bi_offset = 0;
	bio->bi_size = PAGE_SIZE;
	bio->bi_disk = blkfront_disk();
	bio->bi_end_io = blk_end_io;
	g->blk_sent++;
	submit_bio(rw, bio);
}

/*
 * The applications: messages and block requests, each on its own schedule,
 * from one thread (a process in the guest, in effect).
 */
static void run_apps(struct guest *g)
{
	const struct sim_knobs *k = &g->bi.knobs;
	int64_t start = now_ns(), end = start + (int64_t)(k->duration_s * 1e9);
	uint64_t nmsg = 0, nblk = 0;
	struct sim_prng rng;

	sim_prng_seed(&rng, k->seed * 7919u + xen_domid);
	while (!boot_stopping()) {
		/* Due times from the start, so that rounding never accumulates. */
		int64_t next_msg = k->rate > 0 ? start + (int64_t)((double)nmsg * 1e9 / k->rate) : INT64_MAX;
		int64_t next_blk = k->block_rate > 0 ?
			start + (int64_t)((double)nblk * 1e9 / k->block_rate) : INT64_MAX;
		int64_t next = next_msg < next_blk ? next_msg : next_blk;

		if (next >= end)
			break;
		sleep_until(next);
		if (boot_stopping())
			break;
		/* Behind schedule (a slow host), send what is due at once. */
		if (next_msg < end && next_msg <= now_ns()) {
			if (tcp_sendmsg(&g->sk, g->msgs_sent, k->size) == 0)
				g->msgs_sent++;
			nmsg++;
		}
		if (next_blk < end && next_blk <= now_ns()) {
			blk_submit_one(g, &rng);
			nblk++;
		}
	}
}

static bool drain(struct guest *g)
{
	int64_t deadline = now_ns() + (int64_t)DRAIN_TIMEOUT_MS * 1000000;
	bool acked = tcp_wait_all_acked(&g->sk, DRAIN_TIMEOUT_MS);

	while ((blkfront_inflight() || netfront_tx_inflight()) && now_ns() < deadline &&
	       !boot_stopping())
		sleep_until(now_ns() + 1000000);
	return acked && !blkfront_inflight() && !netfront_tx_inflight();
}

static int connect_dev(struct guest *g, struct xenbus_device *xd, int evtchn, int local, int remote)
{
	xd->otherend_id = 0;
	xd->mem = &g->mem;
	xd->stop_fd = g->bi.stop_fd;
	xd->hangup_fd = -1;
	return evtchn_bind(&xd->evtchn, &hostmem_info(&g->mem)->evtchn[evtchn], 0, local, remote);
}

int main(int argc, char **argv)
{
	struct guest *g = &guest;
	struct boot_guest *bg;
	bool drained = false, signalled;
	struct sk_buff *skb;
	int rc;

	/* Die with the launcher, whatever kills it. */
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (boot_parse(&g->bi, argc, argv, "linuxU", 0) < 0)
		return 2;
	xen_domid = g->bi.domid;
	bg = &g->bi.guests[0];
	if (boot_signals(&g->bi) < 0 || (rc = hostmem_map(&g->mem, bg->memfd, xen_domid)) < 0) {
		fprintf(stderr, "linuxU[%u]: cannot map the shared memory (fd %d)\n", xen_domid, bg->memfd);
		return 1;
	}
	close(bg->memfd);
	if (boot_sched(&g->bi, "linuxU") < 0)
		return 1;
	if (g->bi.knobs.truth && truth_open(g->bi.knobs.truth, xen_domid) < 0) {
		fprintf(stderr, "linuxU[%u]: cannot write %s.%u: %s\n", xen_domid,
			g->bi.knobs.truth, xen_domid, strerror(errno));
		return 1;
	}

	mem_init(hostmem_page(&g->mem, HOSTMEM_PG_RAM), HOSTMEM_RAM_PAGES);
	gnttab_init(hostmem_page(&g->mem, HOSTMEM_PG_GNTTAB),
		    HOSTMEM_GNTTAB_PAGES * PAGE_SIZE / sizeof(grant_entry_v1_t));
	skb_init();
	if ((rc = sim_gate_init(&g->bi.knobs, false, xen_domid)) < 0 ||
	    (rc = connect_dev(g, &g->netdev, HOSTMEM_EVTCHN_NET, bg->net_local, bg->net_remote)) < 0 ||
	    (rc = connect_dev(g, &g->blkdev, HOSTMEM_EVTCHN_BLK, bg->blk_local, bg->blk_remote)) < 0 ||
	    (rc = netfront_probe(&g->netdev, &g->eth0)) < 0 ||
	    (rc = blkfront_probe(&g->blkdev)) < 0) {
		fprintf(stderr, "linuxU[%u]: boot failed: %s\n", xen_domid, strerror(-rc));
		return 1;
	}
	tcp_sock_init(&g->sk, g->eth0, (uint16_t)xen_domid);

	if (!g->bi.knobs.hold || boot_wait_go(&g->bi) == 0)
		run_apps(g);
	if (!boot_stopping())
		drained = drain(g);

	/* Shut down: stop the "interrupts", then the delay lines. */
	signalled = boot_stopping();
	spin_lock(&g->sk.sk_lock);
	g->sk.stopping = true;
	spin_unlock(&g->sk.sk_lock);
	boot_stop(&g->bi);
	sim_gate_fini();
	netfront_remove();
	blkfront_remove();
	/* What the peer never acknowledged (only after a stop signal). */
	while ((skb = __skb_dequeue(&g->sk.sk_write_queue)))
		__kfree_skb(skb);
	truth_thread_flush();
	truth_close();

	fprintf(stderr,
		"linuxU[%u]: %" PRIu32 " messages (%lu segments) sent, %lu acknowledged; "
		"%" PRIu32 " block requests, %u done, %u failed%s\n",
		xen_domid, g->msgs_sent, g->sk.segs_sent, g->sk.segs_acked, g->blk_sent,
		atomic_load(&g->blk_done), atomic_load(&g->blk_failed),
		drained ? "" : " (stopped before everything completed)");
	/* The launcher's own shutdown is not a failure of ours. */
	return drained || signalled ? 0 : 1;
}
