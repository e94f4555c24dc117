/*
 * Reading a session file (format in xflow/session.h).  The file is
 * hostile input: every length is checked against its type before a byte
 * of payload is read, every record goes through xflow_record_decode(),
 * and every error names the offset of the chunk and the field.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xflow/collector.h"
#include "xflow/session.h"
#include "common/session_delta.h"

struct xflow_session_reader {
	FILE *f;
	char name[256];
	uint64_t offset;       /* of the next byte to read */
	unsigned version;      /* the header's */
	uint64_t nrecords;
	uint64_t first, last;     /* the header's span */
	uint64_t min_t, max_t;    /* the records' */
	int ended, carried_seen;
	/* A RECORDS chunk being read, in buf: its payload's length, the
	 * next record's place in it and the payload's offset in the file. */
	uint32_t batch_len, batch_pos;
	uint64_t batch_at;
	struct xflow_session_delta delta;
	unsigned char buf[XFLOW_SESSION_MAX_CHUNK];
	char strings[XFLOW_SESSION_MAX_DOMAIN + 2 * XFLOW_SESSION_MAX_NAME + 3];
};

static uint16_t get16(const unsigned char *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

#if defined(__GNUC__)
__attribute__((format(printf, 6, 7)))
#endif
static int bad(const struct xflow_session_reader *r, int rc, uint64_t at, char *err, size_t errlen,
	       const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "%s: offset %" PRIu64 ": %s", r->name, at, what);
	return rc;
}

/* Read exactly @n bytes; -EPIPE (with @what in the message) when the file
 * ends first. */
static int take(struct xflow_session_reader *r, void *p, size_t n, uint64_t at, const char *what,
		char *err, size_t errlen)
{
	size_t got = fread(p, 1, n, r->f);
	r->offset += got;
	if (got == n)
		return 0;
	if (ferror(r->f))
		return bad(r, -EIO, r->offset, err, errlen, "read error");
	return bad(r, -EPIPE, at, err, errlen, "the file ends inside %s (%zu of %zu bytes)", what, got, n);
}

int xflow_session_reader_new(FILE *f, const char *name, struct xflow_session_reader **out,
			     char *err, size_t errlen)
{
	struct xflow_session_reader *r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "%s: %s", name, strerror(ENOMEM));
		return -ENOMEM;
	}
	r->f = f;
	snprintf(r->name, sizeof(r->name), "%s", name);
	unsigned char h[XFLOW_SESSION_HEADER_SIZE];
	int rc = take(r, h, sizeof(h), 0, "the header", err, errlen);
	if (rc)
		goto fail;
	rc = -EBADMSG;
	if (memcmp(h, XFLOW_SESSION_MAGIC, 8)) {
		bad(r, rc, 0, err, errlen, "not a saved xflowtop session (no XFLOWSES magic)");
		goto fail;
	}
	if (get16(h + 8) < XFLOW_SESSION_VERSION_MIN || get16(h + 8) > XFLOW_SESSION_VERSION) {
		bad(r, -EPROTO, 8, err, errlen, "session version %u (this xflowtop reads versions %d to %d)",
		    get16(h + 8), XFLOW_SESSION_VERSION_MIN, XFLOW_SESSION_VERSION);
		rc = -EPROTO;
		goto fail;
	}
	if (get16(h + 10) || get32(h + 12)) {
		bad(r, rc, 10, err, errlen, "reserved header bytes are not zero");
		goto fail;
	}
	r->version = get16(h + 8);
	r->first = get64(h + 16);
	r->last = get64(h + 24);
	if (r->first > r->last) {
		bad(r, rc, 16, err, errlen, "the session's span ends (%" PRIu64 " ns) before it starts (%" PRIu64 " ns)",
		    r->last, r->first);
		goto fail;
	}
	*out = r;
	return 0;
fail:
	free(r);
	return rc;
}

/* A name of @n bytes at @p copied to @dst, NUL-terminated. */
static int name_ok(const struct xflow_session_reader *r, uint64_t at, const char *field,
		   const unsigned char *p, size_t n, char *dst, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 || p[i] == 0x7f)
			return bad(r, -EBADMSG, at, err, errlen,
				   "site: the %s has a control byte 0x%02x at its byte %zu", field, p[i], i);
	memcpy(dst, p, n);
	dst[n] = '\0';
	return 0;
}

