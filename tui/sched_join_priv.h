/*
 * What the scheduler join (tui/sched_join.c) and its memo
 * (tui/sched_join_memo.c) share: the timelines, the memo and the state of
 * a split they both read.  Private to those two files; the interface is
 * tui/sched_join.h.  The entry accessors and lookups are static inline so
 * that the split pays no call for them in either file.
 */
#ifndef XFLOW_TUI_SCHED_JOIN_PRIV_H
#define XFLOW_TUI_SCHED_JOIN_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "tui/sched_join.h"

/* The hints of a timeline (struct vcpu): a hop's start, its notification
 * and its end. */
enum { H_T0, H_TN, H_T1, NHINTS };

/* The states of a timeline: Xen's runstates, Xen itself running instead of
 * a running vCPU, and one for "not known". */
enum { S_RUNNING, S_RUNNABLE, S_BLOCKED, S_OFFLINE, S_XEN, S_UNKNOWN };

struct ent {
	uint64_t t;
	uint64_t cum[S_UNKNOWN]; /* time the vCPU spent in each known state
	                          * from its first entry to t: a state's time
	                          * over any span is two lookups */
	uint8_t state;
	uint8_t has_culprit : 1; /* runnable, ended by a switch from another vCPU
	                          * (its struct cul says who) */
	uint8_t irq : 1;         /* one of an interrupt's two: no state change */
	uint32_t nculprits;  /* entries before this one with a culprit (mod
	                      * 2^32): whether a span has any is two lookups */
	uint32_t nchanges;   /* entries up to this one that are not irq (mod
	                      * 2^32): whether a span has a state change is
	                      * two lookups, however many interrupts it has */
	/* Where the state this entry is in was entered and is left, so that
	 * the clock windows and checks ask it in one step, not a search
	 * over a run's interrupts: irq, how many entries back the last
	 * state change is (LINK_FAR: farther than any ring); not irq, how
	 * many forward the next one is (0: not yet). */
	uint32_t link;
};

/* Farther back than any ring keeps (per_vcpu <= 2^24). */
#define LINK_FAR (UINT32_C(1) << 31)

/* Who held the pCPU a runnable entry waited for: read only by the walk
 * for culprits, so kept beside the ring, and an entry is one cache line. */
struct cul {
	uint16_t pcpu; /* the pCPU it then ran on */
	uint16_t cdom, cvcpu;
};

struct vcpu {
	uint16_t dom, vcpu;
	uint64_t n;      /* entries ever pushed; ring[k % per_vcpu] */
	struct ent *ring;
	struct cul *cul; /* ring[k]'s culprit, when it has one */
	uint64_t *ts;    /* ring[k].t again, packed: what searches read */
	uint64_t nhc;    /* evtchn_op times ever pushed */
	uint64_t *hc;
	/* Where the last search for each boundary of a hop ended: a cache,
	 * not state.  Hops are split nearly in the order they end, so each
	 * boundary moves a little from one split to the next; one hint for
	 * all of them would bounce across the hop at every lookup. */
	uint64_t hint[NHINTS];
	uint64_t hc_hint; /* the same for the evtchn_op times */
	/* The memo slots (bit i: j->memo[i]) that were made over this vCPU:
	 * what it adds is told to them.  A bit may outlive its memo. */
	uint32_t memos;
};

/*
 * The last split of a hop from one (domain, cpu) to another, and how far
 * its ends may move with nothing changing but the time charged to the
 * state each end lies in: the span of the entry it lies in, clear of any
 * state change within the clock error, on the same side of the sender's
 * evtchn_ops.  Many hops go between the same two vCPUs and end within a
 * few microseconds of each other, while the trace changes them every few
 * tens: so most splits are this one moved, not searched and summed again.
 * It is kept only for splits across vCPUs with no clock window, no culprit,
 * nothing old or early.  It holds while the vCPUs known and the clock
 * error are the same, the entries and evtchn_op times it used are still
 * kept, and what the trace added since lies past the hop's end by more
 * than the clock error (a later event can say nothing of the hop then:
 * no lookup, window, wake or notification changes), and did not give the
 * last entry of either vCPU a culprit.  A sending end with a woven
 * notification (has_tn) neither asks nor makes one: its ranges say where
 * tn stays the sender's evtchn_op (or t0), and a woven tn moves with
 * neither; such a split leaves the memo of its ends as it was.
 */
