/*
 * xflow/file.h — opening the files a user names (flow files, saved
 * sessions, binaries) for reading.
 *
 * A name can point at anything: a FIFO with no writer would hold open()
 * for ever, a device or a directory would be read as garbage or fail
 * late.  Every such input is opened with xflow_file_open(), which never
 * blocks and lets only regular files through.
 */
#ifndef XFLOW_FILE_H
#define XFLOW_FILE_H

#include <stddef.h>
#include <sys/stat.h>

/*
 * Open @path read-only.  Returns the descriptor (close-on-exec; its
 * O_NONBLOCK is harmless on a regular file) with its fstat() in *@st when
 * @st is not NULL, or a negative errno: -EISDIR for a directory, -EINVAL
 * for any other file that is not regular (a FIFO, a socket, a device),
 * else open()'s error.
 */
int xflow_file_open(const char *path, struct stat *st);

/* What went wrong, for an error of xflow_file_open(): "not a regular file
 * (a FIFO)" for -EINVAL, "not a regular file (a directory)" for -EISDIR,
 * else strerror(). */
const char *xflow_file_strerror(int rc, const struct stat *st);

/*
 * Read all of @path, opened as xflow_file_open() does, into a malloc'd
 * buffer (NUL-terminated; *@len leaves the NUL out) if it is at most @max
 * bytes.  Returns 0, or a negative errno with @why saying what is wrong in
 * words: the errno's text, "not a regular file (a FIFO)", "too big (N
 * bytes, at most M)".
 */
int xflow_file_read(const char *path, size_t max, char **out, size_t *len, char *why, size_t whylen);

#endif
