/*
 * The per-vCPU timelines of Xen's scheduler and the split of a hop over
 * them.  See tui/sched_join.h for the contract.
 *
 * A timeline is a ring of (time, state) entries, each the state entered
 * then; entries are in time order (an event older than its vCPU's last is
 * counted and makes the vCPU's state unknown from its last entry on, as
 * a loss does).  A runnable entry is given its culprit when it ends: the
 * previous vCPU of the switch that let it run.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tui/sched_join.h"

#define NONE UINT32_MAX
#define IDLE_DOMAIN 32767
#define EVTCHN_OP 32
#define NCULPRITS 4

/* The states of a timeline: Xen's runstates, and one for "not known". */
enum { S_RUNNING, S_RUNNABLE, S_BLOCKED, S_OFFLINE, S_UNKNOWN };

struct ent {
	uint64_t t;
	uint8_t state;
	uint8_t has_culprit; /* runnable, ended by a switch from another vCPU */
	uint16_t pcpu;       /* runnable: the pCPU it then ran on */
	uint16_t cdom, cvcpu;
};

struct vcpu {
	uint16_t dom, vcpu;
	uint64_t n;      /* entries ever pushed; ring[k % per_vcpu] */
	struct ent *ring;
	uint64_t nhc;    /* evtchn_op times ever pushed */
	uint64_t *hc;
};

struct pcpu {
	uint32_t cur;    /* the vCPU running there (index), or NONE */
	uint16_t prev_dom, prev_vcpu, next_dom, next_vcpu; /* its last switch */
	int have_switch;
};

struct xft_sj {
	struct xft_sj_limits lim;
	struct xft_sj_stats st;
	uint64_t bytes;
	uint64_t watermark;
	struct vcpu *v;
	uint32_t nv;
	uint32_t *slots; /* hash of (dom, vcpu): index + 1, 0 empty */
	uint32_t mask;
	struct ent *ents;
	uint64_t *hcs;
	struct pcpu *p;
	/* The clock checks of the last two windows. */
	uint64_t err_cur, err_prev;
	uint32_t err_n;
};

/* --- timelines ------------------------------------------------------------- */

static uint32_t vhash(uint16_t dom, uint16_t vcpu)
{
	return (uint32_t)((((uint64_t)dom << 16 | vcpu) * UINT64_C(0x9E3779B97F4A7C15)) >> 40);
}

static uint32_t vcpu_find(const struct xft_sj *j, uint16_t dom, uint16_t vcpu)
{
	for (uint32_t s = vhash(dom, vcpu) & j->mask;; s = (s + 1) & j->mask) {
		uint32_t i = j->slots[s];
		if (!i)
			return NONE;
		if (j->v[i - 1].dom == dom && j->v[i - 1].vcpu == vcpu)
			return i - 1;
	}
}

static uint32_t vcpu_get(struct xft_sj *j, uint16_t dom, uint16_t vcpu)
{
	uint32_t s = vhash(dom, vcpu) & j->mask;
	for (;; s = (s + 1) & j->mask) {
		uint32_t i = j->slots[s];
		if (!i)
			break;
		if (j->v[i - 1].dom == dom && j->v[i - 1].vcpu == vcpu)
			return i - 1;
	}
	if (j->nv == j->lim.max_vcpus) {
		j->st.no_vcpu_room++;
		return NONE;
	}
	struct vcpu *v = &j->v[j->nv];
	v->dom = dom;
	v->vcpu = vcpu;
	v->n = v->nhc = 0;
	j->slots[s] = ++j->nv;
	return j->nv - 1;
}

static struct ent *ent_at(const struct xft_sj *j, const struct vcpu *v, uint64_t k)
{
	return &v->ring[k % j->lim.per_vcpu];
}

/* The first entry still kept. */
static uint64_t first_kept(const struct xft_sj *j, const struct vcpu *v)
{
	return v->n > j->lim.per_vcpu ? v->n - j->lim.per_vcpu : 0;
}

static void push(struct xft_sj *j, struct vcpu *v, uint64_t t, unsigned state)
{
	if (v->n >= j->lim.per_vcpu)
		j->st.overwritten++;
	struct ent *e = ent_at(j, v, v->n++);
	memset(e, 0, sizeof(*e));
	e->t = t;
	e->state = (uint8_t)state;
}

static uint64_t last_t(const struct xft_sj *j, const struct vcpu *v)
{
	return v->n ? ent_at(j, v, v->n - 1)->t : 0;
}

