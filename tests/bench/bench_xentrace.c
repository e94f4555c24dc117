/*
 * xentrace reader throughput and memory.
 *
 * Generates a ~1 GB trace (4 cpus, windows of 256 KiB filled as xentrace
 * fills its buffers, so windows interleave; runstate changes, hypercalls,
 * records of up to 7 extra words, some without a TSC) in a temporary file,
 * reads it back through a file descriptor — the reader alone, then the
 * reader and the decoder — and deletes it.  Rates are per second of this
 * thread's CPU time (the best of five passes), so other load on a shared
 * machine does not count against them; wall time is shown too.  Then the same for the real
 * capture when ../shared is there.  Prints records/s (target: 50 M/s on one
 * core for the reader) and the peak RSS of the whole process, which the
 * 1 GB file must not move: memory is one buffer per cpu.
 *
 * XENTRACE_BENCH_MB overrides the size (e.g. 64 for a quick run),
 * XENTRACE_BENCH_WINDOW_KB the window size (default 256; real captures of
 * a busy host have windows of ~12 KiB, which makes more headers to walk).
 *
 * Then memory on a long stream: a child writes captures back to back into
 * a pipe (each restarts its TSCs, which makes one cpu's queue wait on the
 * others: the case that grew the reader to the size of the stream), and
 * the reader reads it live.  Its queues may hold the stream budget plus
 * one window; the process's peak RSS once a quarter of the stream is read
 * must not grow by the end.  XENTRACE_BENCH_STREAM_MB sets the stream's
 * size (default 512).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collectors/xentrace.h"
#include "tests/bench/bench_util.h"

#define NCPUS 4
#define REAL "../shared/traces/xen-4.17.5-pv-ping-disk/x.trace"

static long peak_rss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

/* A plausible mix: per cpu, a vcpu that blocks and wakes, hypercalls in
 * between, a scheduler record of 5 words, a record with no TSC. */
static unsigned window_bytes = 256 * 1024;

static int generate(FILE *f, uint64_t bytes, uint64_t *records)
{
	struct xentrace_writer *w;
	int rc = xentrace_writer_new(&w, f, NCPUS, window_bytes);
	if (rc < 0)
		return rc;
	uint64_t written = 0, n = 0, tsc[NCPUS];
	uint64_t seed = 1;
	for (unsigned c = 0; c < NCPUS; c++)
		tsc[c] = 1000000 + c;
	while (written < bytes && rc == 0) {
		for (unsigned c = 0; c < NCPUS && rc == 0; c++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			unsigned dom = 1 + c % 2, v = c / 2;
			uint32_t x[7] = { (uint32_t)seed, 1, 2, 3, 4, 5, 6 };
			rc |= xentrace_writer_runstate(w, c, tsc[c] += 900, dom, v, XENTRACE_RS_RUNNABLE, XENTRACE_RS_RUNNING);
			for (int i = 0; i < 6; i++)
				rc |= xentrace_writer_hypercall(w, c, tsc[c] += 50 + (seed >> 60), 23 + i % 3);
			rc |= xentrace_writer_add(w, c, tsc[c] += 40, true, 0x22209, 5, x);
			rc |= xentrace_writer_add(w, c, 0, false, 0x2800e, 2, x);
			rc |= xentrace_writer_add(w, c, tsc[c] += 30, true, 0x802008, 7, x);
			rc |= xentrace_writer_runstate(w, c, tsc[c] += 700, dom, v, XENTRACE_RS_RUNNING, XENTRACE_RS_BLOCKED);
			rc |= xentrace_writer_runstate(w, c, tsc[c] += 3000, dom, v, XENTRACE_RS_BLOCKED, XENTRACE_RS_RUNNABLE);
			n += 12;
			written += 16 + 6 * 16 + 32 + 12 + 44 + 16 + 16;
		}
	}
	int rc2 = xentrace_writer_close(w);
	*records = n;
	return rc ? -EIO : rc2;
}

struct result {
	uint64_t records;
	double seconds; /* CPU time of this thread: "on one core", whatever else runs */
	double wall;
};

static uint64_t cpu_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One pass over @fd: the reader alone, or the reader and the decoder; the
 * file walked by per-cpu cursors, or read once as a live stream would be. */
