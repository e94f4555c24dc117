/*
 * The replay collector through its ops: options, names and carried bits
 * from the file, the pace at speed=N and max, -ENODATA at the end, and a
 * broken file refused at open with its offset.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collectors/builtin.h"
#include "xflow/collector.h"
#include "xflow/session.h"
#include "tests/lib/session_edit.h"

static char dir[] = "/tmp/xflow-replay-test.XXXXXX";
static char path[256], opts[400];

#define SEC UINT64_C(1000000000)

/* Four records 0.5 s apart (recorded at 10 s .. 11.5 s), sites named. */
static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/r.ses", dir);
	struct xflow_session_writer *w;
	char err[512] = "";
	cr_assert_eq(xflow_session_writer_new(path, &w, err, sizeof(err)), 0, "%s", err);
	uint8_t bits[XFLOW_SESSION_KINDS] = { 0, 12 };
	cr_assert_eq(xflow_session_write_carried(w, bits), 0);
	cr_assert_eq(xflow_session_write_site(w, 3, 9, "linuxU", "tcp.c", 726, "tcp_sendmsg",
					      XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_SENDS), 0);
	cr_assert_eq(xflow_session_write_site(w, 0, 2, "linux0", "dev.c", 1543, "netif_rx", 0), 0);
	for (unsigned i = 0; i < 4; i++) {
		struct xflow_record r;
		memset(&r, 0, sizeof(r));
		r.version = XFLOW_RECORD_VERSION;
		r.flow_id = 5;
		r.site_id = i & 1 ? 2 : 9;
		r.domain_id = i & 1 ? 0 : 3;
		r.thread_seq = i;
		cr_assert_eq(xflow_session_write_record(w, &r, 10 * SEC + i * SEC / 2), 0);
	}
	cr_assert_eq(xflow_session_writer_free(w, 1, err, sizeof(err)), 0, "%s", err);
}

static void teardown(void)
{
	unlink(path);
	rmdir(dir);
}

TestSuite(replay, .init = setup, .fini = teardown);

struct got {
	unsigned n;
	uint32_t seq[8];
	uint64_t t[8];
};

static void collect(void *ctx, const struct xflow_record *r, uint64_t t)
{
	struct got *g = ctx;
	if (g->n < 8) {
		g->seq[g->n] = r->thread_seq;
		g->t[g->n] = t;
	}
	g->n++;
}

static struct xflow_collector *open_ok(const char *extra)
{
	const struct xflow_collector_ops *ops = xflow_collector_find("replay");
	cr_assert_eq(ops, &xflow_collector_replay);
	struct xflow_collector *c;
	char err[512] = "";
	snprintf(opts, sizeof(opts), "file=%s%s", path, extra);
	cr_assert_eq(ops->open(opts, &c, err, sizeof(err)), 0, "%s", err);
	return c;
}

Test(replay, names_domains_and_bits)
{
	const struct xflow_collector_ops *o = &xflow_collector_replay;
	struct xflow_collector *c = open_ok("");
	struct xflow_site_info si;
	cr_assert_eq(o->site_info(c, 3, 9, &si), 0);
	cr_assert_str_eq(si.domain, "linuxU");
	cr_assert_str_eq(si.function, "tcp_sendmsg");
	cr_assert_str_eq(si.file, "tcp.c");
	cr_assert_eq(si.line, 726);
	/* The roles as the saving run had them, so that the replay's model
	 * matches handoffs as the live one did. */
	cr_assert_eq(si.roles, XFLOW_SITE_ROLES_KNOWN | XFLOW_SITE_SENDS);
	cr_assert_eq(o->site_info(c, 0, 2, &si), 0);
	cr_assert_eq(si.roles, 0);
	cr_assert_eq(o->site_info(c, 0, 9, &si), -ENOENT);
	struct xflow_domain_info d;
	cr_assert_eq(o->domain_info(c, 0, &d), 0);
	cr_assert_eq(d.id, 3);
	cr_assert_str_eq(d.name, "linuxU");
	cr_assert_eq(o->domain_info(c, 1, &d), 0);
	cr_assert_str_eq(d.name, "linux0");
	cr_assert_eq(o->domain_info(c, 2, &d), -ENOENT);
	cr_assert_eq(o->carried_bits(c, 0), 0);
	cr_assert_eq(o->carried_bits(c, 1), 12);
	cr_assert_eq(o->carried_bits(c, 999), 0);
	o->close(c);
}

Test(replay, recorded_pace)
{
	const struct xflow_collector_ops *o = &xflow_collector_replay;
	struct xflow_collector *c = open_ok(",speed=1");
	struct got g = { 0 };
	uint64_t start = 1000 * SEC;
	cr_assert_eq(o->read(c, start, collect, &g, 100), 1);
	cr_assert_eq(g.t[0], start, "the first record lands at the first read");
	cr_assert_eq(o->read(c, start + SEC / 4, collect, &g, 100), 0);
	cr_assert_eq(o->read(c, start + SEC, collect, &g, 100), 2);
	cr_assert_eq(g.seq[2], 2);
	cr_assert_eq(g.t[2], start + SEC, "recorded gaps kept");
	cr_assert_eq(o->read(c, start + 2 * SEC, collect, &g, 100), 1);
	cr_assert_eq(o->read(c, start + 2 * SEC, collect, &g, 100), -ENODATA);
	cr_assert_eq(o->read(c, start + 3 * SEC, collect, &g, 100), -ENODATA);
	struct xflow_collector_stats st;
	o->stats(c, &st);
	cr_assert_eq(st.records, 4);
	o->close(c);
}

