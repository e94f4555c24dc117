/*
 * Snapshots: the text, JSON and trace reports written atomically.
 *
 * Each file goes to a temporary file in the same directory (rename() is
 * atomic only within one file system), is flushed and fsync'ed, and is
 * renamed over the target only when it was written whole; the directory is
 * then fsync'ed so the rename itself survives a crash.  A reader sees the
 * old file or the new one, never a part.
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

int xft_write_atomic(const char *path, int (*fill)(void *arg, FILE *f), void *arg, char *err,
		     size_t errlen)
{
	char tmp[4096], dir[4096];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp.XXXXXX", path) >= (int)sizeof(tmp)) {
		snprintf(err, errlen, "%s: path too long", path);
		return -ENAMETOOLONG;
	}
	int fd = mkstemp(tmp);
	if (fd < 0) {
		int e = errno;
		snprintf(err, errlen, "%s: cannot create a temporary file: %s", path, strerror(e));
		return -e;
	}
	/* mkstemp makes 0600 files; a report is as readable as any file. */
	mode_t um = umask(0);
	umask(um);
	fchmod(fd, 0666 & ~um);
	FILE *f = fdopen(fd, "w");
	if (!f) {
		int e = errno;
		close(fd);
		unlink(tmp);
		snprintf(err, errlen, "%s: %s", path, strerror(e));
		return -e;
	}
	int rc = fill(arg, f);
	if (!rc && fflush(f))
		rc = -errno;
	if (!rc && ferror(f))
		rc = -EIO;
	if (!rc && fsync(fileno(f)))
		rc = -errno;
	if (fclose(f) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc) {
		unlink(tmp);
		snprintf(err, errlen, "%s: not written: %s", path, strerror(-rc));
		return rc;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
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
	char b[4000];
	snprintf(b, sizeof(b), "%s", base);
	size_t len = strlen(b);
	if (len > 4 && !strcmp(b + len - 4, ".txt"))
		b[len - 4] = '\0';
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s%s", b, files[i].suffix);
		int rc = xft_write_atomic(path, files[i].fill, app, err, errlen);
		if (rc)
			return rc;
	}
	return 0;
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