/* Where a run is known to have begun and ended (began_at(), ended_known()):
 * what a record inside it allows of the offset. */
struct run {
	uint64_t a, b;
	int began, ended;
	uint64_t ka; /* the entry where it began (UINT64_MAX: not kept) */
};

/* Where t1's entry lies between runs, when it is not in one: the run
 * before it ended at tb (has_b; kb the run's last entry) and the one
 * after begins at tf (has_f), as off_run() finds them for any time in
 * that entry; ok: they are what it finds (the trace shows what follows:
 * a run, or a state not known), and the clock check of an answer is two
 * compares (xft_sj_runs_near()). */
struct near {
	uint64_t tb, tf, kb;
	int has_b, has_f, ok;
};

#define MEMO_CELLS (XFT_NSTATES + XFT_UNK_NREASONS)
#define MEMO_TERMS 8

/* The memo's answers added to a sum of splits (xft_sj_split_add()) and
 * not yet paid into it: how many, and the sums of how far each moved the
 * memo's t0 and t1.  Each answer is the memo's split plus its slopes
 * times its moves, so n of them are n times the split plus the slopes
 * times the sums of the moves: exact, mod 2^64, as the sums are. */
struct owed {
	struct xft_split *to; /* NULL: nothing owed */
	uint64_t n, x0, x1;
};

/* The two sums a hop adds to: all its samples, and its slowest 1 %. */
enum { OWED_ALL, OWED_TAIL, NOWED };

struct memo {
	uint64_t from, to; /* the key: where the ends are (memo_end()) */
	const struct vcpu *sv, *rv;
	uint64_t sn, rn, nhc, err;  /* the counts when it was made */
	uint64_t smin, rmin, hmin;  /* the first entry, and evtchn_op time, used */
	/* How far t1 may go with what the trace added since (sn, rn, nhc)
	 * saying nothing of the hop: the first entry of each vCPU and the
	 * first evtchn_op added, each past t1 and its window.  Kept as the
	 * trace comes (memo_trace_moved(), sched_join.c) rather than asked
	 * at each answer; lim is the least of the three. */
	uint64_t slim, rlim, hlim, lim;
	uint32_t nv;
	int keyed; /* from, to, sv, rv and nv are set (valid or not) */
	int valid;
	/* Whether the split kept last answered any, and how many splits of
	 * these ends in a row found the one before them unused: from the
	 * third on, a memo is made only once in MEMO_DRY_EVERY of those. */
	int used;
	uint32_t dry;
	uint64_t t0, t1;            /* the ends of the split below */
	uint64_t lo0, hi0, lo1, hi1; /* t0 in [lo0, hi0), t1 in [lo1, hi1) */
	int64_t r1;                 /* the receiver's entry at t1 */
	/* When t1 lies in a run of the receiver, the run, so that its clock
	 * check is two compares: as it was when the receiver had run_n
	 * entries (taken again as they come, while t1 lies before them). */
	int in_run;
	struct run run;
	uint64_t run_n;
	/* The clock checks of its answers that t1 lies in that run, not yet
	 * made (xft_sj_checks_flush()): the least and the greatest t1 they
	 * were made at (chk_lo > chk_hi: none).  The run bounds the offset
	 * from below by its start less t1 and from above by its end less t1,
	 * so of many answers in one run only these two narrow anything, and
	 * a check is two compares an answer until the run changes, the
	 * windows turn or the bound is read. */
	uint64_t chk_lo, chk_hi;
	struct near near; /* when not in_run */
	struct xft_split out;
	/* What one nanosecond more of t0 and of t1 changes in out, as the
	 * few cells it changes: index (ns, then unknown_ns) and by how much. */
	uint8_t nd0, nd1;
	uint8_t at0[MEMO_TERMS], at1[MEMO_TERMS];
	int8_t by0[MEMO_TERMS], by1[MEMO_TERMS];
	/* When an end leaves its range over an entry of its vCPU or the
	 * edge of its own clock window, only its side of the hop changes,
	 * by the difference of the running totals at the two places: the
	 * memo crosses there (xft_sj_memo_cross()) instead of being made
	 * anew, while the hop keeps its shape.  t1, on the receiver's
	 * awake side: in [floor1 + its window's reach, ceil1), past the wake
	 * (kw) and every other window, short of the sender's next evtchn_op
	 * when that would become tn.  t0, on the sender's side when tn is
	 * an evtchn_op (at entry sn): in [floor0, ceil0), past the evtchn_op
	 * before and short of tn, its window within the sender's side (its
	 * end at most spill0, tn, or past it on the receiver's awake side
	 * when that begins at tn: spill_awake) or one with tn's (from tnwin0
	 * on); or, when tn is t0 and the receiver awake there, on the
	 * receiver's awake side (CROSS0_AWAKE), past the sender's last
	 * evtchn_op. */
	int cross0, cross1;
	int own0, own1;          /* the end has a clock window of its own */
	uint64_t floor0, ceil0, spill0, tnwin0, floor1, ceil1;
	int spill_awake;
	uint64_t shape_floor1;   /* floor1 but for t0's reach */
	int64_t sn_k, kw;
	/* Each end's side, once asked (end_sums()): its known time by
	 * runstate, its '?' of the clock window and the rest. */
	int sums0, sums1;
	uint64_t kp0[S_UNKNOWN], clock0, lost0;
	/* Where t0's window ends past tn, or tn (wr0); the receiver's totals
	 * there, when asked (kpr_at == wr0). */
	uint64_t wr0, kpr_at, kpr0[S_UNKNOWN], spillr0;
	uint64_t kp1[S_UNKNOWN], clock1, lost1;
	/* What its answers owe the sums they were added to: paid
	 * (xft_sj_memo_pay()) before out, t0, t1 or the slopes change, and
	 * whenever the owner of the sums asks (xft_sj_fold()). */
	struct owed owed[NOWED];
};