static void runstate(struct xft_sj *j, const struct xflow_sched_event *e)
{
	if (e->dom == IDLE_DOMAIN)
		return;
	uint32_t vi = vcpu_get(j, e->dom, e->vcpu);
	if (vi == NONE)
		return;
	struct vcpu *v = &j->v[vi];
	struct pcpu *p = &j->p[e->pcpu];
	if (v->n && e->t_ns < last_t(j, v)) {
		/* Not where it belongs: what the vCPU did since is not known. */
		j->st.out_of_order++;
		if (ent_at(j, v, v->n - 1)->state != S_UNKNOWN)
			push(j, v, last_t(j, v), S_UNKNOWN);
		return;
	}
	if (e->to == S_RUNNING && v->n) {
		struct ent *prev = ent_at(j, v, v->n - 1);
		if (prev->state == S_RUNNABLE && p->have_switch && p->next_dom == e->dom &&
		    p->next_vcpu == e->vcpu && p->prev_dom != IDLE_DOMAIN) {
			prev->has_culprit = 1;
			prev->pcpu = e->pcpu;
			prev->cdom = p->prev_dom;
			prev->cvcpu = p->prev_vcpu;
		}
	}
	push(j, v, e->t_ns, e->to);
	if (e->to == S_RUNNING)
		p->cur = vi;
	else if (p->cur == vi)
		p->cur = NONE;
	j->st.events++;
}

static void hypercall(struct xft_sj *j, const struct xflow_sched_event *e)
{
	uint32_t vi = j->p[e->pcpu].cur;
	j->st.events++;
	if (e->arg != EVTCHN_OP || vi == NONE)
		return;
	struct vcpu *v = &j->v[vi];
	if (v->nhc && e->t_ns < v->hc[(v->nhc - 1) % j->lim.per_vcpu_hc]) {
		j->st.out_of_order++;
		return;
	}
	v->hc[v->nhc++ % j->lim.per_vcpu_hc] = e->t_ns;
}

/* Records were lost on a pCPU: any vCPU may have changed state unseen. */
static void lost(struct xft_sj *j, const struct xflow_sched_event *e)
{
	j->st.lost += e->arg ? e->arg : 1;
	for (uint32_t i = 0; i < j->nv; i++) {
		struct vcpu *v = &j->v[i];
		uint64_t t = v->n && last_t(j, v) > e->t_ns ? last_t(j, v) : e->t_ns;
		if (!v->n || ent_at(j, v, v->n - 1)->state != S_UNKNOWN)
			push(j, v, t, S_UNKNOWN);
	}
	for (uint32_t p = 0; p < j->lim.max_pcpus; p++) {
		j->p[p].cur = NONE;
		j->p[p].have_switch = 0;
	}
}

void xft_sj_event(struct xft_sj *j, const struct xflow_sched_event *e)
{
	if (e->kind >= XFLOW_SCHED_NKINDS || e->pcpu >= j->lim.max_pcpus ||
	    (e->kind == XFLOW_SCHED_RUNSTATE && (e->from > S_OFFLINE || e->to > S_OFFLINE))) {
		j->st.bad++;
		return;
	}
	if (e->t_ns > j->watermark)
		j->watermark = e->t_ns;
	switch (e->kind) {
	case XFLOW_SCHED_RUNSTATE:
		runstate(j, e);
		break;
	case XFLOW_SCHED_SWITCH: {
		struct pcpu *p = &j->p[e->pcpu];
		p->prev_dom = e->dom;
		p->prev_vcpu = e->vcpu;
		p->next_dom = e->dom2;
		p->next_vcpu = e->vcpu2;
		p->have_switch = 1;
		j->st.events++;
		break;
	}
	case XFLOW_SCHED_HYPERCALL:
		hypercall(j, e);
		break;
	case XFLOW_SCHED_LOST:
		lost(j, e);
		break;
	}
}

uint64_t xft_sj_watermark(const struct xft_sj *j)
{
	return j->watermark;
}

/* The last entry at or before @t (k in [first_kept, n)), or -1 when @t is
 * before every entry kept. */
static int64_t find(const struct xft_sj *j, const struct vcpu *v, uint64_t t)
{
	uint64_t lo = first_kept(j, v), hi = v->n;
	if (lo == hi || ent_at(j, v, lo)->t > t)
		return -1;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (ent_at(j, v, mid)->t <= t)
			lo = mid;
		else
			hi = mid;
	}
	return (int64_t)lo;
}

