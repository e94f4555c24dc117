/*
 * drivers/xen/blkback/blkback.c: dom0's half of the split block driver,
 * after Linux 2.6.16-xen.
 *
 * do_block_io_op() copies each blkif_request off the shared ring into a
 * pending_req and dispatch_rw_block_io() maps the granted page and submits a
 * bio for it to the guest's disk in dom0.  When the disk completes the bio,
 * end_block_io_op() answers the guest on the ring (make_response) and
 * notifies it if RING_PUSH_RESPONSES_AND_CHECK_NOTIFY says so.
 *
 * blkif_request has no header bits to spare: a tracer follows a request
 * across domains by its id, which the response echoes.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "linux/blkdev.h"
#include "xen/xenbus.h"

#define BLKIF_MAX_PENDING 64

typedef struct blkif_st blkif_t;

typedef struct pending_req {
	blkif_t *blkif;
	uint64_t id;
	uint64_t sector;
	uint8_t operation;
	struct pending_req *free_next;
} pending_req_t;

struct blkif_st {
	domid_t domid;
	struct xenbus_device *xbdev;
	struct gnttab_foreign gnt;
	struct blkif_back_ring blk_ring;
	struct gendisk *disk;
	spinlock_t blk_ring_lock; /* responses come from the disk's thread */
	pending_req_t pending_reqs[BLKIF_MAX_PENDING];
	pending_req_t *pending_free;
	pthread_t thread;
	unsigned long bad_req;
	blkif_t *next;
};

static struct {
	spinlock_t lock;
	blkif_t *list;
} blkbk = { .lock = PTHREAD_MUTEX_INITIALIZER };

static pending_req_t *alloc_req(blkif_t *blkif)
{
	pending_req_t *req;

	spin_lock(&blkif->blk_ring_lock);
	req = blkif->pending_free;
	if (req)
		blkif->pending_free = req->free_next;
	spin_unlock(&blkif->blk_ring_lock);
	return req;
}

static void free_req(pending_req_t *req)
{
	blkif_t *blkif = req->blkif;

	spin_lock(&blkif->blk_ring_lock);
	req->free_next = blkif->pending_free;
	blkif->pending_free = req;
	spin_unlock(&blkif->blk_ring_lock);
}

static void make_response(blkif_t *blkif, uint64_t id, unsigned short op, int st)
{
	blkif_response_t *resp;
	int notify;

	spin_lock(&blkif->blk_ring_lock);
	/* Place on the response ring for the relevant domain. */
	resp = RING_GET_RESPONSE(&blkif->blk_ring, blkif->blk_ring.rsp_prod_pvt);
	resp->id = id;
	resp->operation = (uint8_t)op;
	resp->status = (int16_t)st;
	blkif->blk_ring.rsp_prod_pvt++;
	RING_PUSH_RESPONSES_AND_CHECK_NOTIFY(&blkif->blk_ring, notify);
	spin_unlock(&blkif->blk_ring_lock);
	if (notify)
		notify_remote_via_evtchn(&blkif->xbdev->evtchn);
}

static void __end_block_io_op(pending_req_t *pending_req, int error)
{
	struct truth_tag tag = { pending_req->blkif->domid,
				 (uint32_t)(pending_req->sector >> 3), 0, 1 };

	truth_note(ST_MAKE_RESPONSE, &tag, pending_req);
	make_response(pending_req->blkif, pending_req->id, pending_req->operation,
		      error ? BLKIF_RSP_ERROR : BLKIF_RSP_OKAY);
	free_req(pending_req);
}

/* The bio's completion, called by the disk's interrupt. */
static void end_block_io_op(struct bio *bio, int error)
{
	struct truth_tag tag = bio_tag(bio);

	truth_note(ST_END_BLOCK_IO_OP, &tag, bio);
	__end_block_io_op(bio->bi_private, error);
	bio_put(bio);
}

/*
 * Submits the guest's request to its disk.  The request's id is read once,
 * with the bio that will carry the I/O already at hand, so that a tracer
 * following the request by its id can hand it to the bio there.
 */
static noinline void dispatch_rw_block_io(blkif_t *blkif, blkif_request_t *req,
					  pending_req_t *pending_req)
{
	int operation = req->operation == BLKIF_OP_WRITE ? WRITE : READ;
	struct truth_tag tag = { blkif->domid, (uint32_t)(req->sector_number >> 3), 0, 1 };
	struct blkif_request_segment *seg = &req->seg[0];
	struct bio *bio;
	void *page;

	truth_note(ST_DISPATCH_RW_BLOCK_IO, &tag, req);
	bio = bio_alloc();
	pending_req->id = req->id;
	pending_req->blkif = blkif;
	pending_req->sector = req->sector_number;
	pending_req->operation = req->operation;
	if (!bio)
		goto fail;

	/* One segment per request in this simulation; check what we use. */
	if (req->nr_segments != 1 || seg->last_sect >= PAGE_SIZE >> SECTOR_SHIFT ||
	    seg->last_sect < seg->first_sect)
		goto fail;
	/* The disk writes into the page on a read: map it writable then. */
	page = gnttab_map_grant_ref(&blkif->gnt, seg->gref, operation == READ);
	if (!page)
		goto fail;
	bio->bi_sector = req->sector_number;
	bio->bi_page = page;
	bio->bi_offset = (unsigned int)seg->first_sect << SECTOR_SHIFT;
	bio->bi_size = (unsigned int)(seg->last_sect - seg->first_sect + 1) << SECTOR_SHIFT;
	bio->bi_disk = blkif->disk;
	bio->bi_end_io = end_block_io_op;
	bio->bi_private = pending_req;
	submit_bio(operation, bio);
	return;
fail:
	blkif->bad_req++;
	if (bio)
		bio_put(bio);
	make_response(blkif, pending_req->id, pending_req->operation, BLKIF_RSP_ERROR);
	free_req(pending_req);
}