/* What memo_get() says. */
enum { MEMO_MISS, MEMO_HIT, MEMO_CROSS0 = 2, MEMO_CROSS1 = 4 };
/* How t0 crosses (struct memo's cross0). */
enum { CROSS0_SENDER = 1, CROSS0_AWAKE };

#define MEMO_BITS 4
#define MEMO_DRY_EVERY 16
#define MEMO_SLOTS (1u << MEMO_BITS)
_Static_assert(MEMO_SLOTS <= 32, "struct vcpu's memos has a bit for each slot");

struct pcpu {
	uint32_t cur;    /* the vCPU running there (index), or NONE */
	uint16_t prev_dom, prev_vcpu, next_dom, next_vcpu; /* its last switch */
	int have_switch;
};

/* What a window's clock checks allow of the offset between the two clocks
 * (the trace's time of a record minus the flows' time of it), assumed
 * constant over the window: at least lo (when has_lo), at most hi (when
 * has_hi).  lo > hi: no constant offset fits every check. */
struct offsets {
	int64_t lo, hi;
	int has_lo, has_hi;
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
	uint64_t ring_mask; /* per_vcpu - 1, a power of two */
	uint64_t hc_mask;   /* per_vcpu_hc - 1, a power of two */
	struct ent *ents;
	struct cul *culs;
	uint64_t *tss;
	uint64_t *hcs;
	struct pcpu *p;
	/* The clock checks of the last two windows: the largest distance
	 * from a run, and the offsets the runs allow (struct offsets). */
	uint64_t err_cur, err_prev;
	uint32_t err_n;
	struct offsets off_cur, off_prev;
	int bound_stale; /* the windows turned since the last check */
	int bound_dirty; /* clock_bound_ns is to be taken again (checks_turn()) */
	struct memo memo[MEMO_SLOTS];
};

/* --- entries --------------------------------------------------------------- */