static int parse_site(struct xflow_session_reader *r, uint64_t at, uint32_t len,
		      struct xflow_session_chunk *c, char *err, size_t errlen)
{
	const unsigned char *p = r->buf;
	if (len < 20)
		return bad(r, -EBADMSG, at, err, errlen, "site: length %" PRIu32 " is below 20", len);
	size_t nd = get16(p + 12), nf = get16(p + 14), nfn = get16(p + 16);
	uint16_t roles = get16(p + 2);
	if (get16(p + 18) || (roles && r->version < 5))
		return bad(r, -EBADMSG, at, err, errlen, "site: reserved bytes are not zero");
	if ((roles & ~(unsigned)XFLOW_SITE_ROLES_ALL) || (roles && !(roles & XFLOW_SITE_ROLES_KNOWN)))
		return bad(r, -EBADMSG, at, err, errlen, "site: roles %#x (0, or %#x and any of %#x, %#x, %#x)", roles,
			   XFLOW_SITE_ROLES_KNOWN, XFLOW_SITE_SENDS, XFLOW_SITE_RECEIVES, XFLOW_SITE_NOTIFIES);
	/* An older writer knew no NOTIFIES: the bit there is damage. */
	if ((roles & XFLOW_SITE_NOTIFIES) && r->version < 7)
		return bad(r, -EBADMSG, at, err, errlen, "site: role NOTIFIES in a version %u session (from version 7)",
			   (unsigned)r->version);
	if (nd == 0 || nd > XFLOW_SESSION_MAX_DOMAIN)
		return bad(r, -EBADMSG, at, err, errlen, "site: domain name length %zu (1 to %d)", nd,
			   XFLOW_SESSION_MAX_DOMAIN);
	if (nf > XFLOW_SESSION_MAX_NAME || nfn > XFLOW_SESSION_MAX_NAME)
		return bad(r, -EBADMSG, at, err, errlen,
			   "site: file or function name length %zu/%zu (at most %d)", nf, nfn,
			   XFLOW_SESSION_MAX_NAME);
	if (20 + nd + nf + nfn != len)
		return bad(r, -EBADMSG, at, err, errlen,
			   "site: length %" PRIu32 " does not match its names' lengths (20 + %zu + %zu + %zu)",
			   len, nd, nf, nfn);
	char *d = r->strings, *f = d + nd + 1, *fn = f + nf + 1;
	int rc;
	if ((rc = name_ok(r, at, "domain name", p + 20, nd, d, err, errlen)) ||
	    (rc = name_ok(r, at, "file name", p + 20 + nd, nf, f, err, errlen)) ||
	    (rc = name_ok(r, at, "function name", p + 20 + nd + nf, nfn, fn, err, errlen)))
		return rc;
	c->domain = get16(p);
	c->site = get32(p + 4);
	c->line = get32(p + 8);
	c->roles = roles;
	c->domain_name = d;
	c->file = f;
	c->function = fn;
	return 0;
}

/* A PACKED record chunk of @len bytes in r->buf, made a RECORD chunk's
 * payload in place: its length checked against its ndata, the data
 * values it left out zero. */
static int unpack_record(struct xflow_session_reader *r, uint32_t len, uint64_t at, char *err, size_t errlen)
{
	if (len < XFLOW_SESSION_PACKED_HEAD)
		return bad(r, -EBADMSG, at, err, errlen, "packed record of %" PRIu32 " bytes (at least %d)", len,
			   XFLOW_SESSION_PACKED_HEAD);
	unsigned nd = r->buf[8 + offsetof(struct xflow_record, ndata)];
	if (nd > XFLOW_RECORD_MAX_DATA || len != XFLOW_SESSION_PACKED_HEAD + 8 * nd)
		return bad(r, -EBADMSG, at, err, errlen,
			   "packed record of %" PRIu32 " bytes with ndata %u (48 + 8 * ndata, ndata at most %d)", len,
			   nd, XFLOW_RECORD_MAX_DATA);
	memset(r->buf + len, 0, 8 + XFLOW_RECORD_SIZE - len);
	return 0;
}

