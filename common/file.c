/*
 * Opening named inputs.  See xflow/file.h.
 */
#include <errno.h>
#include <fcntl.h>
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