Test(replay, accelerated_and_max)
{
	const struct xflow_collector_ops *o = &xflow_collector_replay;
	struct xflow_collector *c = open_ok(",speed=3");
	struct got g = { 0 };
	uint64_t start = 50 * SEC;
	cr_assert_eq(o->read(c, start, collect, &g, 100), 1);
	cr_assert_eq(o->read(c, start + SEC / 4, collect, &g, 100), 1); /* due at 1/6 s */
	cr_assert_eq(o->read(c, start + SEC / 4, collect, &g, 100), 0);  /* 1/3 s */
	cr_assert_eq(g.t[1], start + SEC / 2, "the timestamps keep the recorded gaps");
	o->close(c);

	c = open_ok(",speed=max");
	memset(&g, 0, sizeof(g));
	cr_assert_eq(o->read(c, start, collect, &g, 3), 3, "max is bounded by the caller's max");
	cr_assert_eq(o->read(c, start, collect, &g, 100), 1);
	cr_assert_eq(o->read(c, start, collect, &g, 100), -ENODATA);
	cr_assert_eq(g.t[3], start + 3 * SEC / 2);
	o->close(c);
}

Test(replay, bad_options_and_files)
{
	const struct xflow_collector_ops *o = &xflow_collector_replay;
	struct xflow_collector *c;
	char err[512];
	cr_assert_eq(o->open("", &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "file=PATH is required"), "%s", err);
	cr_assert_eq(o->open("file=/x,speed=0", &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "bad value '0' for speed"), "%s", err);
	cr_assert_eq(o->open("file=/x,pace=2", &c, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "unknown option 'pace=2'"), "%s", err);
	cr_assert_eq(o->open("file=/nonexistent.ses", &c, err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "/nonexistent.ses: "), "%s", err);
	/* Cut short: refused at open, before anything is shown. */
	cr_assert_eq(truncate(path, 100), 0);
	snprintf(opts, sizeof(opts), "file=%s", path);
	cr_assert_eq(o->open(opts, &c, err, sizeof(err)), -EPIPE);
	cr_assert(strstr(err, "r.ses: offset "), "%s", err);
	cr_assert(strstr(err, "the file ends"), "%s", err);
}

/* Issue 19 item 8: a FIFO given as the session is refused at once (open()
 * would have waited for a writer for ever), and so is a directory. */
Test(replay, fifo_and_directory_refused_at_once, .timeout = 10)
{
	const struct xflow_collector_ops *o = &xflow_collector_replay;
	struct xflow_collector *c;
	char fifo[300], err[512] = "";
	snprintf(fifo, sizeof(fifo), "%s/fifo.ses", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	snprintf(opts, sizeof(opts), "file=%s", fifo);
	int rc = o->open(opts, &c, err, sizeof(err));
	unlink(fifo);
	cr_assert_eq(rc, -EINVAL, "%d: %s", rc, err);
	cr_expect(strstr(err, "fifo.ses: not a regular file (a FIFO)"), "%s", err);
	snprintf(opts, sizeof(opts), "file=%s", dir);
	cr_assert_eq(o->open(opts, &c, err, sizeof(err)), -EISDIR, "%s", err);
	cr_expect(strstr(err, "not a regular file (a directory)"), "%s", err);
}

/* Issue 19 item 9: a record time set to 2^64 - 1 (or 0) in a saved session
 * is refused at open, naming its offset: played, it would never be due. */
Test(replay, time_outside_the_span_refused)
{
	const struct xflow_collector_ops *o = &xflow_collector_replay;
	struct xflow_collector *c;
	char err[512] = "";
	FILE *f = fopen(path, "r+b");
	cr_assert_not_null(f);
	unsigned char v9[4096];
	size_t len = fread(v9, 1, sizeof(v9), f);
	/* The records each at an offset of their own (version 8's chunks),
	 * the third's time damaged: after the carried bits, two sites, two
	 * records. */
	unsigned char *buf = test_session_as_packed(v9, len, &len);
	cr_assert_not_null(buf);
	size_t at = test_session_record_at(buf, len, 2);
	cr_assert_lt(at, len);
	memset(buf + at + 8, 0xff, 8);
	rewind(f);
	cr_assert_eq(fwrite(buf, 1, len, f), len);
	cr_assert_eq(ftruncate(fileno(f), (off_t)len), 0);
	fclose(f);
	free(buf);
	snprintf(opts, sizeof(opts), "file=%s", path);
	cr_assert_eq(o->open(opts, &c, err, sizeof(err)), -EBADMSG);
	char want[128];
	snprintf(want, sizeof(want), "r.ses: offset %zu: record time 18446744073709551615 ns", at);
	cr_expect(strstr(err, want), "expected '%s' in '%s'", want, err);
}
