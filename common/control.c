/*
 * The control protocol's messages (xflow/control.h): encoding, and a
 * decoder that treats every byte as hostile.
 *
 * A decoded message is one allocation: the struct, then an arena its
 * strings and arrays are carved from.  Every decoded element is at most a
 * few times the bytes it took on the wire, so an arena of a fixed multiple
 * of the payload is enough, and a hostile count cannot make the decoder
 * allocate more than that: counts are checked against what is left of the
 * payload before anything is carved.
 */
#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xflow/control.h"

/* ---- encoding ------------------------------------------------------------ */

struct wbuf {
	unsigned char *p;
	size_t len, cap;
	int err;
};

static void w_put(struct wbuf *w, const void *src, size_t n)
{
	if (w->err)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 256;
		while (cap < w->len + n)
			cap *= 2;
		unsigned char *np = realloc(w->p, cap);
		if (!np) {
			w->err = -ENOMEM;
			return;
		}
		w->p = np;
		w->cap = cap;
	}
	memcpy(w->p + w->len, src, n);
	w->len += n;
}

static void w_u8(struct wbuf *w, uint8_t v) { w_put(w, &v, 1); }

static void w_u16(struct wbuf *w, uint16_t v)
{
	unsigned char b[2] = { (unsigned char)v, (unsigned char)(v >> 8) };
	w_put(w, b, 2);
}

static void w_u32(struct wbuf *w, uint32_t v)
{
	unsigned char b[4];
	for (int i = 0; i < 4; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	w_put(w, b, 4);
}

static void w_u64(struct wbuf *w, uint64_t v)
{
	unsigned char b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	w_put(w, b, 8);
}

static void w_str(struct wbuf *w, const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n > XFLOW_CTL_MAX_STR) {
		w->err = -EINVAL;
		return;
	}
	w_u16(w, (uint16_t)n);
	w_put(w, s ? s : "", n);
}

static void w_target(struct wbuf *w, const struct xflow_ctl_target *t)
{
	if (t->state > XFLOW_CTL_TARGET_STATE_MAX)
		w->err = -EINVAL;
	w_u32(w, t->pid);
	w_u8(w, t->state);
	w_u32(w, (uint32_t)t->status);
	w_str(w, t->exe);
}

static void w_targets(struct wbuf *w, uint32_t n, const struct xflow_ctl_target *t)
{
	if (n > XFLOW_CTL_MAX_TARGETS || (n && !t)) {
		w->err = -EINVAL;
		return;
	}
	w_u32(w, n);
	for (uint32_t i = 0; i < n; i++)
		w_target(w, &t[i]);
}

static void w_reply(struct wbuf *w, const struct xflow_ctl_reply *r)
{
	w_u32(w, r->req_seq);
	w_u16(w, r->req_type);
	w_u32(w, (uint32_t)r->status);
	w_str(w, r->message);
	switch (r->req_type) {
	case XFLOW_CTL_PLAN_LOAD: {
		const struct xflow_ctl_plan_result *p = &r->u.plan;
		if (p->nfailed > XFLOW_CTL_MAX_FAILED || p->nfailed > p->nfailed_total ||
		    (p->nfailed && !p->failed)) {
			w->err = -EINVAL;
			return;
		}
		w_u32(w, p->sites);
		w_u32(w, p->installed);
		w_u32(w, p->nfailed_total);
		w_u32(w, p->nfailed);
		for (uint32_t i = 0; i < p->nfailed; i++) {
			w_u32(w, p->failed[i].site);
			w_u32(w, (uint32_t)p->failed[i].err);
			w_str(w, p->failed[i].why);
		}
		break;
	}
	case XFLOW_CTL_ASPECT_SET:
		w_u32(w, r->u.aspect_sites);
		break;
	case XFLOW_CTL_STATS: {
		const struct xflow_ctl_stats *s = &r->u.stats;
		if (s->nadvice > XFLOW_CTL_MAX_ADVICE || (s->nadvice && !s->advice)) {
			w->err = -EINVAL;
			return;
		}
		w_u64(w, s->records);
		w_u64(w, s->ring_dropped);
		w_u64(w, s->faults_total);
		w_u32(w, s->nadvice);
		for (uint32_t i = 0; i < s->nadvice; i++) {
			const struct xflow_ctl_advice_stats *a = &s->advice[i];
			w_u64(w, a->hits);
			w_u64(w, a->drops);
			w_u64(w, a->faults);
			w_u32(w, a->sites);
			w_u8(w, a->enabled ? 1 : 0);
		}
		w_targets(w, s->ntargets, s->targets);
		w_u64(w, s->clock_now);
		w_u8(w, s->xen_time ? 1 : 0);
		w_u64(w, s->xen_time ? (uint64_t)s->xen_minus_mono : 0);
		break;
	}
	default:
		break;
	}
}