/* A state change of @v within (b - err, b + err). */
static int changed_near(const struct xft_sj *j, const struct vcpu *v, uint64_t b, uint64_t err)
{
	if (!v || !err)
		return 0;
	uint64_t lo = b > err ? b - err : 0;
	int64_t k = find(j, v, b + err - 1);
	return k >= 0 && ent_at(j, v, (uint64_t)k)->t > lo;
}

/* --- the split ------------------------------------------------------------- */

struct acc {
	struct xft_split *out;
	uint64_t win[3][2]; /* times within the clock error of a boundary: '?' */
	unsigned nwin;
	struct xft_culprit c[NCULPRITS];
};

/* Of [s, e), the part inside a window goes to '?' (the windows are
 * disjoint: merged when they were made). */
static uint64_t blurred(const struct acc *a, uint64_t s, uint64_t e)
{
	uint64_t in = 0;
	for (unsigned w = 0; w < a->nwin; w++) {
		uint64_t lo = a->win[w][0] > s ? a->win[w][0] : s, hi = a->win[w][1] < e ? a->win[w][1] : e;
		if (hi > lo)
			in += hi - lo;
	}
	return in;
}

/* Add window [lo, hi) to @a, merged with those it overlaps. */
static void window_add(struct acc *a, uint64_t lo, uint64_t hi)
{
	for (unsigned w = 0; w < a->nwin;) {
		if (a->win[w][0] <= hi && lo <= a->win[w][1]) {
			if (a->win[w][0] < lo)
				lo = a->win[w][0];
			if (a->win[w][1] > hi)
				hi = a->win[w][1];
			a->win[w][0] = a->win[a->nwin - 1][0];
			a->win[w][1] = a->win[a->nwin - 1][1];
			a->nwin--;
		} else {
			w++;
		}
	}
	a->win[a->nwin][0] = lo;
	a->win[a->nwin][1] = hi;
	a->nwin++;
}

static void charge(struct acc *a, unsigned st, uint64_t s, uint64_t e, const struct ent *from)
{
	if (e <= s)
		return;
	uint64_t unk = blurred(a, s, e), known = e - s - unk;
	a->out->ns[XFT_ST_UNKNOWN] += unk;
	a->out->ns[st] += known;
	if (st != XFT_ST_WAIT || !from || !from->has_culprit || !known)
		return;
	unsigned k, min = 0;
	for (k = 0; k < NCULPRITS; k++) {
		struct xft_culprit *c = &a->c[k];
		if (c->wait_ns && c->domain == from->cdom && c->vcpu == from->cvcpu && c->pcpu == from->pcpu)
			break;
		if (c->wait_ns < a->c[min].wait_ns)
			min = k;
	}
	if (k == NCULPRITS) { /* a new holder takes the smallest's place */
		k = min;
		a->c[k] = (struct xft_culprit){ .domain = from->cdom, .vcpu = from->cvcpu, .pcpu = from->pcpu };
	}
	a->c[k].wait_ns += known;
}

/* The state a piece of the hop is in, as the side charged sees it. */
static unsigned state_of(unsigned s, int receiver, int *woken)
{
	switch (s) {
	case S_RUNNING:
		*woken = 1;
		return receiver ? XFT_ST_BACKEND : XFT_ST_RUN;
	case S_RUNNABLE:
		*woken = 1;
		return XFT_ST_WAIT;
	case S_BLOCKED:
		return receiver && !*woken ? XFT_ST_NOTIFY : XFT_ST_BLOCKED;
	case S_OFFLINE:
		return XFT_ST_OFFLINE;
	default:
		return XFT_ST_UNKNOWN;
	}
}

/* Charge [s, e) of vCPU @v (NULL: no timeline) as sender or receiver. */
static void walk(struct xft_sj *j, const struct vcpu *v, uint64_t s, uint64_t e, int receiver,
		 struct acc *a)
{
	int woken = 0;
	if (e <= s)
		return;
	/* Beyond the watermark nothing is known yet. */
	uint64_t known_end = e < j->watermark ? e : j->watermark;
	if (known_end < s)
		known_end = s;
	a->out->ns[XFT_ST_UNKNOWN] += e - known_end;
	e = known_end;
	if (!v || !v->n) {
		charge(a, XFT_ST_UNKNOWN, s, e, NULL);
		return;
	}
	int64_t k = find(j, v, s);
	uint64_t x = s, kk;
	if (k < 0) {
		/* Before what is kept (or before the trace began). */
		uint64_t first = ent_at(j, v, first_kept(j, v))->t;
		uint64_t upto = first < e ? first : e;
		if (first_kept(j, v) > 0 && upto > x)
			j->st.too_old++;
		charge(a, XFT_ST_UNKNOWN, x, upto, NULL);
		x = upto;
		kk = first_kept(j, v);
	} else {
		kk = (uint64_t)k;
	}
	for (; x < e && kk < v->n; kk++) {
		const struct ent *en = ent_at(j, v, kk);
		uint64_t end = kk + 1 < v->n ? ent_at(j, v, kk + 1)->t : e;
		if (end > e)
			end = e;
		unsigned st = state_of(en->state, receiver, &woken);
		charge(a, st, x, end, en);
		if (end > x)
			x = end;
	}
	charge(a, XFT_ST_UNKNOWN, x, e, NULL);
}

