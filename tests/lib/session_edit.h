/*
 * Saved sessions rewritten for tests that damage one field of a record:
 * a version 9 writer's RECORDS chunks hold each record as its differences
 * from the one before, where a byte poked changes every record after it.
 */
#ifndef XFLOW_TESTS_SESSION_EDIT_H
#define XFLOW_TESTS_SESSION_EDIT_H

#include <stddef.h>

/* The session of @len bytes at @in as version 8 wrote it: each record of
 * its RECORDS chunks a PACKED chunk of its own (its time, its first 40
 * bytes, its ndata values), at a fixed offset.  A malloc()ed copy, its
 * length in *@out_len; NULL when @in holds a RECORDS chunk that does not
 * read. */
unsigned char *test_session_as_packed(const unsigned char *in, size_t len, size_t *out_len);

/* The offset of the @k-th record chunk (whole or packed) of the session
 * @buf of @len bytes, or @len when it has fewer. */
size_t test_session_record_at(const unsigned char *buf, size_t len, unsigned k);

#endif
