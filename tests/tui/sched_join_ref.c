/*
 * The reference the scheduler join is tested against (test_sched_join.c):
 * the engine as it was before it swept its timelines, every lookup a plain
 * binary search of its own, and nothing remembered between two lookups.
 * It is slow and obviously right; the engine must give the same split,
 * reasons of its '?', culprit and counts for any input.  The reasons are
 * found by a walk of each span, not from the sums the split is made of.
 * Included by the test, not built alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>


#define NONE UINT32_MAX
#define IDLE_DOMAIN 32767
#define EVTCHN_OP 32
#define NCULPRITS 4
/* Runnable intervals a split looks at for its culprit, from its start:
 * past them the culprit is the biggest among these. */
#define CULPRIT_SCAN 64

/* The states of a timeline: Xen's runstates, Xen running instead of a
 * running vCPU, and one for "not known". */
enum { S_RUNNING, S_RUNNABLE, S_BLOCKED, S_OFFLINE, S_XEN, S_UNKNOWN };

struct ent {
	uint64_t t;
	uint64_t cum[S_UNKNOWN]; /* time the vCPU spent in each known state
	                          * from its first entry to t: a state's time
	                          * over any span is two lookups */
	uint8_t state;
	uint8_t has_culprit; /* runnable, ended by a switch from another vCPU */
	uint16_t pcpu;       /* runnable: the pCPU it then ran on */
	uint16_t cdom, cvcpu;
	uint8_t irq;         /* pushed by an interrupt: no state change */
};

struct vcpu {
	uint16_t dom, vcpu;
	uint64_t n;      /* entries ever pushed; ring[k % per_vcpu] */
	struct ent *ring;
	uint64_t *ts;    /* ring[k].t again, packed: what searches read */
	uint64_t nhc;    /* evtchn_op times ever pushed */
	uint64_t *hc;
};

struct pcpu {
	uint32_t cur;    /* the vCPU running there (index), or NONE */
	uint16_t prev_dom, prev_vcpu, next_dom, next_vcpu; /* its last switch */
	int have_switch;
};

struct ref_sj {
	struct xft_sj_limits lim;
	struct xft_sj_stats st;
	uint64_t bytes;
	uint64_t watermark;
	struct vcpu *v;
	uint32_t nv;
	uint32_t *slots; /* hash of (dom, vcpu): index + 1, 0 empty */
	uint32_t mask;
	uint64_t ring_mask; /* per_vcpu - 1, a power of two */
	uint64_t hc_mask;   /* per_vcpu_hc - 1, a power of two */
	struct ent *ents;
	uint64_t *tss;
	uint64_t *hcs;
	struct pcpu *p;
	/* The clock checks of the last two windows. */
	uint64_t err_cur, err_prev;
	uint32_t err_n;
	/* Each check's allowed offsets [lo, hi] (INT64_MIN, INT64_MAX: open),
	 * all of them, the bound recomputed from the two windows' at each. */
	int64_t (*allowed)[2];
	uint64_t nallowed, allowed_cap;
};

static void ref_sj_free(struct ref_sj *j);

/* --- timelines ------------------------------------------------------------- */

static uint32_t vhash(uint16_t dom, uint16_t vcpu)
{
	return (uint32_t)((((uint64_t)dom << 16 | vcpu) * UINT64_C(0x9E3779B97F4A7C15)) >> 40);
}

static uint32_t vcpu_find(const struct ref_sj *j, uint16_t dom, uint16_t vcpu)
{
	for (uint32_t s = vhash(dom, vcpu) & j->mask;; s = (s + 1) & j->mask) {
		uint32_t i = j->slots[s];
		if (!i)
			return NONE;
		if (j->v[i - 1].dom == dom && j->v[i - 1].vcpu == vcpu)
			return i - 1;
	}
}

static uint32_t vcpu_get(struct ref_sj *j, uint16_t dom, uint16_t vcpu)
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

