/*
 * Fuzz the session reader: any bytes are read to a proper end or refused
 * with "NAME: offset N: reason"; the chunks it returns are valid (records
 * as xflow_record_decode() accepts them, names without control bytes,
 * sites' roles of known bits).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xflow/collector.h"
#include "xflow/session.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const char *s, size_t max)
{
	size_t n = strlen(s);
	if (n > max)
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* fmemopen() refuses an empty buffer: read one byte past a
	 * one-byte stream instead. */
	static const uint8_t one = 0;
	FILE *f = fmemopen((void *)(size ? data : &one), size ? size : 1, "rb");
	if (!f)
		return 0;
	if (!size)
		fgetc(f);
	char err[512] = "";
	struct xflow_session_reader *r;
	struct xflow_session_chunk c;
	int rc = xflow_session_reader_new(f, "fuzz.ses", &r, err, sizeof(err));
	if (rc == 0) {
		while ((rc = xflow_session_reader_next(r, &c, err, sizeof(err))) == 1) {
			if (c.type == XFLOW_SESSION_SITE) {
				check_name(c.domain_name, XFLOW_SESSION_MAX_DOMAIN);
				check_name(c.file, XFLOW_SESSION_MAX_NAME);
				check_name(c.function, XFLOW_SESSION_MAX_NAME);
				if (!c.domain_name[0])
					abort();
				/* Roles are none, or known with known bits. */
				if ((c.roles & ~(uint32_t)XFLOW_SITE_ROLES_ALL) ||
				    (c.roles && !(c.roles & XFLOW_SITE_ROLES_KNOWN)))
					abort();
			} else if (c.type == XFLOW_SESSION_RECORD) {
				if (c.record.ndata > XFLOW_RECORD_MAX_DATA || c.record.flow_id > XFLOW_FLOWID_MAX)
					abort();
			}
		}
		xflow_session_reader_free(r);
	}
	if (rc < 0 && strncmp(err, "fuzz.ses: offset ", 17) != 0)
		abort();
	fclose(f);
	return 0;
}
