/* fs/bio.c: allocating and completing bios. */
#include <stdlib.h>

#include "linux/blkdev.h"

struct bio *bio_alloc(void)
{
	return calloc(1, sizeof(struct bio));
}

void bio_put(struct bio *bio)
{
	free(bio);
}

/* The I/O is done: tell whoever submitted the bio. */
void bio_endio(struct bio *bio, int error)
{
	if (bio->bi_end_io)
		bio->bi_end_io(bio, error);
}
