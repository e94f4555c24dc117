/*
 * block/ll_rw_blk.c: submitting bios and queueing them as requests for a
 * driver's request_fn.  No merging and a FIFO elevator: one bio, one request.
 */
#include <stdlib.h>

#include "linux/blkdev.h"
#include "xen/hypervisor.h"

request_queue_t *blk_init_queue(request_fn_proc *rfn, void *queuedata)
{
	request_queue_t *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	spin_lock_init(&q->queue_lock);
	q->request_fn = rfn;
	q->make_request_fn = __make_request;
	q->queuedata = queuedata;
	return q;
}

void blk_cleanup_queue(request_queue_t *q)
{
	if (!q)
		return;
	while (q->head) {
		struct request *rq = q->head;

		q->head = rq->next;
		free(rq);
	}
	free(q);
}

void generic_make_request(struct bio *bio)
{
	request_queue_t *q = bio->bi_disk->queue;

	q->make_request_fn(q, bio);
}

/* The entry of every read and write. */
void submit_bio(int rw, struct bio *bio)
{
	bio->bi_rw = (unsigned long)rw;
	if (!is_initial_xendomain()) {
		struct truth_tag tag = bio_tag(bio);

		truth_note(ST_SUBMIT_BIO, &tag, bio);
	}
	generic_make_request(bio);
}

/* Turns the bio into a request at the tail of the queue and kicks the driver. */
int __make_request(request_queue_t *q, struct bio *bio)
{
	struct request *rq;

	if (is_initial_xendomain()) {
		struct truth_tag tag = bio_tag(bio);

		truth_note(ST_MAKE_REQUEST, &tag, bio);
	}
	rq = calloc(1, sizeof(*rq));
	if (!rq) {
		bio_endio(bio, -1);
		return 0;
	}
	rq->bio = bio;
	rq->sector = bio->bi_sector;
	rq->flags = bio->bi_rw;
	rq->rq_disk = bio->bi_disk;
	spin_lock(&q->queue_lock);
	if (q->tail)
		q->tail->next = rq;
	else
		q->head = rq;
	q->tail = rq;
	q->nr_requests++;
	if (!q->stopped)
		q->request_fn(q);
	spin_unlock(&q->queue_lock);
	return 0;
}

struct request *elv_next_request(request_queue_t *q)
{
	return q->head;
}

void blkdev_dequeue_request(struct request *req)
{
	request_queue_t *q = req->rq_disk->queue;

	q->head = req->next;
	if (!q->head)
		q->tail = NULL;
	q->nr_requests--;
	req->next = NULL;
}

/* Completes the request's bio and frees the request. */
void end_that_request(struct request *req, int uptodate)
{
	bio_endio(req->bio, uptodate ? 0 : -1);
	free(req);
}

void blk_stop_queue(request_queue_t *q)
{
	q->stopped = true;
}

/* Restarts a stopped queue; called with queue_lock held. */
void blk_start_queue(request_queue_t *q)
{
	q->stopped = false;
	if (q->head)
		q->request_fn(q);
}
