/*
 * The per-vCPU timelines of Xen's scheduler and the split of a hop over
 * them.  See tui/sched_join.h for the contract.
 *
 * A timeline is a ring of (time, state) entries, each the state entered
 * then; entries are in time order (an event older than its vCPU's last is
 * counted and makes the vCPU's state unknown from its last entry on, as
 * a loss does).  A runnable entry is given its culprit when it ends: the
 * previous vCPU of the switch that let it run.
 *
 * An interrupt Xen handled while a vCPU ran is two entries inside its run,
 * S_XEN and S_RUNNING again, marked irq: every question about where a
 * state begins or ends (the clock windows, the clock checks) looks
 * through them, as if the run were whole; only the sums see them.
 *
 * Most splits are answered without a lookup: the last split between each
 * two ends is kept with how far each end may move before anything but the
 * time charged to the states at its moving points changes (struct memo,
 * tui/sched_join_memo.c), and the next hop between the same vCPUs, a few
 * microseconds later, is that split moved.  When an end moved past the
 * next entry or window edge of its vCPU, but the hop kept its shape, the
 * memo crosses it: only that end's side changed, by the difference of its
 * running totals.  The reference comparisons of the tests hold either way:
 * the memo changes the cost, never an answer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tui/sched_join.h"
#include "tui/sched_join_priv.h"

#define NONE UINT32_MAX
#define IDLE_DOMAIN 32767
#define EVTCHN_OP 32
#define NCULPRITS 4
/* Runnable intervals a split looks at for its culprit, from its start:
 * past them the culprit is the biggest among these. */
#define CULPRIT_SCAN 64

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

/* Let every memo go (struct memo): the vCPUs known or the clock error
 * changed, and the splits they hold may not be those of the trace now.
 * What they owe stays theirs to pay. */
static void memos_drop(struct xft_sj *j)
{
	for (unsigned k = 0; k < MEMO_SLOTS; k++)
		j->memo[k].valid = 0;
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
	v->memos = 0;
	j->slots[s] = ++j->nv;
	/* A record with no CPU is charged to its domain's only vCPU: that may
	 * be another now. */
	memos_drop(j);
	return j->nv - 1;
}

/* @v took entry v->n - 1: tell the memos made over it (struct memo's
 * lim).  Its first entry past what a memo saw must lie past the memo's
 * t1 and its window, and must not have given the memo's last entry a
 * culprit; the ring must still keep what the memo used.  A receiver's
 * run at t1 is taken again, ended or not, for the clock check of the
 * memo's answers (with no clock error an entry at t1 itself would hold
 * the check's point: left to the slow path). */
static void memo_trace_moved(struct xft_sj *j, struct vcpu *v, uint64_t t)
{
	for (uint32_t bits = v->memos; bits; bits &= bits - 1) {
		struct memo *m = &j->memo[__builtin_ctz(bits)];
		if (!m->valid)
			continue;
		uint64_t *lim;
		if (m->sv == v) {
			if (v->n > m->smin + j->lim.per_vcpu) {
				m->valid = 0;
				continue;
			}
			if (v->n != m->sn + 1)
				continue;
			lim = &m->slim;
		} else if (m->rv == v) {
			if (v->n > m->rmin + j->lim.per_vcpu) {
				m->valid = 0;
				continue;
			}
			/* The run changes for the check only when its end comes,
			 * or the ring lets go the entry before its start. */
			if (m->in_run && m->err) {
				if (!m->run.ended || (m->run.began && v->n >= m->run.ka + j->lim.per_vcpu)) {
					xft_sj_checks_flush(j, m);
					xft_sj_run_of(j, v, (uint64_t)m->r1, &m->run);
				}
				m->run_n = v->n;
			}
			if (v->n != m->rn + 1)
				continue;
			lim = &m->rlim;
		} else {
			continue;
		}
		/* The first entry past what the memo saw. */
		if (t < m->err || ent_at(j, v, v->n - 2)->has_culprit) {
			m->valid = 0;
			continue;
		}
		if (t - m->err < *lim)
			*lim = t - m->err;
		uint64_t x = m->slim < m->rlim ? m->slim : m->rlim;
		m->lim = x < m->hlim ? x : m->hlim;
	}
}

/* The same for an evtchn_op of @v at @t: the first past what a memo of
 * its sender saw must lie past the memo's t1, and the ring must still
 * keep the one the memo used. */
static void memo_hc_moved(struct xft_sj *j, struct vcpu *v, uint64_t t)
{
	for (uint32_t bits = v->memos; bits; bits &= bits - 1) {
		struct memo *m = &j->memo[__builtin_ctz(bits)];
		if (!m->valid || m->sv != v)
			continue;
		if (v->nhc > m->hmin + j->lim.per_vcpu_hc || (v->nhc == m->nhc + 1 && t == 0)) {
			m->valid = 0;
			continue;
		}
		if (v->nhc == m->nhc + 1 && t - 1 < m->hlim) {
			m->hlim = t - 1;
			if (m->hlim < m->lim)
				m->lim = m->hlim;
		}
	}
}

static void push(struct xft_sj *j, struct vcpu *v, uint64_t t, unsigned state, int irq)
{
	if (v->n >= j->lim.per_vcpu)
		j->st.overwritten++;
	uint64_t cum[S_UNKNOWN] = { 0 };
	uint32_t nc = 0, nch = 0, link = 0;
	if (v->n) {
		/* Only the last entry is ever given a culprit: the one before
		 * this is final. */
		const struct ent *p = ent_at(j, v, v->n - 1);
		memcpy(cum, p->cum, sizeof(cum));
		if (p->state < S_UNKNOWN)
			cum[p->state] += t - p->t;
		nc = p->nculprits + p->has_culprit;
		nch = p->nchanges;
		uint32_t back = p->irq ? p->link : 0;
		if (irq) {
			link = back < LINK_FAR ? back + 1 : LINK_FAR;
		} else if (back < LINK_FAR) {
			/* The state entered last is left here; its entry is
			 * told, unless this one takes its slot. */
			uint64_t from = v->n - 1 - back;
			if (from + j->lim.per_vcpu > v->n)
				ent_at(j, v, from)->link = (uint32_t)(v->n - from);
		}
	}
	v->ts[v->n & j->ring_mask] = t;
	struct ent *e = ent_at(j, v, v->n++);
	e->t = t;
	memcpy(e->cum, cum, sizeof(cum));
	e->state = (uint8_t)state;
	e->has_culprit = 0;
	e->irq = irq ? 1 : 0;
	e->nculprits = nc;
	e->nchanges = nch + !irq;
	e->link = link;
	if (v->memos)
		memo_trace_moved(j, v, t);
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
			push(j, v, last_t(j, v), S_UNKNOWN, 0);
		return;
	}
	if (e->to == S_RUNNING && v->n) {
		struct ent *prev = ent_at(j, v, v->n - 1);
		if (prev->state == S_RUNNABLE && p->have_switch && p->next_dom == e->dom &&
		    p->next_vcpu == e->vcpu && p->prev_dom != IDLE_DOMAIN) {
			struct cul *c = &v->cul[(v->n - 1) & j->ring_mask];
			prev->has_culprit = 1;
			c->pcpu = e->pcpu;
			c->cdom = p->prev_dom;
			c->cvcpu = p->prev_vcpu;
		}
	}
	push(j, v, e->t_ns, e->to, 0);
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
	if (v->nhc && e->t_ns < v->hc[(v->nhc - 1) & j->hc_mask]) {
		j->st.out_of_order++;
		return;
	}
	v->hc[v->nhc++ & j->hc_mask] = e->t_ns;
	if (v->memos)
		memo_hc_moved(j, v, e->t_ns);
}

