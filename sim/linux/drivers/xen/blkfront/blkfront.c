/*
 * drivers/xen/blkfront/blkfront.c: the guest half of the split block driver,
 * after Linux 2.6.16-xen.
 *
 * The disk's request_fn, do_blkif_request(), turns each request into a
 * blkif_request on the shared ring (blkif_queue_request), granting dom0 the
 * request's page, and notifies the backend once per batch when
 * RING_PUSH_REQUESTS_AND_CHECK_NOTIFY says so.  blkif_int() takes the
 * responses, revokes the grants and completes the requests.  The ring's id is
 * an index into the shadow array, the guest's private record of what each
 * request in flight is.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linux/blkdev.h"
#include "linux/mm.h"
#include "xen/hypervisor.h"
#include "xen/xenbus.h"

struct blk_shadow {
	blkif_request_t req;
	struct request *request;
	unsigned long free_next; /* next free id while unused */
};

struct blkfront_info {
	struct xenbus_device *xbdev;
	struct gendisk disk; /* xvda */
	struct blkif_front_ring ring;
	struct blk_shadow shadow[BLK_RING_SIZE];
	unsigned long shadow_free;
	unsigned int inflight;
	pthread_t irq_thread;
	bool running;
	unsigned long bad_rsp;
};

static struct blkfront_info blkfront;

static unsigned long GET_ID_FROM_FREELIST(struct blkfront_info *info)
{
	unsigned long free = info->shadow_free;

	info->shadow_free = info->shadow[free].free_next;
	info->shadow[free].free_next = 0x0fffffee; /* debug */
	return free;
}

static void ADD_ID_TO_FREELIST(struct blkfront_info *info, unsigned long id)
{
	info->shadow[id].free_next = info->shadow_free;
	info->shadow[id].request = NULL;
	info->shadow_free = id;
}

static void flush_requests(struct blkfront_info *info)
{
	int notify;

	RING_PUSH_REQUESTS_AND_CHECK_NOTIFY(&info->ring, notify);
	if (notify)
		notify_remote_via_evtchn(&info->xbdev->evtchn);
}

struct setup_rw_req {
	struct blkfront_info *info;
	blkif_request_t *ring_req;
	int write;
	int failed;
};

/*
 * gnttab_foreach_grant_in_range()'s callback, as in Linux 4.x: grants the
 * backend one piece of the request's data and adds it as a segment.
 */
static void blkif_setup_rw_req_grant(unsigned long gfn, unsigned int offset, unsigned int len,
				     void *data)
{
	struct setup_rw_req *setup = data;
	blkif_request_t *ring_req = setup->ring_req;
	int ref;

	ref = gnttab_grant_foreign_access(setup->info->xbdev->otherend_id, gfn, setup->write);
	if (ref < 0 || ring_req->nr_segments == BLKIF_MAX_SEGMENTS_PER_REQUEST) {
		if (ref >= 0)
			gnttab_end_foreign_access((grant_ref_t)ref);
		setup->failed = 1;
		return;
	}
	ring_req->seg[ring_req->nr_segments++] = (struct blkif_request_segment){
		.gref = (grant_ref_t)ref,
		.first_sect = (uint8_t)(offset >> SECTOR_SHIFT),
		.last_sect = (uint8_t)(((offset + len) >> SECTOR_SHIFT) - 1),
	};
}

static void blkif_end_grants(const blkif_request_t *ring_req)
{
	for (unsigned int i = 0; i < ring_req->nr_segments; i++)
		gnttab_end_foreign_access(ring_req->seg[i].gref);
}

/*
 * Puts @req on the ring.  Returns 1 when the grant table is full (try
 * again later), 0 on success.  Called with the queue lock held.
 */
static noinline int blkif_queue_request(struct request *req)
{
	struct blkfront_info *info = req->rq_disk->private_data;
	struct bio *bio = req->bio;
	struct truth_tag tag = bio_tag(bio);
	struct setup_rw_req setup = { .info = info, .write = req->flags == WRITE };
	blkif_request_t *ring_req;
	unsigned long id;

	/* Fill out a communications ring structure. */
	ring_req = RING_GET_REQUEST(&info->ring, info->ring.req_prod_pvt);
	ring_req->nr_segments = 0;
	setup.ring_req = ring_req;
	gnttab_foreach_grant_in_range((unsigned char *)bio->bi_page + bio->bi_offset,
				      bio->bi_size, blkif_setup_rw_req_grant, &setup);
	/* The request the segments went into (Linux may chain a second one). */
	ring_req = setup.ring_req;
	if (setup.failed) {
		blkif_end_grants(ring_req);
		return 1;
	}

	id = GET_ID_FROM_FREELIST(info);
	info->shadow[id].request = req;
	ring_req->id = id;
	ring_req->operation = req->flags == WRITE ? BLKIF_OP_WRITE : BLKIF_OP_READ;
	ring_req->sector_number = req->sector;
	ring_req->handle = 0;

	info->ring.req_prod_pvt++;
	info->inflight++;

	/* Keep a private copy so we can reissue requests when recovering. */
	info->shadow[id].req = *ring_req;
	truth_note(ST_BLKIF_QUEUE_REQUEST, &tag, bio); /* on the ring, to be pushed */
	return 0;
}