/* A record at time @t_ns, its bytes at @rec (private memory), made the
 * RECORD chunk @c (found at @at): decoded and checked, and counted. */
static int take_record(struct xflow_session_reader *r, struct xflow_session_chunk *c, uint64_t t_ns,
		       const unsigned char *rec, uint64_t at, char *err, size_t errlen)
{
	const char *why = NULL;
	int rc;
	c->t_ns = t_ns;
	/* A time outside the span would hold a replay back for as long as it
	 * says: refused here, where its offset is known. */
	if (c->t_ns < r->first || c->t_ns > r->last)
		return bad(r, -EBADMSG, at, err, errlen,
			   "record time %" PRIu64 " ns is outside the session's span (%" PRIu64 " to %" PRIu64
			   " ns, in the header)", c->t_ns, r->first, r->last);
	if ((rc = xflow_record_decode(rec, XFLOW_RECORD_SIZE, &c->record, &why)))
		return bad(r, -EBADMSG, at, err, errlen, "bad record: %s", why ? why : strerror(-rc));
	if (!r->nrecords || c->t_ns < r->min_t)
		r->min_t = c->t_ns;
	if (!r->nrecords || c->t_ns > r->max_t)
		r->max_t = c->t_ns;
	r->nrecords++;
	return 0;
}

/* The next record of the RECORDS chunk being read, as a RECORD chunk. */
static int batch_next(struct xflow_session_reader *r, struct xflow_session_chunk *c, char *err, size_t errlen)
{
	uint64_t at = r->batch_at + r->batch_pos;
	const char *why = NULL;
	size_t n = xflow_session_delta_get(&r->delta, r->buf + r->batch_pos, r->batch_len - r->batch_pos, &why);
	if (!n)
		return bad(r, -EBADMSG, at, err, errlen, "a record of a RECORDS chunk: %s", why);
	r->batch_pos += (uint32_t)n;
	unsigned char rec[XFLOW_RECORD_SIZE];
	xflow_record_encode(&r->delta.prev, rec);
	memset(c, 0, sizeof(*c));
	c->type = XFLOW_SESSION_RECORD;
	c->offset = at;
	int rc = take_record(r, c, r->delta.prev_t, rec, at, err, errlen);
	return rc ? rc : 1;
}