/* The timeline of the vCPU a record of (@domain, @cpu) was written on; a
 * record that does not say is charged to its domain's vCPU when the trace
 * shows it only one. */
static const struct vcpu *vcpu_of(const struct xft_sj *j, uint16_t domain, int32_t cpu)
{
	if (cpu >= 0 && cpu <= 0xffff) {
		uint32_t i = vcpu_find(j, domain, (uint16_t)cpu);
		return i == NONE ? NULL : &j->v[i];
	}
	const struct vcpu *only = NULL;
	for (uint32_t i = 0; i < j->nv; i++)
		if (j->v[i].dom == domain) {
			if (only)
				return NULL;
			only = &j->v[i];
		}
	return only;
}

/* The first evtchn_op of @v in [t0, t1], or t0 when none is kept. */
static uint64_t notify_time(const struct xft_sj *j, const struct vcpu *v, uint64_t t0, uint64_t t1)
{
	if (!v || !v->nhc)
		return t0;
	uint64_t n = j->lim.per_vcpu_hc;
	uint64_t lo = v->nhc > n ? v->nhc - n : 0, hi = v->nhc;
	/* The first kept at or after t0. */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (v->hc[mid % n] < t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < v->nhc && v->hc[lo % n] <= t1)
		return v->hc[lo % n];
	return t0;
}

/* How far @t lies from any running interval of @v; 0 when it ran then.
 * -1 when the timeline cannot say. */
static int64_t off_run(const struct xft_sj *j, const struct vcpu *v, uint64_t t)
{
	int64_t k = find(j, v, t);
	if (k < 0)
		return -1;
	if (ent_at(j, v, (uint64_t)k)->state == S_RUNNING)
		return 0;
	uint64_t best = UINT64_MAX;
	for (int64_t b = k; b >= (int64_t)first_kept(j, v); b--) {
		const struct ent *en = ent_at(j, v, (uint64_t)b);
		if (en->state == S_UNKNOWN)
			break;
		if (en->state == S_RUNNING) {
			best = t - ent_at(j, v, (uint64_t)b + 1)->t;
			break;
		}
	}
	for (uint64_t f = (uint64_t)k + 1; f < v->n; f++) {
		const struct ent *en = ent_at(j, v, f);
		if (en->state == S_UNKNOWN || en->t - t >= best)
			break;
		if (en->state == S_RUNNING) {
			best = en->t - t;
			break;
		}
	}
	return best == UINT64_MAX ? -1 : (int64_t)best;
}

static void clock_check(struct xft_sj *j, const struct vcpu *v, uint64_t t)
{
	int64_t d = v ? off_run(j, v, t) : -1;
	if (d < 0)
		return;
	j->st.checks++;
	if ((uint64_t)d > j->err_cur)
		j->err_cur = (uint64_t)d;
	if (++j->err_n == XFT_SJ_ERROR_WINDOW) {
		j->err_prev = j->err_cur;
		j->err_cur = 0;
		j->err_n = 0;
	}
	j->st.clock_error_ns = j->err_cur > j->err_prev ? j->err_cur : j->err_prev;
}