static int pass(int fd, bool decode, struct result *res, bool print, bool stream)
{
	struct xentrace_source src;
	struct xentrace_reader *r = NULL;
	struct xentrace_state *s = NULL;
	int rc = xentrace_source_init_fd(&src, fd);
	if (rc == 0)
		rc = stream ? xentrace_reader_open_stream_src(&r, &src, NULL) : xentrace_reader_open(&r, &src, NULL);
	if (rc == 0 && decode)
		rc = xentrace_state_new(&s, 2400000000u);
	if (rc < 0)
		goto out;
	const struct xentrace_record *rec;
	uint64_t n = 0, sum = 0, t0 = cpu_now_ns(), w0 = bench_now_ns();
	if (decode) {
		while ((rc = xentrace_reader_next(r, &rec)) == 1) {
			xentrace_state_feed(s, rec);
			n++;
		}
		xentrace_state_finish(s);
	} else {
		while ((rc = xentrace_reader_next(r, &rec)) == 1) {
			sum += rec->event;
			n++;
		}
	}
	res->seconds = (double)(cpu_now_ns() - t0) / 1e9;
	res->wall = (double)(bench_now_ns() - w0) / 1e9;
	res->records = n;
	BENCH_KEEP(sum);
	if (print && s)
		xentrace_state_print_summary(s, stdout);
out:
	xentrace_state_free(s);
	xentrace_reader_free(r);
	return rc;
}

static void report(const char *what, const struct result *a, const struct result *b)
{
	printf("  %-24s %9llu records: reader %5.1f M rec/s (%.3f s cpu, %.3f s wall), "
	       "reader+decoder %5.1f M rec/s (%.3f s cpu)\n",
	       what, (unsigned long long)a->records, a->records / a->seconds / 1e6, a->seconds, a->wall,
	       b->records / b->seconds / 1e6, b->seconds);
}

/* The stream's writer, in a child: @captures captures of @mb_each MiB,
 * back to back, each from TSC 1000000 again, into @fd. */
static void write_captures(int fd, unsigned captures, uint64_t mb_each)
{
	FILE *f = fdopen(fd, "w");
	if (!f)
		_exit(2);
	static char iobuf[1 << 16];
	setvbuf(f, iobuf, _IOFBF, sizeof(iobuf));
	window_bytes = 64 * 1024;
	for (unsigned k = 0; k < captures; k++) {
		uint64_t n;
		if (generate(f, mb_each << 20, &n) < 0)
			_exit(3);
	}
	_exit(fclose(f) == 0 ? 0 : 4);
}

/* Memory while reading a long stream live (see the top of the file). */
static int stream_memory(void)
{
	const char *env = getenv("XENTRACE_BENCH_STREAM_MB");
	uint64_t mb = env && atoi(env) > 0 ? (uint64_t)atoi(env) : 512, mb_each = 8;
	unsigned captures = (unsigned)((mb + mb_each - 1) / mb_each);
	int p[2];
	if (pipe(p) != 0)
		return -errno;
	pid_t child = fork();
	if (child < 0)
		return -errno;
	if (child == 0) {
		close(p[0]);
		write_captures(p[1], captures, mb_each);
	}
	close(p[1]);
	struct xentrace_reader *r;
	int rc = xentrace_reader_open_stream(&r, p[0], NULL);
	if (rc < 0)
		return rc;
	const struct xentrace_record *rec;
	uint64_t n = 0, quarter = 0, want = captures * ((mb_each << 20) / 232) * 12 / 4, sum = 0;
	long rss_quarter = 0;
	uint64_t w0 = bench_now_ns();
	while ((rc = xentrace_reader_next(r, &rec)) == 1) {
		sum += rec->event;
		if (++n == want) {
			quarter = n;
			rss_quarter = peak_rss_kb();
		}
	}
	BENCH_KEEP(sum);
	double secs = (double)(bench_now_ns() - w0) / 1e9;
	int st;
	waitpid(child, &st, 0);
	close(p[0]);
	const struct xentrace_reader_stats *s = xentrace_reader_stats(r);
	uint64_t peak = s->stream_peak_bytes, forced = s->stream_forced;
	xentrace_reader_free(r);
	if (rc < 0)
		return rc;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !quarter) {
		fprintf(stderr, "bench_xentrace: the stream's writer failed (status %d) or wrote too little\n", st);
		return -EIO;
	}
	long rss_end = peak_rss_kb();
	/* The budget (16 MiB) and one 64 KiB window, and the doubling of the
	 * queue that took that window. */
	uint64_t bound = (16u << 20) * 2 + (64u << 10);
	printf("  live stream: %llu MB, %u captures back to back, %llu records in %.1f s (%llu forced)\n",
	       (unsigned long long)mb, captures, (unsigned long long)n, secs, (unsigned long long)forced);
	printf("  queues at most %.1f MiB (target <= %.1f MiB: %s); peak RSS %ld KiB after a quarter, "
	       "%ld KiB at the end (target: no growth: %s)\n",
	       (double)peak / 1048576, (double)bound / 1048576, peak <= bound ? "met" : "MISSED", rss_quarter,
	       rss_end, rss_end - rss_quarter <= 1024 ? "met" : "MISSED");
	return 0;
}

