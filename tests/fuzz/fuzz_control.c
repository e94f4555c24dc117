/*
 * Fuzz the control protocol's decoder: any bytes either decode to a message
 * that re-encodes to the same bytes, or are refused with a reason.  The
 * first byte of the input says how many descriptors "came" with the frame
 * (0..3, as placeholders -1: the decoder never touches them).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "xflow/control.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int nfds = data[0] & 3;
	int fds[4] = { -1, -1, -1, -1 };
	struct xflow_ctl_msg *m = NULL;
	const char *why = NULL;
	int rc = xflow_ctl_decode(data + 1, size - 1, fds, nfds, &m, &why);
	if (rc == 0) {
		void *back;
		size_t len;
		if (!m || why != NULL)
			abort();
		/* Placeholders only: the message must not close them. */
		m->nfds = 0;
		if (xflow_ctl_encode(m, &back, &len) != 0)
			abort();
		if (len != size - 1 || memcmp(back, data + 1, len) != 0)
			abort();
		free(back);
		xflow_ctl_msg_free(m);
	} else if (why == NULL || m != NULL) {
		abort();
	}
	return 0;
}
