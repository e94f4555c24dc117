/*
 * Writing a session file (format in xflow/session.h).  stdio buffers
 * the writes: a record is one 104-byte fwrite into a buffer, so saving
 * costs the monitoring loop a copy, not a system call.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xflow/collector.h"
#include "xflow/plan.h"
#include "xflow/session.h"

#define SESSION_BUF (1u << 20)

struct xflow_session_writer {
	FILE *f;
	char *path, *tmp;
	int error;            /* the first error, sticky */
	char why[512];
	uint64_t nrecords;
	uint64_t bytes;       /* written so far */
	uint64_t first, last; /* the span of the record times */
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

static int put(struct xflow_session_writer *w, const void *p, size_t n)
{
	if (w->error)
		return w->error;
	if (fwrite(p, 1, n, w->f) != n)
		return fail(w, errno ? -errno : -EIO, "write");
	w->bytes += n;
	return 0;
}

uint64_t xflow_session_writer_bytes(const struct xflow_session_writer *w)
{
	return w->bytes;
}

/* One fwrite a chunk: xflow-agent --plan writes a record chunk for each of
 * a busy server's million records a second, and each call of stdio costs. */
static int chunk(struct xflow_session_writer *w, uint32_t type, const void *payload, size_t len)
{
	unsigned char c[XFLOW_SESSION_CHUNK_HEAD + XFLOW_SESSION_MAX_CHUNK];
	if (len > XFLOW_SESSION_MAX_CHUNK)
		return fail(w, -EINVAL, "a chunk too long");
	put32(c, type);
	put32(c + 4, (uint32_t)len);
	memcpy(c + XFLOW_SESSION_CHUNK_HEAD, payload, len);
	return put(w, c, XFLOW_SESSION_CHUNK_HEAD + len);
}

int xflow_session_writer_new(const char *path, struct xflow_session_writer **out, char *err,
			     size_t errlen)
{
	struct xflow_session_writer *w = calloc(1, sizeof(*w));
	int rc = -ENOMEM;
	if (!w)
		goto fail;
	size_t n = strlen(path) + 5;
	w->path = strdup(path);
	w->tmp = malloc(n);
	if (!w->path || !w->tmp)
		goto fail;
	snprintf(w->tmp, n, "%s.tmp", path);
	if (!(w->f = fopen(w->tmp, "wb"))) {
		rc = -errno;
		snprintf(err, errlen, "%s: %s", w->tmp, strerror(errno));
		goto out;
	}
	/* Big writes: at stdio's 4 KiB, a write(2) every 40 records. */
	setvbuf(w->f, NULL, _IOFBF, SESSION_BUF);
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
	if (w && w->f) {
		fclose(w->f);
		unlink(w->tmp);
	}
	if (w) {
		free(w->path);
		free(w->tmp);
	}
	free(w);
	return rc;
}

int xflow_session_write_record(struct xflow_session_writer *w, const struct xflow_record *r,
			       uint64_t t_ns)
{
	unsigned char p[8 + XFLOW_RECORD_SIZE];
	put64(p, t_ns);
	xflow_record_encode(r, p + 8);
	int rc = chunk(w, XFLOW_SESSION_RECORD, p, sizeof(p));
	if (rc)
		return rc;
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
		if (!w->error && fflush(w->f))
			fail(w, -errno, "write");
		if (!w->error && fseek(w->f, 16, SEEK_SET))
			fail(w, -errno, "seek to the header");
		put(w, span, sizeof(span));
		if (!w->error && fflush(w->f))
			fail(w, -errno, "write");
		/* The data reaches the disk before the name does. */
		if (!w->error && fsync(fileno(w->f)))
			fail(w, -errno, "fsync");
	}
	if (fclose(w->f) && !w->error)
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
	free(w);
	return rc;
}
