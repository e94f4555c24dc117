/*
 * Fuzz the record decoder: any bytes either decode to a record that
 * re-encodes to the same bytes, or are rejected with a reason.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xflow/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct xflow_record r;
	const char *why = NULL;
	int rc = xflow_record_decode(data, size, &r, &why);
	if (rc == 0) {
		unsigned char back[XFLOW_RECORD_SIZE];
		xflow_record_encode(&r, back);
		if (memcmp(back, data, XFLOW_RECORD_SIZE) != 0 || why != NULL)
			abort();
		if (r.ndata > XFLOW_RECORD_MAX_DATA || r.flow_id > XFLOW_FLOWID_MAX)
			abort();
	} else if (why == NULL) {
		abort();
	}
	return 0;
}
