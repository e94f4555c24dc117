/*
 * The xentrace reader: windows merged by TSC, records without a TSC, lost
 * records, TSC regressions, and bad input of every kind giving a located
 * diagnostic or a counted skip, never a crash.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collectors/xentrace.h"

/* A trace in memory, written by the generator. */
struct mtrace {
	char *data;
	size_t len;
	FILE *f;
	struct xentrace_writer *w;
};

static void mt_begin(struct mtrace *t, unsigned ncpus, size_t window)
{
	memset(t, 0, sizeof(*t));
	t->f = open_memstream(&t->data, &t->len);
	cr_assert_not_null(t->f);
	cr_assert_eq(xentrace_writer_new(&t->w, t->f, ncpus, window), 0);
}

static void mt_end(struct mtrace *t)
{
	cr_assert_eq(xentrace_writer_close(t->w), 0);
	fclose(t->f);
}

static void add(struct mtrace *t, unsigned cpu, uint64_t tsc, uint32_t ev, uint32_t x)
{
	cr_assert_eq(xentrace_writer_add(t->w, cpu, tsc, true, ev, 1, &x), 0);
}

/* Reads everything; returns the record count and fills @tscs/@cpus. */
static size_t read_all(const void *data, size_t len, struct xentrace_reader **rp, uint64_t *tscs, unsigned *cpus,
		       size_t max, size_t bufsz)
{
	static struct xentrace_source src;
	xentrace_source_init_mem(&src, data, len);
	struct xentrace_reader_opts o = { .buffer_bytes = bufsz };
	int rc = xentrace_reader_open(rp, &src, &o);
	cr_assert_eq(rc, 0, "open: %d", rc);
	const struct xentrace_record *rec;
	size_t n = 0;
	while ((rc = xentrace_reader_next(*rp, &rec)) == 1) {
		if (n < max) {
			tscs[n] = rec->order_tsc;
			cpus[n] = rec->cpu;
		}
		n++;
	}
	cr_assert_eq(rc, 0);
	return n;
}

static const struct xentrace_diag *find_diag(const struct xentrace_reader *r, enum xentrace_diag_kind k)
{
	for (unsigned i = 0; i < xentrace_reader_ndiags(r); i++)
		if (xentrace_reader_diag(r, i)->kind == k)
			return xentrace_reader_diag(r, i);
	return NULL;
}

Test(xentrace_reader, out_of_order_windows_are_merged_by_tsc)
{
	struct mtrace t;
	/* Small windows, and cpu 2's records written first: the file holds
	 * cpu 2's windows before cpu 0's, interleaved with cpu 1's. */
	mt_begin(&t, 3, 64);
	for (unsigned i = 0; i < 300; i++)
		add(&t, 2, 1000 + 3 * i + 2, 0x28004, i);
	for (unsigned i = 0; i < 300; i++) {
		add(&t, 0, 1000 + 3 * i, 0x28004, i);
		add(&t, 1, 1000 + 3 * i + 1, 0x28004, i);
	}
	mt_end(&t);
	uint64_t tscs[900];
	unsigned cpus[900];
	struct xentrace_reader *r;
	for (size_t bufsz = 64; bufsz <= 1 << 20; bufsz *= 128) {
		size_t n = read_all(t.data, t.len, &r, tscs, cpus, 900, bufsz);
		cr_assert_eq(n, 900);
		for (size_t i = 0; i < n; i++) {
			cr_assert_eq(tscs[i], 1000 + i, "record %zu: tsc %lu", i, (unsigned long)tscs[i]);
			cr_assert_eq(cpus[i], i % 3);
		}
		const struct xentrace_reader_stats *st = xentrace_reader_stats(r);
		cr_assert_eq(st->cpus, 3);
		cr_assert_gt(st->windows, 30);
		cr_assert_eq(st->records, 900);
		cr_assert_eq(xentrace_reader_ndiags(r), 0);
		xentrace_reader_free(r);
	}
	free(t.data);
}

