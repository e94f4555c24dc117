/*
 * Opening named inputs.  See xflow/file.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xflow/file.h"

int xflow_file_open(const char *path, struct stat *st)
{
	struct stat tmp;
	if (!st)
		st = &tmp;
	memset(st, 0, sizeof(*st));
	/* O_NONBLOCK: open() of a FIFO returns at once instead of waiting
	 * for a writer, and the check below refuses it. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	int rc = 0;
	if (fstat(fd, st) != 0)
		rc = -errno;
	else if (S_ISDIR(st->st_mode))
		rc = -EISDIR;
	else if (!S_ISREG(st->st_mode))
		rc = -EINVAL;
	if (rc) {
		close(fd);
		return rc;
	}
	return fd;
}

const char *xflow_file_strerror(int rc, const struct stat *st)
{
	if (rc == -EISDIR)
		return "not a regular file (a directory)";
	if (rc != -EINVAL)
		return strerror(-rc);
	if (!st)
		return "not a regular file";
	return S_ISFIFO(st->st_mode)  ? "not a regular file (a FIFO)"
	       : S_ISSOCK(st->st_mode) ? "not a regular file (a socket)"
	       : S_ISCHR(st->st_mode)  ? "not a regular file (a character device)"
	       : S_ISBLK(st->st_mode)  ? "not a regular file (a block device)"
				       : "not a regular file";
}

int xflow_file_read(const char *path, size_t max, char **out, size_t *len, char *why, size_t whylen)
{
	*out = NULL;
	*len = 0;
	struct stat st;
	int fd = xflow_file_open(path, &st);
	if (fd < 0) {
		snprintf(why, whylen, "%s", xflow_file_strerror(fd, &st));
		return fd;
	}
	int rc = 0;
	char *buf = NULL;
	if ((uintmax_t)st.st_size > max) {
		rc = -EFBIG;
		snprintf(why, whylen, "too big (%jd bytes, at most %zu)", (intmax_t)st.st_size, max);
		goto out;
	}
	size_t size = (size_t)st.st_size, got = 0;
	if (!(buf = malloc(size + 1))) {
		rc = -ENOMEM;
		snprintf(why, whylen, "%s", strerror(ENOMEM));
		goto out;
	}
	/* A regular file's reads ignore O_NONBLOCK.  A file that shrank
	 * since fstat() is read to its new end. */
	while (got < size) {
		ssize_t n = read(fd, buf + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = -errno;
			snprintf(why, whylen, "%s", strerror(-rc));
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	*out = buf;
	*len = got;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return rc;
}
