/*
 * The block layer, after Linux 2.6.16: bios (fs/bio.c), request queues and
 * their request_fn (block/ll_rw_blk.c), disks.  A bio carries one page.
 */
#ifndef SIM_LINUX_BLKDEV_H
#define SIM_LINUX_BLKDEV_H

#include <stdbool.h>

#include "linux/kernel.h"
#include "sim/truth.h"

#define READ 0
#define WRITE 1
#define SECTOR_SHIFT 9

struct request_queue;
struct gendisk;

struct bio {
	struct bio *bi_next;
	uint64_t bi_sector;
	unsigned long bi_rw;
	unsigned int bi_size;
	void *bi_page;
	unsigned int bi_offset;
	struct gendisk *bi_disk;
	void (*bi_end_io)(struct bio *bio, int error);
	void *bi_private;
	atomic_int bi_cnt; /* pin count: bio_put() frees at zero */
};

struct request {
	struct request *next;
	struct bio *bio;
	uint64_t sector;
	unsigned long flags; /* READ or WRITE */
	struct gendisk *rq_disk;
};

typedef void request_fn_proc(struct request_queue *q);
typedef int make_request_fn(struct request_queue *q, struct bio *bio);

struct request_queue {
	spinlock_t queue_lock;
	struct request *head, *tail; /* the elevator: first come, first served */
	unsigned int nr_requests;
	bool stopped;
	request_fn_proc *request_fn;
	make_request_fn *make_request_fn;
	void *queuedata;
};
typedef struct request_queue request_queue_t;

struct gendisk {
	char disk_name[32];
	request_queue_t *queue;
	uint16_t guest; /* whose disk: names the requests in the truth */
	void *private_data;
};

/* Which request of which guest a bio is: the guest issues sector 8*n for request n. */
static inline struct truth_tag bio_tag(const struct bio *bio)
{
	return (struct truth_tag){ bio->bi_disk->guest, (uint32_t)(bio->bi_sector >> 3), 0, 1 };
}

/* fs/bio.c */
struct bio *bio_alloc(void);
void bio_put(struct bio *bio);
void bio_endio(struct bio *bio, int error);

/* block/ll_rw_blk.c */
request_queue_t *blk_init_queue(request_fn_proc *rfn, void *queuedata);
void blk_cleanup_queue(request_queue_t *q);
void submit_bio(int rw, struct bio *bio);
void generic_make_request(struct bio *bio);
int __make_request(request_queue_t *q, struct bio *bio);
/* With queue_lock held, as a request_fn runs: */
struct request *elv_next_request(request_queue_t *q);
void blkdev_dequeue_request(struct request *req);
void end_that_request(struct request *req, int uptodate);
void blk_stop_queue(request_queue_t *q);
void blk_start_queue(request_queue_t *q);

/* drivers/block/simdisk.c: dom0's disk, one per guest (an LVM volume each). */
struct sim_knobs;
int simdisk_add(const struct sim_knobs *k, uint16_t guest, struct gendisk **out);
void simdisk_remove_all(void);

#endif
