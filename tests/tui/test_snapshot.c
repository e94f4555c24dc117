/*
 * Snapshots: atomic writes (a failure or a crash mid-write leaves the old
 * file whole), the JSON against tui/snapshot-schema.json, and the
 * Perfetto trace (one complete event per point, one arrow per hop).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/tui/apptest.h"
#include "tests/tui/jsonlite.h"
#include "tui/report.h"

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof(dir), "/tmp/xft-snap-XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void remove_dir(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char p[512];
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

static int count_files(void)
{
	int n = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

static char old_text[] = "old contents\n", new_text[] = "new\n";

static int fill_ok(void *arg, FILE *f)
{
	fputs(arg, f);
	return 0;
}

static int fill_half_then_fail(void *arg, FILE *f)
{
	(void)arg;
	for (int i = 0; i < 100000; i++)
		fputs("partial ", f);
	return -EIO;
}

static int fill_half_then_crash(void *arg, FILE *f)
{
	(void)arg;
	for (int i = 0; i < 100000; i++)
		fputs("partial ", f);
	fflush(f);
	_exit(3); /* dies mid-write: no rename */
}

static char *slurp(const char *path)
{
	return jl_read_file(path, NULL);
}

Test(snapshot, atomic_write_replaces_whole_files_only, .init = make_dir, .fini = remove_dir)
{
	char path[128], err[256];
	snprintf(path, sizeof(path), "%s/report.txt", dir);
	cr_assert_eq(xft_write_atomic(path, fill_ok, old_text, err, sizeof(err)), 0, "%s", err);
	char *s = slurp(path);
	cr_assert(s && !strncmp(s, "old contents\n", 13));
	free(s);

	cr_assert_neq(xft_write_atomic(path, fill_half_then_fail, NULL, err, sizeof(err)), 0);
	cr_assert(strstr(err, "not written"), "%s", err);
	s = slurp(path);
	cr_assert(s && !strncmp(s, "old contents\n", 13), "a failed write leaves the old file");
	free(s);
	cr_assert_eq(count_files(), 1, "and no temporary file");

	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		xft_write_atomic(path, fill_half_then_crash, NULL, err, sizeof(err));
		_exit(0);
	}
	int st;
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 3);
	s = slurp(path);
	cr_assert(s && !strcmp(s, "old contents\n"), "a crash mid-write leaves the old file");
	free(s);

	cr_assert_eq(xft_write_atomic(path, fill_ok, new_text, err, sizeof(err)), 0);
	s = slurp(path);
	cr_assert_str_eq(s, "new\n");
	free(s);
	struct stat sb;
	cr_assert_eq(stat(path, &sb), 0);
	cr_assert(sb.st_mode & S_IRUSR);

	cr_assert_neq(xft_write_atomic("/nonexistent-dir/x.txt", fill_ok, new_text, err, sizeof(err)), 0);
	cr_assert(strstr(err, "/nonexistent-dir/x.txt"), "%s", err);
}

static struct jl_value load_json(const char *path)
{
	size_t len;
	char *text = jl_read_file(path, &len);
	cr_assert(text, "%s missing", path);
	struct jl_value v;
	char err[160];
	cr_assert_eq(jl_parse(text, len, &v, err, sizeof(err)), 0, "%s: %s", path, err);
	free(text);
	return v;
}