Test(xentrace_reader, records_without_tsc_take_their_cpus_last)
{
	struct mtrace t;
	mt_begin(&t, 2, 4096);
	add(&t, 0, 100, 0x28004, 1);
	uint32_t x[3] = { 7, 8, 9 };
	cr_assert_eq(xentrace_writer_add(t.w, 0, 0, false, 0x28005, 3, x), 0);
	add(&t, 1, 150, 0x28004, 2);
	add(&t, 0, 200, 0x28004, 3);
	mt_end(&t);
	struct xentrace_source src;
	xentrace_source_init_mem(&src, t.data, t.len);
	struct xentrace_reader *r;
	cr_assert_eq(xentrace_reader_open(&r, &src, NULL), 0);
	const struct xentrace_record *rec;
	uint32_t events[4];
	uint64_t tsc[4];
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(xentrace_reader_next(r, &rec), 1);
		events[i] = rec->event;
		tsc[i] = rec->tsc;
		if (rec->event == 0x28005) {
			cr_assert_eq(rec->nextra, 3);
			cr_assert_eq(rec->extra[2], 9);
			cr_assert_not(rec->has_tsc);
		}
	}
	cr_assert_eq(xentrace_reader_next(r, &rec), 0);
	cr_assert_eq(events[1], 0x28005);
	cr_assert_eq(tsc[1], 100);
	cr_assert_eq(tsc[2], 150);
	cr_assert_eq(tsc[3], 200);
	xentrace_reader_free(r);
	free(t.data);
}

Test(xentrace_reader, lost_records_are_reported_where_they_are)
{
	struct mtrace t;
	mt_begin(&t, 2, 4096);
	add(&t, 0, 1000, 0x28004, 0);
	cr_assert_eq(xentrace_writer_lost(t.w, 0, 7000, 42, 1, 0, 3000), 0);
	add(&t, 0, 8000, 0x28004, 0);
	add(&t, 1, 2000, 0x28004, 0);
	add(&t, 1, 5000, 0x28004, 0);
	mt_end(&t);
	struct xentrace_source src;
	xentrace_source_init_mem(&src, t.data, t.len);
	struct xentrace_reader *r;
	cr_assert_eq(xentrace_reader_open(&r, &src, NULL), 0);
	const struct xentrace_record *rec;
	uint64_t order[7], lost_off = 0;
	unsigned flags[7], n = 0;
	while (xentrace_reader_next(r, &rec) == 1) {
		cr_assert_lt(n, 7);
		order[n] = rec->order_tsc;
		flags[n] = rec->flags & XENTRACE_REC_LOST_END;
		if (rec->event == XENTRACE_EV_LOST_RECORDS)
			lost_off = rec->offset;
		n++;
	}
	/* Delivered at the first lost TSC, then again at its own. */
	cr_assert_eq(n, 6);
	uint64_t want[6] = { 1000, 2000, 3000, 5000, 7000, 8000 };
	for (unsigned i = 0; i < n; i++)
		cr_assert_eq(order[i], want[i], "record %u at %lu", i, (unsigned long)order[i]);
	cr_assert_eq(flags[4], XENTRACE_REC_LOST_END);
	const struct xentrace_reader_stats *st = xentrace_reader_stats(r);
	cr_assert_eq(st->lost_events, 1);
	cr_assert_eq(st->lost_records, 42);
	cr_assert_eq(st->records, 5);
	const struct xentrace_diag *d = find_diag(r, XENTRACE_DIAG_LOST);
	cr_assert_not_null(d);
	cr_assert_eq(d->offset, lost_off);
	cr_assert_eq(lost_off, 12 + 16, "after the window header and one record");
	cr_assert_not_null(strstr(d->what, "lost 42 records between TSC 3000 and 7000"), "%s", d->what);
	xentrace_reader_free(r);
	free(t.data);
}

Test(xentrace_reader, tsc_going_backwards_is_reported)
{
	struct mtrace t;
	mt_begin(&t, 1, 4096);
	add(&t, 0, 100, 0x28004, 0);
	add(&t, 0, 200, 0x28004, 0);
	add(&t, 0, 150, 0x28004, 0);
	add(&t, 0, 300, 0x28004, 0);
	mt_end(&t);
	uint64_t tscs[8];
	unsigned cpus[8];
	struct xentrace_reader *r;
	cr_assert_eq(read_all(t.data, t.len, &r, tscs, cpus, 8, 0), 4);
	cr_assert_eq(tscs[2], 200, "kept in order at the earlier TSC");
	cr_assert_eq(xentrace_reader_stats(r)->tsc_backwards, 1);
	const struct xentrace_diag *d = find_diag(r, XENTRACE_DIAG_TSC_BACK);
	cr_assert_not_null(d);
	cr_assert_eq(d->offset, 12 + 2 * 16);
	cr_assert_eq(d->cpu, 0);
	cr_assert_not_null(strstr(d->what, "150 after 200"), "%s", d->what);
	xentrace_reader_free(r);
	free(t.data);
}

