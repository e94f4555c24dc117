/*
 * Writing a session file (format in xflow/session.h).  The writer keeps
 * its own buffer and encodes each chunk straight into it, with one
 * write(2) a mebibyte: xflow-agent --plan saves each of a busy server's
 * millions of records a second, and a copy through stdio's buffer (with
 * its lock) cost as much as the encoding.  Records go as PACKED chunks,
 * without the data values the record does not use: the bytes written
 * are what the kernel copies into the file's pages, the biggest part of
 * an agent's time saving a session.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xflow/collector.h"
#include "xflow/plan.h"
#include "xflow/session.h"
#include "common/session_delta.h"

#define SESSION_BUF (1u << 20)
/* No RECORDS chunk is open. */
#define NO_BATCH SIZE_MAX

struct xflow_session_writer {
	int fd;
	unsigned char *buf;   /* SESSION_BUF bytes, used of them not yet written */
	size_t used;
	char *path, *tmp;
	int error;            /* the first error, sticky */
	char why[512];
	uint64_t nrecords;
	uint64_t bytes;       /* written so far */
	uint64_t first, last; /* the span of the record times */
	/* The RECORDS chunk being filled: where its head is in buf (its
	 * length is written when it closes), and what its next record is
	 * written against. */
	size_t batch;
	struct xflow_session_delta delta;
	/* The sites written, as (domain << 32 | site) + 1 (0 is empty). */
	uint64_t *sites;
	size_t nsites, cap;
};

static void put16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static int fail(struct xflow_session_writer *w, int rc, const char *what)
{
	if (!w->error) {
		w->error = rc;
		snprintf(w->why, sizeof(w->why), "%s: %s: %s", w->tmp, what, strerror(-rc));
	}
	return w->error;
}

/* Write out what the buffer holds, with no RECORDS chunk open (its head
 * would be written without its length). */
static int flush(struct xflow_session_writer *w)
{
	size_t done = 0;
	while (!w->error && done < w->used) {
		ssize_t n = write(w->fd, w->buf + done, w->used - done);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return fail(w, n < 0 ? -errno : -EIO, "write");
		done += (size_t)n;
	}
	w->used = 0;
	return w->error;
}

/* Room for @n bytes in the buffer (n <= SESSION_BUF), counted as written:
 * the caller fills all of them.  NULL after an error. */
static void batch_close(struct xflow_session_writer *w);

static unsigned char *reserve(struct xflow_session_writer *w, size_t n)
{
	batch_close(w);
	if (w->error || (w->used + n > SESSION_BUF && flush(w)))
		return NULL;
	unsigned char *p = w->buf + w->used;
	w->used += n;
	w->bytes += n;
	return p;
}

static int put(struct xflow_session_writer *w, const void *p, size_t n)
{
	unsigned char *at = reserve(w, n);
	if (!at)
		return w->error;
	memcpy(at, p, n);
	return 0;
}

uint64_t xflow_session_writer_bytes(const struct xflow_session_writer *w)
{
	return w->bytes;
}

/* A chunk's head, and room for its payload of @len bytes: NULL after an
 * error. */
static unsigned char *chunk_start(struct xflow_session_writer *w, uint32_t type, size_t len)
{
	if (len > XFLOW_SESSION_MAX_CHUNK) {
		fail(w, -EINVAL, "a chunk too long");
		return NULL;
	}
	unsigned char *c = reserve(w, XFLOW_SESSION_CHUNK_HEAD + len);
	if (!c)
		return NULL;
	put32(c, type);
	put32(c + 4, (uint32_t)len);
	return c + XFLOW_SESSION_CHUNK_HEAD;
}

static int chunk(struct xflow_session_writer *w, uint32_t type, const void *payload, size_t len)
{
	unsigned char *p = chunk_start(w, type, len);
	if (!p)
		return w->error;
	memcpy(p, payload, len);
	return 0;
}