int xflow_ctl_encode(const struct xflow_ctl_msg *m, void **out, size_t *len)
{
	struct wbuf w = { 0 };
	*out = NULL;
	*len = 0;
	/* The header, its length patched in at the end. */
	w_u32(&w, XFLOW_CTL_MAGIC);
	w_u16(&w, XFLOW_CTL_VERSION);
	w_u16(&w, m->type);
	w_u32(&w, m->seq);
	w_u32(&w, 0);
	w_u32(&w, 0);
	w_u32(&w, 0);
	switch (m->type) {
	case XFLOW_CTL_HELLO: {
		const struct xflow_ctl_hello *h = &m->u.hello;
		if (h->ring_offer > XFLOW_CTL_RING_OFFER_MAX || (h->clock != 1 && h->clock != 2))
			w.err = -EINVAL;
		w_u16(&w, h->domain_id);
		w_str(&w, h->domain);
		w_u32(&w, h->agent_pid);
		w_u16(&w, h->clock);
		w_u64(&w, h->tsc_hz);
		w_u64(&w, h->base_tick);
		w_u64(&w, h->base_ns);
		w_u16(&w, h->ring_offer);
		w_u32(&w, h->slot_size);
		w_u32(&w, h->nslots);
		w_u64(&w, h->region_size);
		w_targets(&w, h->ntargets, h->targets);
		w_str(&w, h->kernel_release);
		if (h->nmodules > XFLOW_CTL_MAX_MODULES || (h->nmodules && !h->modules))
			w.err = w.err ? w.err : -EINVAL;
		w_u32(&w, h->nmodules);
		for (uint32_t i = 0; i < h->nmodules && !w.err; i++) {
			if (!xflow_ctl_module_name_ok(h->modules[i]))
				w.err = -EINVAL;
			w_str(&w, h->modules[i]);
		}
		if (h->kernel_release && !xflow_ctl_release_ok(h->kernel_release))
			w.err = w.err ? w.err : -EINVAL;
		w_u8(&w, h->xen_time ? 1 : 0);
		w_u64(&w, h->xen_time ? (uint64_t)h->xen_minus_mono : 0);
		break;
	}
	case XFLOW_CTL_PLAN_LOAD:
		if (m->u.plan_load.plan_len > XFLOW_CTL_MAX_PAYLOAD - 8 ||
		    (m->u.plan_load.plan_len && !m->u.plan_load.plan))
			w.err = -EINVAL;
		w_u32(&w, m->u.plan_load.flags);
		w_u32(&w, m->u.plan_load.plan_len);
		if (m->u.plan_load.plan_len)
			w_put(&w, m->u.plan_load.plan, m->u.plan_load.plan_len);
		break;
	case XFLOW_CTL_ASPECT_SET:
		if (m->u.aspect.kind > XFLOW_CTL_ASPECT_FLOW || m->u.aspect.enabled > 1)
			w.err = -EINVAL;
		w_u8(&w, m->u.aspect.kind);
		w_u8(&w, m->u.aspect.enabled);
		w_u32(&w, m->u.aspect.index);
		break;
	case XFLOW_CTL_STATS:
	case XFLOW_CTL_DETACH:
		break;
	case XFLOW_CTL_REPLY:
		w_reply(&w, &m->u.reply);
		break;
	case XFLOW_CTL_EVENT:
		if (m->u.event.kind < 1 || m->u.event.kind > XFLOW_CTL_EV_KIND_MAX)
			w.err = -EINVAL;
		w_u16(&w, m->u.event.kind);
		w_u32(&w, m->u.event.pid);
		w_u32(&w, (uint32_t)m->u.event.status);
		w_u32(&w, m->u.event.sites);
		w_str(&w, m->u.event.message);
		break;
	default:
		w.err = -EINVAL;
	}
	if (!w.err && w.len - XFLOW_CTL_HDR_SIZE > XFLOW_CTL_MAX_PAYLOAD)
		w.err = -EINVAL;
	if (w.err) {
		free(w.p);
		return w.err;
	}
	uint32_t plen = (uint32_t)(w.len - XFLOW_CTL_HDR_SIZE);
	for (int i = 0; i < 4; i++)
		w.p[12 + i] = (unsigned char)(plen >> (8 * i));
	*out = w.p;
	*len = w.len;
	return 0;
}