static struct ent *ent_at(const struct ref_sj *j, const struct vcpu *v, uint64_t k)
{
	return &v->ring[k & j->ring_mask];
}

static uint64_t t_at(const struct ref_sj *j, const struct vcpu *v, uint64_t k)
{
	return v->ts[k & j->ring_mask];
}

/* The first entry still kept. */
static uint64_t first_kept(const struct ref_sj *j, const struct vcpu *v)
{
	return v->n > j->lim.per_vcpu ? v->n - j->lim.per_vcpu : 0;
}

static void push(struct ref_sj *j, struct vcpu *v, uint64_t t, unsigned state, int irq)
{
	if (v->n >= j->lim.per_vcpu)
		j->st.overwritten++;
	uint64_t cum[S_UNKNOWN] = { 0 };
	if (v->n) {
		const struct ent *p = ent_at(j, v, v->n - 1);
		memcpy(cum, p->cum, sizeof(cum));
		if (p->state < S_UNKNOWN)
			cum[p->state] += t - p->t;
	}
	v->ts[v->n & j->ring_mask] = t;
	struct ent *e = ent_at(j, v, v->n++);
	memset(e, 0, sizeof(*e));
	e->t = t;
	memcpy(e->cum, cum, sizeof(cum));
	e->state = (uint8_t)state;
	e->irq = (uint8_t)irq;
}

static uint64_t last_t(const struct ref_sj *j, const struct vcpu *v)
{
	return v->n ? ent_at(j, v, v->n - 1)->t : 0;
}

static void runstate(struct ref_sj *j, const struct xflow_sched_event *e)
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
			push(j, v, last_t(j, v), S_UNKNOWN, 0);
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
	push(j, v, e->t_ns, e->to, 0);
	if (e->to == S_RUNNING)
		p->cur = vi;
	else if (p->cur == vi)
		p->cur = NONE;
	j->st.events++;
}

static void hypercall(struct ref_sj *j, const struct xflow_sched_event *e)
{
	uint32_t vi = j->p[e->pcpu].cur;
	j->st.events++;
	if (e->arg != EVTCHN_OP || vi == NONE)
		return;
	struct vcpu *v = &j->v[vi];
	if (v->nhc && e->t_ns < v->hc[(v->nhc - 1) & j->hc_mask]) {
		j->st.out_of_order++;
		return;
	}
	v->hc[v->nhc++ & j->hc_mask] = e->t_ns;
}

/* Xen ran on a pCPU for e->arg ns until e->t_ns: carved out of the run
 * of the vCPU there, from no earlier than its last entry. */
static void ref_xen(struct ref_sj *j, const struct xflow_sched_event *e)
{
	uint32_t vi = j->p[e->pcpu].cur;
	j->st.events++;
	if (vi == NONE || !j->v[vi].n || ent_at(j, &j->v[vi], j->v[vi].n - 1)->state != S_RUNNING) {
		j->st.xen_idle++;
		return;
	}
	struct vcpu *v = &j->v[vi];
	if (e->t_ns < last_t(j, v)) {
		j->st.out_of_order++;
		return;
	}
	uint64_t from = e->arg < e->t_ns ? e->t_ns - e->arg : 0;
	if (from < last_t(j, v))
		from = last_t(j, v);
	if (from < e->t_ns) {
		push(j, v, from, S_XEN, 1);
		push(j, v, e->t_ns, S_RUNNING, 1);
	}
}

/* Records were lost on a pCPU: any vCPU may have changed state unseen. */
static void ref_lost(struct ref_sj *j, const struct xflow_sched_event *e)
{
	j->st.lost += e->arg ? e->arg : 1;
	for (uint32_t i = 0; i < j->nv; i++) {
		struct vcpu *v = &j->v[i];
		uint64_t t = v->n && last_t(j, v) > e->t_ns ? last_t(j, v) : e->t_ns;
		if (!v->n || ent_at(j, v, v->n - 1)->state != S_UNKNOWN)
			push(j, v, t, S_UNKNOWN, 0);
	}
	for (uint32_t p = 0; p < j->lim.max_pcpus; p++) {
		j->p[p].cur = NONE;
		j->p[p].have_switch = 0;
	}
}