int xflow_session_writer_new(const char *path, struct xflow_session_writer **out, char *err,
			     size_t errlen)
{
	struct xflow_session_writer *w = calloc(1, sizeof(*w));
	int rc = -ENOMEM;
	if (!w)
		goto fail;
	w->fd = -1;
	w->batch = NO_BATCH;
	size_t n = strlen(path) + 5;
	w->path = strdup(path);
	w->tmp = malloc(n);
	w->buf = malloc(SESSION_BUF);
	if (!w->path || !w->tmp || !w->buf)
		goto fail;
	snprintf(w->tmp, n, "%s.tmp", path);
	if ((w->fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", w->tmp, strerror(errno));
		goto out;
	}
	unsigned char h[XFLOW_SESSION_HEADER_SIZE] = { 0 };
	memcpy(h, XFLOW_SESSION_MAGIC, 8);
	put16(h + 8, XFLOW_SESSION_VERSION);
	if ((rc = put(w, h, sizeof(h)))) {
		snprintf(err, errlen, "%s", w->why);
		goto out;
	}
	*out = w;
	return 0;
fail:
	snprintf(err, errlen, "%s: %s", path, strerror(-rc));
out:
	if (w && w->fd >= 0) {
		close(w->fd);
		unlink(w->tmp);
	}
	if (w) {
		free(w->path);
		free(w->tmp);
		free(w->buf);
	}
	free(w);
	return rc;
}

/* Close the open RECORDS chunk, if any: its length into its head. */
static void batch_close(struct xflow_session_writer *w)
{
	if (w->batch == NO_BATCH)
		return;
	unsigned char *c = w->buf + w->batch;
	put32(c, XFLOW_SESSION_RECORDS);
	put32(c + 4, (uint32_t)(w->used - w->batch - XFLOW_SESSION_CHUNK_HEAD));
	w->batch = NO_BATCH;
}

/* A RECORDS chunk with room for one more record at its widest: the open
 * one, else a new one, after the buffer is written out if need be.  Each
 * chunk's first record is written against a zero one. */
static int batch_room(struct xflow_session_writer *w)
{
	if (w->batch != NO_BATCH &&
	    w->used - w->batch - XFLOW_SESSION_CHUNK_HEAD + XFLOW_SESSION_DELTA_MAX <= XFLOW_SESSION_MAX_CHUNK &&
	    w->used + XFLOW_SESSION_DELTA_MAX <= SESSION_BUF)
		return 0;
	batch_close(w);
	if (w->used + XFLOW_SESSION_CHUNK_HEAD + XFLOW_SESSION_DELTA_MAX > SESSION_BUF && flush(w))
		return w->error;
	w->batch = w->used;
	w->used += XFLOW_SESSION_CHUNK_HEAD;
	w->bytes += XFLOW_SESSION_CHUNK_HEAD;
	memset(&w->delta, 0, sizeof(w->delta));
	return 0;
}

int xflow_session_write_record(struct xflow_session_writer *w, const struct xflow_record *r,
			       uint64_t t_ns)
{
	if (r->ndata > XFLOW_RECORD_MAX_DATA) {
		/* A record that says more than it holds has no encoding of
		 * its differences: written whole, for any reader to refuse. */
		unsigned char *p = chunk_start(w, XFLOW_SESSION_RECORD, 8 + XFLOW_RECORD_SIZE);
		if (!p)
			return w->error;
		put64(p, t_ns);
		xflow_record_encode(r, p + 8);
	} else {
		if (w->error || batch_room(w))
			return w->error;
		size_t n = xflow_session_delta_put(&w->delta, r, t_ns, w->buf + w->used);
		w->used += n;
		w->bytes += n;
	}
	if (!w->nrecords || t_ns < w->first)
		w->first = t_ns;
	if (!w->nrecords || t_ns > w->last)
		w->last = t_ns;
	w->nrecords++;
	return 0;
}

static size_t slot(const uint64_t *tab, size_t cap, uint64_t key)
{
	size_t i = (size_t)((key * UINT64_C(0x9E3779B97F4A7C15)) >> 17) & (cap - 1);
	while (tab[i] && tab[i] != key)
		i = (i + 1) & (cap - 1);
	return i;
}

int xflow_session_writer_has_site(const struct xflow_session_writer *w, uint16_t domain,
				  uint32_t site)
{
	uint64_t key = ((uint64_t)domain << 32 | site) + 1;
	return w->cap && w->sites[slot(w->sites, w->cap, key)] == key;
}

static int remember(struct xflow_session_writer *w, uint64_t key)
{
	if (2 * (w->nsites + 1) > w->cap) {
		size_t cap = w->cap ? 2 * w->cap : 256;
		uint64_t *t = calloc(cap, sizeof(*t));
		if (!t)
			return fail(w, -ENOMEM, "the table of sites");
		for (size_t i = 0; i < w->cap; i++)
			if (w->sites[i])
				t[slot(t, cap, w->sites[i])] = w->sites[i];
		free(w->sites);
		w->sites = t;
		w->cap = cap;
	}
	w->sites[slot(w->sites, w->cap, key)] = key;
	w->nsites++;
	return 0;
}

/* Names the reader would refuse are cut or cleaned here, so that what we
 * write always reads back. */
static size_t clean(char *dst, const char *src, size_t max)
{
	size_t n = 0;
	for (; src && src[n] && n < max; n++) {
		unsigned char ch = (unsigned char)src[n];
		dst[n] = (char)(ch < 0x20 || ch == 0x7f ? '?' : ch);
	}
	return n;
}

int xflow_session_write_site(struct xflow_session_writer *w, uint16_t domain, uint32_t site,
			     const char *domain_name, const char *file, uint32_t line,
			     const char *function, uint32_t roles)
{
	uint64_t key = ((uint64_t)domain << 32 | site) + 1;
	if (w->error)
		return w->error;
	if (xflow_session_writer_has_site(w, domain, site))
		return 0;
	unsigned char p[20 + XFLOW_SESSION_MAX_DOMAIN + 2 * XFLOW_SESSION_MAX_NAME];
	memset(p, 0, 20);
	size_t nd = clean((char *)p + 20, domain_name, XFLOW_SESSION_MAX_DOMAIN);
	if (nd == 0) {
		char id[16];
		snprintf(id, sizeof(id), "dom%u", (unsigned)domain);
		nd = clean((char *)p + 20, id, XFLOW_SESSION_MAX_DOMAIN);
	}
	size_t nf = clean((char *)p + 20 + nd, file, XFLOW_SESSION_MAX_NAME);
	size_t nfn = clean((char *)p + 20 + nd + nf, function, XFLOW_SESSION_MAX_NAME);
	put16(p, domain);
	/* What the reader would refuse is written as not known. */
	if ((roles & ~(uint32_t)XFLOW_SITE_ROLES_ALL) || !(roles & XFLOW_SITE_ROLES_KNOWN))
		roles = 0;
	put16(p + 2, (uint16_t)roles);
	put32(p + 4, site);
	put32(p + 8, line);
	put16(p + 12, (uint16_t)nd);
	put16(p + 14, (uint16_t)nf);
	put16(p + 16, (uint16_t)nfn);
	int rc = remember(w, key);
	return rc ? rc : chunk(w, XFLOW_SESSION_SITE, p, 20 + nd + nf + nfn);
}

int xflow_session_write_plan_record(struct xflow_session_writer *w, const struct xflow_plan *p,
				    const struct xflow_plan_domain *d, const char *domain_name,
				    const struct xflow_record *r, uint64_t t_ns)
{
	if (!d || r->site_id >= d->nsites)
		return -EINVAL;
	int rc = 0;
	/* The roles search the bindings: once a site, not once a record. */
	if (!xflow_session_writer_has_site(w, r->domain_id, r->site_id)) {
		const struct xflow_plan_site *s = &d->sites[r->site_id];
		rc = xflow_session_write_site(w, r->domain_id, r->site_id, domain_name, s->file, s->line, s->func,
					      xflow_plan_site_roles(p, d, r->site_id));
	}
	return rc ? rc : xflow_session_write_record(w, r, t_ns);
}

int xflow_session_write_carried(struct xflow_session_writer *w,
				const uint8_t bits[XFLOW_SESSION_KINDS])
{
	uint8_t b[XFLOW_SESSION_KINDS];
	for (int k = 0; k < XFLOW_SESSION_KINDS; k++)
		b[k] = bits[k] < XFLOW_FLOWID_BITS ? bits[k] : 0;
	return chunk(w, XFLOW_SESSION_CARRIED, b, sizeof(b));
}

const char *xflow_session_writer_error(const struct xflow_session_writer *w)
{
	return w && w->error ? w->why : NULL;
}

int xflow_session_writer_free(struct xflow_session_writer *w, int commit, char *err, size_t errlen)
{
	if (!w)
		return 0;
	int rc = 0;
	if (commit && !w->error) {
		unsigned char p[8];
		put64(p, w->nrecords);
		chunk(w, XFLOW_SESSION_END, p, sizeof(p));
		/* The span goes into the header, now that it is known. */
		unsigned char span[16];
		put64(span, w->first);
		put64(span + 8, w->last);
		flush(w);
		if (!w->error) {
			ssize_t n = pwrite(w->fd, span, sizeof(span), 16);
			if (n != (ssize_t)sizeof(span))
				fail(w, n < 0 ? -errno : -EIO, "write the header's span");
		}
		/* The data reaches the disk before the name does. */
		if (!w->error && fsync(w->fd))
			fail(w, -errno, "fsync");
	}
	if (close(w->fd) && !w->error)
		fail(w, -errno, "close");
	if (commit && !w->error && rename(w->tmp, w->path))
		fail(w, -errno, "rename");
	if (!commit || w->error)
		unlink(w->tmp);
	rc = commit ? w->error : 0;
	if (rc && err)
		snprintf(err, errlen, "%s", w->why);
	free(w->sites);
	free(w->path);
	free(w->tmp);
	free(w->buf);
	free(w);
	return rc;
}
