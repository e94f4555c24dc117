/*
 * Fuzz the weave plan reader (xflow-agent --plan loads a file anyone may
 * have written): any bytes are refused with a reason or give a plan that
 * passes xflow_plan_check and writes back to bytes that read again to the
 * same bytes.  Each input is read as it is and once more with its size and
 * checksum made right, so that the fuzzer gets past them to the tables.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xflow/plan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
uint32_t xflow_plan_fnv32(const unsigned char *p, size_t n);

static void one(const uint8_t *data, size_t size)
{
	char why[512] = "";
	struct xflow_plan *p = NULL;
	int rc = xflow_plan_read(data, size, &p, why, sizeof(why));
	if (rc != 0) {
		/* A refusal always says why. */
		if (p || !why[0])
			abort();
		return;
	}
	if (xflow_plan_check(p, why, sizeof(why)) != 0)
		abort();
	void *out = NULL, *out2 = NULL;
	size_t len = 0, len2 = 0;
	if (xflow_plan_write(p, &out, &len, why, sizeof(why)) != 0)
		abort();
	struct xflow_plan *q = NULL;
	if (xflow_plan_read(out, len, &q, why, sizeof(why)) != 0)
		abort();
	if (xflow_plan_write(q, &out2, &len2, why, sizeof(why)) != 0 || len2 != len || memcmp(out, out2, len))
		abort();
	free(out);
	free(out2);
	xflow_plan_free(q);
	xflow_plan_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	one(data, size);
	if (size < XFLOW_PLAN_HEADER_SIZE)
		return 0;
	uint8_t *fixed = malloc(size);
	if (!fixed)
		return 0;
	memcpy(fixed, data, size);
	uint64_t fsize = size;
	memcpy(fixed + 16, &fsize, sizeof(fsize));
	uint32_t sum = xflow_plan_fnv32(fixed + XFLOW_PLAN_HEADER_SIZE, size - XFLOW_PLAN_HEADER_SIZE);
	memcpy(fixed + 48, &sum, sizeof(sum));
	one(fixed, size);
	free(fixed);
	return 0;
}