int xflow_session_reader_next(struct xflow_session_reader *r, struct xflow_session_chunk *c,
			      char *err, size_t errlen)
{
	uint64_t at = r->offset;
	unsigned char head[XFLOW_SESSION_CHUNK_HEAD];
	int rc;
	if (r->batch_pos < r->batch_len)
		return batch_next(r, c, err, errlen);
	if (r->ended) {
		/* Nothing may follow the end: a file with more is not one
		 * we wrote. */
		if (fread(head, 1, 1, r->f) == 1)
			return bad(r, -EBADMSG, at, err, errlen, "data after the end marker");
		return 0;
	}
	size_t got = fread(head, 1, sizeof(head), r->f);
	r->offset += got;
	if (got == 0 && !ferror(r->f))
		return bad(r, -EPIPE, at, err, errlen,
			   "the file ends without its end marker (cut short: %" PRIu64 " records read)",
			   r->nrecords);
	if (got != sizeof(head)) {
		if (ferror(r->f))
			return bad(r, -EIO, r->offset, err, errlen, "read error");
		return bad(r, -EPIPE, at, err, errlen, "the file ends inside a chunk head (%zu of 8 bytes)", got);
	}
	uint32_t type = get32(head), len = get32(head + 4), want;
	switch (type) {
	case XFLOW_SESSION_RECORD: want = 8 + XFLOW_RECORD_SIZE; break;
	case XFLOW_SESSION_RECORD_PACKED:
		if (r->version < 8)
			return bad(r, -EBADMSG, at, err, errlen, "a packed record in a version %u session (from version 8)",
				   r->version);
		want = 0; /* checked below, against the record's ndata */
		break;
	case XFLOW_SESSION_RECORDS:
		if (r->version < 9)
			return bad(r, -EBADMSG, at, err, errlen, "a RECORDS chunk in a version %u session (from version 9)",
				   r->version);
		if (len == 0)
			return bad(r, -EBADMSG, at, err, errlen, "a RECORDS chunk without a record");
		want = 0; /* read a record at a time */
		break;
	case XFLOW_SESSION_CARRIED: want = XFLOW_SESSION_KINDS; break;
	case XFLOW_SESSION_END: want = 8; break;
	case XFLOW_SESSION_SITE: want = 0; break;
	default:
		return bad(r, -EBADMSG, at, err, errlen, "unknown chunk type %" PRIu32, type);
	}
	if ((want && len != want) || len > XFLOW_SESSION_MAX_CHUNK)
		return bad(r, -EBADMSG, at, err, errlen, "chunk type %" PRIu32 " with length %" PRIu32
			   " (expected %" PRIu32 ")", type, len, want ? want : (uint32_t)XFLOW_SESSION_MAX_CHUNK);
	if ((rc = take(r, r->buf, len, at, "a chunk's payload", err, errlen)))
		return rc;
	if (type == XFLOW_SESSION_RECORD_PACKED && (rc = unpack_record(r, len, at, err, errlen)))
		return rc;
	if (type == XFLOW_SESSION_RECORDS) {
		r->batch_len = len;
		r->batch_pos = 0;
		r->batch_at = at + XFLOW_SESSION_CHUNK_HEAD;
		memset(&r->delta, 0, sizeof(r->delta));
		return batch_next(r, c, err, errlen);
	}
	memset(c, 0, sizeof(*c));
	/* A packed record is a record to whoever reads the chunks. */
	c->type = type == XFLOW_SESSION_RECORD_PACKED ? XFLOW_SESSION_RECORD : (enum xflow_session_chunk_type)type;
	c->offset = at;
	switch (c->type) {
	case XFLOW_SESSION_RECORD:
		if ((rc = take_record(r, c, get64(r->buf), r->buf + 8, at, err, errlen)))
			return rc;
		break;
	case XFLOW_SESSION_SITE:
		if ((rc = parse_site(r, at, len, c, err, errlen)))
			return rc;
		break;
	case XFLOW_SESSION_CARRIED:
		if (r->carried_seen || r->nrecords)
			return bad(r, -EBADMSG, at, err, errlen,
				   "carried bits again or after a record (once, before the records)");
		r->carried_seen = 1;
		for (int k = 0; k < XFLOW_SESSION_KINDS; k++)
			if ((c->carried[k] = r->buf[k]) >= XFLOW_FLOWID_BITS)
				return bad(r, -EBADMSG, at, err, errlen,
					   "carried bits %u for flow kind %d (0 to %d)", r->buf[k], k,
					   XFLOW_FLOWID_BITS - 1);
		break;
	case XFLOW_SESSION_END:
		c->nrecords = get64(r->buf);
		if (c->nrecords != r->nrecords)
			return bad(r, -EBADMSG, at, err, errlen,
				   "the end marker counts %" PRIu64 " records, the file has %" PRIu64,
				   c->nrecords, r->nrecords);
		/* The span is the records' own, not a wider one. */
		if (r->min_t != r->first || r->max_t != r->last)
			return bad(r, -EBADMSG, 16, err, errlen,
				   "the header's span, %" PRIu64 " to %" PRIu64 " ns, is not the records' (%" PRIu64
				   " to %" PRIu64 " ns)", r->first, r->last, r->min_t, r->max_t);
		r->ended = 1;
		break;
	case XFLOW_SESSION_RECORD_PACKED:
	case XFLOW_SESSION_RECORDS:
		break; /* given as RECORDs, above */
	}
	return 1;
}

void xflow_session_reader_span(const struct xflow_session_reader *r, uint64_t *first, uint64_t *last)
{
	*first = r->first;
	*last = r->last;
}

void xflow_session_reader_free(struct xflow_session_reader *r)
{
	free(r);
}