/* Xen ran on a pCPU for e->arg ns until e->t_ns: an interrupt, carved out
 * of the run of the vCPU it interrupted.  Its start is clamped to the
 * vCPU's last entry, so that entries stay in time order when the trace's
 * times put it before the run's start (its ends are two TSC reads, its
 * record's time a third).  On an idle pCPU, or when the trace does not
 * show the vCPU running, it is no vCPU's time. */
static void xen_ran(struct xft_sj *j, const struct xflow_sched_event *e)
{
	uint32_t vi = j->p[e->pcpu].cur;
	j->st.events++;
	struct vcpu *v = vi == NONE ? NULL : &j->v[vi];
	if (!v || !v->n || ent_at(j, v, v->n - 1)->state != S_RUNNING) {
		j->st.xen_idle++;
		return;
	}
	uint64_t last = last_t(j, v);
	if (e->t_ns < last) {
		j->st.out_of_order++;
		return;
	}
	uint64_t from = e->t_ns > e->arg ? e->t_ns - e->arg : 0;
	if (from < last)
		from = last;
	if (from == e->t_ns)
		return;
	push(j, v, from, S_XEN, 1);
	push(j, v, e->t_ns, S_RUNNING, 1);
}

/* Records were lost on a pCPU: any vCPU may have changed state unseen. */
static void lost(struct xft_sj *j, const struct xflow_sched_event *e)
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
	case XFLOW_SCHED_XEN:
		xen_ran(j, e);
		break;
	}
}

uint64_t xft_sj_watermark(const struct xft_sj *j)
{
	return j->watermark;
}

/* The entries of @v that are state changes (not irq), from its first up
 * to @k (find()'s answer; -1: before every one kept), mod 2^32. */
static uint32_t changes_to(const struct xft_sj *j, const struct vcpu *v, int64_t k)
{
	if (k >= 0)
		return ent_at(j, v, (uint64_t)k)->nchanges;
	const struct ent *f = ent_at(j, v, first_kept(j, v));
	return f->nchanges - !f->irq;
}

/* A state change of @v within (b - err, b + err); @k is the last entry at
 * or before @b (find() with @hint): the changes nearest @b on either side
 * are where the state of @k was entered and is left, which its links say,
 * so that no lookup of its own is needed.  An interrupt's entries are no
 * change: they come every few hundred microseconds and would make a
 * window of nearly every boundary. */
static inline int changed_near(const struct xft_sj *j, const struct vcpu *v, uint64_t b, int64_t k, uint64_t err,
			       unsigned hint)
{
	if (!v || !err)
		return 0;
	uint64_t lo = b > err ? b - err : 0, hi = b + err - 1;
	if (hi < b) {
		/* Past the clock's end: what a search of the wrapped time says. */
		int64_t kh = find(j, v, hi, H_T1), kl = find(j, v, lo, H_T1);
		return kh > kl && changes_to(j, v, kh) != changes_to(j, v, kl);
	}
	if (k >= 0) {
		/* The last change at or before @b, and the first after it:
		 * any change within the window is one of these two. */
		uint64_t from, to;
		state_span(j, v, (uint64_t)k, &from, &to);
		if (from != UINT64_MAX && t_at(j, v, from) > lo)
			return 1;
		return to < v->n && t_at(j, v, to) <= hi;
	}
	/* @b is before every entry kept: count the changes among those up to
	 * the window's end. */
	uint64_t first = first_kept(j, v);
	if (first == v->n || t_at(j, v, first) > hi)
		return 0;
	if (!ent_at(j, v, first)->irq)
		return 1;
	return changes_to(j, v, find(j, v, hi, hint)) != changes_to(j, v, k);
}

/* --- the split ------------------------------------------------------------- */

