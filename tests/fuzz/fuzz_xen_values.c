/*
 * Fuzz the parsers of guest-written xenstore values: a number is accepted
 * only in its one decimal spelling and within its bound (checked here by
 * printing it back), an offer node only in the form the agent writes.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/xen_discover.h"
#include "xflow/xen.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t v = 0;
	const char *s = (const char *)data;
	if (xflow_xs_parse_uint(s, size, XFLOW_XEN_MAX_DOMID, &v) == 0) {
		char back[16];
		int n = snprintf(back, sizeof(back), "%u", (unsigned)v);
		if (v > XFLOW_XEN_MAX_DOMID || (size_t)n != size || memcmp(back, s, size) != 0)
			abort();
	}
	char *z = malloc(size + 1);
	if (!z)
		return 0;
	memcpy(z, data, size);
	z[size] = 0;
	uint32_t pid = 0;
	bool busy = false;
	if (xen_offer_parse(z, &pid, &busy) == 0) {
		char back[64];
		snprintf(back, sizeof(back), "xflow-agent %d %u %s", XFLOW_XEN_VERSION, (unsigned)pid,
			 busy ? "busy" : "ready");
		if (strcmp(back, z) != 0)
			abort();
	}
	free(z);
	return 0;
}