static inline struct ent *ent_at(const struct xft_sj *j, const struct vcpu *v, uint64_t k)
{
	return &v->ring[k & j->ring_mask];
}

static inline uint64_t t_at(const struct xft_sj *j, const struct vcpu *v, uint64_t k)
{
	return v->ts[k & j->ring_mask];
}

/* The first entry still kept. */
static inline uint64_t first_kept(const struct xft_sj *j, const struct vcpu *v)
{
	return v->n > j->lim.per_vcpu ? v->n - j->lim.per_vcpu : 0;
}

/* The last entry at or before @t (k in [first_kept, n)), or -1 when @t is
 * before every entry kept.  Splits come nearly in time order, so each
 * boundary of a hop moves little from one split to the next: the search
 * starts where the last one for the same boundary (@hint) ended, returns
 * at once when that is still the answer, else gallops, then halves, so it
 * costs the log of how far it moved, not of the ring. */
static inline int64_t find(const struct xft_sj *j, const struct vcpu *v, uint64_t t, unsigned hint)
{
	uint64_t first = first_kept(j, v), lo, hi, h = v->hint[hint];
	/* Most lookups land where the hint is, or on the entry after it (an
	 * end crossing the next breakpoint of its vCPU). */
	if (h >= first && h < v->n && t_at(j, v, h) <= t) {
		if (h + 1 == v->n || t_at(j, v, h + 1) > t)
			return (int64_t)h;
		if (h + 2 == v->n || t_at(j, v, h + 2) > t) {
			((struct vcpu *)v)->hint[hint] = h + 1;
			return (int64_t)(h + 1);
		}
	}
	if (first == v->n || t_at(j, v, first) > t)
		return -1;
	h = v->hint[hint] >= first && v->hint[hint] < v->n ? v->hint[hint] : v->n - 1;
	if (t_at(j, v, h) <= t) {
		/* Forward: [lo, hi) holds the answer, ent(lo) <= t. */
		lo = h;
		hi = v->n;
		for (uint64_t step = 1; hi - lo > step; step <<= 1) {
			uint64_t probe = lo + step;
			if (t_at(j, v, probe) > t) {
				hi = probe;
				break;
			}
			lo = probe;
		}
	} else {
		lo = first;
		hi = h;
		for (uint64_t step = 1; hi - lo > step; step <<= 1) {
			uint64_t probe = hi - step;
			if (t_at(j, v, probe) <= t) {
				lo = probe;
				break;
			}
			hi = probe;
		}
	}
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (t_at(j, v, mid) <= t)
			lo = mid;
		else
			hi = mid;
	}
	((struct vcpu *)v)->hint[hint] = lo;
	return (int64_t)lo;
}

/* The entry where the state of entry @k of @v was entered, looking
 * through interrupts: @k, or the last entry before it that is not irq;
 * UINT64_MAX when that one is no longer kept.  The entry's link says
 * where, however many interrupts the run holds. */
static inline uint64_t state_entered(const struct xft_sj *j, const struct vcpu *v, uint64_t k)
{
	const struct ent *e = ent_at(j, v, k);
	if (!e->irq)
		return k;
	/* LINK_FAR is farther than any ring, so not kept either. */
	return e->link <= k - first_kept(j, v) ? k - e->link : UINT64_MAX;
}

/* The first entry after @k of @v that is not irq: where its state is left
 * (v->n: not yet).  From the link of the entry that entered it; when that
 * one is no longer kept, binary, on nchanges: a run may hold thousands of
 * interrupts. */
