/*
 * drivers/block/simdisk.c: dom0's disks, one per guest, each serving one
 * request at a time with a modeled service time (--block-service, varied by
 * --jitter): the request_fn starts the head request, the "controller"
 * interrupts when it is done, and the next one starts.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "linux/blkdev.h"
#include "sim/delayline.h"
#include "sim/knobs.h"
#include "xen/interface.h"

struct simdisk {
	struct gendisk disk;
	struct delayline *controller;
	struct request *active;
	unsigned char platter[PAGE_SIZE]; /* the last block written */
	struct simdisk *next;
};

static struct simdisk *simdisks;
static spinlock_t simdisks_lock = PTHREAD_MUTEX_INITIALIZER;

/* The controller's completion interrupt. */
static void simdisk_interrupt(void *arg)
{
	struct simdisk *sd = arg;
	request_queue_t *q = sd->disk.queue;
	struct request *req;

	spin_lock(&q->queue_lock);
	req = sd->active;
	sd->active = NULL;
	if (req) {
		struct bio *bio = req->bio;

		/* The transfer, between the guest's page and the platter. */
		if (req->flags == WRITE)
			memcpy(sd->platter, (unsigned char *)bio->bi_page + bio->bi_offset, bio->bi_size);
		else
			memcpy((unsigned char *)bio->bi_page + bio->bi_offset, sd->platter, bio->bi_size);
		end_that_request(req, 1);
	}
	q->request_fn(q);
	spin_unlock(&q->queue_lock);
}

/* The request_fn: starts the head request if the disk is idle. */
static noinline void do_simdisk_request(request_queue_t *q)
{
	struct simdisk *sd = q->queuedata;
	struct request *req;
	struct truth_tag tag;

	if (sd->active || !(req = elv_next_request(q)))
		return;
	blkdev_dequeue_request(req);
	tag = bio_tag(req->bio);
	truth_note(ST_DO_SIMDISK_REQUEST, &tag, req->bio);
	sd->active = req;
	delayline_put(sd->controller, simdisk_interrupt, sd, 0);
}

int simdisk_add(const struct sim_knobs *k, uint16_t guest, struct gendisk **out)
{
	struct simdisk *sd = calloc(1, sizeof(*sd));
	int rc;

	if (!sd)
		return -ENOMEM;
	snprintf(sd->disk.disk_name, sizeof(sd->disk.disk_name), "simdisk%u", guest);
	sd->disk.guest = guest;
	sd->disk.private_data = sd;
	sd->disk.queue = blk_init_queue(do_simdisk_request, sd);
	if (!sd->disk.queue) {
		free(sd);
		return -ENOMEM;
	}
	rc = delayline_new(&sd->controller, sd->disk.disk_name, k->block_service_ns,
			   k->jitter_pct, k->seed * 31u + guest);
	if (rc < 0) {
		blk_cleanup_queue(sd->disk.queue);
		free(sd);
		return rc;
	}
	spin_lock(&simdisks_lock);
	sd->next = simdisks;
	simdisks = sd;
	spin_unlock(&simdisks_lock);
	*out = &sd->disk;
	return 0;
}

void simdisk_remove_all(void)
{
	spin_lock(&simdisks_lock);
	while (simdisks) {
		struct simdisk *sd = simdisks;

		simdisks = sd->next;
		delayline_free(sd->controller);
		blk_cleanup_queue(sd->disk.queue);
		free(sd);
	}
	spin_unlock(&simdisks_lock);
}
