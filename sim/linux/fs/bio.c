/* fs/bio.c: allocating and completing bios. */
#include <stdlib.h>

#include "linux/blkdev.h"

struct bio *bio_alloc(void)
{
	struct bio *bio = calloc(1, sizeof(struct bio));

	if (bio)
		atomic_init(&bio->bi_cnt, 1);
	return bio;
}

/* Drops a reference; the last one frees the bio, the end of its life. */
void bio_put(struct bio *bio)
{
	if (atomic_fetch_sub(&bio->bi_cnt, 1) == 1) {
		bio->bi_next = NULL;
		free(bio);
	}
}

/* The I/O is done: tell whoever submitted the bio. */
void bio_endio(struct bio *bio, int error)
{
	if (bio->bi_end_io)
		bio->bi_end_io(bio, error);
}