static void ref_sj_event(struct ref_sj *j, const struct xflow_sched_event *e)
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
		ref_lost(j, e);
		break;
	case XFLOW_SCHED_XEN:
		ref_xen(j, e);
		break;
	}
}


/* The last entry at or before @t (k in [first_kept, n)), or -1 when @t is
 * before every entry kept: a plain binary search over what is kept. */
static int64_t find(const struct ref_sj *j, const struct vcpu *v, uint64_t t)
{
	uint64_t lo = first_kept(j, v), hi = v->n;
	if (lo == hi || t_at(j, v, lo) > t)
		return -1;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (t_at(j, v, mid) <= t)
			lo = mid;
		else
			hi = mid;
	}
	return (int64_t)lo;
}

/* A state change of @v within (b - err, b + err): an entry there that an
 * interrupt did not push, found by walking back from the window's end. */
static int changed_near(const struct ref_sj *j, const struct vcpu *v, uint64_t b, uint64_t err)
{
	if (!v || !err)
		return 0;
	uint64_t lo = b > err ? b - err : 0;
	for (int64_t k = find(j, v, b + err - 1); k >= (int64_t)first_kept(j, v) && ent_at(j, v, (uint64_t)k)->t > lo;
	     k--)
		if (!ent_at(j, v, (uint64_t)k)->irq)
			return 1;
	return 0;
}

/* --- the split ------------------------------------------------------------- */

struct acc {
	struct xft_split *out;
	uint64_t win[3][2]; /* times within the clock error of a boundary: '?' */
	unsigned nwin;
};

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

/* The time @v spent in each known state from its first entry to @x, which
 * lies within what is kept (at or after the first entry kept). */
static void cum_at(const struct ref_sj *j, const struct vcpu *v, uint64_t x, uint64_t out[S_UNKNOWN])
{
	const struct ent *e = ent_at(j, v, (uint64_t)find(j, v, x));
	memcpy(out, e->cum, sizeof(e->cum));
	if (e->state < S_UNKNOWN)
		out[e->state] += x - e->t;
}

/* Xen's runstates as the side charged sees them (S_* to XFT_ST_*):
 * the sender, the receiver before its wake, and after it. */
enum { SENDER, RECEIVER_ASLEEP, RECEIVER_AWAKE };
static const uint8_t charged[3][S_UNKNOWN] = {
	[SENDER] = { XFT_ST_RUN, XFT_ST_WAIT, XFT_ST_BLOCKED, XFT_ST_OFFLINE, XFT_ST_XEN },
	/* Before its first wake it is not runnable or running: those zeros
	 * go nowhere. */
	[RECEIVER_ASLEEP] = { XFT_ST_BACKEND, XFT_ST_WAIT, XFT_ST_NOTIFY, XFT_ST_OFFLINE, XFT_ST_XEN },
	[RECEIVER_AWAKE] = { XFT_ST_BACKEND, XFT_ST_WAIT, XFT_ST_BLOCKED, XFT_ST_OFFLINE, XFT_ST_XEN },
};

/* The known states of [s, e) of @v, each into its state as @side sees
 * it (@sign -1 takes them out again), and what they do not cover into
 * '?'.  [s, e) must lie within what is kept and the watermark. */