int main(void)
{
	const char *mb_env = getenv("XENTRACE_BENCH_MB");
	uint64_t mb = mb_env ? strtoull(mb_env, NULL, 10) : 1024;
	const char *win_env = getenv("XENTRACE_BENCH_WINDOW_KB");
	if (win_env && atoi(win_env) > 0)
		window_bytes = (unsigned)atoi(win_env) * 1024;
	const char *tmpdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char path[4096];
	snprintf(path, sizeof(path), "%s/bench_xentrace.XXXXXX", tmpdir);
	int fd = mkstemp(path);
	if (fd < 0) {
		perror("mkstemp");
		return 1;
	}
	FILE *f = fdopen(dup(fd), "w");
	static char iobuf[1 << 20];
	setvbuf(f, iobuf, _IOFBF, sizeof(iobuf));
	uint64_t gen_records = 0, t0 = bench_now_ns();
	int rc = generate(f, mb << 20, &gen_records);
	if (fclose(f) != 0 && rc == 0)
		rc = -EIO;
	double gen_s = (double)(bench_now_ns() - t0) / 1e9;
	long rss_before = peak_rss_kb();
	off_t size = lseek(fd, 0, SEEK_END);
	printf("\nxentrace: generated %.0f MB, %llu records, %d cpus, %d KiB windows in %.1f s (%s)\n",
	       (double)size / 1048576, (unsigned long long)gen_records, NCPUS, window_bytes / 1024, gen_s, path);
	struct result a = { 0 }, b = { 0 }, best = { 0 }, st = { 0 }, sd = { 0 };
	if (rc == 0) {
		/* Best of five for the reader: the first pass may fault the
		 * page cache in, and the build machines are shared. */
		for (int i = 0; i < 5 && rc == 0; i++) {
			rc = pass(fd, false, &a, false, false);
			if (!best.seconds || a.seconds < best.seconds)
				best = a;
		}
		if (rc == 0)
			rc = pass(fd, true, &b, false, false);
		if (rc == 0)
			rc = pass(fd, false, &st, false, true);
		if (rc == 0)
			rc = pass(fd, true, &sd, false, true);
	}
	close(fd);
	unlink(path);
	if (rc < 0) {
		fprintf(stderr, "bench_xentrace: %s\n", strerror(-rc));
		return 1;
	}
	if (best.records != gen_records) {
		fprintf(stderr, "bench_xentrace: read %llu records, wrote %llu\n", (unsigned long long)best.records,
			(unsigned long long)gen_records);
		return 1;
	}
	report("generated file:", &best, &b);
	report("same, as a live stream:", &st, &sd);
	printf("  peak RSS %ld KiB after generating, %ld KiB after reading %.0f MB (target >= 50 M rec/s: %s)\n",
	       rss_before, peak_rss_kb(), (double)size / 1048576,
	       best.records / best.seconds >= 50e6 ? "met" : "NOT met");
	if ((rc = stream_memory()) < 0) {
		fprintf(stderr, "bench_xentrace: live stream: %s\n", strerror(-rc));
		return 1;
	}

	int rfd = open(REAL, O_RDONLY);
	if (rfd < 0) {
		printf("  real capture: %s not found, skipped\n", REAL);
		return 0;
	}
	/* A small file: many passes, summed, for a time worth measuring. */
	struct result ra = { 0 }, rb = { 0 }, rsum = { 0 }, dsum = { 0 };
	for (int i = 0; i < 200 && rc == 0; i++) {
		rc = pass(rfd, false, &ra, false, false);
		rsum.records += ra.records;
		rsum.seconds += ra.seconds;
		rsum.wall += ra.wall;
	}
	for (int i = 0; i < 50 && rc == 0; i++) {
		rc = pass(rfd, true, &rb, false, false);
		dsum.records += rb.records;
		dsum.seconds += rb.seconds;
	}
	close(rfd);
	if (rc < 0) {
		fprintf(stderr, "bench_xentrace: real capture: %s\n", strerror(-rc));
		return 1;
	}
	printf("  real capture, %llu records a pass:\n", (unsigned long long)ra.records);
	report("200 + 50 passes:", &rsum, &dsum);
	printf("  peak RSS %ld KiB\n", peak_rss_kb());
	return 0;
}
