/*
 * The session file: what the writer writes reads back exactly, and the
 * reader refuses every broken file (each truncation of a small valid one,
 * random byte flips, lengths that lie, bad records, control bytes in
 * names) with a message naming the offset and the reason, never crashing.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xflow/collector.h"
#include "xflow/session.h"
#include "tests/lib/session_edit.h"
#include "tests/lib/testlib.h"

static char dir[] = "/tmp/xflow-session-test.XXXXXX";
static char path[256];

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/s.ses", dir);
}

static void teardown(void)
{
	char tmp[300];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	unlink(path);
	unlink(tmp);
	rmdir(dir);
}

TestSuite(session, .init = setup, .fini = teardown);

static struct xflow_record rec(unsigned i)
{
	struct xflow_record r;
	memset(&r, 0, sizeof(r));
	r.version = XFLOW_RECORD_VERSION;
	r.timestamp = 1000 + i;
	r.flow_id = 7 + i;
	r.site_id = i % 3;
	r.flow_kind = 0;
	r.domain_id = (uint16_t)(i & 1);
	r.flags = i == 0 ? XFLOW_REC_START : 0;
	r.ndata = 2;
	r.data[0] = 0xabc;
	r.data[1] = i;
	return r;
}

/* A small valid session: carried bits, two sites, @n records. */
static void write_small(unsigned n)
{
	struct xflow_session_writer *w;
	char err[512] = "";
	unlink(path);
	cr_assert_eq(xflow_session_writer_new(path, &w, err, sizeof(err)), 0, "%s", err);
	uint8_t bits[XFLOW_SESSION_KINDS] = { 12 };
	cr_assert_eq(xflow_session_write_carried(w, bits), 0);
	cr_assert_eq(xflow_session_write_site(w, 0, 0, "linux0", "net/core/dev.c", 1543, "netif_rx", 0), 0);
	cr_assert_eq(xflow_session_write_site(w, 1, 1, "linuxU", "tcp.c", 726, "tcp_sendmsg", 0), 0);
	cr_assert(xflow_session_writer_has_site(w, 1, 1));
	cr_assert(!xflow_session_writer_has_site(w, 1, 0));
	for (unsigned i = 0; i < n; i++) {
		struct xflow_record r = rec(i);
		cr_assert_eq(xflow_session_write_record(w, &r, 5000000 + i * 1000), 0);
	}
	char tmp[300];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	cr_assert_eq(access(path, F_OK), -1, "the final name exists before the end");
	cr_assert_eq(access(tmp, F_OK), 0);
	cr_assert_eq(xflow_session_writer_free(w, 1, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(access(tmp, F_OK), -1, "the temporary file was left");
}

static unsigned char *slurp(size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	unsigned char *buf = malloc(1 << 20);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

/* The session as slurp() has it, with its records as version 8 wrote
 * them (tests/lib/session_edit.h): each at an offset of its own, for a
 * test to damage one field of one record. */
static unsigned char *slurp_packed(size_t *len)
{
	unsigned char *v9 = slurp(len);
	unsigned char *buf = test_session_as_packed(v9, *len, len);
	cr_assert_not_null(buf, "the writer's RECORDS chunks do not read");
	free(v9);
	return buf;
}

/* The records read from @f are @want, at the times @want_t (@n of them),
 * each chunk's offset after the one before, and the file reads to its end. */
static void expect_records(FILE *f, const struct xflow_record *want, const uint64_t *want_t, unsigned n)
{
	char err[512] = "";
	struct xflow_session_reader *r;
	struct xflow_session_chunk c;
	cr_assert_eq(xflow_session_reader_new(f, "t.ses", &r, err, sizeof(err)), 0, "%s", err);
	unsigned k = 0;
	int rc;
	uint64_t last_at = 0;
	while ((rc = xflow_session_reader_next(r, &c, err, sizeof(err))) == 1) {
		if (c.type != XFLOW_SESSION_RECORD)
			continue;
		cr_assert_lt(k, n);
		cr_assert_eq(c.t_ns, want_t[k], "record %u's time", k);
		cr_assert_eq(memcmp(&c.record, &want[k], sizeof(want[k])), 0, "record %u", k);
		cr_assert_gt(c.offset, last_at, "record %u's offset is its own", k);
		last_at = c.offset;
		k++;
	}
	cr_expect_eq(rc, 0, "%s", err);
	cr_expect_eq(k, n);
	xflow_session_reader_free(r);
}

/* Read @len bytes of @buf to the end: 0, or the error with @err set. */
static int read_all(const unsigned char *buf, size_t len, char *err, size_t errlen, unsigned *nrec)
{
	FILE *f = fmemopen((void *)buf, len ? len : 1, "rb");
	cr_assert_not_null(f);
	if (!len)
		fgetc(f); /* fmemopen refuses size 0: an empty stream instead */
	struct xflow_session_reader *r;
	struct xflow_session_chunk c;
	int rc = xflow_session_reader_new(f, "t.ses", &r, err, errlen);
	*nrec = 0;
	if (rc == 0) {
		while ((rc = xflow_session_reader_next(r, &c, err, errlen)) == 1)
			*nrec += c.type == XFLOW_SESSION_RECORD;
		xflow_session_reader_free(r);
	}
	fclose(f);
	return rc;
}

Test(session, round_trip)
{
	write_small(5);
	FILE *f = fopen(path, "rb");
	struct xflow_session_reader *r;
	struct xflow_session_chunk c;
	char err[512] = "";
	cr_assert_eq(xflow_session_reader_new(f, path, &r, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(xflow_session_reader_next(r, &c, err, sizeof(err)), 1, "%s", err);
	cr_assert_eq(c.type, XFLOW_SESSION_CARRIED);
	cr_assert_eq(c.carried[0], 12);
	cr_assert_eq(c.carried[1], 0);
	cr_assert_eq(xflow_session_reader_next(r, &c, err, sizeof(err)), 1);
	cr_assert_eq(c.type, XFLOW_SESSION_SITE);
	cr_assert_str_eq(c.domain_name, "linux0");
	cr_assert_str_eq(c.file, "net/core/dev.c");
	cr_assert_str_eq(c.function, "netif_rx");
	cr_assert_eq(c.line, 1543);
	cr_assert_eq(xflow_session_reader_next(r, &c, err, sizeof(err)), 1);
	cr_assert_eq(c.domain, 1);
	cr_assert_eq(c.site, 1);
	for (unsigned i = 0; i < 5; i++) {
		cr_assert_eq(xflow_session_reader_next(r, &c, err, sizeof(err)), 1, "%s", err);
		cr_assert_eq(c.type, XFLOW_SESSION_RECORD);
		cr_assert_eq(c.t_ns, 5000000 + i * 1000);
		struct xflow_record want = rec(i);
		cr_assert_eq(memcmp(&c.record, &want, sizeof(want)), 0);
	}
	cr_assert_eq(xflow_session_reader_next(r, &c, err, sizeof(err)), 1);
	cr_assert_eq(c.type, XFLOW_SESSION_END);
	cr_assert_eq(c.nrecords, 5);
	cr_assert_eq(xflow_session_reader_next(r, &c, err, sizeof(err)), 0, "%s", err);
	xflow_session_reader_free(r);
	fclose(f);
}

Test(session, every_truncation_is_refused)
{
	write_small(3);
	size_t len;
	unsigned char *buf = slurp(&len);
	char err[512];
	unsigned n;
	cr_assert_eq(read_all(buf, len, err, sizeof(err), &n), 0, "%s", err);
	cr_assert_eq(n, 3);
	for (size_t cut = 0; cut < len; cut++) {
		err[0] = '\0';
		int rc = read_all(buf, cut, err, sizeof(err), &n);
		cr_assert(rc == -EPIPE, "cut at %zu: rc %d (%s)", cut, rc, err);
		cr_assert(strstr(err, "t.ses: offset "), "cut at %zu: %s", cut, err);
	}
	free(buf);
}

Test(session, byte_flips_never_crash)
{
	write_small(4);
	size_t len;
	unsigned char *buf = slurp(&len), *bad = malloc(len);
	char err[512];
	unsigned n, refused = 0;
	srand(7);
	for (int round = 0; round < 3000; round++) {
		memcpy(bad, buf, len);
		int flips = 1 + rand() % 3;
		for (int k = 0; k < flips; k++)
			bad[(size_t)rand() % len] ^= (unsigned char)(1 + rand() % 255);
		err[0] = '\0';
		int rc = read_all(bad, len, err, sizeof(err), &n);
		if (rc) {
			refused++;
			cr_assert(strstr(err, "t.ses: offset "), "no offset: %s", err);
		}
	}
	/* Timestamps and data values may take any value: not every flip is
	 * an error, but most of the bytes are checked. */
	cr_assert_gt(refused, 1000);
	free(bad);
	free(buf);
}

/* Patch @len bytes at @at of a fresh small session and expect @what. */
static void expect_bad(size_t at, const void *bytes, size_t n, const char *what)
{
	write_small(2);
	size_t len;
	unsigned char *buf = slurp(&len);
	memcpy(buf + at, bytes, n);
	char err[512] = "";
	unsigned nrec;
	cr_assert_lt(read_all(buf, len, err, sizeof(err), &nrec), 0, "accepted (%s)", what);
	cr_assert(strstr(err, what), "expected '%s' in '%s'", what, err);
	free(buf);
}

/* Offsets in the small session: header 32, carried chunk 32+8+16 = 56,
 * first site at 56 (20 + 6 + 14 + 8 bytes of payload). */
Test(session, named_errors)
{
	expect_bad(0, "XFLOWSEZ", 8, "offset 0: not a saved xflowtop session");
	/* The first version this reader does not know, from the header's
	 * macro: the next format must not fail this test. */
	char next[2] = { XFLOW_SESSION_VERSION + 1, 0 }, said[64];
	snprintf(said, sizeof(said), "offset 8: session version %d", XFLOW_SESSION_VERSION + 1);
	expect_bad(8, next, 2, said);
	expect_bad(8, "\x01\x00", 2, "offset 8: session version 1");
	expect_bad(12, "\x01", 1, "reserved header bytes");
	expect_bad(32, "\x09", 1, "offset 32: unknown chunk type 9");
	expect_bad(36, "\x11", 1, "offset 32: chunk type 3 with length 17");
	expect_bad(40, "\x30", 1, "carried bits 48 for flow kind 0");
	expect_bad(60, "\xff\xff\x00\x00", 4, "offset 56: chunk type 2 with length 65535");
	expect_bad(60, "\x31", 1, "site: length 49 does not match");
	expect_bad(64 + 12, "\x00", 1, "site: domain name length 0");
	expect_bad(64 + 20, "\x07", 1, "the domain name has a control byte 0x07");
	expect_bad(64 + 14, "\x01\x04", 2, "file or function name length 1025");
}

/* @buf as a file of version @version, which has whole RECORD chunks, not
 * packed ones nor RECORDS: as that version's writer wrote it.  Its length
 * in @out_len. */
static unsigned char *as_version(const unsigned char *v9, size_t v9_len, unsigned version, size_t *out_len)
{
	size_t len;
	unsigned char *buf = test_session_as_packed(v9, v9_len, &len);
	cr_assert_not_null(buf);
	unsigned char *out = calloc(1, 2 * len + 1024);
	cr_assert_not_null(out);
	memcpy(out, buf, XFLOW_SESSION_HEADER_SIZE);
	out[8] = (unsigned char)version;
	size_t o = XFLOW_SESSION_HEADER_SIZE;
	for (size_t at = XFLOW_SESSION_HEADER_SIZE; at < len;) {
		size_t n = (size_t)(buf[at + 4] | buf[at + 5] << 8);
		memcpy(out + o, buf + at, 8 + n);
		if (buf[at] == XFLOW_SESSION_RECORD_PACKED) {
			out[o] = XFLOW_SESSION_RECORD;
			out[o + 4] = 8 + XFLOW_RECORD_SIZE;
			n = 8 + XFLOW_RECORD_SIZE; /* the data left out: zero, from calloc */
		}
		o += 8 + n;
		at += 8 + (size_t)(buf[at + 4] | buf[at + 5] << 8);
	}
	*out_len = o;
	free(buf);
	return out;
}

static void put64le(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Issue 19 item 9: the header gives the span of the record times; a record
 * outside it (a time of 0 or 2^64 - 1 would hold a replay back for ever)
 * is refused at its offset, and the span must be the records' own. */
Test(session, record_time_outside_the_span)
{
	write_small(3);
	size_t len;
	unsigned char *buf = slurp_packed(&len);
	char err[512], want[160];
	unsigned n;
	/* The writer filled the span in: 5000000 .. 5002000 ns. */
	FILE *f = fmemopen(buf, len, "rb");
	struct xflow_session_reader *r;
	cr_assert_eq(xflow_session_reader_new(f, "t.ses", &r, err, sizeof(err)), 0, "%s", err);
	uint64_t first, last;
	xflow_session_reader_span(r, &first, &last);
	cr_expect_eq(first, 5000000);
	cr_expect_eq(last, 5002000);
	xflow_session_reader_free(r);
	fclose(f);
	static const uint64_t bad_times[] = { 0, UINT64_MAX, 4999999, 5002001 };
	for (unsigned k = 0; k < 3; k++)
		for (size_t i = 0; i < sizeof(bad_times) / sizeof(bad_times[0]); i++) {
			size_t at = test_session_record_at(buf, len, k);
			unsigned char save[8];
			memcpy(save, buf + at + 8, 8);
			put64le(buf + at + 8, bad_times[i]);
			cr_assert_eq(read_all(buf, len, err, sizeof(err), &n), -EBADMSG, "time %llu accepted",
				     (unsigned long long)bad_times[i]);
			snprintf(want, sizeof(want), "t.ses: offset %zu: record time %llu ns is outside the session's span",
				 at, (unsigned long long)bad_times[i]);
			cr_expect(strstr(err, want), "expected '%s' in '%s'", want, err);
			memcpy(buf + at + 8, save, 8);
		}
	cr_assert_eq(read_all(buf, len, err, sizeof(err), &n), 0, "%s", err);
	/* A span that ends before it starts. */
	put64le(buf + 16, 5002001);
	cr_assert_eq(read_all(buf, len, err, sizeof(err), &n), -EBADMSG);
	cr_expect(strstr(err, "offset 16: the session's span ends"), "%s", err);
	/* A span wider than the records': the header may not stretch a replay. */
	put64le(buf + 16, 1);
	cr_assert_eq(read_all(buf, len, err, sizeof(err), &n), -EBADMSG);
	cr_expect(strstr(err, "offset 16: the header's span, 1 to 5002000 ns, is not the records' (5000000 to "
			      "5002000 ns)"), "%s", err);
	free(buf);
}

Test(session, bad_record_and_end)
{
	write_small(2);
	size_t len;
	unsigned char *buf = slurp_packed(&len);
	/* The records follow the two sites. */
	size_t at = test_session_record_at(buf, len, 0);
	char err[512];
	unsigned n;
	buf[at + 8 + 8 + 26] = 9; /* the record's version */
	cr_assert_lt(read_all(buf, len, err, sizeof(err), &n), 0);
	cr_assert(strstr(err, "bad record"), "%s", err);
	buf[at + 8 + 8 + 26] = XFLOW_RECORD_VERSION;
	buf[len - 8] = 3; /* the end's count */
	cr_assert_lt(read_all(buf, len, err, sizeof(err), &n), 0);
	cr_assert(strstr(err, "the end marker counts 3 records, the file has 2"), "%s", err);
	buf[len - 8] = 2;
	unsigned char *more = malloc(len + 1);
	memcpy(more, buf, len);
	more[len] = 0;
	cr_assert_lt(read_all(more, len + 1, err, sizeof(err), &n), 0);
	cr_assert(strstr(err, "data after the end marker"), "%s", err);
	free(more);
	free(buf);
}

Test(session, uncommitted_leaves_nothing)
{
	struct xflow_session_writer *w;
	char err[512] = "", tmp[300];
	cr_assert_eq(xflow_session_writer_new(path, &w, err, sizeof(err)), 0, "%s", err);
	struct xflow_record r = rec(0);
	cr_assert_eq(xflow_session_write_record(w, &r, 1), 0);
	cr_assert_eq(xflow_session_writer_free(w, 0, err, sizeof(err)), 0);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	cr_assert_eq(access(path, F_OK), -1);
	cr_assert_eq(access(tmp, F_OK), -1);
}

Test(session, write_error_is_sticky_and_named)
{
	char err[512] = "";
	struct xflow_session_writer *w;
	cr_assert_eq(xflow_session_writer_new("/nonexistent-dir/x.ses", &w, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "/nonexistent-dir/x.ses.tmp: "), "%s", err);
	/* /dev/full takes the open but no byte: the writer buffers a
	 * mebibyte, and the error comes when it is written out (records of
	 * a few bytes each: a million of them). */
	if (access("/dev/full", W_OK))
		return;
	char tmp[300];
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	cr_assert_eq(symlink("/dev/full", tmp), 0);
	cr_assert_eq(xflow_session_writer_new(path, &w, err, sizeof(err)), 0, "%s", err);
	int rc = 0;
	struct xflow_record r = rec(1);
	for (int i = 0; i < 1000000 && !rc; i++)
		rc = xflow_session_write_record(w, &r, 1);
	cr_assert_eq(rc, -ENOSPC);
	cr_assert_eq(xflow_session_write_record(w, &r, 1), -ENOSPC, "not sticky");
	cr_assert(strstr(xflow_session_writer_error(w), "No space left"), "%s",
		  xflow_session_writer_error(w));
	cr_assert_eq(xflow_session_writer_free(w, 1, err, sizeof(err)), -ENOSPC);
	cr_assert_eq(access(path, F_OK), -1, "a failed session was renamed into place");
}

/* The small session's first site chunk, and its payload's roles. */
#define SITE_AT 56
#define ROLES_AT (SITE_AT + 8 + 2)

static int read_sites(const unsigned char *buf, size_t len, uint32_t roles[2], char *err, size_t errlen)
{
	FILE *f = fmemopen((void *)buf, len, "rb");
	cr_assert_not_null(f);
	struct xflow_session_reader *r;
	struct xflow_session_chunk c;
	unsigned n = 0;
	int rc = xflow_session_reader_new(f, "t.ses", &r, err, errlen);
	if (rc == 0) {
		while ((rc = xflow_session_reader_next(r, &c, err, errlen)) == 1)
			if (c.type == XFLOW_SESSION_SITE && n < 2)
				roles[n++] = c.roles;
		xflow_session_reader_free(r);
	}
	fclose(f);
	return rc;
}

/* Issue 30 item 7: version 5 gives a site its roles in handoffs. */
Test(session, site_roles_round_trip_in_version_5)
{
	struct xflow_session_writer *w;
	char err[512] = "";
	unlink(path);
	cr_assert_eq(xflow_session_writer_new(path, &w, err, sizeof(err)), 0, "%s", err);
	const uint32_t K = XFLOW_SITE_ROLES_KNOWN;
	cr_assert_eq(xflow_session_write_site(w, 0, 0, "linux0", "netback.c", 1, "f", K | XFLOW_SITE_RECEIVES), 0);
	cr_assert_eq(xflow_session_write_site(w, 1, 1, "linuxU", "netfront.c", 2, "g", K | XFLOW_SITE_SENDS), 0);
	/* What the reader would refuse is written as not known. */
	cr_assert_eq(xflow_session_write_site(w, 1, 2, "linuxU", "x.c", 3, "h", XFLOW_SITE_SENDS), 0);
	cr_assert_eq(xflow_session_write_site(w, 1, 3, "linuxU", "x.c", 4, "i", K | 0x100), 0);
	cr_assert_eq(xflow_session_writer_free(w, 1, err, sizeof(err)), 0, "%s", err);
	size_t len;
	unsigned char *buf = slurp(&len);
	cr_assert_eq(buf[8], XFLOW_SESSION_VERSION, "the version");
	FILE *f = fmemopen(buf, len, "rb");
	struct xflow_session_reader *r;
	struct xflow_session_chunk c;
	cr_assert_eq(xflow_session_reader_new(f, "t.ses", &r, err, sizeof(err)), 0, "%s", err);
	uint32_t want[] = { K | XFLOW_SITE_RECEIVES, K | XFLOW_SITE_SENDS, 0, 0 };
	for (unsigned i = 0; i < 4; i++) {
		cr_assert_eq(xflow_session_reader_next(r, &c, err, sizeof(err)), 1, "%s", err);
		cr_assert_eq(c.type, XFLOW_SESSION_SITE);
		cr_expect_eq(c.site, i);
		cr_expect_eq(c.roles, want[i], "site %u: roles %#x", i, c.roles);
	}
	xflow_session_reader_free(r);
	fclose(f);
	free(buf);
}

Test(session, roles_the_format_does_not_know_are_refused)
{
	write_small(2);
	size_t len;
	unsigned char *buf = slurp(&len);
	char err[512] = "";
	uint32_t roles[2] = { 9, 9 };
	cr_assert_eq(read_sites(buf, len, roles, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(roles[0], 0);
	cr_expect_eq(roles[1], 0);
	buf[ROLES_AT] = 0x10;
	cr_expect_eq(read_sites(buf, len, roles, err, sizeof(err)), -EBADMSG);
	cr_expect(strstr(err, "t.ses: offset 56: site: roles 0x10"), "%s", err);
	buf[ROLES_AT] = XFLOW_SITE_RECEIVES; /* without ROLES_KNOWN */
	cr_expect_eq(read_sites(buf, len, roles, err, sizeof(err)), -EBADMSG);
	cr_expect(strstr(err, "t.ses: offset 56: site: roles 0x4"), "%s", err);
	buf[ROLES_AT] = XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_RECEIVES;
	cr_expect_eq(read_sites(buf, len, roles, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(roles[0], XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_RECEIVES);
	free(buf);
}

/* Issue 24: version 7 carries a notify point's role; version 6 did not
 * know it, so the bit there is damage. */
Test(session, the_notifies_role_from_version_7)
{
	write_small(2);
	size_t len;
	unsigned char *buf = slurp(&len);
	char err[512] = "";
	uint32_t roles[2] = { 9, 9 };
	cr_assert_eq(buf[8], XFLOW_SESSION_VERSION, "the version");
	buf[ROLES_AT] = XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_SENDS | XFLOW_SITE_NOTIFIES;
	cr_expect_eq(read_sites(buf, len, roles, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(roles[0], XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_SENDS | XFLOW_SITE_NOTIFIES);
	unsigned char *v8 = buf;
	buf = as_version(v8, len, 7, &len);
	free(v8);
	cr_expect_eq(read_sites(buf, len, roles, err, sizeof(err)), 0, "%s", err);
	buf[8] = 6;
	cr_expect_eq(read_sites(buf, len, roles, err, sizeof(err)), -EBADMSG);
	cr_expect(strstr(err, "t.ses: offset 56: site: role NOTIFIES in a version 6 session (from version 7)"), "%s",
		  err);
	buf[ROLES_AT] = XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_SENDS;
	cr_expect_eq(read_sites(buf, len, roles, err, sizeof(err)), 0, "%s", err);
	free(buf);
	/* The writer keeps it. */
	struct xflow_session_writer *w;
	unlink(path);
	cr_assert_eq(xflow_session_writer_new(path, &w, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(xflow_session_write_site(w, 1, 0, "linuxU", "netfront.c", 2, "g",
					      XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_NOTIFIES), 0);
	cr_assert_eq(xflow_session_writer_free(w, 1, err, sizeof(err)), 0, "%s", err);
	buf = slurp(&len);
	cr_expect_eq(buf[32 + 8 + 2], XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_NOTIFIES, "the first chunk's roles");
	free(buf);
}

/* Version 4 still reads, its sites' roles not known; the bytes that are
 * roles in version 5 are reserved there, and refused when not zero. */
Test(session, a_version_4_file_reads_without_roles)
{
	write_small(2);
	size_t len;
	unsigned char *v8 = slurp(&len);
	unsigned char *buf = as_version(v8, len, 4, &len);
	free(v8);
	char err[512] = "";
	uint32_t roles[2] = { 9, 9 };
	cr_assert_eq(read_sites(buf, len, roles, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(roles[0], 0);
	cr_expect_eq(roles[1], 0);
	buf[ROLES_AT] = XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_SENDS;
	cr_expect_eq(read_sites(buf, len, roles, err, sizeof(err)), -EBADMSG);
	cr_expect(strstr(err, "t.ses: offset 56: site: reserved bytes are not zero"), "%s", err);
	free(buf);
}

/* Issue 27: version 8 wrote each record without the data values it did
 * not use (48 + 8 * ndata bytes); such a file still reads back the same
 * records. */
Test(session, packed_records_keep_what_the_record_holds)
{
	struct xflow_session_writer *w;
	char err[512] = "";
	cr_assert_eq(xflow_session_writer_new(path, &w, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(xflow_session_write_site(w, 0, 0, "linux0", "a.c", 1, "f", 0), 0);
	/* From the most data to the least: each record read after a longer
	 * one, whose values must not show through. */
	struct xflow_record want[XFLOW_RECORD_MAX_DATA + 1];
	for (unsigned k = 0; k <= XFLOW_RECORD_MAX_DATA; k++) {
		unsigned n = XFLOW_RECORD_MAX_DATA - k;
		want[k] = rec(k);
		want[k].ndata = (uint8_t)n;
		for (unsigned i = 0; i < XFLOW_RECORD_MAX_DATA; i++)
			want[k].data[i] = i < n ? 0x1111111111111111ull * (i + 1) : 0;
		struct xflow_record r = want[k];
		/* What lies past ndata is not the record's: not written. */
		for (unsigned i = n; i < XFLOW_RECORD_MAX_DATA; i++)
			r.data[i] = 0xdeadbeef;
		cr_assert_eq(xflow_session_write_record(w, &r, 100 + k), 0);
	}
	cr_assert_eq(xflow_session_writer_free(w, 1, err, sizeof(err)), 0, "%s", err);
	size_t len;
	unsigned char *buf = slurp_packed(&len);
	for (unsigned k = 0; k <= XFLOW_RECORD_MAX_DATA; k++) {
		size_t at = test_session_record_at(buf, len, k);
		cr_expect_eq(buf[at], XFLOW_SESSION_RECORD_PACKED);
		cr_expect_eq(buf[at + 4] | buf[at + 5] << 8, 48 + 8 * (XFLOW_RECORD_MAX_DATA - k), "record %u's length", k);
	}
	uint64_t times[XFLOW_RECORD_MAX_DATA + 1];
	for (unsigned k = 0; k <= XFLOW_RECORD_MAX_DATA; k++)
		times[k] = 100 + k;
	FILE *f = fmemopen(buf, len, "rb");
	expect_records(f, want, times, XFLOW_RECORD_MAX_DATA + 1);
	fclose(f);
	free(buf);
}

/* A packed record whose length is not its ndata's, or that says more data
 * than a record holds, or in a version before 8, is refused at its offset;
 * the same records written whole in version 7 read as before. */
Test(session, packed_records_that_lie_are_refused)
{
	write_small(2);
	size_t len;
	unsigned char *buf = slurp_packed(&len);
	char err[512], want[160];
	unsigned n;
	size_t at = test_session_record_at(buf, len, 0);
	cr_assert_eq(buf[at + 4], 48 + 16, "rec() has two data values");
	buf[at + 8 + 8 + 27] = 3; /* ndata */
	cr_assert_eq(read_all(buf, len, err, sizeof(err), &n), -EBADMSG);
	snprintf(want, sizeof(want), "t.ses: offset %zu: packed record of 64 bytes with ndata 3", at);
	cr_expect(strstr(err, want), "expected '%s' in '%s'", want, err);
	buf[at + 8 + 8 + 27] = 7;
	cr_assert_eq(read_all(buf, len, err, sizeof(err), &n), -EBADMSG);
	cr_expect(strstr(err, "with ndata 7"), "%s", err);
	buf[at + 8 + 8 + 27] = 2;
	cr_assert_eq(read_all(buf, len, err, sizeof(err), &n), 0, "%s", err);
	cr_expect_eq(n, 2);
	/* Version 7 had no packed records. */
	buf[8] = 7;
	cr_assert_eq(read_all(buf, len, err, sizeof(err), &n), -EBADMSG);
	snprintf(want, sizeof(want), "t.ses: offset %zu: a packed record in a version 7 session (from version 8)",
		 at);
	cr_expect(strstr(err, want), "expected '%s' in '%s'", want, err);
	buf[8] = 8;
	size_t olen;
	unsigned char *old = as_version(buf, len, 7, &olen);
	cr_assert_eq(olen, len + 2 * (96 - 64));
	cr_assert_eq(read_all(old, olen, err, sizeof(err), &n), 0, "%s", err);
	cr_expect_eq(n, 2);
	free(old);
	free(buf);
}

/* The writer encodes records straight into its own buffer, in RECORDS
 * chunks of at most 4096 bytes, and writes the buffer out when the next
 * record at its widest would not fit: records of every length (random
 * data values: varints of up to 10 bytes), over two buffers' worth and
 * hundreds of chunks, read back exactly, none cut at a chunk's or a
 * buffer's end. */
Test(session, records_over_many_buffers_read_back_exactly)
{
	enum { N = 60000 }; /* about 2.4 MB */
	static struct xflow_record want[N];
	static uint64_t want_t[N];
	struct xflow_session_writer *w;
	char err[512] = "";
	cr_assert_eq(xflow_session_writer_new(path, &w, err, sizeof(err)), 0, "%s", err);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (unsigned i = 0; i < N; i++) {
		struct xflow_record r = rec(i);
		r.ndata = (uint8_t)((i * 5) % (XFLOW_RECORD_MAX_DATA + 1));
		for (unsigned k = 0; k < XFLOW_RECORD_MAX_DATA; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			r.data[k] = k < r.ndata ? x : ~0ull;
		}
		cr_assert_eq(xflow_session_write_record(w, &r, 5000000 + i), 0);
		want[i] = r;
		for (unsigned k = r.ndata; k < XFLOW_RECORD_MAX_DATA; k++)
			want[i].data[k] = 0;
		want_t[i] = 5000000 + i;
	}
	cr_assert_eq(xflow_session_writer_free(w, 1, err, sizeof(err)), 0, "%s", err);
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f);
	expect_records(f, want, want_t, N);
	fclose(f);
}

/* Version 9: records go in RECORDS chunks, each written as its differences
 * from the one before.  Every field at its extremes, each changing alone
 * and all at once, forwards and backwards, reads back exactly; a flow's
 * records, which differ in little, take a few bytes each. */
Test(session, records_chunks_keep_every_field)
{
	enum { N = 5000 };
	static const uint64_t edge[] = { 0, 1, 2, 0x7f, 0x80, 0x3fff, 0x4000, 0xffffffffull, 0x100000000ull,
					 0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull };
	enum { NEDGE = sizeof(edge) / sizeof(edge[0]) };
	static struct xflow_record want[N];
	static uint64_t want_t[N];
	uint64_t seed = 27, t = 1000;
	struct xflow_session_writer *w;
	char err[512] = "";
	cr_assert_eq(xflow_session_writer_new(path, &w, err, sizeof(err)), 0, "%s", err);
	for (unsigned i = 0; i < N; i++) {
		struct xflow_record r = i ? want[i - 1] : rec(0);
		uint64_t x = test_rand_next(&seed);
		/* One field at a time, or (one in eight) all of them. */
		unsigned which = x % 8 == 0 ? ~0u : 1u << (x >> 3) % 12;
		uint64_t e = edge[(x >> 8) % NEDGE];
		if (which & 1) r.flow_kind = (uint16_t)e;
		if (which & 2) r.domain_id = (uint16_t)e;
		if (which & 4) r.version = (uint8_t)(2 + e % (XFLOW_RECORD_VERSION - 1)); /* 1 has no CPU */
		if (which & 8) r.thread_id = (uint32_t)e;
		if (which & 16) r.cpu_plus1 = (uint32_t)(e % (XFLOW_RECORD_MAX_CPU + 2));
		if (which & 32) r.flags = (uint16_t)(e & XFLOW_REC_OP_FLAGS);
		if (which & 64) r.site_id = (uint32_t)e;
		if (which & 128) r.flow_id = e & XFLOW_FLOWID_MAX;
		if (which & 256) r.timestamp = e;
		if (which & 512) r.thread_seq = (uint32_t)e;
		if (which & 1024) {
			r.ndata = (uint8_t)((x >> 16) % (XFLOW_RECORD_MAX_DATA + 1));
			for (unsigned k = 0; k < XFLOW_RECORD_MAX_DATA; k++)
				r.data[k] = k < r.ndata ? edge[(x >> (20 + 3 * k)) % NEDGE] : 0;
		}
		/* The session's times go back and forth too (the agent
		 * writes threads' records as it drains them). */
		if (which & 2048)
			t = 1000 + (e % 1000000);
		want[i] = r;
		want_t[i] = t;
		cr_assert_eq(xflow_session_write_record(w, &r, t), 0);
	}
	cr_assert_eq(xflow_session_writer_free(w, 1, err, sizeof(err)), 0, "%s", err);
	size_t len;
	unsigned char *buf = slurp(&len);
	FILE *f = fmemopen(buf, len, "rb");
	expect_records(f, want, want_t, N);
	fclose(f);
	free(buf);

	/* A flow's records: one thread, sites and ids in turn, a few
	 * microseconds apart. */
	cr_assert_eq(xflow_session_writer_new(path, &w, err, sizeof(err)), 0, "%s", err);
	for (unsigned i = 0; i < N; i++) {
		struct xflow_record m = rec(0);
		m.thread_id = 4242;
		m.cpu_plus1 = 2;
		m.ndata = 0;
		m.flow_id = 100 + i / 18;
		m.site_id = i % 18;
		m.flags = i % 18 == 0 ? XFLOW_REC_START : i % 18 == 17 ? XFLOW_REC_QUIT : 0;
		m.thread_seq = i;
		m.timestamp = 3000000000ull + 2100ull * i;
		cr_assert_eq(xflow_session_write_record(w, &m, 5000000 + 700ull * i), 0);
	}
	cr_assert_eq(xflow_session_writer_free(w, 1, err, sizeof(err)), 0, "%s", err);
	buf = slurp(&len);
	cr_expect_lt(len, (size_t)N * 9, "%zu bytes for %d records of a flow", len, N);
	unsigned n;
	cr_assert_eq(read_all(buf, len, err, sizeof(err), &n), 0, "%s", err);
	cr_expect_eq(n, N);
	free(buf);
}

/* A version 9 file of one RECORDS chunk of @n bytes at @p (its records'
 * times in the span 1000 .. 2000), and an end counting @nrec records. */
static unsigned char *records_file(const unsigned char *p, size_t n, uint64_t nrec, size_t *len)
{
	unsigned char *buf = calloc(1, 32 + 8 + n + 16);
	cr_assert_not_null(buf);
	memcpy(buf, XFLOW_SESSION_MAGIC, 8);
	buf[8] = 9;
	put64le(buf + 16, 1000);
	put64le(buf + 24, 2000);
	buf[32] = XFLOW_SESSION_RECORDS;
	buf[36] = (unsigned char)n;
	memcpy(buf + 40, p, n);
	buf[40 + n] = XFLOW_SESSION_END;
	buf[40 + n + 4] = 8;
	put64le(buf + 40 + n + 8, nrec);
	*len = 32 + 8 + n + 16;
	return buf;
}

/* A RECORDS chunk's record that does not read is refused at its own
 * offset, naming what is wrong with it. */
Test(session, records_chunks_that_lie_are_refused)
{
	/* Two records: the first names its ids (kind 0, domain 0, version
	 * 4, thread 7, cpu 0), flags 1, site 3, flow 5 (zigzag 10), time
	 * 1000 (zigzag 2000: 0xd0 0x0f), timestamp 9 (zigzag 18), seq 0;
	 * the second all as before (head 0x78) but the time, 100 ns later
	 * (zigzag 200: 0xc8 0x01), timestamp and seq one on (zigzag 2). */
	static const unsigned char good[] = { 0x00, 0, 0, 4, 7, 0, 1, 3, 10, 0xd0, 0x0f, 18, 0,
					      0x78, 0xc8, 0x01, 2, 2 };
	char err[512], want[200];
	unsigned n;
	size_t len;
	unsigned char *buf = records_file(good, sizeof(good), 2, &len);
	put64le(buf + 24, 1100);
	cr_assert_eq(read_all(buf, len, err, sizeof(err), &n), 0, "%s", err);
	cr_expect_eq(n, 2);
	free(buf);
	struct {
		size_t at;          /* the byte of good[] changed */
		unsigned char to;
		size_t cut;         /* the chunk ends there instead (0: no) */
		size_t off;         /* the record blamed, in the chunk */
		const char *what;
	} cases[] = {
		{ 0, 0x80, 0, 0, "the reserved bit of a record's head byte is set" },
		{ 0, 0x07, 0, 0, "ndata 7 in a record's head byte" },
		{ 13, 0x7e, 0, 13, "the data value is cut short" /* ndata 6, no byte for one */ },
		{ 0, 0x00, 11, 0, "the timestamp is cut short" },
		{ 0, 0x00, 15, 13, "the time is cut short" },
		{ 0, 0x00, 17, 13, "the thread sequence number is cut short" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned char bytes[sizeof(good)];
		memcpy(bytes, good, sizeof(good));
		bytes[cases[i].at] = cases[i].to;
		buf = records_file(bytes, cases[i].cut ? cases[i].cut : sizeof(good), 2, &len);
		put64le(buf + 24, 1100);
		cr_expect_eq(read_all(buf, len, err, sizeof(err), &n), -EBADMSG, "case %zu", i);
		snprintf(want, sizeof(want), "t.ses: offset %zu: a record of a RECORDS chunk: ", 40 + cases[i].off);
		cr_expect(strstr(err, want) && strstr(err, cases[i].what), "case %zu: expected '%s%s' in '%s'", i,
			  want, cases[i].what, err);
		free(buf);
	}
	/* A varint of eleven bytes, and one wider than its field (a flow
	 * kind of 2^16). */
	static const unsigned char longv[] = { 0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
	static const unsigned char wide[] = { 0x00, 0x80, 0x80, 0x04, 0, 4, 7, 0, 1, 3, 10, 0xd0, 0x0f, 18, 0 };
	buf = records_file(longv, sizeof(longv), 1, &len);
	cr_expect_eq(read_all(buf, len, err, sizeof(err), &n), -EBADMSG);
	cr_expect(strstr(err, "offset 40: a record of a RECORDS chunk: the flow kind is cut short, or longer"), "%s",
		  err);
	free(buf);
	buf = records_file(wide, sizeof(wide), 1, &len);
	cr_expect_eq(read_all(buf, len, err, sizeof(err), &n), -EBADMSG);
	cr_expect(strstr(err, "the flow kind is cut short, or longer or wider than its field"), "%s", err);
	free(buf);
	/* A record that reads but is not one: version 9. */
	unsigned char bytes[sizeof(good)];
	memcpy(bytes, good, sizeof(good));
	bytes[3] = 9;
	buf = records_file(bytes, sizeof(good), 2, &len);
	cr_expect_eq(read_all(buf, len, err, sizeof(err), &n), -EBADMSG);
	cr_expect(strstr(err, "offset 40: bad record: version"), "%s", err);
	free(buf);
	/* The second record's time outside the span: blamed at its offset. */
	buf = records_file(good, sizeof(good), 2, &len);
	put64le(buf + 24, 1099);
	cr_expect_eq(read_all(buf, len, err, sizeof(err), &n), -EBADMSG);
	cr_expect(strstr(err, "offset 53: record time 1100 ns is outside the session's span"), "%s", err);
	free(buf);
	/* An empty chunk, and RECORDS in a version 8 file. */
	buf = records_file(good, 0, 0, &len);
	cr_expect_eq(read_all(buf, len, err, sizeof(err), &n), -EBADMSG);
	cr_expect(strstr(err, "offset 32: a RECORDS chunk without a record"), "%s", err);
	free(buf);
	buf = records_file(good, sizeof(good), 2, &len);
	put64le(buf + 24, 1100);
	buf[8] = 8;
	cr_expect_eq(read_all(buf, len, err, sizeof(err), &n), -EBADMSG);
	cr_expect(strstr(err, "offset 32: a RECORDS chunk in a version 8 session (from version 9)"), "%s", err);
	free(buf);
}