static void charge_span(const struct ref_sj *j, const struct vcpu *v, uint64_t s, uint64_t e, int side,
			int sign, struct acc *a)
{
	if (e <= s)
		return;
	uint64_t c0[S_UNKNOWN], c1[S_UNKNOWN], known = 0;
	cum_at(j, v, s, c0);
	cum_at(j, v, e, c1);
	for (unsigned k = 0; k < S_UNKNOWN; k++) {
		uint64_t d = c1[k] - c0[k];
		known += d;
		a->out->ns[charged[side][k]] += sign > 0 ? d : -d;
	}
	a->out->ns[XFT_ST_UNKNOWN] += sign > 0 ? (e - s) - known : known;
}

/* Why each nanosecond of [s, e) charged to @v is '?' (tui/hop_split.h),
 * found afresh: the stretches between @v's entries walked one by one,
 * each given its reason, a known one against every window; not from the
 * sums the split is made of, as the engine finds them. */
static void unknown_reasons(const struct ref_sj *j, const struct vcpu *v, uint64_t s, uint64_t e, const struct acc *a)
{
	uint64_t *u = a->out->unknown_ns;
	if (!v || !v->n) {
		u[XFT_UNK_NO_TRACE] += e - s;
		return;
	}
	uint64_t fk = first_kept(j, v), first = ent_at(j, v, fk)->t;
	int64_t k = -1;
	for (uint64_t t = s, next; t < e; t = next) {
		int why = -1; /* known */
		if (t < first) {
			why = fk ? XFT_UNK_OLD : XFT_UNK_LOST;
			next = first;
		} else if (t >= j->watermark) {
			why = XFT_UNK_EARLY;
			next = e;
		} else {
			if (k < 0)
				k = find(j, v, t);
			while ((uint64_t)k + 1 < v->n && ent_at(j, v, (uint64_t)k + 1)->t <= t)
				k++;
			next = (uint64_t)k + 1 < v->n ? ent_at(j, v, (uint64_t)k + 1)->t : j->watermark;
			if (next > j->watermark)
				next = j->watermark;
			if (ent_at(j, v, (uint64_t)k)->state == S_UNKNOWN)
				why = XFT_UNK_LOST;
		}
		if (next > e)
			next = e;
		if (why >= 0) {
			u[why] += next - t;
			continue;
		}
		for (unsigned w = 0; w < a->nwin; w++) {
			uint64_t x = a->win[w][0] > t ? a->win[w][0] : t, y = a->win[w][1] < next ? a->win[w][1] : next;
			if (y > x)
				u[XFT_UNK_CLOCK] += y - x;
		}
	}
}

/* [s, e) of @v as @side sees it, the windows within the clock error of a
 * boundary taken out as '?'; before what is kept and past the watermark,
 * '?'. */
static void charge(struct ref_sj *j, const struct vcpu *v, uint64_t s, uint64_t e, int side, struct acc *a)
{
	if (e <= s)
		return;
	unknown_reasons(j, v, s, e, a);
	uint64_t lo = s, hi = e < j->watermark ? e : j->watermark;
	if (v && v->n) {
		uint64_t first = ent_at(j, v, first_kept(j, v))->t;
		if (first > lo) {
			if (first_kept(j, v) > 0)
				j->st.too_old++;
			lo = first;
		}
	} else {
		hi = lo;
	}
	if (hi <= lo) {
		a->out->ns[XFT_ST_UNKNOWN] += e - s;
		return;
	}
	a->out->ns[XFT_ST_UNKNOWN] += (lo - s) + (e - hi);
	charge_span(j, v, lo, hi, side, 1, a);
	for (unsigned w = 0; w < a->nwin; w++) {
		uint64_t x = a->win[w][0] > lo ? a->win[w][0] : lo, y = a->win[w][1] < hi ? a->win[w][1] : hi;
		charge_span(j, v, x, y, side, -1, a);
	}
}

/* The receiver's first wake at or after @tn (the first time it is
 * runnable, running, or interrupted while running), or @t1 when it has
 * none before. */
