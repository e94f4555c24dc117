/*
 * xflow/session.h — a saved session: what xflowtop fed into its model,
 * written by --save-session and played back by the replay collector.
 *
 * The file, version 9.  Every integer is little-endian.  Versions 3 and 4
 * differ from 2 only in their records, which may be of record version 2
 * (with their CPU) in 3, and of record version 3 (with the flag
 * SEQ_COUNTS_LOST) in 4: a reader reads every version up to its own, and
 * an older reader, which would refuse the new records, is told by the
 * version here instead.  Version 5 gives a site its roles in handoffs, in
 * what was a zero of its SITE chunk, so that a replay matches handoffs as
 * the saving run did; an older reader would refuse the bytes as damage.
 * Version 6 differs from 5 only in its records, which may be of record
 * version 4 (an agent's loss notes, flagged LOSS_NOTE), for the same
 * reason as 3 and 4.  Version 7 adds the role NOTIFIES to a site's
 * roles (a point written notify="yes"), which an older reader would
 * refuse as damage; a version before 7 with that bit is refused.
 * Version 8 adds the PACKED record chunk: a record without the data
 * values it does not use, 48 to 96 bytes instead of 96 (an older reader
 * would refuse the chunk type).  Version 9 adds the RECORDS chunk, which
 * its writer uses for every record it can: records each written as its
 * differences from the one before, 10 to 20 bytes a record on a busy
 * server's flow (a tenth of a busy agent's time went into the kernel's
 * copy of the bytes into the file's pages, and a second of memcached's
 * flow took 230 MB).
 *
 *   Header, 32 bytes:
 *     0   8  magic "XFLOWSES"
 *     8   2  version, 9 (2 to 8 are still read)
 *     10  2  zero
 *     12  4  zero (flags; none defined)
 *     16  8  the session's span: the earliest record time,
 *     24  8  and the latest (both 0 without records).  Filled in when the
 *            writer commits; every record's time lies within, and the
 *            earliest and the latest record hold the two ends, so a
 *            replay at speed N lasts (latest - earliest) / N.
 *
 *   Then chunks, each an 8-byte head and a payload:
 *     0   4  type (below)
 *     4   4  payload length in bytes, exactly the type's (at most 4096)
 *
 *   XFLOW_SESSION_RECORD (1), 96 bytes: a record as the model saw it.
 *     0   8  its time, CLOCK_MONOTONIC ns of the saving host
 *     8  88  the record (xflow/record.h), valid under xflow_record_decode()
 *
 *   XFLOW_SESSION_RECORD_PACKED (5, from version 8), 48 + 8 * ndata bytes:
 *   a RECORD chunk cut after the record's ndata data values.
 *     0   8  its time, as in RECORD
 *     8  40  the record's first 40 bytes: its ndata (0 .. 6) at 8 + 27
 *     48  ..  data[0 .. ndata - 1]; the values after them are read as 0
 *
 *   XFLOW_SESSION_RECORDS (6, from version 9), 1 to 4096 bytes: records,
 *   each written against the one before it in the chunk (the first
 *   against a record and a time of all zero), to the payload's end.
 *   A record:
 *     a head byte: bits 0-2 its ndata (0 .. 6); bit 3 set: flow_kind,
 *       domain_id, version, thread_id and cpu_plus1 as before (else they
 *       follow, in that order); bit 4: flags as before; bit 5: site_id as
 *       before; bit 6: flow_id as before; bit 7 zero;
 *     then, each a varint (below): those of flow_kind .. cpu_plus1, flags
 *     and site_id not as before, as they are; flow_id's difference (when
 *     not as before); the time's difference; timestamp's; thread_seq's (a
 *     32-bit one); and data[0 .. ndata - 1]'s, each from the value before
 *     (0 past the record before's ndata).
 *   A varint: 7 bits a byte, the lowest first, the top bit set in each
 *   byte but the last; at most 10 bytes, and no wider than its field.  A
 *   difference is modulo 2^64 (2^32 for thread_seq), zigzagged: 2d for d
 *   >= 0, -2d - 1 for d < 0.  Each record is then read as a RECORD's.
 *
 *   XFLOW_SESSION_SITE (2), 20 bytes and the strings: a site's names,
 *   written before the first record that needs them.
 *     0   2  domain id
 *     2   2  the site's roles (enum xflow_site_roles, xflow/collector.h):
 *            0 not known, else ROLES_KNOWN and any of SENDS, RECEIVES
 *            and (from version 7) NOTIFIES; versions 5 to 7; zero in
 *            versions 2 to 4
 *     4   4  site id
 *     8   4  line
 *     12  2  length of the domain name   (1 .. 255)
 *     14  2  length of the file name     (0 .. 1024)
 *     16  2  length of the function name (0 .. 1024)
 *     18  2  zero
 *     20  .. the three strings, in that order, without terminators; bytes
 *            0x20 .. 0x7e and 0x80 .. 0xff only
 *
 *   XFLOW_SESSION_CARRIED (3), 16 bytes: for flow kinds 0 .. 15, the bits of
 *   a flow id that survive a domain crossing (0: all, else 1 .. 47), as
 *   the saving run's model used them.  At most once, before any record.
 *
 *   XFLOW_SESSION_END (4), 8 bytes: the number of records in the file.
 *   Last; nothing follows it.  A file without it was cut short.
 */
#ifndef XFLOW_SESSION_H
#define XFLOW_SESSION_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "xflow/record.h"