static inline uint64_t state_left(const struct xft_sj *j, const struct vcpu *v, uint64_t k)
{
	uint64_t from = state_entered(j, v, k);
	if (from != UINT64_MAX) {
		uint32_t l = ent_at(j, v, from)->link;
		return l ? from + l : v->n;
	}
	uint32_t c = ent_at(j, v, k)->nchanges;
	uint64_t lo = k + 1, hi = v->n; /* the first past c is in [lo, hi] */
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (ent_at(j, v, mid)->nchanges == c)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Both: where the state of entry @k of @v was entered (UINT64_MAX: no
 * longer kept) and is left (v->n: not yet), the second from the first's
 * link without looking for it again. */
static inline void state_span(const struct xft_sj *j, const struct vcpu *v, uint64_t k, uint64_t *from, uint64_t *to)
{
	*from = state_entered(j, v, k);
	if (*from == UINT64_MAX) {
		*to = state_left(j, v, k);
	} else {
		uint32_t l = ent_at(j, v, *from)->link;
		*to = l ? *from + l : v->n;
	}
}

/* --- the split's state, as the memo reads it ------------------------------- */

struct acc {
	/* The time of each of Xen's runstates charged to each side (below):
	 * mapped onto the split's states once, at the end, and what they do
	 * not cover is '?'.  The last column takes what is unknown and is
	 * not read. */
	uint64_t known[3][S_UNKNOWN + 1];
	uint64_t win[3][2]; /* times within the clock error of a boundary: '?' */
	unsigned nwin;
	/* Why the rest is '?' (tui/hop_split.h), summed as each span is
	 * charged: what a span does not cover of its side, the unknown
	 * inside it, the known the windows take out.  The sides cover the
	 * hop once, so these add up to what split_of() finds '?'. */
	uint64_t unk[XFT_UNK_NREASONS];
	uint64_t t0, tn, t1; /* the boundaries: which hint a lookup near a
	                      * window starts from */
};

/* The sides a hop's time is charged to: the sender, the receiver before
 * its wake, and after it. */
enum { SENDER, RECEIVER_ASLEEP, RECEIVER_AWAKE };

/* --- between the two files ------------------------------------------------- */

/* The run holding entry @k of @v (sched_join.c). */
void xft_sj_run_of(const struct xft_sj *j, const struct vcpu *v, uint64_t k, struct run *r);
/* The runs around entry @k of @v, not a run's (sched_join.c). */
void xft_sj_runs_near(const struct xft_sj *j, const struct vcpu *v, uint64_t k, struct near *nr);
/* Make the clock checks @m holds (struct memo's chk_lo) against its run,
 * before the run changes (sched_join.c). */
void xft_sj_checks_flush(struct xft_sj *j, struct memo *m);
/* After MEMO_CROSS0, MEMO_CROSS1 or both (@which): 1 when the hop kept
 * its shape, @m moved to the ends that crossed (memo_answer() gives the
 * split); else 0, and @m only fit to be made anew.  What @m owed is paid
 * first (sched_join_memo.c). */
int xft_sj_memo_cross(struct xft_sj *j, struct memo *m, int which, uint64_t t0, uint64_t t1, uint64_t err);
/* Pay what @m owes into the sums it owes it to (struct owed), and owe
 * nothing (sched_join_memo.c). */
void xft_sj_memo_pay(struct memo *m);
/* Pay @o, one of @m's debts, and owe nothing there (sched_join_memo.c). */
void xft_sj_memo_pay_one(const struct memo *m, struct owed *o);
/* Keep the split just made in @m when it may answer the next (sched_join_memo.c). */
void xft_sj_memo_put(struct xft_sj *j, struct memo *m, const struct vcpu *sv, const struct vcpu *rv, uint64_t t0,
		     uint64_t tn, uint64_t t1, uint64_t err, int64_t s0, int64_t sn, int64_t rn, int64_t r1, int64_t kw,
		     uint64_t tw, int woke, const unsigned wflag[3], const struct acc *a, const struct xft_split *out);

/* --- the memo's hit: inline, as most splits are one ------------------------- */

/* Where an end is, as a memo's key: its domain and CPU, whole. */
static inline uint64_t memo_end(const struct xft_sj_end *e)
{
	return (uint64_t)e->domain | (uint64_t)(uint32_t)e->cpu << 16;
}

/* The memo slot of the ends @from and @to: the first end multiplied, the
 * second added and the two multiplied again, the top bits taken.  Of the
 * hashes tried on hops between the vCPUs of one to eight domains, this
 * one put them in the most slots (one multiply of the two ends packed
 * together left two domains' hops between vCPUs 0 and 1 in one slot,
 * taking it from each other). */
static inline struct memo *memo_slot(struct xft_sj *j, uint64_t from, uint64_t to)
{
	uint64_t k = (from * UINT64_C(0x9E3779B97F4A7C15) + to) * UINT64_C(0xC2B2AE3D27D4EB4F);
	return &j->memo[k >> (64 - MEMO_BITS)];
}

/* Cell @i of @s: ns, then unknown_ns.  The two arrays lie back to back,
 * so the cell is the i-th word from the first, counted in bytes within
 * the struct: no branch on which array, in the loops that pay and move
 * the memo's answers. */
_Static_assert(offsetof(struct xft_split, unknown_ns) ==
		       offsetof(struct xft_split, ns) + XFT_NSTATES * sizeof(uint64_t),
	       "memo_cell() counts the reasons on from the states");
static inline uint64_t *memo_cell(struct xft_split *s, unsigned i)
{
	return (uint64_t *)((char *)s + offsetof(struct xft_split, ns) + (size_t)i * sizeof(uint64_t));
}

/* Whether @m holds clock checks not yet made. */
static inline int memo_checks_held(const struct memo *m)
{
	return m->chk_lo <= m->chk_hi;
}

/* @m holds none: what a memo zeroed is set to. */
static inline void memo_checks_none(struct memo *m)
{
	m->chk_lo = UINT64_MAX;
	m->chk_hi = 0;
}

/* MEMO_HIT when @m holds for the split of [t0, t1] (memo_answer());
 * what the trace added since it was made is in m->lim and m->valid;
 * MEMO_CROSS0, MEMO_CROSS1 or both when it would but for t0, t1 or both
 * out of their ranges, the trace still as it was for it; else MEMO_MISS. */
__attribute__((always_inline)) static inline int memo_get(const struct xft_sj *j, const struct memo *m, uint64_t from, uint64_t to, uint64_t t0,
			   uint64_t t1)
{
	/* The vCPUs known and the clock error are those it was made with:
	 * when either changes, every memo is let go (memos_drop()). */
	if (!m->valid || m->from != from || m->to != to)
		return MEMO_MISS;
	if (t1 > j->watermark || t1 > m->lim)
		return MEMO_MISS;
	int out0 = t0 < m->lo0 || t0 >= m->hi0, out1 = t1 < m->lo1 || t1 >= m->hi1;
	if (out0 || out1) {
		if ((out0 && !m->cross0) || (out1 && !m->cross1))
			return MEMO_MISS;
		return (out0 ? MEMO_CROSS0 : 0) | (out1 ? MEMO_CROSS1 : 0);
	}
	return MEMO_HIT;
}

/* The split of [t0, t1] from @m, when it holds: its split with the
 * nanoseconds each end moved over taken from or given to the states they
 * are in.  Unsigned: what a negative slope takes wraps and comes back
 * exactly. */
static inline void memo_answer(const struct memo *m, uint64_t t0, uint64_t t1, struct xft_split *out)
{
	uint64_t x0 = t0 - m->t0, x1 = t1 - m->t1;
	*out = m->out;
	for (unsigned i = 0; i < m->nd0; i++)
		*memo_cell(out, m->at0[i]) += (uint64_t)(int64_t)m->by0[i] * x0;
	for (unsigned i = 0; i < m->nd1; i++)
		*memo_cell(out, m->at1[i]) += (uint64_t)(int64_t)m->by1[i] * x1;
}

/* The split of [t0, t1] from @m, added to @to: owed (struct owed), the
 * debt to another sum paid first.  Hops between the same ends add to one
 * sum for a while, so most answers are a count and two adds. */
static inline void memo_owe(struct memo *m, unsigned which, struct xft_split *to, uint64_t t0, uint64_t t1)
{
	struct owed *o = &m->owed[which];
	if (o->to != to) {
		if (o->to)
			xft_sj_memo_pay_one(m, o);
		o->to = to;
	}
	o->n++;
	o->x0 += t0 - m->t0;
	o->x1 += t1 - m->t1;
}

#endif
