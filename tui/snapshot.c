/*
 * Snapshots: the text, JSON and trace reports written atomically.
 *
 * Each report is made in memory, then written to a temporary file in the
 * same directory (rename() is atomic only within one file system) with
 * write(2), synced, and renamed over the target only when it was written
 * whole; the directory is then synced so the rename itself survives a
 * crash.  A reader sees the old file or the new one, never a part.  The
 * three files of a snapshot are all written before any is renamed, so they
 * appear together or not at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "tui/report.h"

/* One file of a set: its name, and the temporary holding its new bytes. */
struct staged {
	char path[4096], tmp[4096];
};

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Make @fill's bytes and write them to a synced temporary file beside
 * @path.  The report is made in memory first: written through stdio, a
 * failed write leaves only the stream's error flag, and the errno of a
 * full disk (ENOSPC) would be lost; write(2) of the whole buffer says
 * what happened. */
static int stage(struct staged *st, const char *path, int (*fill)(void *arg, FILE *f), void *arg, char *err,
		 size_t errlen)
{
	if (snprintf(st->path, sizeof(st->path), "%s", path) >= (int)sizeof(st->path) ||
	    snprintf(st->tmp, sizeof(st->tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(st->tmp)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m) {
		snprintf(err, errlen, "%s: not written: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	int rc = fill(arg, m);
	if (fclose(m) && !rc)
		rc = -ENOMEM;
	if (rc) {
		free(buf);
		snprintf(err, errlen, "%s: not written: %s", path, strerror(-rc));
		return rc;
	}
	int fd = mkstemp(st->tmp);
	if (fd < 0) {
		rc = -errno;
		free(buf);
		snprintf(err, errlen, "%s: cannot create a temporary file: %s", path, strerror(-rc));
		return rc;
	}
	/* mkstemp makes 0600 files; a report is as readable as any file. */
	mode_t um = umask(0);
	umask(um);
	fchmod(fd, 0666 & ~um);
	rc = write_all(fd, buf, len);
	free(buf);
	if (!rc && fsync(fd))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (rc) {
		unlink(st->tmp);
		snprintf(err, errlen, "%s: not written: %s", path, strerror(-rc));
	}
	return rc;
}

/* Sync the directory of @path, so that its renames survive a crash. */
static void sync_dir(const char *path)
{
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", path);
	int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
}

/* Rename the @n staged files into place, all or none: when one rename
 * fails, the ones already in place are removed again and the rest
 * dropped. */
static int commit(struct staged *st, size_t n, char *err, size_t errlen)
{
	for (size_t i = 0; i < n; i++) {
		if (rename(st[i].tmp, st[i].path) == 0)
			continue;
		int rc = -errno;
		snprintf(err, errlen, "%s: not renamed into place: %s%s", st[i].path, strerror(-rc),
			 n > 1 ? "; no file of the set was kept" : "");
		for (size_t k = 0; k < i; k++)
			unlink(st[k].path);
		for (size_t k = i; k < n; k++)
			unlink(st[k].tmp);
		return rc;
	}
	sync_dir(st[0].path);
	return 0;
}

int xft_write_atomic(const char *path, int (*fill)(void *arg, FILE *f), void *arg, char *err,
		     size_t errlen)
{
	struct staged *st = malloc(sizeof(*st));
	if (!st) {
		snprintf(err, errlen, "%s: not written: %s", path, strerror(ENOMEM));
		return -ENOMEM;
	}
	int rc = stage(st, path, fill, arg, err, errlen);
	if (!rc)
		rc = commit(st, 1, err, errlen);
	free(st);
	return rc;
}

static int fill_text(void *arg, FILE *f)
{
	return xft_report_text(arg, f);
}

static int fill_json(void *arg, FILE *f)
{
	return xft_report_json_file(arg, f);
}

static int fill_trace(void *arg, FILE *f)
{
	return xft_report_trace(arg, f);
}

int xft_snapshot_write(struct xft_app *app, const char *base, char *err, size_t errlen)
{
	static const struct {
		const char *suffix;
		int (*fill)(void *, FILE *);
	} files[] = {
		{ ".txt", fill_text },
		{ ".json", fill_json },
		{ ".trace.json", fill_trace },
	};
	enum { NFILES = sizeof(files) / sizeof(files[0]) };
	char b[4000];
	snprintf(b, sizeof(b), "%s", base);
	size_t len = strlen(b);
	if (len > 4 && !strcmp(b + len - 4, ".txt"))
		b[len - 4] = '\0';
	struct staged *st = calloc(NFILES, sizeof(*st));
	if (!st) {
		snprintf(err, errlen, "%s: not written: %s", b, strerror(ENOMEM));
		return -ENOMEM;
	}
	int rc = 0;
	size_t n;
	for (n = 0; n < NFILES && !rc; n++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s%s", b, files[n].suffix);
		rc = stage(&st[n], path, files[n].fill, app, err, errlen);
	}
	if (rc) {
		/* st[n - 1] failed and removed its own temporary. */
		for (size_t k = 0; k + 1 < n; k++)
			unlink(st[k].tmp);
	} else {
		rc = commit(st, NFILES, err, errlen);
	}
	free(st);
	return rc;
}

void xft_snapshot_default_base(struct xft_app *app, char *buf, size_t len)
{
	time_t t = time(NULL);
	struct tm tm;
	char stamp[32];
	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, len, "%s/xflowtop-%s-%u", app->cfg.snapshot_dir, stamp, ++app->snap_seq);
}