/* ---- decoding ------------------------------------------------------------ */

/* A refusal's reason is a static string: the field cut short, for a
 * TRUNCATED fault, else the rule broken (FIELD unless said otherwise). */
struct rbuf {
	const unsigned char *p;
	size_t left;
	unsigned char *arena;
	size_t arena_left;
	const char *why;
	enum xflow_ctl_fault_kind kind;
};

/* The payload ends before @what's @n bytes. */
static void r_cut(struct rbuf *r, const char *what)
{
	if (!r->why) {
		r->why = what;
		r->kind = XFLOW_CTL_FAULT_TRUNCATED;
	}
}

static int r_take(struct rbuf *r, void *dst, size_t n, const char *what)
{
	if (r->why)
		return 0;
	if (n > r->left) {
		r_cut(r, what);
		return 0;
	}
	memcpy(dst, r->p, n);
	r->p += n;
	r->left -= n;
	return 1;
}

static uint8_t r_u8(struct rbuf *r, const char *what)
{
	unsigned char b = 0;
	r_take(r, &b, 1, what);
	return b;
}

static uint16_t r_u16(struct rbuf *r, const char *what)
{
	unsigned char b[2] = { 0, 0 };
	r_take(r, b, 2, what);
	return (uint16_t)(b[0] | b[1] << 8);
}

