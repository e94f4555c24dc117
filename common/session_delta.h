/*
 * common/session_delta.h — a record of a session's RECORDS chunk, written
 * as its differences from the record before it in the chunk (format in
 * xflow/session.h).  The writer and the reader of session files share it;
 * nothing else sees the encoding.
 */
#ifndef XFLOW_COMMON_SESSION_DELTA_H
#define XFLOW_COMMON_SESSION_DELTA_H

#include <stddef.h>
#include <stdint.h>

#include "xflow/record.h"

/* What a chunk's records are written against: the record before, with its
 * data values past its ndata zero, and its time.  A chunk starts from all
 * zero, so that each chunk reads without any other. */
struct xflow_session_delta {
	struct xflow_record prev;
	uint64_t prev_t;
};

/* The most bytes one record takes: its head byte and every field at its
 * widest varint. */
#define XFLOW_SESSION_DELTA_MAX 122

/* Write @r at time @t_ns to @out (room for XFLOW_SESSION_DELTA_MAX bytes)
 * against @d, which then holds @r.  @r's ndata must be at most
 * XFLOW_RECORD_MAX_DATA (one that says more is not encoded: the caller
 * writes it whole, for a reader to refuse).  Returns the bytes written. */
size_t xflow_session_delta_put(struct xflow_session_delta *d, const struct xflow_record *r, uint64_t t_ns,
			       unsigned char *out);

/* Read one record from the @n bytes at @p against @d, which then holds
 * it: the bytes it took, or 0 with *@why naming the field at fault (the
 * bytes end inside the record, a varint longer than its field, reserved
 * bits set).  The record is not validated here: the caller decodes it as
 * any other. */
size_t xflow_session_delta_get(struct xflow_session_delta *d, const unsigned char *p, size_t n, const char **why);

#endif
