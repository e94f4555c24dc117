/*
 * Fuzz the ring consumer with a hostile producer.
 *
 * Input: one flags byte, a little-endian u16 region length, the region's
 * bytes (header and slots as a producer left them), then any number of
 * 10-byte writes {u16 offset, u64 value} that the "producer" makes between
 * the consumer's reads.  The region lives in a heap block of exactly its
 * size, so ASan sees any access outside it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xflow/ring.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 3)
		return 0;
	uint8_t flags = data[0];
	size_t len = (size_t)data[1] | (size_t)data[2] << 8;
	data += 3;
	size -= 3;
	if (len > size || len == 0)
		return 0;
	/* Aligned like a real mapping, so the atomics are well-formed. */
	size_t alloc = (len + 63) & ~(size_t)63;
	unsigned char *region = aligned_alloc(64, alloc);
	if (!region)
		return 0;
	memcpy(region, data, len);
	/* The tail of the allocation past `len` is not the region's; leave it
	 * poisoned-by-content so a read of it would at least be visible. */
	memset(region + len, 0xAA, alloc - len);
	const uint8_t *writes = data + len;
	size_t nwrites = (size - len) / 10;

	struct xflow_ring_consumer c;
	uint32_t expect = (flags & 1) ? XFLOW_RECORD_SIZE : 0;
	if (xflow_ring_consumer_init(&c, region, len, expect, NULL) == 0) {
		static struct xflow_record recs[32];
		static unsigned char raw[32 * XFLOW_RING_MAX_SLOT];
		for (size_t round = 0; round <= nwrites && round < 256; round++) {
			long n;
			if (c.slot_size == XFLOW_RECORD_SIZE && !(flags & 2))
				n = xflow_ring_pop_records(&c, recs, 1 + (flags >> 3) % 32);
			else
				n = xflow_ring_pop(&c, raw, 1 + (flags >> 3) % 32);
			if (n < 0)
				break;
			if (round < nwrites) {
				const uint8_t *w = writes + round * 10;
				size_t off = ((size_t)w[0] | (size_t)w[1] << 8) & ~(size_t)7;
				if (off + 8 <= len)
					memcpy(region + off, w + 2, 8);
			}
		}
		(void)xflow_ring_dropped(&c);
	}
	free(region);
	return 0;
}