static uint32_t r_u32(struct rbuf *r, const char *what)
{
	unsigned char b[4] = { 0 };
	r_take(r, b, 4, what);
	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static uint64_t r_u64(struct rbuf *r, const char *what)
{
	uint64_t lo = r_u32(r, what);
	return lo | (uint64_t)r_u32(r, what) << 32;
}

static void *r_alloc(struct rbuf *r, size_t n)
{
	n = (n + 7) & ~(size_t)7;
	if (r->why)
		return NULL;
	if (n > r->arena_left) {
		r->why = "decoded message larger than its bound";
		return NULL;
	}
	void *p = r->arena;
	r->arena += n;
	r->arena_left -= n;
	return p;
}

static const char *r_str(struct rbuf *r, const char *what)
{
	uint16_t n = r_u16(r, what);
	if (r->why)
		return NULL;
	if (n <= XFLOW_CTL_MAX_STR && n > r->left) {
		r_cut(r, what);
		return NULL;
	}
	if (n > XFLOW_CTL_MAX_STR) {
		r->why = what;
		return NULL;
	}
	if (memchr(r->p, 0, n)) {
		r->why = what;
		return NULL;
	}
	char *s = r_alloc(r, (size_t)n + 1);
	if (!s)
		return NULL;
	memcpy(s, r->p, n);
	s[n] = 0;
	r->p += n;
	r->left -= n;
	return s;
}

/* A count of elements of at least @min_wire bytes each, within @max. */
static uint32_t r_count(struct rbuf *r, uint32_t max, size_t min_wire, const char *what)
{
	uint32_t n = r_u32(r, what);
	if (r->why)
		return 0;
	if (n <= max && (size_t)n * min_wire > r->left) {
		r_cut(r, what);
		return 0;
	}
	if (n > max) {
		r->why = what;
		return 0;
	}
	return n;
}

static const struct xflow_ctl_target *r_targets(struct rbuf *r, uint32_t *nout)
{
	uint32_t n = r_count(r, XFLOW_CTL_MAX_TARGETS, 11, "target count");
	*nout = 0;
	if (r->why || n == 0)
		return NULL;
	struct xflow_ctl_target *t = r_alloc(r, n * sizeof(*t));
	if (!t)
		return NULL;
	for (uint32_t i = 0; i < n && !r->why; i++) {
		t[i].pid = r_u32(r, "target pid");
		t[i].state = r_u8(r, "target state");
		t[i].status = (int32_t)r_u32(r, "target status");
		t[i].exe = r_str(r, "target exe");
		if (!r->why && t[i].state > XFLOW_CTL_TARGET_STATE_MAX)
			r->why = "unknown target state";
	}
	*nout = n;
	return t;
}

/* Module names end up in the monitor's kernel:... BTF spec (weaver/jp/kbtf.h),
 * where '+', '/' and '?' mean something: only what the kernel's names use. */
bool xflow_ctl_module_name_ok(const char *s)
{
	size_t n = s ? strlen(s) : 0;
	if (n == 0 || n > XFLOW_CTL_MAX_MODNAME)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
			return false;
	return true;
}

bool xflow_ctl_release_ok(const char *s)
{
	for (; s && *s; s++)
		if (*s <= ' ' || *s > '~' || *s == '/')
			return false;
	return true;
}

static const char *const *r_modules(struct rbuf *r, uint32_t *nout)
{
	uint32_t n = r_count(r, XFLOW_CTL_MAX_MODULES, 3, "hello module count");
	*nout = 0;
	if (r->why || n == 0)
		return NULL;
	const char **v = r_alloc(r, n * sizeof(*v));
	if (!v)
		return NULL;
	for (uint32_t i = 0; i < n && !r->why; i++) {
		v[i] = r_str(r, "hello module name");
		if (!r->why && !xflow_ctl_module_name_ok(v[i]))
			r->why = "hello module name empty, too long or not [A-Za-z0-9_-]";
	}
	*nout = n;
	return v;
}

/* The xen_time pair (version 4): said or not, and the value only when
 * said, so that a frame has one encoding. */
static bool r_xen_time(struct rbuf *r, int64_t *v, bool hello)
{
	uint8_t said = r_u8(r, hello ? "hello xen_time" : "stats xen_time");
	*v = (int64_t)r_u64(r, hello ? "hello xen_minus_mono" : "stats xen_minus_mono");
	if (r->why)
		return false;
	if (said > 1 || (!said && *v))
		r->why = hello ? "hello xen_time is not 0 or 1, or a value not said"
			       : "stats xen_time is not 0 or 1, or a value not said";
	return said == 1;
}

static void r_reply(struct rbuf *r, struct xflow_ctl_reply *rp)
{
	rp->req_seq = r_u32(r, "reply req_seq");
	rp->req_type = r_u16(r, "reply req_type");
	rp->status = (int32_t)r_u32(r, "reply status");
	rp->message = r_str(r, "reply message");
	if (r->why)
		return;
	if (rp->status > 0 || rp->status < -4095) {
		r->why = "reply status is not 0 or a negative errno";
		return;
	}
	switch (rp->req_type) {
	case XFLOW_CTL_PLAN_LOAD: {
		struct xflow_ctl_plan_result *p = &rp->u.plan;
		p->sites = r_u32(r, "plan sites");
		p->installed = r_u32(r, "plan installed");
		p->nfailed_total = r_u32(r, "plan failed total");
		p->nfailed = r_count(r, XFLOW_CTL_MAX_FAILED, 10, "plan failed count");
		if (r->why)
			return;
		if (p->nfailed > p->nfailed_total || p->installed > p->sites) {
			r->why = "plan result counts inconsistent";
			return;
		}
		if (!p->nfailed)
			return;
		struct xflow_ctl_site_fail *f = r_alloc(r, p->nfailed * sizeof(*f));
		if (!f)
			return;
		for (uint32_t i = 0; i < p->nfailed && !r->why; i++) {
			f[i].site = r_u32(r, "failed site");
			f[i].err = (int32_t)r_u32(r, "failed site errno");
			f[i].why = r_str(r, "failed site reason");
			if (!r->why && (f[i].site >= p->sites || f[i].err > 0 || f[i].err < -4095))
				r->why = "failed site out of range";
		}
		p->failed = f;
		break;
	}
	case XFLOW_CTL_ASPECT_SET:
		rp->u.aspect_sites = r_u32(r, "aspect sites");
		break;
	case XFLOW_CTL_STATS: {
		struct xflow_ctl_stats *s = &rp->u.stats;
		s->records = r_u64(r, "stats records");
		s->ring_dropped = r_u64(r, "stats dropped");
		s->faults_total = r_u64(r, "stats faults");
		s->nadvice = r_count(r, XFLOW_CTL_MAX_ADVICE, 29, "stats advice count");
		if (r->why)
			return;
		if (s->nadvice) {
			struct xflow_ctl_advice_stats *a = r_alloc(r, s->nadvice * sizeof(*a));
			if (!a)
				return;
			for (uint32_t i = 0; i < s->nadvice && !r->why; i++) {
				a[i].hits = r_u64(r, "advice hits");
				a[i].drops = r_u64(r, "advice drops");
				a[i].faults = r_u64(r, "advice faults");
				a[i].sites = r_u32(r, "advice sites");
				a[i].enabled = r_u8(r, "advice enabled");
				if (!r->why && a[i].enabled > 1)
					r->why = "advice enabled is not 0 or 1";
			}
			s->advice = a;
		}
		s->targets = r_targets(r, &s->ntargets);
		s->clock_now = r_u64(r, "stats clock");
		s->xen_time = r_xen_time(r, &s->xen_minus_mono, false);
		break;
	}
	case XFLOW_CTL_HELLO:
	case XFLOW_CTL_DETACH:
		break;
	default:
		r->why = "reply to an unknown request type";
	}
}

/* Refuse with @rc: @kind, @why in *@f. */
static int refuse(struct xflow_ctl_fault *f, int rc, enum xflow_ctl_fault_kind kind, const char *why)
{
	f->kind = kind;
	f->why = why;
	return rc;
}

int xflow_ctl_header_fault(const void *hdr, uint32_t *payload_len, struct xflow_ctl_fault *f)
{
	struct rbuf r = { .p = hdr, .left = XFLOW_CTL_HDR_SIZE };
	uint32_t magic = r_u32(&r, "");
	uint16_t version = r_u16(&r, ""), type = r_u16(&r, "");
	(void)r_u32(&r, "");
	uint32_t len = r_u32(&r, ""), flags = r_u32(&r, ""), reserved = r_u32(&r, "");
	if (payload_len)
		*payload_len = len;
	if (magic != XFLOW_CTL_MAGIC)
		return refuse(f, -EPROTO, XFLOW_CTL_FAULT_MAGIC, "bad magic");
	if (version != XFLOW_CTL_VERSION)
		return refuse(f, -EPROTO, XFLOW_CTL_FAULT_VERSION, "unknown protocol version");
	if (type < 1 || type > XFLOW_CTL_TYPE_MAX)
		return refuse(f, -EBADMSG, XFLOW_CTL_FAULT_TYPE, "unknown message type");
	if (len > XFLOW_CTL_MAX_PAYLOAD)
		return refuse(f, -EBADMSG, XFLOW_CTL_FAULT_LENGTH, "payload length over the maximum");
	if (flags || reserved)
		return refuse(f, -EBADMSG, XFLOW_CTL_FAULT_RESERVED, "reserved header bits set");
	return refuse(f, 0, XFLOW_CTL_FAULT_NONE, NULL);
}

int xflow_ctl_header_check(const void *hdr, uint32_t *payload_len, const char **why)
{
	struct xflow_ctl_fault f;
	int rc = xflow_ctl_header_fault(hdr, payload_len, &f);
	if (why)
		*why = f.why;
	return rc;
}

int xflow_ctl_decode(const void *frame, size_t len, const int *fds, int nfds,
		     struct xflow_ctl_msg **out, const char **why)
{
	struct xflow_ctl_fault f;
	int rc = xflow_ctl_decode_fault(frame, len, fds, nfds, out, &f);
	if (why)
		*why = f.why;
	return rc;
}

int xflow_ctl_decode_fault(const void *frame, size_t len, const int *fds, int nfds,
			   struct xflow_ctl_msg **out, struct xflow_ctl_fault *f)
{
	uint32_t plen;
	*out = NULL;
	if (len < XFLOW_CTL_HDR_SIZE)
		return refuse(f, -EBADMSG, XFLOW_CTL_FAULT_TRUNCATED, "frame shorter than its header");
	int rc = xflow_ctl_header_fault(frame, &plen, f);
	if (rc)
		return rc;
	if ((size_t)plen != len - XFLOW_CTL_HDR_SIZE)
		return refuse(f, -EBADMSG, XFLOW_CTL_FAULT_LENGTH, "payload length does not match the frame");
	if (nfds < 0 || nfds > XFLOW_CTL_MAX_FDS)
		return refuse(f, -EBADMSG, XFLOW_CTL_FAULT_FDS, "too many descriptors");
	size_t arena = (size_t)plen * 4 + 256;
	struct xflow_ctl_msg *m = calloc(1, sizeof(*m) + arena);
	if (!m)
		return refuse(f, -ENOMEM, XFLOW_CTL_FAULT_NONE, NULL);
	for (int i = 0; i < XFLOW_CTL_MAX_FDS; i++)
		m->fds[i] = -1;
	const unsigned char *b = frame;
	m->type = (uint16_t)(b[6] | b[7] << 8);
	m->seq = (uint32_t)b[8] | (uint32_t)b[9] << 8 | (uint32_t)b[10] << 16 | (uint32_t)b[11] << 24;
	struct rbuf r = { .p = b + XFLOW_CTL_HDR_SIZE, .left = plen,
			  .arena = (unsigned char *)(m + 1), .arena_left = arena };
	int want_fds = 0;
	switch (m->type) {
	case XFLOW_CTL_HELLO: {
		struct xflow_ctl_hello *h = &m->u.hello;
		h->domain_id = r_u16(&r, "hello domain id");
		h->domain = r_str(&r, "hello domain name");
		h->agent_pid = r_u32(&r, "hello agent pid");
		h->clock = r_u16(&r, "hello clock");
		h->tsc_hz = r_u64(&r, "hello tsc_hz");
		h->base_tick = r_u64(&r, "hello base tick");
		h->base_ns = r_u64(&r, "hello base ns");
		h->ring_offer = r_u16(&r, "hello ring offer");
		h->slot_size = r_u32(&r, "hello slot size");
		h->nslots = r_u32(&r, "hello slots");
		h->region_size = r_u64(&r, "hello region size");
		h->targets = r_targets(&r, &h->ntargets);
		h->kernel_release = r_str(&r, "hello kernel release");
		h->modules = r_modules(&r, &h->nmodules);
		h->xen_time = r_xen_time(&r, &h->xen_minus_mono, true);
		if (r.why)
			break;
		if (!xflow_ctl_release_ok(h->kernel_release))
			r.why = "hello kernel release not printable, or with a space or '/'";
		else if (!h->domain || !h->domain[0])
			r.why = "hello without a domain name";
		else if (h->clock != 1 && h->clock != 2)
			r.why = "hello clock unknown";
		else if (h->clock == 1 && h->tsc_hz == 0)
			r.why = "hello TSC clock without a frequency";
		else if (h->ring_offer > XFLOW_CTL_RING_OFFER_MAX)
			r.why = "hello ring offer unknown";
		else if (h->ring_offer == XFLOW_CTL_RING_LOCAL)
			want_fds = XFLOW_CTL_HELLO_NFDS;
		break;
	}
	case XFLOW_CTL_PLAN_LOAD:
		m->u.plan_load.flags = r_u32(&r, "plan flags");
		m->u.plan_load.plan_len = r_u32(&r, "plan length");
		if (r.why)
			break;
		if (m->u.plan_load.flags)
			r.why = "plan flags not zero";
		else if (m->u.plan_load.plan_len != r.left)
			r.why = "plan length does not match the payload";
		else {
			m->u.plan_load.plan = r.p;
			/* The plan stays in the frame: copy it into the arena. */
			void *copy = r_alloc(&r, r.left);
			if (copy) {
				memcpy(copy, r.p, r.left);
				m->u.plan_load.plan = copy;
				r.p += r.left;
				r.left = 0;
			}
		}
		break;
	case XFLOW_CTL_ASPECT_SET:
		m->u.aspect.kind = r_u8(&r, "aspect kind");
		m->u.aspect.enabled = r_u8(&r, "aspect enabled");
		m->u.aspect.index = r_u32(&r, "aspect index");
		if (!r.why && (m->u.aspect.kind > XFLOW_CTL_ASPECT_FLOW || m->u.aspect.enabled > 1))
			r.why = "aspect kind or state unknown";
		break;
	case XFLOW_CTL_STATS:
	case XFLOW_CTL_DETACH:
		break;
	case XFLOW_CTL_REPLY:
		r_reply(&r, &m->u.reply);
		break;
	case XFLOW_CTL_EVENT:
		m->u.event.kind = r_u16(&r, "event kind");
		m->u.event.pid = r_u32(&r, "event pid");
		m->u.event.status = (int32_t)r_u32(&r, "event status");
		m->u.event.sites = r_u32(&r, "event sites");
		m->u.event.message = r_str(&r, "event message");
		if (!r.why && (m->u.event.kind < 1 || m->u.event.kind > XFLOW_CTL_EV_KIND_MAX))
			r.why = "event kind unknown";
		break;
	}
	if (!r.why && r.left) {
		r.why = "bytes after the last field";
		r.kind = XFLOW_CTL_FAULT_TRAILING;
	}
	if (!r.why && nfds != want_fds) {
		r.why = nfds < want_fds ? "ring descriptors missing" : "unexpected descriptors";
		r.kind = XFLOW_CTL_FAULT_FDS;
	}
	if (r.why) {
		free(m);
		return refuse(f, -EBADMSG, r.kind ? r.kind : XFLOW_CTL_FAULT_FIELD, r.why);
	}
	for (int i = 0; i < nfds; i++)
		m->fds[i] = fds[i];
	m->nfds = nfds;
	*out = m;
	return refuse(f, 0, XFLOW_CTL_FAULT_NONE, NULL);
}

void xflow_ctl_msg_free(struct xflow_ctl_msg *m)
{
	if (!m)
		return;
	for (int i = 0; i < m->nfds && i < XFLOW_CTL_MAX_FDS; i++)
		if (m->fds[i] >= 0)
			close(m->fds[i]);
	free(m);
}

const char *xflow_ctl_type_name(unsigned type)
{
	static const char *const names[] = { "?", "HELLO", "PLAN_LOAD", "ASPECT_SET", "STATS",
					     "DETACH", "REPLY", "EVENT" };
	return type <= XFLOW_CTL_TYPE_MAX ? names[type] : "?";
}
