/*
 * A session record as its differences from the one before it (format in
 * xflow/session.h, "RECORDS").  A busy server's records differ from their
 * neighbours in little: the time by a few microseconds, the flow id by
 * zero or one, the site, the thread and the flow kind mostly not at all.
 * Written so they take 10 to 20 bytes instead of the packed chunk's 56 and
 * more, and the bytes are what the kernel copies into the file's pages:
 * the biggest part of an agent's time saving a session.
 */
#include <string.h>

#include "common/session_delta.h"

/* Head byte: ndata in its low bits, then which fields are as before. */
enum {
	HEAD_NDATA = 0x07,
	HEAD_SAME_IDS = 1u << 3,  /* flow_kind, domain_id, version, thread_id, cpu_plus1 */
	HEAD_SAME_FLAGS = 1u << 4,
	HEAD_SAME_SITE = 1u << 5,
	HEAD_SAME_FLOW = 1u << 6,
	HEAD_RESERVED = 1u << 7,
};

/* Signed differences as unsigned varints, small either way. */
static uint64_t zigzag(uint64_t delta)
{
	return (delta << 1) ^ (uint64_t)-(int64_t)(delta >> 63);
}

static uint64_t unzigzag(uint64_t z)
{
	return (z >> 1) ^ (uint64_t)-(int64_t)(z & 1);
}

static uint32_t zigzag32(uint32_t delta)
{
	return (delta << 1) ^ (uint32_t)-(int32_t)(delta >> 31);
}

static uint32_t unzigzag32(uint32_t z)
{
	return (z >> 1) ^ (uint32_t)-(int32_t)(z & 1);
}

static unsigned char *put_varint(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

size_t xflow_session_delta_put(struct xflow_session_delta *d, const struct xflow_record *r, uint64_t t_ns,
			       unsigned char *out)
{
	struct xflow_record *prev = &d->prev;
	unsigned nd = r->ndata;
	unsigned head = nd;
	bool same_ids = r->flow_kind == prev->flow_kind && r->domain_id == prev->domain_id &&
			r->version == prev->version && r->thread_id == prev->thread_id &&
			r->cpu_plus1 == prev->cpu_plus1;
	head |= same_ids ? HEAD_SAME_IDS : 0;
	head |= r->flags == prev->flags ? HEAD_SAME_FLAGS : 0;
	head |= r->site_id == prev->site_id ? HEAD_SAME_SITE : 0;
	head |= r->flow_id == prev->flow_id ? HEAD_SAME_FLOW : 0;
	unsigned char *p = out;
	*p++ = (unsigned char)head;
	if (!same_ids) {
		p = put_varint(p, r->flow_kind);
		p = put_varint(p, r->domain_id);
		p = put_varint(p, r->version);
		p = put_varint(p, r->thread_id);
		p = put_varint(p, r->cpu_plus1);
	}
	if (!(head & HEAD_SAME_FLAGS))
		p = put_varint(p, r->flags);
	if (!(head & HEAD_SAME_SITE))
		p = put_varint(p, r->site_id);
	if (!(head & HEAD_SAME_FLOW))
		p = put_varint(p, zigzag(r->flow_id - prev->flow_id));
	p = put_varint(p, zigzag(t_ns - d->prev_t));
	p = put_varint(p, zigzag(r->timestamp - prev->timestamp));
	p = put_varint(p, zigzag32(r->thread_seq - prev->thread_seq));
	for (unsigned i = 0; i < nd; i++)
		p = put_varint(p, zigzag(r->data[i] - prev->data[i]));
	/* The next record is written against this one as the reader will
	 * have it: the values past ndata zero. */
	memcpy(prev, r, offsetof(struct xflow_record, data));
	for (unsigned i = 0; i < XFLOW_RECORD_MAX_DATA; i++)
		prev->data[i] = i < nd ? r->data[i] : 0;
	d->prev_t = t_ns;
	return (size_t)(p - out);
}

/* A varint of at most @max into *@v; false when the bytes end first or it
 * is longer or wider than @max allows. */
static bool get_varint(const unsigned char **pp, const unsigned char *end, uint64_t max, uint64_t *v)
{
	const unsigned char *p = *pp;
	uint64_t x = 0;
	for (unsigned shift = 0; p < end && shift < 64; shift += 7) {
		uint64_t b = *p++;
		/* The tenth byte holds bit 63 alone. */
		if (shift == 63 && b > 1)
			return false;
		x |= (b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*pp = p;
			*v = x;
			return x <= max;
		}
	}
	return false;
}

size_t xflow_session_delta_get(struct xflow_session_delta *d, const unsigned char *p, size_t n, const char **why)
{
	const unsigned char *at = p, *end = p + n;
	struct xflow_record r = d->prev;
	uint64_t v, t;
	if (!n) {
		*why = "no byte left for a record";
		return 0;
	}
	unsigned head = *p++;
	unsigned nd = head & HEAD_NDATA;
	if (head & HEAD_RESERVED) {
		*why = "the reserved bit of a record's head byte is set";
		return 0;
	}
	if (nd > XFLOW_RECORD_MAX_DATA) {
		*why = "ndata 7 in a record's head byte (at most 6)";
		return 0;
	}
	r.ndata = (uint8_t)nd;
#define GET(max, what)                                          \
	do {                                                    \
		if (!get_varint(&p, end, (max), &v)) {          \
			*why = "the " what " is cut short, or longer or wider than its field"; \
			return 0;                               \
		}                                               \
	} while (0)
	if (!(head & HEAD_SAME_IDS)) {
		GET(UINT16_MAX, "flow kind");
		r.flow_kind = (uint16_t)v;
		GET(UINT16_MAX, "domain id");
		r.domain_id = (uint16_t)v;
		GET(UINT8_MAX, "record version");
		r.version = (uint8_t)v;
		GET(UINT32_MAX, "thread id");
		r.thread_id = (uint32_t)v;
		GET(UINT32_MAX, "CPU");
		r.cpu_plus1 = (uint32_t)v;
	}
	if (!(head & HEAD_SAME_FLAGS)) {
		GET(UINT16_MAX, "flags");
		r.flags = (uint16_t)v;
	}
	if (!(head & HEAD_SAME_SITE)) {
		GET(UINT32_MAX, "site id");
		r.site_id = (uint32_t)v;
	}
	if (!(head & HEAD_SAME_FLOW)) {
		GET(UINT64_MAX, "flow id");
		r.flow_id += unzigzag(v);
	}
	GET(UINT64_MAX, "time");
	t = d->prev_t + unzigzag(v);
	GET(UINT64_MAX, "timestamp");
	r.timestamp += unzigzag(v);
	GET(UINT32_MAX, "thread sequence number");
	r.thread_seq += unzigzag32((uint32_t)v);
	for (unsigned i = 0; i < XFLOW_RECORD_MAX_DATA; i++) {
		if (i < nd) {
			GET(UINT64_MAX, "data value");
			r.data[i] += unzigzag(v);
		} else {
			r.data[i] = 0;
		}
	}
#undef GET
	d->prev = r;
	d->prev_t = t;
	return (size_t)(p - at);
}