static uint64_t first_wake(const struct ref_sj *j, const struct vcpu *v, uint64_t tn, uint64_t t1)
{
	if (!v)
		return tn;
	int64_t k = find(j, v, tn);
	if (k < 0)
		return tn; /* before what is kept: all '?' anyway */
	for (uint64_t i = (uint64_t)k; i < v->n; i++) {
		const struct ent *e = ent_at(j, v, i);
		if (e->t >= t1)
			break;
		if (e->state == S_RUNNING || e->state == S_RUNNABLE || e->state == S_XEN)
			return e->t > tn ? e->t : tn;
	}
	return t1;
}

/* Who held the pCPU while @v waited in [s, e): each holder's share of the
 * wait into @c (the biggest kept). */
static void culprits(const struct ref_sj *j, const struct vcpu *v, uint64_t s, uint64_t e,
		     struct xft_culprit c[NCULPRITS])
{
	if (!v || e <= s)
		return;
	int64_t k = find(j, v, s);
	uint64_t i = k < 0 ? first_kept(j, v) : (uint64_t)k;
	for (unsigned seen = 0; i < v->n && seen < CULPRIT_SCAN; i++) {
		const struct ent *en = ent_at(j, v, i);
		if (en->t >= e)
			break;
		if (en->state != S_RUNNABLE)
			continue;
		seen++;
		if (!en->has_culprit)
			continue;
		uint64_t x = en->t > s ? en->t : s, y = i + 1 < v->n ? ent_at(j, v, i + 1)->t : j->watermark;
		if (y > e)
			y = e;
		if (y <= x)
			continue;
		unsigned m, min = 0;
		for (m = 0; m < NCULPRITS; m++) {
			if (c[m].wait_ns && c[m].domain == en->cdom && c[m].vcpu == en->cvcpu && c[m].pcpu == en->pcpu)
				break;
			if (c[m].wait_ns < c[min].wait_ns)
				min = m;
		}
		if (m == NCULPRITS) { /* a new holder takes the smallest's place */
			m = min;
			c[m] = (struct xft_culprit){ .domain = en->cdom, .vcpu = en->cvcpu, .pcpu = en->pcpu };
		}
		c[m].wait_ns += y - x;
	}
}

/* The timeline of the vCPU a record of (@domain, @cpu) was written on; a
 * record that does not say is charged to its domain's vCPU when the trace
 * shows it only one. */
static const struct vcpu *vcpu_of(const struct ref_sj *j, uint16_t domain, int32_t cpu)
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
static uint64_t notify_time(const struct ref_sj *j, const struct vcpu *v, uint64_t t0, uint64_t t1)
{
	if (!v || !v->nhc)
		return t0;
	uint64_t n = j->lim.per_vcpu_hc;
	uint64_t lo = v->nhc > n ? v->nhc - n : 0, hi = v->nhc;
	/* The first kept at or after t0. */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (v->hc[mid & j->hc_mask] < t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < v->nhc && v->hc[lo & j->hc_mask] <= t1)
		return v->hc[lo & j->hc_mask];
	return t0;
}

/* How far @t lies from any running interval of @v; 0 when it ran then.
 * -1 when the timeline cannot say.  *@ahead: the nearer run is after @t. */
static int64_t off_run(const struct ref_sj *j, const struct vcpu *v, uint64_t t, int *ahead)
{
	*ahead = 0;
	int64_t k = find(j, v, t);
	if (k < 0 || ent_at(j, v, (uint64_t)k)->state == S_UNKNOWN)
		return -1; /* what the vCPU did then is not known */
	if (ent_at(j, v, (uint64_t)k)->state == S_RUNNING || ent_at(j, v, (uint64_t)k)->state == S_XEN)
		return 0; /* an interrupt is part of its run */
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
	uint64_t f;
	for (f = (uint64_t)k + 1; f < v->n; f++) {
		const struct ent *en = ent_at(j, v, f);
		if (en->state == S_UNKNOWN || en->t - t >= best)
			break;
		if (en->state == S_RUNNING) {
			best = en->t - t;
			*ahead = 1;
			break;
		}
	}
	/* Past its last entry the vCPU can run again only after the
	 * watermark: a nearer run the trace has not reached yet cannot be
	 * ruled out, and the distance behind would overstate the error. */
	if (f == v->n && (j->watermark < t || j->watermark - t < best))
		return -1;
	return best == UINT64_MAX ? -1 : (int64_t)best;
}