/* The disk's request_fn: moves queued requests onto the ring. */
static void do_blkif_request(request_queue_t *rq)
{
	struct blkfront_info *info = rq->queuedata;
	struct request *req;
	int queued = 0;

	while ((req = elv_next_request(rq)) != NULL) {
		if (RING_FULL(&info->ring) || blkif_queue_request(req)) {
			/* Avoid pointless unplugs: blkif_int restarts the queue. */
			blk_stop_queue(rq);
			break;
		}
		blkdev_dequeue_request(req);
		queued++;
	}
	if (queued != 0)
		flush_requests(info);
}

static noinline void blkif_int_responses(struct blkfront_info *info)
{
	request_queue_t *q = info->disk.queue;
	RING_IDX i, rp;
	int more_to_do;

	spin_lock(&q->queue_lock);
again:
	rp = info->ring.sring->rsp_prod;
	rmb(); /* Ensure we see queued responses up to 'rp'. */
	if (RING_RESPONSE_PROD_OVERFLOW(&info->ring, rp)) {
		info->bad_rsp++;
		spin_unlock(&q->queue_lock);
		return;
	}
	for (i = info->ring.rsp_cons; i != rp; i++) {
		blkif_response_t *bret = RING_GET_RESPONSE(&info->ring, i);
		unsigned long id = bret->id;
		struct request *req;
		struct truth_tag tag;

		if (id >= BLK_RING_SIZE || !info->shadow[id].request) {
			info->bad_rsp++;
			continue;
		}
		req = info->shadow[id].request;
		tag = bio_tag(req->bio);
		truth_note(ST_BLKIF_INT, &tag, req->bio);
		blkif_end_grants(&info->shadow[id].req);
		ADD_ID_TO_FREELIST(info, id);
		info->inflight--;
		end_that_request(req, bret->status == BLKIF_RSP_OKAY);
	}
	info->ring.rsp_cons = i;
	RING_FINAL_CHECK_FOR_RESPONSES(&info->ring, more_to_do);
	if (more_to_do)
		goto again;
	/* kick_pending_request_queues() */
	if (info->disk.queue->stopped && !RING_FULL(&info->ring))
		blk_start_queue(info->disk.queue);
	spin_unlock(&q->queue_lock);
}

/* The event channel's interrupt handler, on a thread of its own. */
static void *blkif_int(void *arg)
{
	struct blkfront_info *info = arg;
	struct pollfd pfd[2] = {
		{ .fd = evtchn_fd(&info->xbdev->evtchn), .events = POLLIN },
		{ .fd = info->xbdev->stop_fd, .events = POLLIN },
	};

	pthread_setname_np(pthread_self(), "blkfront-irq");
	for (;;) {
		int n = evtchn_wait(&info->xbdev->evtchn, pfd, 2, 100);

		if (n > 0 && (pfd[1].revents & POLLIN))
			break;
		if (n > 0 && (pfd[0].revents & POLLIN))
			evtchn_ack(&info->xbdev->evtchn);
		blkif_int_responses(info);
	}
	truth_thread_flush();
	return NULL;
}

int blkfront_probe(struct xenbus_device *xbdev)
{
	struct blkfront_info *info = &blkfront;
	struct blkif_sring *sring = hostmem_page(xbdev->mem, HOSTMEM_PG_BLK);
	int rc;

	info->xbdev = xbdev;
	for (unsigned long i = 0; i < BLK_RING_SIZE; i++)
		info->shadow[i].free_next = i + 1;
	info->shadow[BLK_RING_SIZE - 1].free_next = 0x0fffffff;
	info->shadow_free = 0;

	SHARED_RING_INIT(sring);
	FRONT_RING_INIT(&info->ring, sring, PAGE_SIZE);

	snprintf(info->disk.disk_name, sizeof(info->disk.disk_name), "xvda");
	info->disk.guest = (uint16_t)xen_domid;
	info->disk.private_data = info;
	info->disk.queue = blk_init_queue(do_blkif_request, info);
	if (!info->disk.queue)
		return -ENOMEM;
	rc = pthread_create(&info->irq_thread, NULL, blkif_int, info);
	if (rc)
		return -rc;
	info->running = true;
	return 0;
}

struct gendisk *blkfront_disk(void)
{
	return &blkfront.disk;
}

unsigned int blkfront_inflight(void)
{
	unsigned int n;

	spin_lock(&blkfront.disk.queue->queue_lock);
	n = blkfront.inflight + blkfront.disk.queue->nr_requests;
	spin_unlock(&blkfront.disk.queue->queue_lock);
	return n;
}

void blkfront_remove(void)
{
	struct blkfront_info *info = &blkfront;

	if (info->running)
		pthread_join(info->irq_thread, NULL);
	info->running = false;
	if (info->bad_rsp)
		fprintf(stderr, "blkfront: %lu bad responses ignored\n", info->bad_rsp);
	blk_cleanup_queue(info->disk.queue);
	info->disk.queue = NULL;
}