Test(xentrace_reader, absurd_tsc_is_skipped_and_wraps_counted)
{
	struct mtrace t;
	mt_begin(&t, 1, 4096);
	add(&t, 0, 100, 0x28004, 0);
	add(&t, 0, UINT64_C(1) << 60, 0x28004, 0);
	add(&t, 0, 300, XENTRACE_EV_WRAP_BUFFER, 0);
	mt_end(&t);
	uint64_t tscs[8];
	unsigned cpus[8];
	struct xentrace_reader *r;
	cr_assert_eq(read_all(t.data, t.len, &r, tscs, cpus, 8, 0), 2);
	cr_assert_eq(tscs[1], 300);
	cr_assert_eq(xentrace_reader_stats(r)->bad_tsc, 1);
	cr_assert_eq(xentrace_reader_stats(r)->wraps, 1);
	cr_assert_not_null(find_diag(r, XENTRACE_DIAG_RECORD));
	xentrace_reader_free(r);
	free(t.data);
}

/* A valid two-cpu trace, to damage. */
static void good_trace(struct mtrace *t)
{
	mt_begin(t, 2, 128);
	for (unsigned i = 0; i < 40; i++) {
		add(t, 0, 1000 + 2 * i, 0x28004, i);
		add(t, 1, 1001 + 2 * i, 0x28004, i);
	}
	mt_end(t);
}

Test(xentrace_reader, truncated_file_reads_what_is_there)
{
	struct mtrace t;
	good_trace(&t);
	for (size_t cut = 1; cut < t.len; cut += 7) {
		struct xentrace_source src;
		xentrace_source_init_mem(&src, t.data, cut);
		struct xentrace_reader *r;
		int rc = xentrace_reader_open(&r, &src, NULL);
		if (rc == -EBADMSG) {
			cr_assert_lt(cut, 12);
			cr_assert_gt(xentrace_reader_ndiags(r), 0);
			xentrace_reader_free(r);
			continue;
		}
		cr_assert_eq(rc, 0);
		const struct xentrace_record *rec;
		size_t n = 0;
		while ((rc = xentrace_reader_next(r, &rec)) == 1)
			n++;
		cr_assert_eq(rc, 0);
		cr_assert_leq(n, 80);
		if (cut % 4 || n < 80)
			cr_assert_not_null(find_diag(r, XENTRACE_DIAG_TRUNCATED), "cut %zu", cut);
		xentrace_reader_free(r);
	}
	free(t.data);
}

Test(xentrace_reader, garbage_before_and_between_windows_is_skipped)
{
	struct mtrace t;
	mt_begin(&t, 2, 4096);
	uint8_t junk[13] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 };
	xentrace_writer_raw(t.w, junk, sizeof(junk)); /* the next header is mid-word */
	add(&t, 0, 100, 0x28004, 0);
	xentrace_writer_flush_cpu(t.w, 0);
	xentrace_writer_raw(t.w, junk, 5);
	add(&t, 1, 200, 0x28004, 0);
	mt_end(&t);
	uint64_t tscs[4];
	unsigned cpus[4];
	struct xentrace_reader *r;
	cr_assert_eq(read_all(t.data, t.len, &r, tscs, cpus, 4, 0), 2);
	cr_assert_eq(xentrace_reader_stats(r)->skipped_bytes, 18);
	const struct xentrace_diag *d = find_diag(r, XENTRACE_DIAG_FRAMING);
	cr_assert_not_null(d);
	cr_assert_eq(d->offset, 0);
	cr_assert_not_null(strstr(d->what, "skipped 13 bytes"), "%s", d->what);
	xentrace_reader_free(r);
	free(t.data);
}