/* The offsets the record at @t on @v allows (what it says with d = its
 * distance from a run): within the run holding it, from the run's start
 * (when the entry before says it started then) to its end (when the entry
 * after says it ended), an interrupt's entries walked over as part of the
 * run; outside, or at a run's very edge, past that edge. */
static void allowed_of(const struct ref_sj *j, const struct vcpu *v, uint64_t t, int64_t d, int ahead,
		       int64_t out[2])
{
	out[0] = INT64_MIN;
	out[1] = INT64_MAX;
	uint64_t k = (uint64_t)find(j, v, t), a = k, b = k + 1;
	/* Outside every run, or at the very time one ended or began (d = 0,
	 * the entry there not a run's): past that run's edge. */
	if (d > 0 || (ent_at(j, v, k)->state != S_RUNNING && !ent_at(j, v, k)->irq)) {
		out[ahead ? 0 : 1] = ahead ? d : -d;
		return;
	}
	while (a > first_kept(j, v) && ent_at(j, v, a)->irq)
		a--;
	while (b < v->n && ent_at(j, v, b)->irq)
		b++;
	if (!ent_at(j, v, a)->irq && a > first_kept(j, v) && ent_at(j, v, a - 1)->state != S_UNKNOWN &&
	    ent_at(j, v, a - 1)->state != S_RUNNING)
		out[0] = (int64_t)ent_at(j, v, a)->t - (int64_t)t;
	if (b < v->n && ent_at(j, v, b)->state != S_UNKNOWN && ent_at(j, v, b)->state != S_RUNNING)
		out[1] = (int64_t)ent_at(j, v, b)->t - (int64_t)t;
}

/* The bound over this window's checks and the whole window before. */
static uint64_t allowed_bound(const struct ref_sj *j)
{
	uint64_t w = (j->nallowed - 1) / XFT_SJ_ERROR_WINDOW;
	uint64_t from = w ? (w - 1) * XFT_SJ_ERROR_WINDOW : 0;
	int64_t lo = INT64_MIN, hi = INT64_MAX;
	for (uint64_t i = from; i < j->nallowed; i++) {
		lo = j->allowed[i][0] > lo ? j->allowed[i][0] : lo;
		hi = j->allowed[i][1] < hi ? j->allowed[i][1] : hi;
	}
	if (lo == INT64_MIN || hi == INT64_MAX || lo > hi)
		return UINT64_MAX;
	uint64_t a = lo < 0 ? (uint64_t)-lo : (uint64_t)lo, b = hi < 0 ? (uint64_t)-hi : (uint64_t)hi;
	return a > b ? a : b;
}

/* Room for one more check's allowed offsets [lo, hi]. */
static int64_t *allowed_next(struct ref_sj *j)
{
	if (j->nallowed == j->allowed_cap) {
		j->allowed_cap = j->allowed_cap ? 2 * j->allowed_cap : 4096;
		j->allowed = realloc(j->allowed, j->allowed_cap * sizeof(*j->allowed));
		if (!j->allowed)
			abort();
	}
	return j->allowed[j->nallowed++];
}

/* One more check's results in: the bound over the last two windows, and
 * the error's windows turned every XFT_SJ_ERROR_WINDOW checks. */
static void checks_turn(struct ref_sj *j)
{
	j->st.clock_bound_ns = allowed_bound(j);
	if (++j->err_n == XFT_SJ_ERROR_WINDOW) {
		j->err_prev = j->err_cur;
		j->err_cur = 0;
		j->err_n = 0;
	}
	j->st.clock_error_ns = j->err_cur > j->err_prev ? j->err_cur : j->err_prev;
}