Test(snapshot, files_parse_and_match_the_schema, .init = make_dir, .fini = remove_dir)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	char base[128], path[160], err[256];
	snprintf(base, sizeof(base), "%s/snap.txt", dir); /* .txt is dropped from the base */
	cr_assert_eq(xft_snapshot_write(app, base, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(count_files(), 3);

	snprintf(path, sizeof(path), "%s/snap.txt", dir);
	char *text = slurp(path);
	cr_assert(text);
	cr_assert(strstr(text, "== Summary"));
	cr_assert(strstr(text, "== Hops, by total time"));
	cr_assert(strstr(text, "== Histograms of the top 5 hops"));
	cr_assert(strstr(text, "== Slowest flows"));
	cr_assert(strstr(text, "netif_rx -> linux0:netif_receive_skb"));
	free(text);

	struct jl_value schema = load_json("tui/snapshot-schema.json");
	snprintf(path, sizeof(path), "%s/snap.json", dir);
	struct jl_value snap = load_json(path);
	cr_assert_eq(jl_validate(&schema, &schema, &snap, "", err, sizeof(err)), 0, "%s", err);
	const struct jl_value *hops = jl_get(&snap, "hops");
	cr_assert_eq(hops->n, 15);
	cr_assert_str_eq(jl_get(jl_get(&hops->items[0], "to"), "function")->string, "netif_receive_skb");
	cr_assert(jl_get(&hops->items[0], "histogram"), "snapshots carry histograms");
	const struct jl_value *slow = jl_get(&snap, "slowest");
	cr_assert_gt(slow->n, 0);
	const struct jl_value *path0 = jl_get(&slow->items[0], "path");
	cr_assert_eq(path0->n, 16);

	/* The schema is strict: a wrong type or a stray key is caught. */
	struct jl_value *stats = (struct jl_value *)jl_get(&snap, "stats");
	stats->items[0].type = JL_STRING;
	stats->items[0].string = strdup("oops");
	cr_assert_neq(jl_validate(&schema, &schema, &snap, "", err, sizeof(err)), 0);
	cr_assert(strstr(err, "/stats/records"), "%s", err);
	free(stats->keys[0]);
	stats->keys[0] = strdup("unknown_key");
	cr_assert_neq(jl_validate(&schema, &schema, &snap, "", err, sizeof(err)), 0);
	jl_free(&snap);

	/* The trace: metadata per domain, an X per point, an s/f pair per hop. */
	snprintf(path, sizeof(path), "%s/snap.trace.json", dir);
	struct jl_value tr = load_json(path);
	const struct jl_value *ev = jl_get(&tr, "traceEvents");
	cr_assert(ev && ev->type == JL_ARRAY);
	size_t nx = 0, ns = 0, nf = 0, nm = 0, points = 0;
	for (size_t i = 0; i < app->frame.nflow_shown; i++)
		points += app->frame.flows[app->frame.flow_order[i]].s.npoints;
	for (size_t i = 0; i < ev->n; i++) {
		const char *ph = jl_get(&ev->items[i], "ph")->string;
		cr_assert(jl_get(&ev->items[i], "pid") && jl_get(&ev->items[i], "tid"));
		nx += !strcmp(ph, "X");
		ns += !strcmp(ph, "s");
		nf += !strcmp(ph, "f");
		nm += !strcmp(ph, "M");
		if (!strcmp(ph, "X"))
			cr_assert_eq(jl_get(&ev->items[i], "pid")->number, jl_get(&ev->items[i], "tid")->number);
	}
	cr_assert_eq(nx, points, "one complete event per point");
	cr_assert_eq(ns, points - app->frame.nflow_shown, "one arrow per hop");
	cr_assert_eq(nf, ns);
	cr_assert_eq(nm, 4, "process and thread names of two domains");
	jl_free(&tr);
	jl_free(&schema);
	apptest_free(app);
}

Test(snapshot, batch_json_lines_match_the_schema)
{
	struct xft_app *app = apptest_new("synthetic:rate=500", 0.5);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct xft_json j;
	xft_json_init(&j, f, 0);
	xft_report_json(app, &j, XFT_REPORT_BATCH);
	cr_assert_eq(xft_json_end(&j), 0);
	fclose(f);
	cr_assert_eq(strchr(text, '\n'), text + len - 1, "one line");
	struct jl_value schema = load_json("tui/snapshot-schema.json"), v;
	char err[256];
	cr_assert_eq(jl_parse(text, len, &v, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(jl_validate(&schema, &schema, &v, "", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(jl_get(&v, "iteration")->number, 1);
	cr_assert_null(jl_get(&jl_get(&v, "hops")->items[0], "histogram"));
	jl_free(&v);
	jl_free(&schema);
	free(text);
	apptest_free(app);
}

Test(snapshot, default_names_are_unique)
{
	struct xft_app *app = apptest_new("synthetic", 0);
	char a[256], b[256];
	xft_snapshot_default_base(app, a, sizeof(a));
	xft_snapshot_default_base(app, b, sizeof(b));
	cr_assert_str_neq(a, b);
	cr_assert(!strncmp(a, "./xflowtop-", 11), "%s", a);
	apptest_free(app);
}

/* The size of @name in the snapshot directory. */
static off_t file_size(const char *name)
{
	char p[256];
	struct stat sb;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return stat(p, &sb) == 0 ? sb.st_size : -1;
}

/* Run @body(app) in a child (it changes limits or mounts), which passes
 * back the snapshot's return code and message through a pipe. */
static int in_child(struct xft_app *app, int (*body)(struct xft_app *, char *err, size_t errlen), char *err,
		    size_t errlen, int *skipped)
{
	int p[2];
	cr_assert_eq(pipe(p), 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		char e[512] = "";
		int rc = body(app, e, sizeof(e));
		if (write(p[1], &rc, sizeof(rc)) < 0 || write(p[1], e, strlen(e) + 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	int rc = 0, st;
	ssize_t n = read(p[0], &rc, sizeof(rc));
	ssize_t m = read(p[0], err, errlen - 1);
	err[m > 0 ? m : 0] = '\0';
	close(p[0]);
	waitpid(pid, &st, 0);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child failed (%d)", st);
	*skipped = n != sizeof(rc);
	return rc;
}

static off_t txt_size;

/* Files over txt_size bytes cannot be written: the .txt fits, the .json
 * does not.  (SIGXFSZ ignored: the write fails with EFBIG instead.) */
static int snapshot_under_fsize(struct xft_app *app, char *err, size_t errlen)
{
	char base[128];
	struct rlimit rl = { (rlim_t)txt_size + 16, (rlim_t)txt_size + 16 };
	signal(SIGXFSZ, SIG_IGN);
	if (setrlimit(RLIMIT_FSIZE, &rl))
		_exit(1);
	snprintf(base, sizeof(base), "%s/snap", dir);
	return xft_snapshot_write(app, base, err, errlen);
}

/* Issue 19 item 12: the three files of a snapshot appear together or not
 * at all, and the error is the real one, not a stream's EIO. */
/* An app whose snapshot's sizes are known (txt_size), and the snapshot
 * directory empty again. */
static struct xft_app *sized_app(void)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	char base[128], err[512];
	snprintf(base, sizeof(base), "%s/sized", dir);
	cr_assert_eq(xft_snapshot_write(app, base, err, sizeof(err)), 0, "%s", err);
	txt_size = file_size("sized.txt");
	cr_assert_gt(file_size("sized.json"), txt_size + 16, "the tests need a .json bigger than the .txt");
	remove_dir();
	cr_assert(mkdir(dir, 0700) == 0);
	return app;
}

Test(snapshot, the_three_files_appear_together_or_not_at_all, .init = make_dir, .fini = remove_dir)
{
	struct xft_app *app = sized_app();
	char err[512];
	int skipped;
	int rc = in_child(app, snapshot_under_fsize, err, sizeof(err), &skipped);
	cr_expect_eq(rc, -EFBIG, "%d: %s", rc, err);
	cr_expect(strstr(err, "snap.json: not written: File too large"), "%s", err);
	cr_expect_eq(count_files(), 0, "a part of the set, or a temporary file, was left");
	apptest_free(app);
}

/* Fill a small tmpfs mounted over the snapshot directory (in a mount
 * namespace of its own) but for room for the .txt, and snapshot there. */
static int snapshot_on_full_tmpfs(struct xft_app *app, char *err, size_t errlen)
{
	char opts[64], filler[160], base[128];
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		_exit(0); /* not allowed here: nothing written to the pipe, skipped */
	snprintf(opts, sizeof(opts), "size=%ld", (long)(txt_size + 64 * 1024));
	if (mount("tmpfs", dir, "tmpfs", 0, opts))
		_exit(0);
	snprintf(filler, sizeof(filler), "%s/filler", dir);
	int fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	static char block[4096];
	while (write(fd, block, sizeof(block)) > 0)
		;
	/* Room for the .txt, in whole pages, and no more. */
	struct stat sb;
	fstat(fd, &sb);
	if (ftruncate(fd, sb.st_size - (txt_size + 4095) / 4096 * 4096 - 4096))
		_exit(1);
	close(fd);
	snprintf(base, sizeof(base), "%s/snap", dir);
	int rc = xft_snapshot_write(app, base, err, errlen);
	/* Only the filler may be there. */
	if (count_files() != 1) {
		snprintf(err, errlen, "%d files on the full file system", count_files());
		rc = 1;
	}
	umount(dir);
	return rc;
}

Test(snapshot, full_disk_says_enospc, .init = make_dir, .fini = remove_dir)
{
	struct xft_app *app = sized_app();
	char err[512];
	int skipped;
	int rc = in_child(app, snapshot_on_full_tmpfs, err, sizeof(err), &skipped);
	apptest_free(app);
	if (skipped)
		cr_skip_test("cannot mount a tmpfs here (needs root and mount namespaces)");
	cr_expect_eq(rc, -ENOSPC, "%d: %s", rc, err);
	cr_expect(strstr(err, "snap.json: not written: No space left on device"), "%s", err);
}

/* Issue 24: where the time went, in the three files of a snapshot. */
Test(snapshot, the_split_is_in_every_file, .init = make_dir, .fini = remove_dir)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	char base[128], path[160], err[256];
	struct jl_value schema = load_json("tui/snapshot-schema.json");

	/* No trace joined: said, and nothing made up. */
	snprintf(base, sizeof(base), "%s/none", dir);
	cr_assert_eq(xft_snapshot_write(app, base, err, sizeof(err)), 0, "%s", err);
	snprintf(path, sizeof(path), "%s/none.txt", dir);
	char *text = slurp(path);
	cr_assert(strstr(text, "not split: no scheduler trace is joined (sched: not joined)"));
	cr_assert_null(strstr(text, "gaps by state"));
	free(text);
	snprintf(path, sizeof(path), "%s/none.json", dir);
	struct jl_value snap = load_json(path);
	cr_assert_eq(jl_validate(&schema, &schema, &snap, "", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(jl_get(jl_get(&snap, "sched"), "joined")->type, JL_BOOL);
	cr_assert_eq(jl_get(jl_get(&snap, "sched"), "clock_error_ns")->type, JL_NULL);
	cr_assert_eq(jl_get(jl_get(&snap, "sched"), "clock_bound_ns")->type, JL_NULL);
	const struct jl_value *h0 = &jl_get(&snap, "hops")->items[0];
	cr_assert_eq(jl_get(jl_get(jl_get(jl_get(h0, "split"), "all"), "ns"), "wait")->number, 0);
	cr_assert_eq(jl_get(jl_get(jl_get(h0, "split"), "all"), "culprit")->type, JL_NULL);
	const struct jl_value *f0 = &jl_get(&snap, "slowest")->items[0];
	cr_assert_eq(jl_get(f0, "cause")->type, JL_NULL);
	cr_assert_null(jl_get(&jl_get(f0, "path")->items[1], "split"), "no gaps, no split on the points");
	jl_free(&snap);

	/* Joined, with a split hop and a split flow. */
	struct xft_hop_row *hop = apptest_split_hop(app);
	struct xft_gap_split gaps[64];
	uint32_t big = apptest_split_flow(app, gaps);
	app->frame.sched.clock_error_ns = 1200;
	app->frame.sched.clock_bound_ns = 3100;
	snprintf(base, sizeof(base), "%s/split", dir);
	cr_assert_eq(xft_snapshot_write(app, base, err, sizeof(err)), 0, "%s", err);

	snprintf(path, sizeof(path), "%s/split.txt", dir);
	text = slurp(path);
	char want[256];
	snprintf(want, sizeof(want), "  %s:%s -> %s:%s\n    all   [", hop->from_dom, hop->from->function, hop->to_dom,
		 hop->to->function);
	cr_assert(strstr(text, want), "no split of %s in\n%s", want, text);
	cr_assert(strstr(text, "sched clock \u00b13.10us; 1000 scheduler records, 0 lost"));
	cr_assert(strstr(text, "???] #wait 60% =run 30% ?unknown 10% (clock 6%, lost 4%)\n"), "%s", text);
	cr_assert(strstr(text, "-] #wait 95% -blocked 5% (12 flows)\n"));
	cr_assert(strstr(text, "    waited for pCPU1, which ran d0v1 (80% of the wait); p99+: waited for pCPU1, which ran d0v2"));
	cr_assert(strstr(text, "  gaps by state:\n"));
	char d[16];
	xft_format_ns(gaps[big].split.ns[XFT_ST_WAIT], d, sizeof(d));
	snprintf(want, sizeof(want), "  cause: waited %s for pCPU1, which ran d0v1 (gap %" PRIu32 ")\n", d, big + 1);
	cr_assert(strstr(text, want), "no '%s'", want);
	free(text);

	snprintf(path, sizeof(path), "%s/split.json", dir);
	snap = load_json(path);
	cr_assert_eq(jl_validate(&schema, &schema, &snap, "", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(jl_get(jl_get(&snap, "sched"), "clock_error_ns")->number, 1200);
	cr_assert_eq(jl_get(jl_get(&snap, "sched"), "clock_bound_ns")->number, 3100);
	const struct jl_value *hops = jl_get(&snap, "hops"), *sh = NULL;
	for (size_t i = 0; i < hops->n && !sh; i++)
		if (jl_get(jl_get(jl_get(jl_get(&hops->items[i], "split"), "all"), "ns"), "wait")->number > 0)
			sh = jl_get(&hops->items[i], "split");
	cr_assert_not_null(sh);
	cr_assert_eq(jl_get(jl_get(jl_get(sh, "all"), "ns"), "unknown")->number, 1000000);
	const struct jl_value *why = jl_get(jl_get(sh, "all"), "unknown_ns");
	cr_assert_not_null(why, "the '?' says why");
	cr_assert_eq(jl_get(why, "clock")->number, 600000);
	cr_assert_eq(jl_get(why, "lost")->number, 400000);
	cr_assert_eq(jl_get(why, "no_trace")->number + jl_get(why, "old")->number + jl_get(why, "early")->number, 0);
	cr_assert_str_eq(jl_get(jl_get(jl_get(sh, "all"), "culprit"), "holder")->string, "d0v1");
	cr_assert_eq(jl_get(jl_get(jl_get(sh, "all"), "culprit"), "wait_ns")->number, 4800000);
	cr_assert_eq(jl_get(jl_get(sh, "tail"), "flows")->number, 12);
	cr_assert_eq(jl_get(jl_get(jl_get(sh, "tail"), "ns"), "blocked")->number, 50000);
	f0 = &jl_get(&snap, "slowest")->items[0];
	cr_assert(!strncmp(jl_get(f0, "cause")->string, "waited ", 7), "%s", jl_get(f0, "cause")->string);
	const struct jl_value *pts = jl_get(f0, "path");
	cr_assert_null(jl_get(&pts->items[0], "split"), "the first point has no gap");
	const struct jl_value *gsplit = jl_get(&pts->items[big + 1], "split");
	cr_assert_not_null(gsplit);
	cr_assert_eq(jl_get(jl_get(gsplit, "ns"), "wait")->number, (double)gaps[big].split.ns[XFT_ST_WAIT]);
	cr_assert_eq(jl_get(jl_get(gsplit, "culprit"), "pcpu")->number, 1);
	/* Each gap's states add up to the gap, as the model promises. */
	for (size_t p = 1; p < pts->n; p++) {
		double tot = 0;
		const struct jl_value *ns = jl_get(jl_get(&pts->items[p], "split"), "ns");
		for (size_t k = 0; k < ns->n; k++)
			tot += ns->items[k].number;
		cr_assert_eq(tot, jl_get(&pts->items[p], "gap_ns")->number, "point %zu", p);
	}
	jl_free(&snap);

	/* The trace: the slice of the longest gap's start point says where
	 * the gap went and why. */
	snprintf(path, sizeof(path), "%s/split.trace.json", dir);
	struct jl_value tr = load_json(path);
	const struct jl_value *ev = jl_get(&tr, "traceEvents");
	const struct xft_flow_row *fl = &app->frame.flows[app->frame.flow_order[0]];
	int found = 0;
	for (size_t i = 0; i < ev->n; i++) {
		const struct jl_value *args = jl_get(&ev->items[i], "args");
		const struct jl_value *start = args ? jl_get(args, "start_ns") : NULL;
		if (!start || start->number != (double)fl->s.path[big].t_ns || jl_get(args, "rank")->number != 1)
			continue;
		found = 1;
		cr_assert_eq(jl_get(jl_get(args, "state_ns"), "wait")->number, (double)gaps[big].split.ns[XFT_ST_WAIT]);
		cr_assert(strstr(jl_get(args, "cause")->string, "which ran d0v1"));
	}
	cr_assert(found, "no slice for the longest gap");
	jl_free(&tr);
	jl_free(&schema);
	apptest_free(app);
}

/* The batch text of a hop mostly '?' says why on a line of its own, before
 * the culprits. */
Test(snapshot, batch_split_text_says_why_the_hop_is_unknown)
{
	struct xft_app *app = apptest_new("synthetic:rate=1000", 1.0);
	struct xft_hop_row *hop = apptest_split_hop(app);
	hop->split.all.ns[XFT_ST_UNKNOWN] = 20000000;
	hop->split.all.unknown_ns[XFT_UNK_CLOCK] = 15000000;
	hop->split.all.unknown_ns[XFT_UNK_LOST] = 5000000;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	cr_assert_not_null(f);
	xft_report_split_text(app, f, 30);
	fclose(f);
	cr_assert(strstr(text, "] ?unknown 69% (clock 52%, lost 17%) #wait 21% =run 10%\n"), "%s", text);
	cr_assert(strstr(text, "\n    20.0ms not attributable, 15.0ms of it within the clock error of a boundary\n"
			       "    waited for pCPU1"),
		  "%s", text);
	free(text);
	apptest_free(app);
}