Test(xentrace_reader, hostile_window_headers)
{
	struct mtrace t;
	mt_begin(&t, 1, 4096);
	/* cpu 9999: its window is skipped whole. */
	uint32_t bad_cpu[4] = { XENTRACE_EV_CPU_CHANGE | 2u << 28, 9999, 4, 0x28004 };
	xentrace_writer_raw(t.w, bad_cpu, sizeof(bad_cpu));
	/* A window size that is not a multiple of 4. */
	uint32_t bad_size[3] = { XENTRACE_EV_CPU_CHANGE | 2u << 28, 0, 6 };
	xentrace_writer_raw(t.w, bad_size, sizeof(bad_size));
	add(&t, 0, 100, 0x28004, 0);
	xentrace_writer_flush_cpu(t.w, 0);
	/* A window whose last record claims more extra words than there are. */
	uint32_t cross[5] = { XENTRACE_EV_CPU_CHANGE | 2u << 28, 0, 8, 0x28004u | 7u << 28, 0 };
	xentrace_writer_raw(t.w, cross, sizeof(cross));
	add(&t, 0, 300, 0x28004, 0);
	mt_end(&t);
	uint64_t tscs[4];
	unsigned cpus[4];
	struct xentrace_reader *r;
	cr_assert_eq(read_all(t.data, t.len, &r, tscs, cpus, 4, 0), 2);
	const struct xentrace_reader_stats *st = xentrace_reader_stats(r);
	cr_assert_eq(st->cpus, 1);
	cr_assert_eq(st->bad_records, 1);
	int seen_cpu = 0, seen_size = 0, seen_cross = 0;
	for (unsigned i = 0; i < xentrace_reader_ndiags(r); i++) {
		const struct xentrace_diag *d = xentrace_reader_diag(r, i);
		seen_cpu += strstr(d->what, "cpu 9999 out of range") != NULL && d->offset == 0;
		seen_size += strstr(d->what, "not a multiple of 4") != NULL && d->offset == 16;
		seen_cross += strstr(d->what, "crosses the end") != NULL;
	}
	cr_assert(seen_cpu && seen_size && seen_cross);
	xentrace_reader_free(r);
	free(t.data);
}

Test(xentrace_reader, not_a_trace)
{
	char junk[1000];
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (char)(i * 7);
	struct xentrace_source src;
	xentrace_source_init_mem(&src, junk, sizeof(junk));
	struct xentrace_reader *r;
	cr_assert_eq(xentrace_reader_open(&r, &src, NULL), -EBADMSG);
	cr_assert_gt(xentrace_reader_ndiags(r), 0);
	xentrace_reader_free(r);
	xentrace_source_init_mem(&src, junk, 0);
	cr_assert_eq(xentrace_reader_open(&r, &src, NULL), -EBADMSG);
	cr_assert_str_eq(xentrace_reader_diag(r, 0)->what, "empty file");
	xentrace_reader_free(r);
}

Test(xentrace_reader, fd_source_and_pipes)
{
	struct mtrace t;
	good_trace(&t);
	FILE *f = tmpfile();
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(t.data, 1, t.len, f), t.len);
	fflush(f);
	struct xentrace_source src;
	cr_assert_eq(xentrace_source_init_fd(&src, fileno(f)), 0);
	cr_assert_eq(src.size, t.len);
	struct xentrace_reader *r;
	cr_assert_eq(xentrace_reader_open(&r, &src, NULL), 0);
	const struct xentrace_record *rec;
	size_t n = 0;
	while (xentrace_reader_next(r, &rec) == 1)
		n++;
	cr_assert_eq(n, 80);
	xentrace_reader_free(r);
	fclose(f);
	int p[2];
	cr_assert_eq(pipe(p), 0);
	cr_assert_eq(xentrace_source_init_fd(&src, p[0]), -ESPIPE);
	close(p[0]);
	close(p[1]);
	free(t.data);
}

/* --- stream mode (pipes) ---------------------------------------------------- */

#include <sys/wait.h>

/* A pipe fed by a child process with @len bytes of @data. */
static int feed_pipe(const void *data, size_t len)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		close(p[0]);
		const char *d = data;
		while (len) {
			/* Small writes: the reader sees windows arrive in pieces. */
			ssize_t n = write(p[1], d, len < 1000 ? len : 1000);
			if (n <= 0)
				_exit(1);
			d += n;
			len -= (size_t)n;
		}
		_exit(0);
	}
	close(p[1]);
	return p[0];
}