/* Takes the guest's requests; returns false if it misbehaved. */
static bool do_block_io_op(blkif_t *blkif)
{
	struct blkif_back_ring *blk_ring = &blkif->blk_ring;
	int more_to_do;

	RING_FINAL_CHECK_FOR_REQUESTS(blk_ring, more_to_do);
	while (more_to_do) {
		RING_IDX rc = blk_ring->req_cons, rp = blk_ring->sring->req_prod;

		rmb(); /* Ensure we see queued requests up to 'rp'. */
		if (RING_REQUEST_PROD_OVERFLOW(blk_ring, rp)) {
			fprintf(stderr, "blkback: vbd%u: frontend produced %u requests, more than the ring holds; disconnecting\n",
				blkif->domid, rp - blk_ring->rsp_prod_pvt);
			return false;
		}
		while (rc != rp && !RING_REQUEST_CONS_OVERFLOW(blk_ring, rc)) {
			pending_req_t *pending_req = alloc_req(blkif);
			blkif_request_t req;

			/*
			 * The ring holds fewer requests than there are
			 * pending_reqs, so only a misbehaving frontend gets
			 * here; the thread's poll timeout retries.
			 */
			if (!pending_req)
				return true;
			RING_COPY_REQUEST(blk_ring, rc, &req);
			blk_ring->req_cons = ++rc; /* before make_response() */
			switch (req.operation) {
			case BLKIF_OP_READ:
			case BLKIF_OP_WRITE:
				dispatch_rw_block_io(blkif, &req, pending_req);
				break;
			default:
				blkif->bad_req++;
				make_response(blkif, req.id, req.operation, BLKIF_RSP_EOPNOTSUPP);
				free_req(pending_req);
				break;
			}
		}
		RING_FINAL_CHECK_FOR_REQUESTS(blk_ring, more_to_do);
	}
	return true;
}

/* blkif_schedule(): the backend's thread for one guest's disk. */
static void *blkif_schedule(void *arg)
{
	blkif_t *blkif = arg;
	struct pollfd pfd[3] = {
		{ .fd = evtchn_fd(&blkif->xbdev->evtchn), .events = POLLIN },
		{ .fd = blkif->xbdev->stop_fd, .events = POLLIN },
		{ .fd = blkif->xbdev->hangup_fd, .events = POLLIN },
	};
	char name[16];

	snprintf(name, sizeof(name), "blkback%u", blkif->domid);
	pthread_setname_np(pthread_self(), name);
	for (;;) {
		int n = evtchn_wait(&blkif->xbdev->evtchn, pfd, 3, 100);

		if (n > 0 && (pfd[1].revents & POLLIN))
			break;
		if (n > 0 && (pfd[2].revents & (POLLIN | POLLHUP))) {
			fprintf(stderr, "blkback: vbd%u: frontend gone, disconnecting\n", blkif->domid);
			break;
		}
		if (n > 0 && (pfd[0].revents & POLLIN))
			evtchn_ack(&blkif->xbdev->evtchn);
		if (!do_block_io_op(blkif))
			break;
	}
	truth_thread_flush();
	return NULL;
}

int blkback_connect(struct xenbus_device *xbdev, const struct gnttab_foreign *gnt,
		    const struct sim_knobs *k)
{
	blkif_t *blkif = calloc(1, sizeof(*blkif));
	int rc;

	if (!blkif)
		return -ENOMEM;
	blkif->domid = xbdev->otherend_id;
	blkif->xbdev = xbdev;
	blkif->gnt = *gnt;
	spin_lock_init(&blkif->blk_ring_lock);
	for (int i = 0; i < BLKIF_MAX_PENDING; i++) {
		blkif->pending_reqs[i].free_next = blkif->pending_free;
		blkif->pending_free = &blkif->pending_reqs[i];
	}
	rc = simdisk_add(k, blkif->domid, &blkif->disk);
	if (rc < 0) {
		free(blkif);
		return rc;
	}
	BACK_RING_INIT(&blkif->blk_ring, (struct blkif_sring *)hostmem_page(xbdev->mem, HOSTMEM_PG_BLK),
		       PAGE_SIZE);
	rc = pthread_create(&blkif->thread, NULL, blkif_schedule, blkif);
	if (rc) {
		free(blkif);
		return -rc;
	}
	spin_lock(&blkbk.lock);
	blkif->next = blkbk.list;
	blkbk.list = blkif;
	spin_unlock(&blkbk.lock);
	return 0;
}

void blkback_fini(void)
{
	spin_lock(&blkbk.lock);
	for (blkif_t *b = blkbk.list; b; b = b->next)
		pthread_join(b->thread, NULL);
	spin_unlock(&blkbk.lock);
}

void blkback_free(void)
{
	while (blkbk.list) {
		blkif_t *b = blkbk.list;

		blkbk.list = b->next;
		if (b->bad_req)
			fprintf(stderr, "blkback: vbd%u: %lu bad requests\n", b->domid, b->bad_req);
		free(b);
	}
}
