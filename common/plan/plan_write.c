/*
 * Weave plan writer: the in-memory plan → the file format of xflow/plan.h
 * (XFLOW_PLAN_VERSION).  Strings are interned in order of first use, so
 * the bytes depend only on the plan's contents.
 */
#include "xflow/plan.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct wbuf {
	unsigned char *p;
	size_t len, cap;
	bool oom;
};

static void put(struct wbuf *b, const void *src, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t ncap = b->cap ? b->cap : 4096;
		while (ncap < b->len + n)
			ncap *= 2;
		unsigned char *np = realloc(b->p, ncap);
		if (!np) {
			b->oom = true;
			return;
		}
		b->p = np;
		b->cap = ncap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void put_u8(struct wbuf *b, uint8_t v)
{
	put(b, &v, 1);
}

static void put_u16(struct wbuf *b, uint16_t v)
{
	unsigned char x[2] = { (unsigned char)v, (unsigned char)(v >> 8) };
	put(b, x, 2);
}

static void put_u32(struct wbuf *b, uint32_t v)
{
	unsigned char x[4];
	for (int i = 0; i < 4; i++)
		x[i] = (unsigned char)(v >> (8 * i));
	put(b, x, 4);
}

static void put_u64(struct wbuf *b, uint64_t v)
{
	unsigned char x[8];
	for (int i = 0; i < 8; i++)
		x[i] = (unsigned char)(v >> (8 * i));
	put(b, x, 8);
}

/* The string table: a linear-probing index over the bytes written. */
struct strs {
	struct wbuf tab;
	uint32_t *slots;     /* offset + 1, 0 = empty */
	size_t cap, n;
	bool oom;
};

static uint32_t fnv(const char *s)
{
	uint32_t h = 2166136261u;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static uint32_t str_id(struct strs *t, const char *s)
{
	if (!s || !*s || t->oom)
		return 0;
	if (t->n * 2 >= t->cap) {
		size_t ncap = t->cap ? t->cap * 2 : 256;
		uint32_t *ns = calloc(ncap, sizeof(*ns));
		if (!ns) {
			t->oom = true;
			return 0;
		}
		for (size_t i = 0; i < t->cap; i++)
			if (t->slots[i]) {
				size_t j = fnv((const char *)t->tab.p + t->slots[i] - 1) & (ncap - 1);
				while (ns[j])
					j = (j + 1) & (ncap - 1);
				ns[j] = t->slots[i];
			}
		free(t->slots);
		t->slots = ns;
		t->cap = ncap;
	}
	size_t j = fnv(s) & (t->cap - 1);
	while (t->slots[j]) {
		if (strcmp((const char *)t->tab.p + t->slots[j] - 1, s) == 0)
			return t->slots[j] - 1;
		j = (j + 1) & (t->cap - 1);
	}
	uint32_t off = (uint32_t)t->tab.len;
	put(&t->tab, s, strlen(s) + 1);
	t->slots[j] = off + 1;
	t->n++;
	return off;
}

static void put_fetch(struct wbuf *b, const struct xflow_plan_fetch *f)
{
	put_u8(b, f->kind);
	put_u8(b, f->reg);
	put_u8(b, f->size);
	put_u8(b, f->index);
	put_u8(b, f->scale);
	put_u64(b, (uint64_t)f->off);
}

uint32_t xflow_plan_fnv32(const unsigned char *p, size_t n);
uint32_t xflow_plan_fnv32(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

int xflow_plan_write(const struct xflow_plan *p, void **out, size_t *len, char *why,
		     size_t whylen)
{
	*out = NULL;
	*len = 0;
	int rc = xflow_plan_check(p, why, whylen);
	if (rc)
		return rc;
	struct wbuf b = { 0 };
	struct strs st = { 0 };
	put_u8(&st.tab, 0);      /* offset 0: the empty string */
	unsigned char hdr[XFLOW_PLAN_HEADER_SIZE] = { 0 };
	put(&b, hdr, sizeof(hdr));
	for (uint32_t i = 0; i < p->nflows; i++)
		put_u32(&b, str_id(&st, p->flows[i]));
	for (uint32_t i = 0; i < p->nfields; i++) {
		put_u32(&b, str_id(&st, p->fields[i].sname));
		put_u32(&b, str_id(&st, p->fields[i].member));
	}
	for (uint32_t i = 0; i < p->nadvice; i++) {
		const struct xflow_plan_advice *a = &p->advice[i];
		const struct xflow_bc_prog *g = &a->prog;
		put_u32(&b, a->origin);
		put_u32(&b, (uint32_t)a->flow);
		put_u32(&b, a->flags);
		put_u32(&b, (uint32_t)a->after_store_field);
		put_u32(&b, a->rec_flags);
		put_u32(&b, str_id(&st, a->file));
		put_u32(&b, a->line);
		put_u32(&b, a->col);
		put_u32(&b, g->ninsns);
		put_u32(&b, g->nconsts);
		put_u32(&b, g->nlocals);
		put_u32(&b, g->ninputs);
		for (uint32_t k = 0; k < g->ninsns; k++) {
			put_u8(&b, g->insns[k].op);
			put_u8(&b, g->insns[k].a);
			put_u16(&b, g->insns[k].b);
			put_u32(&b, (uint32_t)g->insns[k].k);
		}
		for (uint32_t k = 0; k < g->nconsts; k++)
			put_u64(&b, g->consts[k]);
		for (uint32_t k = 0; k < g->nlocals; k++)
			put_u8(&b, g->local_types[k]);
		for (uint32_t k = 0; k < g->ninputs; k++) {
			put_u8(&b, g->inputs[k].kind);
			put_u8(&b, g->inputs[k].type);
			put_u32(&b, str_id(&st, g->inputs[k].local));
			put_u32(&b, str_id(&st, g->inputs[k].sname));
		}
	}
	for (uint32_t d = 0; d < p->ndomains; d++) {
		const struct xflow_plan_domain *dm = &p->domains[d];
		put_u32(&b, str_id(&st, dm->name));
		put_u32(&b, dm->nbinaries);
		put_u32(&b, dm->nsites);
		put_u32(&b, dm->nbindings);
		put_u32(&b, dm->nfetches);
		for (uint32_t i = 0; i < dm->nbinaries; i++) {
			put_u32(&b, str_id(&st, dm->binaries[i].path));
			put_u32(&b, str_id(&st, dm->binaries[i].build_id));
			put_u32(&b, dm->binaries[i].flags);
			put_u64(&b, dm->binaries[i].size);
			put_u64(&b, dm->binaries[i].code_hash);
		}
		for (uint32_t i = 0; i < p->nfields; i++) {
			const struct xflow_plan_layout *l = &dm->layouts[i];
			put_u64(&b, (uint64_t)l->offset);
			put_u32(&b, l->size);
			put_u32(&b, l->bit_offset);
			put_u32(&b, l->bit_size);
			put_u32(&b, l->flags);
			put_u32(&b, l->nelems);
			put_u32(&b, l->stride);
		}
		for (uint32_t i = 0; i < dm->nsites; i++) {
			const struct xflow_plan_site *s = &dm->sites[i];
			put_u64(&b, s->addr);
			put_u32(&b, s->binary);
			put_u8(&b, s->kind);
			put_u8(&b, s->len);
			put_u8(&b, s->when_mask);
			put_u32(&b, str_id(&st, s->file));
			put_u32(&b, s->line);
			put_u32(&b, str_id(&st, s->func));
			put_u32(&b, str_id(&st, s->inlined_into));
			put_u32(&b, str_id(&st, s->insn));
			put_u32(&b, (uint32_t)s->field);
			put_u32(&b, str_id(&st, s->sname));
			put_u32(&b, str_id(&st, s->member));
			put_u32(&b, s->moff);
			put_u32(&b, s->msize);
			put_fetch(&b, &s->target);
		}
		for (uint32_t i = 0; i < dm->nbindings; i++) {
			const struct xflow_plan_binding *x = &dm->bindings[i];
			put_u32(&b, x->site);
			put_u32(&b, x->advice);
			put_u8(&b, x->when);
			put_u8(&b, x->ninputs);
			put_u32(&b, x->first_fetch);
		}
		for (uint32_t i = 0; i < dm->nfetches; i++)
			put_fetch(&b, &dm->fetches[i]);
	}
	put_u8(&st.tab, 0);      /* the table ends with NUL even if empty */
	size_t stroff = b.len;
	put(&b, st.tab.p, st.tab.len);
	if (b.oom || st.oom || st.tab.oom || b.len > UINT32_MAX) {
		free(b.p);
		free(st.tab.p);
		free(st.slots);
		return -ENOMEM;
	}
	struct wbuf h = { 0 };
	put(&h, XFLOW_PLAN_MAGIC, 8);
	put_u32(&h, XFLOW_PLAN_VERSION);
	put_u32(&h, XFLOW_BC_VERSION);
	put_u64(&h, b.len);
	put_u32(&h, (uint32_t)stroff);
	put_u32(&h, (uint32_t)st.tab.len);
	put_u32(&h, p->nflows);
	put_u32(&h, p->nfields);
	put_u32(&h, p->nadvice);
	put_u32(&h, p->ndomains);
	put_u32(&h, xflow_plan_fnv32(b.p + XFLOW_PLAN_HEADER_SIZE, b.len - XFLOW_PLAN_HEADER_SIZE));
	put_u32(&h, 0);
	put_u64(&h, 0);
	if (h.oom) {
		free(b.p);
		free(st.tab.p);
		free(st.slots);
		return -ENOMEM;
	}
	memcpy(b.p, h.p, XFLOW_PLAN_HEADER_SIZE);
	free(h.p);
	free(st.tab.p);
	free(st.slots);
	*out = b.p;
	*len = b.len;
	return 0;
}

int xflow_plan_write_file(const struct xflow_plan *p, const char *path, char *why,
			  size_t whylen)
{
	void *buf;
	size_t len;
	int rc = xflow_plan_write(p, &buf, &len, why, whylen);
	if (rc)
		return rc;
	size_t plen = strlen(path);
	char *tmp = malloc(plen + 16);
	if (!tmp) {
		free(buf);
		return -ENOMEM;
	}
	snprintf(tmp, plen + 16, "%s.tmpXXXXXX", path);
	int fd = mkstemp(tmp);
	if (fd < 0) {
		rc = -errno;
		goto out;
	}
	size_t done = 0;
	while (done < len) {
		ssize_t w = write(fd, (const char *)buf + done, len - done);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			rc = -errno;
			break;
		}
		done += (size_t)w;
	}
	if (rc == 0 && fsync(fd) != 0)
		rc = -errno;
	if (close(fd) != 0 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) != 0)
		rc = -errno;
	if (rc != 0)
		unlink(tmp);
	if (rc != 0 && why)
		snprintf(why, whylen, "%s: %s", path, strerror(-rc));
out:
	free(tmp);
	free(buf);
	return rc;
}