static void reap(void)
{
	int st;
	while (wait(&st) > 0)
		;
}

Test(xentrace_reader, a_pipe_gives_the_same_records_as_the_file)
{
	struct mtrace t;
	/* As xentrace writes a pipe: each pass, a window per cpu with data,
	 * in cpu order, whatever their times. */
	mt_begin(&t, 3, 4096);
	for (unsigned pass = 0; pass < 30; pass++) {
		for (unsigned i = 0; i < 10; i++)
			for (unsigned cpu = 0; cpu < 3; cpu++)
				add(&t, cpu, 1000 + 3 * (10 * pass + i) + cpu, 0x28004, i);
		for (unsigned cpu = 0; cpu < 3; cpu++)
			xentrace_writer_flush_cpu(t.w, cpu);
	}
	cr_assert_eq(xentrace_writer_lost(t.w, 0, 5000, 3, 1, 0, 4000), 0);
	mt_end(&t);
	int fd = feed_pipe(t.data, t.len);
	struct xentrace_reader *r;
	struct xentrace_reader_opts o = { .stream_quiet_windows = 1000 };
	cr_assert_eq(xentrace_reader_open_stream(&r, fd, &o), 0);
	const struct xentrace_record *rec;
	uint64_t last = 0, n = 0;
	int rc;
	while ((rc = xentrace_reader_next(r, &rec)) == 1) {
		cr_assert_geq(rec->order_tsc, last, "record %lu out of order", (unsigned long)n);
		last = rec->order_tsc;
		if (n < 900)
			cr_assert_eq(rec->tsc, 1000 + n, "record %lu: tsc %lu", (unsigned long)n, (unsigned long)rec->tsc);
		n++;
	}
	cr_assert_eq(rc, 0);
	cr_assert_eq(n, 902, "900 + a lost-records marker delivered twice");
	const struct xentrace_reader_stats *st = xentrace_reader_stats(r);
	cr_assert_eq(st->records, 901);
	cr_assert_eq(st->cpus, 3);
	cr_assert_eq(st->stream_late, 0);
	const struct xentrace_diag *d = find_diag(r, XENTRACE_DIAG_LOST);
	cr_assert_not_null(d);
	xentrace_reader_free(r);
	close(fd);
	reap();
	free(t.data);
}

Test(xentrace_reader, a_pipe_does_not_wait_for_a_quiet_cpu)
{
	struct mtrace t;
	mt_begin(&t, 2, 64);
	add(&t, 1, 500, 0x28004, 0); /* cpu 1 says one thing, then nothing */
	xentrace_writer_flush_cpu(t.w, 1);
	for (unsigned i = 0; i < 100; i++)
		add(&t, 0, 1000 + i, 0x28004, i);
	xentrace_writer_flush_cpu(t.w, 0);
	add(&t, 1, 900, 0x28004, 0); /* ... until late */
	mt_end(&t);
	int fd = feed_pipe(t.data, t.len);
	struct xentrace_reader *r;
	struct xentrace_reader_opts o = { .stream_quiet_windows = 3 };
	cr_assert_eq(xentrace_reader_open_stream(&r, fd, &o), 0);
	const struct xentrace_record *rec;
	uint64_t n = 0;
	while (xentrace_reader_next(r, &rec) == 1)
		n++;
	cr_assert_eq(n, 102);
	cr_assert_eq(xentrace_reader_stats(r)->stream_late, 1, "the late record is counted");
	xentrace_reader_free(r);
	close(fd);
	reap();
	free(t.data);
}

