/*
 * Sessions rewritten for tests (tests/lib/session_edit.h).
 */
#include <stdlib.h>
#include <string.h>

#include "common/session_delta.h"
#include "tests/lib/session_edit.h"
#include "xflow/session.h"

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

unsigned char *test_session_as_packed(const unsigned char *in, size_t len, size_t *out_len)
{
	/* A record takes 4 bytes at least (its head byte and three varints),
	 * and becomes at most 104. */
	unsigned char *out = calloc(1, 26 * len + XFLOW_SESSION_HEADER_SIZE);
	if (!out || len < XFLOW_SESSION_HEADER_SIZE)
		goto fail;
	memcpy(out, in, XFLOW_SESSION_HEADER_SIZE);
	out[8] = 8;
	size_t o = XFLOW_SESSION_HEADER_SIZE;
	for (size_t at = XFLOW_SESSION_HEADER_SIZE; at + XFLOW_SESSION_CHUNK_HEAD <= len;) {
		uint32_t type = get32(in + at), n = get32(in + at + 4);
		if (n > len - at - XFLOW_SESSION_CHUNK_HEAD)
			goto fail;
		const unsigned char *p = in + at + XFLOW_SESSION_CHUNK_HEAD;
		if (type != XFLOW_SESSION_RECORDS) {
			memcpy(out + o, in + at, XFLOW_SESSION_CHUNK_HEAD + n);
			o += XFLOW_SESSION_CHUNK_HEAD + n;
		} else {
			struct xflow_session_delta d;
			memset(&d, 0, sizeof(d));
			for (size_t pos = 0; pos < n;) {
				const char *why;
				size_t used = xflow_session_delta_get(&d, p + pos, n - pos, &why);
				if (!used)
					goto fail;
				pos += used;
				unsigned char rec[XFLOW_RECORD_SIZE];
				xflow_record_encode(&d.prev, rec);
				size_t plen = XFLOW_SESSION_PACKED_HEAD + 8 * (size_t)d.prev.ndata;
				put32(out + o, XFLOW_SESSION_RECORD_PACKED);
				put32(out + o + 4, (uint32_t)plen);
				put64(out + o + 8, d.prev_t);
				memcpy(out + o + 16, rec, plen - 8);
				o += XFLOW_SESSION_CHUNK_HEAD + plen;
			}
		}
		at += XFLOW_SESSION_CHUNK_HEAD + n;
	}
	*out_len = o;
	return out;
fail:
	free(out);
	return NULL;
}

size_t test_session_record_at(const unsigned char *buf, size_t len, unsigned k)
{
	for (size_t at = XFLOW_SESSION_HEADER_SIZE; at + XFLOW_SESSION_CHUNK_HEAD <= len;
	     at += XFLOW_SESSION_CHUNK_HEAD + get32(buf + at + 4)) {
		uint32_t type = get32(buf + at);
		if ((type == XFLOW_SESSION_RECORD || type == XFLOW_SESSION_RECORD_PACKED) && k-- == 0)
			return at;
	}
	return len;
}