static void clock_check(struct ref_sj *j, const struct vcpu *v, uint64_t t)
{
	int ahead;
	int64_t d = v ? off_run(j, v, t, &ahead) : -1;
	if (d < 0)
		return;
	j->st.checks++;
	if ((uint64_t)d > j->err_cur)
		j->err_cur = (uint64_t)d;
	allowed_of(j, v, t, d, ahead, allowed_next(j));
	checks_turn(j);
}

/* The ordered pair of a woven notification at @tn on @v: offset <= h - tn,
 * h the only evtchn_op of the run holding tn, that run's start and end
 * seen and every evtchn_op it may hold kept.  A walk of the entries and of
 * every evtchn_op kept. */
static void notify_check(struct ref_sj *j, const struct vcpu *v, uint64_t tn)
{
	int64_t k = v ? find(j, v, tn) : -1;
	if (k < 0 || (ent_at(j, v, (uint64_t)k)->state != S_RUNNING && ent_at(j, v, (uint64_t)k)->state != S_XEN))
		return;
	uint64_t a = (uint64_t)k, b = (uint64_t)k + 1;
	while (a > first_kept(j, v) && ent_at(j, v, a)->irq)
		a--;
	while (b < v->n && ent_at(j, v, b)->irq)
		b++;
	if (ent_at(j, v, a)->irq || a == first_kept(j, v) || ent_at(j, v, a - 1)->state == S_UNKNOWN ||
	    ent_at(j, v, a - 1)->state == S_RUNNING)
		return; /* its start not seen */
	if (b == v->n || ent_at(j, v, b)->state == S_UNKNOWN || ent_at(j, v, b)->state == S_RUNNING)
		return; /* its end not seen */
	uint64_t ta = ent_at(j, v, a)->t, tb = ent_at(j, v, b)->t, first = v->nhc > j->lim.per_vcpu_hc ? v->nhc - j->lim.per_vcpu_hc : 0;
	if (first > 0 && v->hc[first & j->hc_mask] >= ta)
		return; /* one let go may have been in the run */
	uint64_t h = 0, n = 0;
	for (uint64_t i = first; i < v->nhc; i++)
		if (v->hc[i & j->hc_mask] >= ta && v->hc[i & j->hc_mask] < tb) {
			h = v->hc[i & j->hc_mask];
			n++;
		}
	if (n != 1)
		return;
	j->st.checks++;
	if (h < tn && tn - h > j->err_cur)
		j->err_cur = tn - h;
	int64_t *range = allowed_next(j);
	range[0] = INT64_MIN;
	range[1] = (int64_t)h - (int64_t)tn;
	checks_turn(j);
}