/* The hint for a lookup at @x: that of the boundary nearest to it. */
static unsigned hint_near(const struct acc *a, uint64_t x)
{
	if (x >= a->tn)
		return x >= a->t1 || x - a->tn > a->t1 - x ? H_T1 : H_TN;
	return x <= a->t0 || a->tn - x > x - a->t0 ? H_T0 : H_TN;
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

/* Xen's runstates as each side sees them, onto the split's states: the
 * sender's are its own; the receiver running is `backend`, blocked is
 * `notify` until its first wake and `blocked` after it (before the wake it
 * is neither runnable nor running: those are zero); Xen's own time is
 * `xen` on every side.  What no runstate covers of the hop's @len is '?'.
 * Constant indices, not a table: this runs once a split. */
static void split_of(const struct acc *a, uint64_t len, struct xft_split *out)
{
	const uint64_t *s = a->known[SENDER], *ra = a->known[RECEIVER_ASLEEP], *rw = a->known[RECEIVER_AWAKE];
	out->ns[XFT_ST_RUN] = s[S_RUNNING];
	out->ns[XFT_ST_WAIT] = s[S_RUNNABLE] + ra[S_RUNNABLE] + rw[S_RUNNABLE];
	out->ns[XFT_ST_NOTIFY] = ra[S_BLOCKED];
	out->ns[XFT_ST_BACKEND] = ra[S_RUNNING] + rw[S_RUNNING];
	out->ns[XFT_ST_BLOCKED] = s[S_BLOCKED] + rw[S_BLOCKED];
	out->ns[XFT_ST_OFFLINE] = s[S_OFFLINE] + ra[S_OFFLINE] + rw[S_OFFLINE];
	out->ns[XFT_ST_XEN] = s[S_XEN] + ra[S_XEN] + rw[S_XEN];
	uint64_t known = 0;
	for (unsigned i = 0; i < XFT_ST_UNKNOWN; i++)
		known += out->ns[i];
	out->ns[XFT_ST_UNKNOWN] = len - known;
	memcpy(out->unknown_ns, a->unk, sizeof(out->unknown_ns));
}

/* The known states of [s, e) of @v into @side's column (@sign -1 takes
 * them out again); returns their sum, the time of [s, e) in a known
 * state.  @ks and @ke are entries at or before s and e with none between
 * them and s or e but at s or e (the last such is find()'s): each state's
 * time is the difference of the running totals they carry.  [s, e) must
 * lie within what is kept and the watermark. */
static uint64_t charge_span(const struct xft_sj *j, const struct vcpu *v, uint64_t s, uint64_t e, int64_t ks,
			    int64_t ke, int side, int sign, struct acc *a)
{
	const struct ent *x = ent_at(j, v, (uint64_t)ks), *y = ent_at(j, v, (uint64_t)ke);
	uint64_t *col = a->known[side], to_e = e - y->t, to_s = s - x->t, known = 0;
	if (sign > 0) {
		for (unsigned k = 0; k < S_UNKNOWN; k++) {
			col[k] += y->cum[k] - x->cum[k];
			known += y->cum[k] - x->cum[k];
		}
		col[y->state] += to_e;
		col[x->state] -= to_s;
	} else {
		for (unsigned k = 0; k < S_UNKNOWN; k++) {
			col[k] -= y->cum[k] - x->cum[k];
			known += y->cum[k] - x->cum[k];
		}
		col[y->state] -= to_e;
		col[x->state] += to_s;
	}
	/* The column S_UNKNOWN took the ends of an unknown state: not known. */
	if (y->state < S_UNKNOWN)
		known += to_e;
	if (x->state < S_UNKNOWN)
		known -= to_s;
	return known;
}

/* [s, e) of @v as @side sees it, @ks and @ke the last entries at or
 * before s and e (find()), the windows within the clock error of a
 * boundary taken out as '?'; before what is kept and past the watermark,
 * '?'.  Each '?' nanosecond is given its reason (tui/hop_split.h) here,
 * from the span's ends and the sums charge_span() returns: [s, e) is cut
 * into before what is kept, [lo, hi) charged, and past the watermark,
 * which add up to e - s whatever the times. */
static inline void charge(struct xft_sj *j, const struct vcpu *v, uint64_t s, uint64_t e, int64_t ks, int64_t ke,
			  int side, struct acc *a)
{
	if (e <= s)
		return;
	if (!v || !v->n) {
		a->unk[XFT_UNK_NO_TRACE] += e - s;
		return;
	}
	uint64_t lo = s, hi = e < j->watermark ? e : j->watermark;
	uint64_t fk = first_kept(j, v), first = ent_at(j, v, fk)->t;
	if (first > lo) {
		/* Counted even when the whole hop is gone. */
		if (fk > 0)
			j->st.too_old++;
		lo = first;
		ks = (int64_t)fk;
	}
	/* Before the first entry is old when the ring let older ones go,
	 * else before anything Xen said of the vCPU: lost. */
	uint64_t before = (lo < e ? lo : e) - s;
	a->unk[fk > 0 ? XFT_UNK_OLD : XFT_UNK_LOST] += before;
	if (hi <= lo) {
		a->unk[XFT_UNK_EARLY] += (e - s) - before;
		return;
	}
	a->unk[XFT_UNK_EARLY] += e - hi;
	uint64_t known = charge_span(j, v, lo, hi, ks, hi == e ? ke : find(j, v, hi, H_T1), side, 1, a);
	a->unk[XFT_UNK_LOST] += (hi - lo) - known;
	/* The windows are disjoint (window_add() merges them): each known
	 * nanosecond is taken out once at most, and what a window covers of
	 * an unknown state keeps its reason. */
	for (unsigned w = 0; w < a->nwin; w++) {
		uint64_t x = a->win[w][0] > lo ? a->win[w][0] : lo, y = a->win[w][1] < hi ? a->win[w][1] : hi;
		if (y > x)
			a->unk[XFT_UNK_CLOCK] += charge_span(j, v, x, y, find(j, v, x, hint_near(a, x)),
							     find(j, v, y, hint_near(a, y)), side, -1, a);
	}
}

/* The receiver's first wake at or after @tn (the first time it is
 * runnable or running, an interrupt inside a run being running), or @t1
 * when it has none before (*@woke 0); @kn and @k1 are the last entries at
 * or before tn and t1, and *@kw becomes the one of the wake. */
static uint64_t first_wake(const struct xft_sj *j, const struct vcpu *v, uint64_t tn, uint64_t t1, int64_t kn,
			   int64_t k1, int64_t *kw, int *woke)
{
	*kw = kn;
	*woke = 1;
	if (!v || kn < 0)
		return tn; /* before what is kept: all '?' anyway */
	for (uint64_t i = (uint64_t)kn; i < v->n; i++) {
		const struct ent *e = ent_at(j, v, i);
		if (e->t >= t1)
			break;
		if (e->state == S_RUNNING || e->state == S_RUNNABLE || e->state == S_XEN) {
			uint64_t tw = e->t > tn ? e->t : tn;
			while (i + 1 < v->n && t_at(j, v, i + 1) <= tw)
				i++;
			*kw = (int64_t)i;
			return tw;
		}
	}
	*kw = k1;
	*woke = 0;
	return t1;
}

/* Who held the pCPU while @v waited in [s, e): each holder's share of the
 * wait into @c (the biggest kept).  @ks and @ke are the last entries at or
 * before s and e. */
static inline void culprits(const struct xft_sj *j, const struct vcpu *v, uint64_t s, uint64_t e, int64_t ks,
			    int64_t ke, struct xft_culprit c[NCULPRITS])
{
	if (!v || e <= s)
		return;
	uint64_t i = ks < 0 ? first_kept(j, v) : (uint64_t)ks;
	/* Most spans have no culprit at all: say so without walking them.
	 * The entries the walk would see lie in [i, ke]. */
	if (ke < (int64_t)i)
		return;
	const struct ent *last = ent_at(j, v, (uint64_t)ke);
	if (last->nculprits + last->has_culprit == ent_at(j, v, i)->nculprits)
		return;
	for (unsigned seen = 0; i < v->n && seen < CULPRIT_SCAN; i++) {
		const struct ent *en = ent_at(j, v, i);
		if (en->t >= e)
			break;
		if (en->state != S_RUNNABLE)
			continue;
		seen++;
		if (!en->has_culprit)
			continue;
		const struct cul *cu = &v->cul[i & j->ring_mask];
		uint64_t x = en->t > s ? en->t : s, y = i + 1 < v->n ? ent_at(j, v, i + 1)->t : j->watermark;
		if (y > e)
			y = e;
		if (y <= x)
			continue;
		unsigned m, min = 0;
		for (m = 0; m < NCULPRITS; m++) {
			if (c[m].wait_ns && c[m].domain == cu->cdom && c[m].vcpu == cu->cvcpu && c[m].pcpu == cu->pcpu)
				break;
			if (c[m].wait_ns < c[min].wait_ns)
				min = m;
		}
		if (m == NCULPRITS) { /* a new holder takes the smallest's place */
			m = min;
			c[m] = (struct xft_culprit){ .domain = cu->cdom, .vcpu = cu->cvcpu, .pcpu = cu->pcpu };
		}
		c[m].wait_ns += y - x;
	}
}

/* The timeline of the vCPU a record of (@domain, @cpu) was written on; a
 * record that does not say is charged to its domain's vCPU when the trace
 * shows it only one. */
static inline const struct vcpu *vcpu_of(const struct xft_sj *j, uint16_t domain, int32_t cpu)
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
	uint64_t lo = v->nhc > n ? v->nhc - n : 0, hi = v->nhc, h = v->hc_hint;
	/* The first kept at or after t0: [lo, hi] holds it (hi: none).  Start
	 * from where the last search ended, as find() does. */
	if (h > lo && h <= hi) {
		if (v->hc[(h - 1) & j->hc_mask] < t0) {
			uint64_t step = 1;
			lo = h;
			while (step < hi - lo && v->hc[(lo + step - 1) & j->hc_mask] < t0) {
				lo += step;
				step <<= 1;
			}
			if (step < hi - lo)
				hi = lo + step - 1;
		} else {
			uint64_t step = 1, first = lo;
			hi = h - 1;
			while (step <= hi - first && v->hc[(hi - step) & j->hc_mask] >= t0) {
				hi -= step;
				step <<= 1;
			}
			lo = step <= hi - first ? hi - step + 1 : first;
		}
	}
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (v->hc[mid & j->hc_mask] < t0)
			lo = mid + 1;
		else
			hi = mid;
	}
	((struct vcpu *)v)->hc_hint = lo;
	if (lo < v->nhc && v->hc[lo & j->hc_mask] <= t1)
		return v->hc[lo & j->hc_mask];
	return t0;
}