Test(xentrace_reader, a_pipe_with_garbage_and_a_cut)
{
	struct mtrace t;
	mt_begin(&t, 1, 4096);
	uint8_t junk[7] = { 9, 9, 9, 9, 9, 9, 9 };
	xentrace_writer_raw(t.w, junk, sizeof(junk));
	add(&t, 0, 100, 0x28004, 0);
	add(&t, 0, 200, 0x28004, 0);
	mt_end(&t);
	int fd = feed_pipe(t.data, t.len - 3);
	struct xentrace_reader *r;
	cr_assert_eq(xentrace_reader_open_stream(&r, fd, NULL), 0);
	const struct xentrace_record *rec;
	uint64_t n = 0;
	while (xentrace_reader_next(r, &rec) == 1) {
		cr_assert_eq(rec->offset, 7 + 12, "offsets are the stream's");
		n++;
	}
	cr_assert_eq(n, 1);
	const struct xentrace_diag *d = find_diag(r, XENTRACE_DIAG_FRAMING);
	cr_assert_not_null(d);
	cr_assert_not_null(strstr(d->what, "skipped 7 bytes"), "%s", d->what);
	cr_assert_not_null(find_diag(r, XENTRACE_DIAG_TRUNCATED));
	xentrace_reader_free(r);
	close(fd);
	reap();
	free(t.data);
}

/* Input that is no trace at all gets one verdict, whether it is opened as
 * a file or read once as a stream: -EBADMSG and a diagnostic at offset 0
 * (a stream used to end with no error and no record). */
Test(xentrace_reader, no_trace_is_refused_from_a_file_and_from_a_stream)
{
	static uint8_t in[4096];
	struct {
		const char *what;
		size_t len;
		int fill;
	} cases[] = { { "empty", 0, 0 }, { "7 bytes", 7, 1 }, { "random", 4096, 2 }, { "all 0xff", 4096, 3 } };
	uint64_t seed = 5;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		for (size_t i = 0; i < cases[k].len; i++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			in[i] = cases[k].fill == 3 ? 0xff : (uint8_t)(seed >> 56);
		}
		struct xentrace_source src;
		xentrace_source_init_mem(&src, in, cases[k].len);
		struct xentrace_reader *r;
		cr_expect_eq(xentrace_reader_open(&r, &src, NULL), -EBADMSG, "%s: file", cases[k].what);
		cr_expect_gt(xentrace_reader_ndiags(r), 0);
		xentrace_reader_free(r);
		xentrace_source_init_mem(&src, in, cases[k].len);
		cr_assert_eq(xentrace_reader_open_stream_src(&r, &src, NULL), 0);
		const struct xentrace_record *rec;
		cr_expect_eq(xentrace_reader_next(r, &rec), -EBADMSG, "%s: stream", cases[k].what);
		cr_expect_eq(xentrace_reader_next(r, &rec), -EBADMSG, "%s: and again", cases[k].what);
		cr_assert_gt(xentrace_reader_ndiags(r), 0, "%s: no diagnostic from the stream", cases[k].what);
		cr_expect_eq(xentrace_reader_diag(r, 0)->offset, 0);
		xentrace_reader_free(r);
	}
}

/* A window claiming more than any trace buffer is not believed, as a file
 * or as a stream: a framing error, and the next window is looked for. */
Test(xentrace_reader, a_window_over_the_maximum_is_framing)
{
	struct mtrace t;
	mt_begin(&t, 1, 4096);
	uint32_t huge[3] = { XENTRACE_EV_CPU_CHANGE | 2u << 28, 0, 0xff000050u };
	xentrace_writer_raw(t.w, huge, sizeof(huge));
	add(&t, 0, 100, 0x28004, 0);
	add(&t, 0, 200, 0x28004, 0);
	mt_end(&t);
	uint64_t tscs[4];
	unsigned cpus[4];
	struct xentrace_reader *r;
	cr_assert_eq(read_all(t.data, t.len, &r, tscs, cpus, 4, 0), 2, "the window after it is read");
	const struct xentrace_diag *d = find_diag(r, XENTRACE_DIAG_FRAMING);
	cr_assert_not_null(d);
	cr_expect_eq(d->offset, 0);
	cr_expect(strstr(d->what, "more than any trace buffer"), "%s", d->what);
	xentrace_reader_free(r);
	struct xentrace_source src;
	xentrace_source_init_mem(&src, t.data, t.len);
	cr_assert_eq(xentrace_reader_open_stream_src(&r, &src, NULL), 0);
	const struct xentrace_record *rec;
	size_t n = 0;
	while (xentrace_reader_next(r, &rec) == 1)
		n++;
	cr_expect_eq(n, 2, "the stream reads the same two records");
	xentrace_reader_free(r);
	free(t.data);
}