static void ref_sj_split(struct ref_sj *j, const struct xft_sj_end *from, const struct xft_sj_end *to, int check,
		  struct xft_split *out, struct xft_culprit *culprit)
{
	struct acc a;
	struct xft_culprit c[NCULPRITS];
	memset(&a, 0, sizeof(a));
	memset(c, 0, sizeof(c));
	memset(out, 0, sizeof(*out));
	a.out = out;
	uint64_t t0 = from->t_ns, t1 = to->t_ns > t0 ? to->t_ns : t0;
	const struct vcpu *sv = vcpu_of(j, from->domain, from->cpu);
	const struct vcpu *rv = vcpu_of(j, to->domain, to->cpu);
	uint64_t err = j->st.clock_error_ns == UINT64_MAX ? 0 : j->st.clock_error_ns;
	int same = sv && sv == rv;
	/* The woven notification, into the hop, when the sender has one. */
	uint64_t wn = from->tn_ns < t0 ? t0 : from->tn_ns > t1 ? t1 : from->tn_ns;
	uint64_t tn = same ? t1 : from->has_tn ? wn : notify_time(j, sv, t0, t1);
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
		charge(j, sv, t0, t1, SENDER, &a);
		culprits(j, sv, t0, t1, c);
	} else {
		uint64_t tw = first_wake(j, rv, tn, t1);
		charge(j, sv, t0, tn, SENDER, &a);
		charge(j, rv, tn, tw, RECEIVER_ASLEEP, &a);
		charge(j, rv, tw, t1, RECEIVER_AWAKE, &a);
		culprits(j, sv, t0, tn, c);
		culprits(j, rv, tw, t1, c);
		if (check)
			clock_check(j, rv, t1);
	}
	if (check && from->has_tn)
		notify_check(j, sv, wn);
	struct xft_culprit best = { 0 };
	for (unsigned k = 0; k < NCULPRITS; k++)
		if (c[k].wait_ns > best.wait_ns)
			best = c[k];
	/* What the clock error blurred is not waited on anyone's account. */
	if (best.wait_ns > out->ns[XFT_ST_WAIT])
		best.wait_ns = out->ns[XFT_ST_WAIT];
	if (culprit)
		*culprit = best;
}


/* --- life ------------------------------------------------------------------ */

static void ref_sj_reset(struct ref_sj *j)
{
	memset(&j->st, 0, sizeof(j->st));
	j->st.clock_error_ns = UINT64_MAX;
	j->st.clock_bound_ns = UINT64_MAX;
	j->watermark = 0;
	j->nv = 0;
	j->err_cur = j->err_prev = 0;
	j->err_n = 0;
	j->nallowed = 0;
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

static int ref_sj_new(const struct xft_sj_limits *l, struct ref_sj **out)
{
	*out = NULL;
	struct ref_sj *j = calloc(1, sizeof(*j));
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
	uint32_t hs = 1, ring = 1;
	while (hs < 2 * j->lim.max_vcpus)
		hs <<= 1;
	j->mask = hs - 1;
	while (ring < j->lim.per_vcpu)
		ring <<= 1;
	j->lim.per_vcpu = ring;
	j->ring_mask = ring - 1;
	for (ring = 1; ring < j->lim.per_vcpu_hc; ring <<= 1)
		;
	j->lim.per_vcpu_hc = ring;
	j->hc_mask = ring - 1;
	j->bytes = sizeof(*j);
	j->v = take(j->lim.max_vcpus, sizeof(*j->v), &j->bytes);
	j->slots = take(hs, sizeof(*j->slots), &j->bytes);
	j->ents = take((size_t)j->lim.max_vcpus * j->lim.per_vcpu, sizeof(*j->ents), &j->bytes);
	j->tss = take((size_t)j->lim.max_vcpus * j->lim.per_vcpu, sizeof(*j->tss), &j->bytes);
	j->hcs = take((size_t)j->lim.max_vcpus * j->lim.per_vcpu_hc, sizeof(*j->hcs), &j->bytes);
	j->p = take(j->lim.max_pcpus, sizeof(*j->p), &j->bytes);
	if (!j->v || !j->slots || !j->ents || !j->tss || !j->hcs || !j->p) {
		ref_sj_free(j);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < j->lim.max_vcpus; i++) {
		j->v[i].ring = &j->ents[(size_t)i * j->lim.per_vcpu];
		j->v[i].ts = &j->tss[(size_t)i * j->lim.per_vcpu];
		j->v[i].hc = &j->hcs[(size_t)i * j->lim.per_vcpu_hc];
	}
	ref_sj_reset(j);
	*out = j;
	return 0;
}


static void ref_sj_free(struct ref_sj *j)
{
	if (!j)
		return;
	free(j->v);
	free(j->slots);
	free(j->ents);
	free(j->tss);
	free(j->hcs);
	free(j->p);
	free(j->allowed);
	free(j);
}