/* How far @t lies from any running interval of @v (@k the last entry at
 * or before it); 0 when it ran then.  -1 when the timeline cannot say.
 * *@ahead says whether the nearer run begins after @t (else it ended
 * before).  An interrupt is part of the run it interrupted: no record is
 * written while Xen runs, but an interrupt is shorter than the clock
 * error these checks measure, and a run cut into pieces by each would
 * make every record near one look late.  A run never ends on an
 * interrupt's S_XEN (its S_RUNNING follows), so the scans below need not
 * know them. */
static int64_t off_run(const struct xft_sj *j, const struct vcpu *v, uint64_t t, int64_t k, int *ahead)
{
	*ahead = 0;
	if (k < 0 || ent_at(j, v, (uint64_t)k)->state == S_UNKNOWN)
		return -1; /* what the vCPU did then is not known */
	if (ent_at(j, v, (uint64_t)k)->state == S_RUNNING || ent_at(j, v, (uint64_t)k)->state == S_XEN)
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

void xft_sj_runs_near(const struct xft_sj *j, const struct vcpu *v, uint64_t k, struct near *nr)
{
	memset(nr, 0, sizeof(*nr));
	unsigned st = ent_at(j, v, k)->state;
	if (st == S_RUNNING || st == S_XEN)
		return;
	nr->ok = 1;
	if (st == S_UNKNOWN)
		return; /* off_run() cannot say */
	/* off_run()'s two scans, for any time in entry k: the nearer run is
	 * one of these, whatever the time. */
	for (int64_t b = (int64_t)k; b >= (int64_t)first_kept(j, v); b--) {
		const struct ent *en = ent_at(j, v, (uint64_t)b);
		if (en->state == S_UNKNOWN)
			break;
		if (en->state == S_RUNNING) {
			nr->has_b = 1;
			nr->kb = (uint64_t)b;
			nr->tb = ent_at(j, v, (uint64_t)b + 1)->t;
			break;
		}
	}
	uint64_t f;
	for (f = k + 1; f < v->n; f++) {
		const struct ent *en = ent_at(j, v, f);
		if (en->state == S_UNKNOWN)
			break;
		if (en->state == S_RUNNING) {
			nr->has_f = 1;
			nr->tf = en->t;
			break;
		}
	}
	/* The trace has not shown what follows: a run may come nearer. */
	if (f == v->n)
		nr->ok = 0;
}

/* Whether entry @k of @v (state_entered()'s; UINT64_MAX: not kept) is
 * where a known state of it began: its predecessor is kept and known, and
 * not the same state (after lost records, a run's first entry is not its
 * start; an S_XEN is never just before an entry that is not irq). */
static int began_at(const struct xft_sj *j, const struct vcpu *v, uint64_t k)
{
	if (k == UINT64_MAX || k <= first_kept(j, v))
		return 0;
	unsigned prev = ent_at(j, v, k - 1)->state;
	return prev != S_UNKNOWN && prev != ent_at(j, v, k)->state;
}

/* Whether a run of @v is known to have ended at entry @next (state_left()
 * of an entry in it): kept, known and another state. */
static int ended_known(const struct xft_sj *j, const struct vcpu *v, uint64_t next)
{
	if (next >= v->n)
		return 0;
	unsigned s = ent_at(j, v, next)->state;
	return s != S_UNKNOWN && s != S_RUNNING;
}

/* The offset is at least @x; whether that narrowed @o. */
static inline int offsets_floor(struct offsets *o, int64_t x)
{
	if (o->has_lo && x <= o->lo)
		return 0;
	o->lo = x;
	o->has_lo = 1;
	return 1;
}

/* The offset is at most @x; whether that narrowed @o. */
static inline int offsets_ceil(struct offsets *o, int64_t x)
{
	if (o->has_hi && x >= o->hi)
		return 0;
	o->hi = x;
	o->has_hi = 1;
	return 1;
}

/* The run holding entry @k of @v. */
void xft_sj_run_of(const struct xft_sj *j, const struct vcpu *v, uint64_t k, struct run *r)
{
	uint64_t a, b;
	state_span(j, v, k, &a, &b);
	r->began = began_at(j, v, a);
	r->ended = ended_known(j, v, b);
	r->a = r->began ? ent_at(j, v, a)->t : 0;
	r->b = r->ended ? ent_at(j, v, b)->t : 0;
	r->ka = a;
}

/* The records at @lo to @hi lie in run @r: a - lo <= offset <= b - hi.
 * Whether that narrowed @o. */
__attribute__((always_inline)) static inline int offsets_in_span(struct offsets *o, uint64_t lo, uint64_t hi,
								const struct run *r)
{
	int narrowed = 0;
	if (r->began)
		narrowed |= offsets_floor(o, -(int64_t)(lo - r->a));
	if (r->ended)
		narrowed |= offsets_ceil(o, (int64_t)(r->b - hi));
	return narrowed;
}

/* The record at @t lies in run @r. */
__attribute__((always_inline)) static inline int offsets_in_run(struct offsets *o, uint64_t t, const struct run *r)
{
	return offsets_in_span(o, t, t, r);
}

/* What the record at @t on @v, whose vCPU must have been running then,
 * allows of the offset (struct offsets), narrowing @o.  Within a run
 * [a, b): a - t <= offset <= b - t.  Outside every run, at distance @d
 * from the nearer one: the record belongs to that one (the error is taken
 * to be less than half the gap between two runs), so offset <= -d when it
 * ended before, offset >= d when it begins after; also at distance 0, a
 * record at the very time its run ended or began, whose entry @k is then
 * not a run's and says nothing of where that run began.  Whether it
 * narrowed. */
static int offsets_narrow(const struct xft_sj *j, const struct vcpu *v, uint64_t t, int64_t k, int64_t d, int ahead,
			  struct offsets *o)
{
	unsigned st = ent_at(j, v, (uint64_t)k)->state;
	if (d > 0 || (st != S_RUNNING && st != S_XEN))
		return ahead ? offsets_floor(o, d) : offsets_ceil(o, -d);
	struct run r;
	xft_sj_run_of(j, v, (uint64_t)k, &r);
	return offsets_in_run(o, t, &r);
}

/* Both windows' offsets together. */
static struct offsets offsets_both(const struct offsets *a, const struct offsets *b)
{
	struct offsets o = *a;
	if (b->has_lo)
		offsets_floor(&o, b->lo);
	if (b->has_hi)
		offsets_ceil(&o, b->hi);
	return o;
}

/* The error the offsets prove: the largest offset they allow, or
 * UINT64_MAX when they allow any (a side unbounded) or none. */
static uint64_t offsets_bound(const struct offsets *o)
{
	if (!o->has_lo || !o->has_hi || o->lo > o->hi)
		return UINT64_MAX;
	uint64_t lo = o->lo < 0 ? (uint64_t)-o->lo : (uint64_t)o->lo;
	uint64_t hi = o->hi < 0 ? (uint64_t)-o->hi : (uint64_t)o->hi;
	return lo > hi ? lo : hi;
}

/* The error a split uses: none until the first check. */
static inline uint64_t split_error(const struct xft_sj *j)
{
	return j->st.clock_error_ns == UINT64_MAX ? 0 : j->st.clock_error_ns;
}

/* The clock error is now @e: a memo made with another one holds no more
 * (struct memo), and is let go here rather than asked at each answer. */
static void error_set(struct xft_sj *j, uint64_t e)
{
	uint64_t was = split_error(j);
	j->st.clock_error_ns = e;
	if (split_error(j) != was)
		memos_drop(j);
}

/* The bound both windows' offsets prove, into the stats. */
static void bound_take(struct xft_sj *j)
{
	struct offsets both = offsets_both(&j->off_cur, &j->off_prev);
	j->st.clock_bound_ns = offsets_bound(&both);
	j->bound_dirty = 0;
}

/* The error the checks measured rose to @d (the current window's). */
static void err_raise(struct xft_sj *j, uint64_t d)
{
	if (d > j->err_cur)
		j->err_cur = d;
	if (j->err_cur > j->st.clock_error_ns || j->st.clock_error_ns == UINT64_MAX)
		error_set(j, j->err_cur > j->err_prev ? j->err_cur : j->err_prev);
}

/* Make every check the memos hold: at a tick, a read of the stats and
 * a turn of the windows, not at each answer, so a look at each memo. */
static void checks_flush_all(struct xft_sj *j)
{
	for (unsigned k = 0; k < MEMO_SLOTS; k++)
		xft_sj_checks_flush(j, &j->memo[k]);
}

/* One more clock check's results in (clock_check(), notify_check() and
 * a split the memo answers; @narrowed: it narrowed the current window's
 * offsets): the bound they prove, and the windows turned over every
 * XFT_SJ_ERROR_WINDOW checks.  The bound is of both windows' offsets as
 * they stand after the last check that narrowed them, or the first after
 * the windows turned; it is taken when it is read (xft_sj_stats()) or
 * before the windows turn, not at each check: a memo's answer checks the
 * clock at nearly every hop, and nearly each of those narrows the
 * offsets a little. */
/* The windows turn: the current one is the previous one now. */
static void windows_turn(struct xft_sj *j)
{
	/* The checks the memos hold were made in the window that ends. */
	checks_flush_all(j);
	if (j->bound_dirty)
		bound_take(j);
	j->err_prev = j->err_cur;
	j->err_cur = 0;
	j->err_n = 0;
	j->off_prev = j->off_cur;
	memset(&j->off_cur, 0, sizeof(j->off_cur));
	j->bound_stale = 1;
	error_set(j, j->err_prev);
}

/* A check narrowed the current window's offsets (@narrowed), or was the
 * first since the windows turned: the bound is to be taken again. */
static inline void checks_dirty(struct xft_sj *j, int narrowed)
{
	if (narrowed || j->bound_stale) {
		j->bound_dirty = 1;
		j->bound_stale = 0;
	}
}

/* One more check counted: the windows turn at every
 * XFT_SJ_ERROR_WINDOW.  Inline, as offsets_in_run(): a memo's answer
 * makes a check at nearly every hop, and gcc made both functions of
 * their own. */
__attribute__((always_inline)) static inline void checks_count(struct xft_sj *j)
{
	if (++j->err_n == XFT_SJ_ERROR_WINDOW) {
		windows_turn(j);
	} else if (j->st.clock_error_ns == UINT64_MAX) {
		/* The first check: the error is measured from here on. */
		error_set(j, j->err_cur > j->err_prev ? j->err_cur : j->err_prev);
	}
}

__attribute__((always_inline)) static inline void checks_turn(struct xft_sj *j, int narrowed)
{
	checks_dirty(j, narrowed);
	checks_count(j);
}

void xft_sj_checks_flush(struct xft_sj *j, struct memo *m)
{
	if (!memo_checks_held(m))
		return;
	int narrowed = offsets_in_span(&j->off_cur, m->chk_lo, m->chk_hi, &m->run);
	memo_checks_none(m);
	checks_dirty(j, narrowed);
}

/* A record inside a run (nearly every one) asks off_run() nothing: it
 * runs once a split. */
static void clock_check(struct xft_sj *j, const struct vcpu *v, uint64_t t, int64_t k)
{
	int ahead = 0;
	int64_t d;
	unsigned st = v && k >= 0 ? ent_at(j, v, (uint64_t)k)->state : S_UNKNOWN;
	if (st == S_RUNNING || st == S_XEN)
		d = 0;
	else
		d = v ? off_run(j, v, t, k, &ahead) : -1;
	if (d < 0)
		return;
	j->st.checks++;
	err_raise(j, (uint64_t)d);
	checks_turn(j, offsets_narrow(j, v, t, k, d, ahead, &j->off_cur));
}

/* clock_check() of a record at @t in the entry @nr was taken of, where
 * no run is (struct near): its distance from the nearer run with no scan
 * of the timeline. */
static void near_check(struct xft_sj *j, const struct near *nr, uint64_t t)
{
	uint64_t d = nr->has_b ? t - nr->tb : UINT64_MAX;
	int ahead = 0;
	if (nr->has_f && nr->tf - t < d) {
		d = nr->tf - t;
		ahead = 1;
	}
	if (d > INT64_MAX)
		return;
	j->st.checks++;
	err_raise(j, d);
	checks_turn(j, ahead ? offsets_floor(&j->off_cur, (int64_t)d) : offsets_ceil(&j->off_cur, -(int64_t)d));
}

/* The woven notification of @from, into [t0, t1]. */
static uint64_t tn_clamped(const struct xft_sj_end *from, uint64_t t0, uint64_t t1)
{
	return from->tn_ns < t0 ? t0 : from->tn_ns > t1 ? t1 : from->tn_ns;
}

/* Where a hop across vCPUs crosses: where the flow says its sender
 * notified, when it says; else where the trace shows it did. */
static uint64_t crossing_time(const struct xft_sj *j, const struct vcpu *sv, const struct xft_sj_end *from,
			      uint64_t t0, uint64_t t1)
{
	return from->has_tn ? tn_clamped(from, t0, t1) : notify_time(j, sv, t0, t1);
}

/* The first evtchn_op of @v kept at or after @t (v->nhc: none), and in
 * *@all whether every one of @v's at or after @t is still kept. */
static uint64_t hc_first_at(const struct xft_sj *j, const struct vcpu *v, uint64_t t, int *all)
{
	uint64_t first = v->nhc > j->lim.per_vcpu_hc ? v->nhc - j->lim.per_vcpu_hc : 0, lo = first, hi = v->nhc;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (v->hc[mid & j->hc_mask] < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	*all = lo > first || first == 0;
	return lo;
}

/* The ordered pair of a woven notification at @tn on @v (sched_join.h):
 * offset <= h - tn, h the one evtchn_op of the run holding tn.  Within
 * one run nothing else of the vCPU's runs between its notify point and
 * its hypercall, so one evtchn_op there is this notification's; the run
 * must be whole (start and end seen), or one outside what is seen could
 * be it. */
static void notify_check(struct xft_sj *j, const struct vcpu *v, uint64_t tn)
{
	int64_t k = v ? find(j, v, tn, H_TN) : -1;
	if (k < 0 || (ent_at(j, v, (uint64_t)k)->state != S_RUNNING && ent_at(j, v, (uint64_t)k)->state != S_XEN))
		return;
	uint64_t a = state_entered(j, v, (uint64_t)k), b = state_left(j, v, (uint64_t)k);
	if (!began_at(j, v, a) || !ended_known(j, v, b))
		return;
	uint64_t ta = ent_at(j, v, a)->t, tb = ent_at(j, v, b)->t;
	int all;
	uint64_t i = hc_first_at(j, v, ta, &all);
	if (!all || i >= v->nhc || v->hc[i & j->hc_mask] >= tb ||
	    (i + 1 < v->nhc && v->hc[(i + 1) & j->hc_mask] < tb))
		return;
	uint64_t h = v->hc[i & j->hc_mask];
	j->st.checks++;
	if (h < tn)
		err_raise(j, tn - h);
	checks_turn(j, offsets_ceil(&j->off_cur, (int64_t)h - (int64_t)tn));
}

/* A split the memo does not answer: every lookup and sum made, and kept in
 * @m when it can be (NULL: a split the memo must not see, struct memo). */
static void split_anew(struct xft_sj *j, struct memo *m, const struct xft_sj_end *from, const struct xft_sj_end *to,
		       int check, uint64_t t0, uint64_t t1, uint64_t err, struct xft_split *out,
		       struct xft_culprit *culprit)
{
	struct acc a;
	struct xft_culprit c[NCULPRITS];
	memset(a.known, 0, sizeof(a.known)); /* the windows are set as they come */
	memset(a.unk, 0, sizeof(a.unk));
	a.nwin = 0;
	memset(c, 0, sizeof(c));
	/* The vCPUs of the ends: the memo's, when it is of the same ends and
	 * no vCPU came since, whether or not its split still holds. */
	const struct vcpu *sv, *rv;
	if (!m) {
		sv = vcpu_of(j, from->domain, from->cpu);
		rv = vcpu_of(j, to->domain, to->cpu);
	} else if (m->keyed && m->nv == j->nv && m->from == memo_end(from) && m->to == memo_end(to)) {
		sv = m->sv;
		rv = m->rv;
		if (m->used)
			m->dry = 0;
		else if (m->dry < UINT32_MAX)
			m->dry++;
	} else {
		sv = vcpu_of(j, from->domain, from->cpu);
		rv = vcpu_of(j, to->domain, to->cpu);
		m->valid = 0;
		m->dry = 0;
		m->keyed = 1;
		m->from = memo_end(from);
		m->to = memo_end(to);
		m->sv = sv;
		m->rv = rv;
		m->nv = j->nv;
	}
	int same = sv && sv == rv;
	uint64_t tn = same ? t1 : crossing_time(j, sv, from, t0, t1);
	a.t0 = t0;
	a.tn = tn;
	a.t1 = t1;
	/* One lookup per boundary of each timeline charged: every other
	 * question about the hop steps from these. */
	int64_t s0 = -1, sn = -1, rn = -1, r1 = -1;
	if (sv) {
		s0 = find(j, sv, t0, H_T0);
		if (same)
			r1 = find(j, sv, t1, H_T1);
		else
			sn = find(j, sv, tn, H_TN);
	}
	if (rv && !same) {
		rn = find(j, rv, tn, H_TN);
		r1 = find(j, rv, t1, H_T1);
	}
	/* The boundaries near which the charged vCPU changed state. */
	struct {
		uint64_t b;
		const struct vcpu *v, *w;
		int64_t kv, kw;
	} bd[3] = { { t0, sv, NULL, s0, -1 }, { tn, sv, rv, sn, rn }, { t1, same ? sv : rv, NULL, r1, -1 } };
	static const unsigned hint[3] = { H_T0, H_TN, H_T1 };
	unsigned wflag[3] = { 0, 0, 0 };
	for (unsigned i = 0; i < 3; i++) {
		if (i == 1 && same)
			continue;
		if (changed_near(j, bd[i].v, bd[i].b, bd[i].kv, err, hint[i]) ||
		    changed_near(j, bd[i].w, bd[i].b, bd[i].kw, err, hint[i])) {
			window_add(&a, bd[i].b > err ? bd[i].b - err : 0, bd[i].b + err);
			wflag[i] = 1;
		}
	}
	if (same) {
		charge(j, sv, t0, t1, s0, r1, SENDER, &a);
		culprits(j, sv, t0, t1, s0, r1, c);
	}
	int64_t kw = -1;
	int woke = 0;
	uint64_t tw = t1;
	if (!same) {
		tw = first_wake(j, rv, tn, t1, rn, r1, &kw, &woke);
		charge(j, sv, t0, tn, s0, sn, SENDER, &a);
		charge(j, rv, tn, tw, rn, kw, RECEIVER_ASLEEP, &a);
		charge(j, rv, tw, t1, kw, r1, RECEIVER_AWAKE, &a);
		culprits(j, sv, t0, tn, s0, sn, c);
		culprits(j, rv, tw, t1, kw, r1, c);
		if (check)
			clock_check(j, rv, t1, r1);
	}
	if (check && from->has_tn)
		notify_check(j, sv, tn_clamped(from, t0, t1));
	/* Each nanosecond of [t0, t1) was charged to one side once. */
	split_of(&a, t1 - t0, out);
	struct xft_culprit best = { 0 };
	for (unsigned k = 0; k < NCULPRITS; k++)
		if (c[k].wait_ns > best.wait_ns)
			best = c[k];
	/* What the clock error blurred is not waited on anyone's account. */
	if (best.wait_ns > out->ns[XFT_ST_WAIT])
		best.wait_ns = out->ns[XFT_ST_WAIT];
	if (culprit)
		*culprit = best;
	/* Where hops between these ends never come close enough to answer
	 * one another (few flows, or their ends always across a change), a
	 * memo costs half a split and buys nothing: after three unused ones
	 * in a row, one is made only now and then, to notice when that
	 * changes. */
	if (!m)
		return;
	m->valid = 0;
	m->used = 0;
	if (sv && rv && !same && (m->dry < 3 || m->dry % MEMO_DRY_EVERY == 0)) {
		xft_sj_memo_put(j, m, sv, rv, t0, tn, t1, err, s0, sn, rn, r1, kw, tw, woke, wflag, &a, out);
		/* This split's clock check may have changed the error since. */
		if (split_error(j) != err)
			m->valid = 0;
		if (m->valid) {
			/* What the trace adds to either is told to the memo. */
			uint32_t bit = UINT32_C(1) << (m - j->memo);
			j->v[sv - j->v].memos |= bit;
			j->v[rv - j->v].memos |= bit;
		}
	}
}

/* A split @m answers: its clock check, and no culprit (a memo is kept
 * only of splits with none). */
__attribute__((always_inline)) static inline void memo_answered(struct xft_sj *j, struct memo *m, int check,
								  uint64_t t1, struct xft_culprit *culprit)
{
	m->used = 1;
	if (check && m->in_run && m->rv->n == m->run_n) {
		/* Held, as offsets_in_run() of the run at t1 would narrow the
		 * offsets: made when the run changes, the windows turn or
		 * the bound is read (struct memo's chk_lo). */
		if (t1 < m->chk_lo)
			m->chk_lo = t1;
		if (t1 > m->chk_hi)
			m->chk_hi = t1;
		j->st.checks++;
		checks_count(j);
	} else if (check) {
		/* An entry the trace added at t1 itself, which the memo lets
		 * stand (it changes nothing of the time before t1), holds the
		 * point t1 that the check is about. */
		int64_t k = m->rv->n != m->rn && t_at(j, m->rv, m->rn) <= t1 ? find(j, m->rv, t1, H_T1) : m->r1;
		/* Between two runs, the memo says where they are, while the
		 * ring keeps the one before. */
		if (!m->in_run && k == m->r1 && m->near.ok &&
		    (!m->near.has_b || m->near.kb >= first_kept(j, m->rv)))
			near_check(j, &m->near, t1);
		else
			clock_check(j, m->rv, t1, k);
	}
	if (culprit)
		*culprit = (struct xft_culprit){ 0 };
}

/* The memo first: most splits end here, and should not pay for the frame
 * of split_anew().  The memo that answers, moved to [t0, t1]
 * (memo_answer() gives the split); else NULL, and the split made anew
 * into @out.  @got is what memo_get() said of @m (MEMO_MISS when
 * from->has_tn: that split never asks).  Always inline: called from two
 * places, gcc made it a function of its own, and most splits paid its
 * frame too. */
__attribute__((always_inline)) static inline struct memo *
split_memo(struct xft_sj *j, struct memo *m, int got, const struct xft_sj_end *from, const struct xft_sj_end *to,
	   int check, uint64_t t0, uint64_t t1, struct xft_split *out, struct xft_culprit *culprit)
{
	uint64_t err = split_error(j);
	if (from->has_tn) {
		/* Its notify_check() is made there, and only there. */
		split_anew(j, NULL, from, to, check, t0, t1, err, out, culprit);
		return NULL;
	}
	if (got != MEMO_HIT && !(got != MEMO_MISS && xft_sj_memo_cross(j, m, got, t0, t1, err))) {
		split_anew(j, m, from, to, check, t0, t1, err, out, culprit);
		return NULL;
	}
	memo_answered(j, m, check, t1, culprit);
	return m;
}

/* The memo of the ends of a split (none when the sender has a woven
 * notification), and in *@got what memo_get() says of it. */
__attribute__((always_inline)) static inline struct memo *memo_ask(struct xft_sj *j, const struct xft_sj_end *from,
								   const struct xft_sj_end *to, uint64_t t0,
								   uint64_t t1, int *got)
{
	*got = MEMO_MISS;
	if (from->has_tn)
		return NULL;
	uint64_t kf = memo_end(from), kt = memo_end(to);
	struct memo *m = memo_slot(j, kf, kt);
	*got = memo_get(j, m, kf, kt, t0, t1);
	return m;
}

void xft_sj_split(struct xft_sj *j, const struct xft_sj_end *from, const struct xft_sj_end *to, int check,
		  struct xft_split *out, struct xft_culprit *culprit)
{
	uint64_t t0 = from->t_ns, t1 = to->t_ns > t0 ? to->t_ns : t0;
	int got;
	struct memo *m = memo_ask(j, from, to, t0, t1, &got);
	m = split_memo(j, m, got, from, to, check, t0, t1, out, culprit);
	if (m)
		memo_answer(m, t0, t1, out);
}

void xft_sj_split_aside(struct xft_sj *j, const struct xft_sj_end *from, const struct xft_sj_end *to, int check,
			struct xft_split *out, struct xft_culprit *culprit)
{
	uint64_t t0 = from->t_ns, t1 = to->t_ns > t0 ? to->t_ns : t0;
	split_anew(j, NULL, from, to, check, t0, t1, split_error(j), out, culprit);
}

/* restrict: the two never overlap, and without it the compiler adds one
 * word at a time, reloading each in case a store changed the other. */
static void sum_add(struct xft_split *restrict sum, const struct xft_split *restrict s)
{
	for (unsigned i = 0; i < XFT_NSTATES; i++)
		sum->ns[i] += s->ns[i];
	for (unsigned i = 0; i < XFT_UNK_NREASONS; i++)
		sum->unknown_ns[i] += s->unknown_ns[i];
}

/* What xft_sj_split_add() does when the memo does not answer at once:
 * out of line, so that its frame and registers are not the answer's. */
static __attribute__((noinline)) void split_add_slow(struct xft_sj *j, struct memo *m, int got,
						     const struct xft_sj_end *from, const struct xft_sj_end *to,
						     int check, uint64_t t0, uint64_t t1, struct xft_split *all,
						     struct xft_split *tail, struct xft_culprit *culprit)
{
	struct xft_split s;
	m = split_memo(j, m, got, from, to, check, t0, t1, &s, culprit);
	if (m) {
		if (all)
			memo_owe(m, OWED_ALL, all, t0, t1);
		if (tail)
			memo_owe(m, OWED_TAIL, tail, t0, t1);
		return;
	}
	if (all)
		sum_add(all, &s);
	if (tail)
		sum_add(tail, &s);
}

void xft_sj_split_add(struct xft_sj *j, const struct xft_sj_end *from, const struct xft_sj_end *to, int check,
		      struct xft_split *all, struct xft_split *tail, struct xft_culprit *culprit)
{
	uint64_t t0 = from->t_ns, t1 = to->t_ns > t0 ? to->t_ns : t0;
	int got;
	struct memo *m = memo_ask(j, from, to, t0, t1, &got);
	if (got != MEMO_HIT) {
		split_add_slow(j, m, got, from, to, check, t0, t1, all, tail, culprit);
		return;
	}
	memo_answered(j, m, check, t1, culprit);
	if (all)
		memo_owe(m, OWED_ALL, all, t0, t1);
	if (tail)
		memo_owe(m, OWED_TAIL, tail, t0, t1);
}

void xft_sj_fold(struct xft_sj *j)
{
	for (unsigned k = 0; k < MEMO_SLOTS; k++)
		xft_sj_memo_pay(&j->memo[k]);
}

const struct xft_sj_stats *xft_sj_stats(struct xft_sj *j)
{
	checks_flush_all(j);
	if (j->bound_dirty)
		bound_take(j);
	return &j->st;
}

const struct xft_sj_stats *xft_sj_stats_peek(const struct xft_sj *j)
{
	return &j->st;
}

/* --- life ------------------------------------------------------------------ */

void xft_sj_reset(struct xft_sj *j)
{
	memset(&j->st, 0, sizeof(j->st));
	j->st.clock_error_ns = UINT64_MAX;
	j->st.clock_bound_ns = UINT64_MAX;
	j->watermark = 0;
	j->nv = 0;
	j->err_cur = j->err_prev = 0;
	j->err_n = 0;
	j->bound_stale = 0;
	j->bound_dirty = 0;
	memset(&j->off_cur, 0, sizeof(j->off_cur));
	memset(&j->off_prev, 0, sizeof(j->off_prev));
	/* The sums stay the caller's: what the memos owe them is theirs. */
	xft_sj_fold(j);
	memset(j->memo, 0, sizeof(j->memo));
	for (unsigned k = 0; k < MEMO_SLOTS; k++)
		memo_checks_none(&j->memo[k]);
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
	j->culs = take((size_t)j->lim.max_vcpus * j->lim.per_vcpu, sizeof(*j->culs), &j->bytes);
	j->tss = take((size_t)j->lim.max_vcpus * j->lim.per_vcpu, sizeof(*j->tss), &j->bytes);
	j->hcs = take((size_t)j->lim.max_vcpus * j->lim.per_vcpu_hc, sizeof(*j->hcs), &j->bytes);
	j->p = take(j->lim.max_pcpus, sizeof(*j->p), &j->bytes);
	if (!j->v || !j->slots || !j->ents || !j->culs || !j->tss || !j->hcs || !j->p) {
		xft_sj_free(j);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < j->lim.max_vcpus; i++) {
		j->v[i].ring = &j->ents[(size_t)i * j->lim.per_vcpu];
		j->v[i].cul = &j->culs[(size_t)i * j->lim.per_vcpu];
		j->v[i].ts = &j->tss[(size_t)i * j->lim.per_vcpu];
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
	free(j->culs);
	free(j->tss);
	free(j->hcs);
	free(j->p);
	free(j);
}