void xft_sj_split(struct xft_sj *j, const struct xft_sj_end *from, const struct xft_sj_end *to, int check,
		  struct xft_split *out, struct xft_culprit *culprit)
{
	struct acc a;
	memset(&a, 0, sizeof(a));
	memset(out, 0, sizeof(*out));
	a.out = out;
	uint64_t t0 = from->t_ns, t1 = to->t_ns > t0 ? to->t_ns : t0;
	const struct vcpu *sv = vcpu_of(j, from->domain, from->cpu);
	const struct vcpu *rv = vcpu_of(j, to->domain, to->cpu);
	uint64_t err = j->st.clock_error_ns == UINT64_MAX ? 0 : j->st.clock_error_ns;
	int same = sv && sv == rv;
	uint64_t tn = same ? t1 : notify_time(j, sv, t0, t1);
	/* The boundaries near which the charged vCPU changed state. */
	struct {
		uint64_t b;
		const struct vcpu *v, *w;
	} bd[3] = { { t0, sv, NULL }, { tn, sv, rv }, { t1, rv, NULL } };
	if (same)
		bd[2].v = sv;
	for (unsigned i = 0; i < 3; i++) {
		if (i == 1 && same)
			continue;
		if (changed_near(j, bd[i].v, bd[i].b, err) || changed_near(j, bd[i].w, bd[i].b, err))
			window_add(&a, bd[i].b > err ? bd[i].b - err : 0, bd[i].b + err);
	}
	if (same) {
		walk(j, sv, t0, t1, 0, &a);
	} else {
		walk(j, sv, t0, tn, 0, &a);
		walk(j, rv, tn, t1, 1, &a);
		if (check)
			clock_check(j, rv, t1);
	}
	struct xft_culprit best = { 0 };
	for (unsigned k = 0; k < NCULPRITS; k++)
		if (a.c[k].wait_ns > best.wait_ns)
			best = a.c[k];
	if (culprit)
		*culprit = best;
}

const struct xft_sj_stats *xft_sj_stats(const struct xft_sj *j)
{
	return &j->st;
}

/* --- life ------------------------------------------------------------------ */

void xft_sj_reset(struct xft_sj *j)
{
	memset(&j->st, 0, sizeof(j->st));
	j->st.clock_error_ns = UINT64_MAX;
	j->watermark = 0;
	j->nv = 0;
	j->err_cur = j->err_prev = 0;
	j->err_n = 0;
	memset(j->slots, 0, ((size_t)j->mask + 1) * sizeof(*j->slots));
	for (uint32_t p = 0; p < j->lim.max_pcpus; p++) {
		memset(&j->p[p], 0, sizeof(j->p[p]));
		j->p[p].cur = NONE;
	}
}

static void *take(size_t n, size_t size, uint64_t *total)
{
	*total += (uint64_t)n * size;
	return calloc(n ? n : 1, size);
}

int xft_sj_new(const struct xft_sj_limits *l, struct xft_sj **out)
{
	*out = NULL;
	struct xft_sj *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->lim = *l;
	if (!j->lim.max_vcpus)
		j->lim.max_vcpus = 256;
	if (!j->lim.per_vcpu)
		j->lim.per_vcpu = 4096;
	if (!j->lim.per_vcpu_hc)
		j->lim.per_vcpu_hc = 1024;
	if (!j->lim.max_pcpus)
		j->lim.max_pcpus = 256;
	if (j->lim.max_vcpus > (1u << 16) || j->lim.max_pcpus > (1u << 16) || j->lim.per_vcpu > (1u << 24) ||
	    j->lim.per_vcpu_hc > (1u << 24)) {
		free(j);
		return -EINVAL;
	}
	uint32_t hs = 1;
	while (hs < 2 * j->lim.max_vcpus)
		hs <<= 1;
	j->mask = hs - 1;
	j->bytes = sizeof(*j);
	j->v = take(j->lim.max_vcpus, sizeof(*j->v), &j->bytes);
	j->slots = take(hs, sizeof(*j->slots), &j->bytes);
	j->ents = take((size_t)j->lim.max_vcpus * j->lim.per_vcpu, sizeof(*j->ents), &j->bytes);
	j->hcs = take((size_t)j->lim.max_vcpus * j->lim.per_vcpu_hc, sizeof(*j->hcs), &j->bytes);
	j->p = take(j->lim.max_pcpus, sizeof(*j->p), &j->bytes);
	if (!j->v || !j->slots || !j->ents || !j->hcs || !j->p) {
		xft_sj_free(j);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < j->lim.max_vcpus; i++) {
		j->v[i].ring = &j->ents[(size_t)i * j->lim.per_vcpu];
		j->v[i].hc = &j->hcs[(size_t)i * j->lim.per_vcpu_hc];
	}
	xft_sj_reset(j);
	*out = j;
	return 0;
}

uint64_t xft_sj_bytes(const struct xft_sj *j)
{
	return j->bytes;
}

void xft_sj_free(struct xft_sj *j)
{
	if (!j)
		return;
	free(j->v);
	free(j->slots);
	free(j->ents);
	free(j->hcs);
	free(j->p);
	free(j);
}