#define XFLOW_SESSION_MAGIC "XFLOWSES"
#define XFLOW_SESSION_VERSION 9
#define XFLOW_SESSION_VERSION_MIN 2
#define XFLOW_SESSION_HEADER_SIZE 32
#define XFLOW_SESSION_CHUNK_HEAD 8
#define XFLOW_SESSION_MAX_CHUNK 4096
#define XFLOW_SESSION_MAX_DOMAIN 255
#define XFLOW_SESSION_MAX_NAME 1024
#define XFLOW_SESSION_KINDS 16
/* A PACKED record's time and its record up to data[] (offsetof data). */
#define XFLOW_SESSION_PACKED_HEAD 48
_Static_assert(XFLOW_SESSION_PACKED_HEAD == 8 + offsetof(struct xflow_record, data),
	       "a packed record is its time and the record up to its data");

enum xflow_session_chunk_type {
	XFLOW_SESSION_RECORD = 1,
	XFLOW_SESSION_SITE = 2,
	XFLOW_SESSION_CARRIED = 3,
	XFLOW_SESSION_END = 4,
	XFLOW_SESSION_RECORD_PACKED = 5,
	XFLOW_SESSION_RECORDS = 6,
};

/* The replay collector (collectors/replay.c): file=PATH, speed=N|max. */
struct xflow_collector_ops;
extern const struct xflow_collector_ops xflow_collector_replay;

/* --- writing ---------------------------------------------------------------- */

struct xflow_session_writer;

/* Start writing @path: the bytes go to "@path.tmp", renamed to @path by a
 * committing close, so @path is never a partial file.  0 or -errno, with
 * the reason in @err. */
int xflow_session_writer_new(const char *path, struct xflow_session_writer **out, char *err,
			     size_t errlen);

/* Each returns 0 or -errno; after the first error every call returns it
 * again without writing (see xflow_session_writer_error()). */
int xflow_session_write_record(struct xflow_session_writer *w, const struct xflow_record *r,
			       uint64_t t_ns);
/* @roles: the site's (enum xflow_site_roles), 0 when not known; bits
 * the format does not know, or roles without ROLES_KNOWN, are written 0. */
int xflow_session_write_site(struct xflow_session_writer *w, uint16_t domain, uint32_t site,
			     const char *domain_name, const char *file, uint32_t line,
			     const char *function, uint32_t roles);
int xflow_session_write_carried(struct xflow_session_writer *w,
				const uint8_t bits[XFLOW_SESSION_KINDS]);

/* A record of a site of domain @d of weave plan @p (xflow/plan.h), named
 * @domain_name: the site's names and roles (xflow_plan_site_roles) are
 * written first, once.  A site the plan does not have is -EINVAL. */
struct xflow_plan;
struct xflow_plan_domain;
int xflow_session_write_plan_record(struct xflow_session_writer *w, const struct xflow_plan *p,
				    const struct xflow_plan_domain *d, const char *domain_name,
				    const struct xflow_record *r, uint64_t t_ns);

/* 1 once (domain, site) has been passed to xflow_session_write_site(). */
int xflow_session_writer_has_site(const struct xflow_session_writer *w, uint16_t domain,
				  uint32_t site);

/* Bytes written so far (the end, written by the committing close, not
 * counted). */
uint64_t xflow_session_writer_bytes(const struct xflow_session_writer *w);

/* The first error as "PATH.tmp: reason", or NULL. */
const char *xflow_session_writer_error(const struct xflow_session_writer *w);

/* With @commit and no error: write the end, flush, sync and rename to the
 * final name.  Otherwise remove the temporary file.  Frees @w; 0 or the
 * error, described in @err (may be NULL).  NULL @w: 0. */
int xflow_session_writer_free(struct xflow_session_writer *w, int commit, char *err,
			      size_t errlen);

/* --- reading ---------------------------------------------------------------- */

struct xflow_session_reader;

/* One chunk.  Strings are NUL-terminated and valid until the next call.
 * The records of a PACKED or a RECORDS chunk are given as RECORD chunks,
 * one a call; a RECORDS chunk's have the offset of their own first byte. */
struct xflow_session_chunk {
	enum xflow_session_chunk_type type;
	uint64_t offset;              /* where the chunk began in the file */
	uint64_t t_ns;                /* RECORD */
	struct xflow_record record;   /* RECORD, decoded and validated */
	uint16_t domain;              /* SITE */
	uint32_t site, line;
	uint32_t roles;               /* SITE: enum xflow_site_roles, 0 before version 5 */
	const char *domain_name, *file, *function;
	uint8_t carried[XFLOW_SESSION_KINDS]; /* CARRIED */
	uint64_t nrecords;            /* END */
};

/* Read from @f (not closed by the reader), named @name in messages; the
 * header is checked here.  0, or -errno with "NAME: offset N: what" in
 * @err. */
int xflow_session_reader_new(FILE *f, const char *name, struct xflow_session_reader **out,
			     char *err, size_t errlen);

/* The next chunk: 1 and *@out (the END chunk included), 0 once END has
 * been returned and nothing follows it (the file ended properly), or
 * -errno with "NAME: offset N: what" in @err: -EBADMSG for bytes that are
 * not a valid session (including data after END, and a record time
 * outside the header's span), -EPIPE when the file ends before END, -EIO
 * for a read error. */
int xflow_session_reader_next(struct xflow_session_reader *r, struct xflow_session_chunk *out,
			      char *err, size_t errlen);

/* The span the header gives: the earliest and the latest record time. */
void xflow_session_reader_span(const struct xflow_session_reader *r, uint64_t *first, uint64_t *last);

void xflow_session_reader_free(struct xflow_session_reader *r);

#endif
