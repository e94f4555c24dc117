/*
 * The memo of the scheduler join (struct memo, tui/sched_join_priv.h): the
 * last split between each two ends, and how far they may move with that
 * split still the answer once moved, and how it is moved on past them
 * (xft_sj_memo_cross()) while the hop keeps its shape.  tui/sched_join.c
 * asks it first and fills it after each split it makes anew.
 */
#include <stdint.h>
#include <string.h>

#include "tui/sched_join_priv.h"

/* --- the memo (struct memo) ------------------------------------------------ */

/* The split's state of time in runstate @s of a timeline on each side
 * (split_of()'s mapping, one cell at a time). */
static const uint8_t side_state[3][S_UNKNOWN + 1] = {
	[SENDER] = { XFT_ST_RUN, XFT_ST_WAIT, XFT_ST_BLOCKED, XFT_ST_OFFLINE, XFT_ST_XEN, XFT_ST_UNKNOWN },
	[RECEIVER_ASLEEP] = { XFT_ST_BACKEND, XFT_ST_WAIT, XFT_ST_NOTIFY, XFT_ST_OFFLINE, XFT_ST_XEN, XFT_ST_UNKNOWN },
	[RECEIVER_AWAKE] = { XFT_ST_BACKEND, XFT_ST_WAIT, XFT_ST_BLOCKED, XFT_ST_OFFLINE, XFT_ST_XEN, XFT_ST_UNKNOWN },
};

/* What a nanosecond more of one end does to each cell of the split (ns,
 * then unknown_ns), as xft_sj_memo_put() adds it up: the cells touched
 * marked, so that only they are read back. */
struct dense {
	int8_t d[MEMO_CELLS];
	uint16_t touched;
};

/* The cells @s changes, into @at and @by; their number. */
static uint8_t memo_terms(const struct dense *s, uint8_t at[MEMO_TERMS], int8_t by[MEMO_TERMS])
{
	uint8_t n = 0;
	for (unsigned t = s->touched; t; t &= t - 1) {
		unsigned i = (unsigned)__builtin_ctz(t);
		if (s->d[i]) {
			at[n] = (uint8_t)i;
			by[n++] = s->d[i];
		}
	}
	return n;
}

void xft_sj_memo_pay_one(const struct memo *m, struct owed *o)
{
	struct xft_split *to = o->to, *out = (struct xft_split *)&m->out;
	uint64_t n = o->n;
	/* Spelt out: a pay comes at each crossing, and a loop's count and
	 * reloads of n cost as much as its multiplies. */
#pragma GCC unroll 16
	for (unsigned i = 0; i < MEMO_CELLS; i++)
		*memo_cell(to, i) += n * *memo_cell(out, i);
	/* Held in locals: a store through memo_cell() might be to any of them. */
	uint64_t x0 = o->x0, x1 = o->x1;
	for (unsigned i = 0, nd = m->nd0; i < nd; i++)
		*memo_cell(to, m->at0[i]) += (uint64_t)(int64_t)m->by0[i] * x0;
	for (unsigned i = 0, nd = m->nd1; i < nd; i++)
		*memo_cell(to, m->at1[i]) += (uint64_t)(int64_t)m->by1[i] * x1;
	*o = (struct owed){ 0 };
}

void xft_sj_memo_pay(struct memo *m)
{
	for (unsigned k = 0; k < NOWED; k++)
		if (m->owed[k].to)
			xft_sj_memo_pay_one(m, &m->owed[k]);
}

/* Narrow [*lo, *hi) to where a boundary at entry @k of @v is clear of a
 * window: no state change within err of it (changed_near()). */
static void memo_clear_of_changes(const struct xft_sj *j, const struct vcpu *v, uint64_t k, uint64_t err, uint64_t *lo,
				  uint64_t *hi)
{
	if (!err)
		return;
	uint64_t from, to;
	state_span(j, v, k, &from, &to);
	if (from != UINT64_MAX) {
		uint64_t x = t_at(j, v, from) > UINT64_MAX - err ? UINT64_MAX : t_at(j, v, from) + err;
		if (x > *lo)
			*lo = x;
	}
	if (to < v->n) {
		uint64_t y = t_at(j, v, to) >= err ? t_at(j, v, to) - err + 1 : 0;
		if (y < *hi)
			*hi = y;
	}
}

/* Narrow [*lo, *hi) to the span of entry @k of @v. */
static void memo_within(const struct xft_sj *j, const struct vcpu *v, uint64_t k, uint64_t *lo, uint64_t *hi)
{
	if (t_at(j, v, k) > *lo)
		*lo = t_at(j, v, k);
	if (k + 1 < v->n && t_at(j, v, k + 1) < *hi)
		*hi = t_at(j, v, k + 1);
}

/* No runnable entry with a culprit among entries [ks, ke] of @v. */
static int memo_no_culprit(const struct xft_sj *j, const struct vcpu *v, int64_t ks, int64_t ke)
{
	if (ke < ks)
		return 1;
	const struct ent *last = ent_at(j, v, (uint64_t)ke);
	return last->nculprits + last->has_culprit == ent_at(j, v, (uint64_t)ks)->nculprits;
}

/* The shape of a split across vCPUs as xft_sj_memo_put() reads it: its
 * boundaries and sides, and the clock windows that stay where they are
 * when its ends move (the notification's, when it is an evtchn_op). */
struct shape {
	const struct xft_sj *j;
	const struct vcpu *sv, *rv;
	uint64_t t0, tn, t1, tw;
	int fixed;   /* tn is an evtchn_op of the sender (else t0) */
	int tw_set;  /* tw stays where it is (else it is tn or t1, and moves) */
	int woke;
	uint64_t win[3][2];
	unsigned nwin; /* the windows that stay */
	int64_t ks, kr, k1; /* the entries at t0 (sender), tn and t1 (receiver) */
};

/* The last entry of @v at or before @x, stepping from entry @k near it: the
 * points xft_sj_memo_put() asks of are within a few entries of a
 * boundary's. */
static int64_t step_to(const struct xft_sj *j, const struct vcpu *v, uint64_t x, int64_t k)
{
	int64_t first = (int64_t)first_kept(j, v);
	for (unsigned n = 0; n < 8; n++) {
		if (k + 1 < (int64_t)v->n && t_at(j, v, (uint64_t)k + 1) <= x)
			k++;
		else if (k >= first && t_at(j, v, (uint64_t)k) > x)
			k--;
		else
			return k < first ? -1 : k;
	}
	return find(j, v, x, H_T1);
}

/* The side nanosecond @x of the hop is charged to. */
static int shape_side(const struct shape *h, uint64_t x)
{
	if (h->fixed && x < h->tn)
		return SENDER;
	if (!h->woke)
		return RECEIVER_ASLEEP;
	return h->tw_set && x < h->tw ? RECEIVER_ASLEEP : RECEIVER_AWAKE;
}

/* Nanosecond @x of the hop: its side, the runstate it is charged in and
 * whether a window that stays covers it; [*lo, *hi) narrowed to where
 * each of these is the same.  0: @x is before what is kept. */
static int shape_at(const struct shape *h, uint64_t x, int *side, unsigned *state, int *inwin, uint64_t *lo,
		    uint64_t *hi)
{
	const struct xft_sj *j = h->j;
	*side = shape_side(h, x);
	const struct vcpu *v = *side == SENDER ? h->sv : h->rv;
	int64_t k = step_to(j, v, x, *side == SENDER ? h->ks : x >= t_at(j, v, (uint64_t)h->k1) ? h->k1 : h->kr);
	if (k < 0)
		return 0;
	*state = ent_at(j, v, (uint64_t)k)->state;
	memo_within(j, v, (uint64_t)k, lo, hi);
	uint64_t cut[2] = { h->fixed ? h->tn : 0, h->woke && h->tw_set ? h->tw : 0 };
	for (unsigned c = 0; c < 2; c++) {
		if (!cut[c])
			continue;
		if (x < cut[c] && cut[c] < *hi)
			*hi = cut[c];
		if (x >= cut[c] && cut[c] > *lo)
			*lo = cut[c];
	}
	*inwin = 0;
	for (unsigned w = 0; w < h->nwin; w++) {
		uint64_t a = h->win[w][0], b = h->win[w][1];
		if (x < a) {
			if (a < *hi)
				*hi = a;
		} else if (x < b) {
			*inwin = 1;
			if (a > *lo)
				*lo = a;
			if (b < *hi)
				*hi = b;
		} else if (b > *lo) {
			*lo = b;
		}
	}
	return 1;
}

/* @sign times what a nanosecond of @side in @state does to the split
 * (ns then unknown_ns), in a window or not, into @d.  Inline: each
 * crossing calls it two to four times, nearly always with @sign and
 * @side constant, and the calls cost more than the two cells. */
static inline __attribute__((always_inline)) void slope_add(struct dense *s, int sign, int side, unsigned state, int inwin)
{
	unsigned a = side_state[side][state], b = MEMO_CELLS;
	if (state == S_UNKNOWN || inwin) {
		a = XFT_ST_UNKNOWN;
		b = XFT_NSTATES + (state == S_UNKNOWN ? XFT_UNK_LOST : XFT_UNK_CLOCK);
	}
	s->d[a] = (int8_t)(s->d[a] + sign);
	s->touched |= (uint16_t)(1u << a);
	if (b < MEMO_CELLS) {
		s->d[b] = (int8_t)(s->d[b] + sign);
		s->touched |= (uint16_t)(1u << b);
	}
}

/* A state change of @v within (b - err, b + err) near entry @k (the last
 * at or before b), as changed_near() finds it: its entry, or UINT64_MAX. */
static uint64_t change_near(const struct xft_sj *j, const struct vcpu *v, uint64_t b, uint64_t k, uint64_t err)
{
	if (b <= err || b > UINT64_MAX - err)
		return UINT64_MAX; /* a window clamped at either end: not kept */
	uint64_t from, to;
	state_span(j, v, k, &from, &to);
	if (from != UINT64_MAX && t_at(j, v, from) > b - err)
		return from;
	if (to < v->n && t_at(j, v, to) <= b + err - 1)
		return to;
	return UINT64_MAX;
}

/* Narrow [*lo, *hi) to where a window of an end at b stays: the change
 * at entry @c within (b - err, b + err - 1].  b > err is kept, so that the
 * window's start is never clamped at 0. */
static void memo_keeps_change(const struct xft_sj *j, const struct vcpu *v, uint64_t c, uint64_t err, uint64_t *lo,
			      uint64_t *hi)
{
	uint64_t tc = t_at(j, v, c), a = tc > err ? tc - err + 1 : 0, b = tc + err;
	if (err + 1 > a)
		a = err + 1;
	if (a > *lo)
		*lo = a;
	if (b < *hi)
		*hi = b;
}

/* Keep the split just made of a hop across vCPUs in @m when its kind
 * allows (struct memo).  Moving t0 by a nanosecond takes the nanosecond at
 * t0 out of the hop and, with a window of its own, moves that window's end
 * t0 + err over one more; moving t1 adds the nanosecond at t1 and moves
 * its window's start t1 - err.  So the split is linear in each end while
 * each of these points stays in one entry, side and window, the windows
 * are the same and apart, and the lookups it made (s0, sn, rn, r1 and the
 * wake kw) are still the answers: [lo0, hi0) and [lo1, hi1) are where. */
void xft_sj_memo_put(struct xft_sj *j, struct memo *m, const struct vcpu *sv, const struct vcpu *rv, uint64_t t0,
		     uint64_t tn, uint64_t t1, uint64_t err, int64_t s0, int64_t sn, int64_t rn, int64_t r1, int64_t kw,
		     uint64_t tw, int woke, const unsigned wflag[3], const struct acc *a, const struct xft_split *out)
{
	/* Its answers so far were of the split it is about to forget. */
	xft_sj_memo_pay(m);
	xft_sj_checks_flush(j, m);
	m->valid = 0;
	if (s0 < 0 || rn < 0 || r1 < 0 || t1 > j->watermark || t1 > UINT64_MAX - err)
		return;
	/* The wake is looked for among the entries before t1: one at t1 is
	 * left out, and taken in once t1 moves past it.  That changes nothing
	 * when the receiver woke before it or it is no wake. */
	uint64_t tr1 = t_at(j, rv, (uint64_t)r1);
	unsigned st1 = ent_at(j, rv, (uint64_t)r1)->state;
	if (tr1 == t1 && !woke && (st1 == S_RUNNING || st1 == S_RUNNABLE || st1 == S_XEN))
		return;
	uint64_t lo0 = 0, hi0 = UINT64_MAX, lo1 = tr1 < t1 ? tr1 + 1 : tr1, hi1 = UINT64_MAX;
	uint64_t smin = (uint64_t)s0, rmin = (uint64_t)rn;
	/* The notification: the same evtchn_op, or none in [t0, t1]. */
	int fixed = 0;
	uint64_t h = 0;
	if (sv->nhc) {
		uint64_t first = sv->nhc > j->lim.per_vcpu_hc ? sv->nhc - j->lim.per_vcpu_hc : 0;
		h = sv->hc_hint;
		if (h > first && sv->hc[(h - 1) & j->hc_mask] + 1 > lo0)
			lo0 = sv->hc[(h - 1) & j->hc_mask] + 1;
		if (h < sv->nhc) {
			uint64_t hp = sv->hc[h & j->hc_mask];
			fixed = hp <= t1;
			if (fixed) {
				if (hp + 1 < hi0)
					hi0 = hp + 1;
				if (hp > lo1)
					lo1 = hp;
			} else if (hp < hi1) {
				hi1 = hp;
			}
		}
	}
	if (fixed && !memo_no_culprit(j, sv, s0, sn))
		return;
	if (woke && !memo_no_culprit(j, rv, kw, r1))
		return;
	/* The windows: each end's own (at t0: the sender's change, or the
	 * receiver's too when tn is t0), which moves with it, and the
	 * notification's, which stays; each must be alone in a.win, not
	 * merged with another, for the points above to be all that moves. */
	struct shape sh = { .j = j, .sv = sv, .rv = rv, .t0 = t0, .tn = tn, .t1 = t1, .tw = tw, .fixed = fixed,
			    .woke = woke, .tw_set = woke && !(tw == tn && !fixed), .ks = s0, .kr = rn, .k1 = r1 };
	int own0 = wflag[0] || (!fixed && wflag[1]), own1 = wflag[2];
	unsigned expect = (unsigned)own0 + (unsigned)own1;
	if (fixed && wflag[1]) {
		sh.win[0][0] = tn > err ? tn - err : 0;
		sh.win[0][1] = tn + err;
		sh.nwin = 1;
		expect++;
	}
	if (a->nwin != expect)
		return;
	if (own0 || own1) {
		uint64_t w0[2] = { t0 > err ? t0 - err : 0, t0 + err }, w1[2] = { t1 > err ? t1 - err : 0, t1 + err };
		unsigned found = 0;
		for (unsigned w = 0; w < a->nwin; w++) {
			if (own0 && a->win[w][0] == w0[0] && a->win[w][1] == w0[1])
				found++;
			else if (own1 && a->win[w][0] == w1[0] && a->win[w][1] == w1[1])
				found++;
			else if (!(sh.nwin && a->win[w][0] == sh.win[0][0] && a->win[w][1] == sh.win[0][1]))
				return;
		}
		if (found != (unsigned)own0 + (unsigned)own1)
			return;
	}
	/* Where each end's window is, or is not, the same. */
	if (own0) {
		uint64_t c = wflag[0] ? change_near(j, sv, t0, (uint64_t)s0, err) : UINT64_MAX;
		const struct vcpu *cv = sv;
		if (c == UINT64_MAX) {
			c = change_near(j, rv, t0, (uint64_t)rn, err);
			cv = rv;
		}
		if (c == UINT64_MAX)
			return;
		memo_keeps_change(j, cv, c, err, &lo0, &hi0);
		if (cv == sv && c < smin)
			smin = c;
		if (cv == rv && c < rmin)
			rmin = c;
	} else {
		memo_clear_of_changes(j, sv, (uint64_t)s0, err, &lo0, &hi0);
		if (!fixed)
			memo_clear_of_changes(j, rv, (uint64_t)rn, err, &lo0, &hi0);
	}
	if (own1) {
		uint64_t c = change_near(j, rv, t1, (uint64_t)r1, err);
		if (c == UINT64_MAX)
			return;
		memo_keeps_change(j, rv, c, err, &lo1, &hi1);
		if (c < rmin)
			rmin = c;
	} else {
		memo_clear_of_changes(j, rv, (uint64_t)r1, err, &lo1, &hi1);
	}
	/* The lookups stay the answers.  When the notification is t0 the
	 * sender is charged nothing: past its entry at t0, t0 may go on over
	 * its interrupts, which the window above already says are no change,
	 * and not below it, before what was looked at. */
	if (fixed) {
		memo_within(j, sv, (uint64_t)s0, &lo0, &hi0);
	} else {
		if (t_at(j, sv, (uint64_t)s0) > lo0)
			lo0 = t_at(j, sv, (uint64_t)s0);
		memo_within(j, rv, (uint64_t)rn, &lo0, &hi0);
	}
	memo_within(j, rv, (uint64_t)r1, &lo1, &hi1);
	/* The points that move, and what a nanosecond of each does. */
	struct dense d0 = { { 0 }, 0 }, d1 = { { 0 }, 0 };
	int side, inwin;
	unsigned st;
	uint64_t ul = 0, uh = UINT64_MAX;
	if (!shape_at(&sh, t0, &side, &st, &inwin, &ul, &uh))
		return;
	slope_add(&d0, -1, side, st, inwin || own0);
	if (ul > lo0)
		lo0 = ul;
	if (uh < hi0)
		hi0 = uh;
	if (own0) {
		ul = 0, uh = UINT64_MAX;
		if (!shape_at(&sh, t0 + err, &side, &st, &inwin, &ul, &uh) || inwin)
			return;
		slope_add(&d0, 1, side, st, 1);
		slope_add(&d0, -1, side, st, 0);
		uint64_t x = ul > err ? ul - err : 0, y = uh > err ? uh - err : 0;
		if (x > lo0)
			lo0 = x;
		if (y < hi0)
			hi0 = y;
	}
	ul = 0, uh = UINT64_MAX;
	if (!shape_at(&sh, t1, &side, &st, &inwin, &ul, &uh))
		return;
	slope_add(&d1, 1, side, st, inwin || own1);
	if (ul > lo1)
		lo1 = ul;
	if (uh < hi1)
		hi1 = uh;
	if (own1) {
		ul = 0, uh = UINT64_MAX;
		if (t1 <= err || !shape_at(&sh, t1 - err, &side, &st, &inwin, &ul, &uh) || inwin)
			return;
		slope_add(&d1, -1, side, st, 1);
		slope_add(&d1, 1, side, st, 0);
		if (ul + err > lo1)
			lo1 = ul + err;
		if (uh <= UINT64_MAX - err && uh + err < hi1)
			hi1 = uh + err;
	}
	/* Whatever t0 moves (up to hi0 - 1, and its window to err past that)
	 * stays below whatever t1 moves (from lo1, its window from err before
	 * that), with a gap: the two ends' windows never meet.  The line
	 * between them is drawn halfway. */
	uint64_t reach0 = own0 ? err : 0, reach1 = own1 ? err : 0;
	if (t1 < reach1 || t0 + reach0 >= t1 - reach1)
		return;
	uint64_t mid = t0 + reach0 + (t1 - reach1 - t0 - reach0) / 2;
	if (mid - reach0 + 1 < hi0)
		hi0 = mid - reach0 + 1;
	if (mid + 1 + reach1 > lo1)
		lo1 = mid + 1 + reach1;
	if (t0 < lo0 || t0 >= hi0 || t1 < lo1 || t1 >= hi1)
		return;
	/* from, to, sv, rv and nv are the key split_anew() (sched_join.c) set. */
	m->sn = sv->n;
	m->rn = rv->n;
	m->nhc = sv->nhc;
	m->err = err;
	m->slim = m->rlim = m->hlim = m->lim = UINT64_MAX - err;
	m->smin = smin;
	m->rmin = rmin;
	m->hmin = h;
	m->t0 = t0;
	m->t1 = t1;
	m->lo0 = lo0;
	m->hi0 = hi0;
	m->lo1 = lo1;
	m->hi1 = hi1;
	m->r1 = r1;
	m->in_run = st1 == S_RUNNING || st1 == S_XEN;
	if (m->in_run)
		xft_sj_run_of(j, rv, (uint64_t)r1, &m->run);
	else
		xft_sj_runs_near(j, rv, (uint64_t)r1, &m->near);
	m->run_n = rv->n;
	m->out = *out;
	/* Each end moves at most two points, each changing at most three
	 * cells: never more than MEMO_TERMS. */
	m->nd0 = memo_terms(&d0, m->at0, m->by0);
	m->nd1 = memo_terms(&d1, m->at1, m->by1);
	/* Past the wake, t1 charges the receiver's awake side whatever t0
	 * in [lo0, hi0) did to it: the crossings of xft_sj_memo_cross(). */
	m->cross1 = woke;
	m->own1 = own1;
	m->shape_floor1 = 0;
	if (sh.tw_set)
		m->shape_floor1 = tw + 1;
	if (sh.nwin && tn + err + 1 > m->shape_floor1)
		m->shape_floor1 = tn + err + 1;
	m->floor1 = hi0 + reach0 > m->shape_floor1 ? hi0 + reach0 : m->shape_floor1;
	m->ceil1 = !fixed && h < sv->nhc ? sv->hc[h & j->hc_mask] : UINT64_MAX;
	m->kw = kw;
	m->sums1 = 0;
	/* With tn an evtchn_op, t0 charges the sender's side alone. */
	m->cross0 = fixed ? (!sh.nwin || tn > err ? CROSS0_SENDER : 0) : woke && !sh.tw_set ? CROSS0_AWAKE : 0;
	m->own0 = own0;
	m->floor0 = 0;
	if (h > (sv->nhc > j->lim.per_vcpu_hc ? sv->nhc - j->lim.per_vcpu_hc : 0))
		m->floor0 = sv->hc[(h - 1) & j->hc_mask] + 1;
	m->ceil0 = fixed ? tn : UINT64_MAX;
	m->tnwin0 = fixed && sh.nwin ? tn - err : UINT64_MAX;
	m->spill0 = fixed && !sh.nwin ? tn : UINT64_MAX;
	m->spill_awake = woke && tw == tn;
	m->sn_k = sn;
	m->sums0 = 0;
	m->valid = 1;
}

/* --- crossing an end's breakpoints (struct memo) ------------------------- */

/* The running totals of @v at @x (@k the entry at or before it): the time
 * spent in each known runstate from its first entry, into @kp; their sum. */
static uint64_t totals(const struct xft_sj *j, const struct vcpu *v, uint64_t x, int64_t k, uint64_t kp[S_UNKNOWN])
{
	const struct ent *e = ent_at(j, v, (uint64_t)k);
	/* Spelt out: each crossing takes two to four of these, and the
	 * loop's count cost as much as its copies. */
	_Static_assert(S_UNKNOWN == 5, "totals() copies five states");
	kp[0] = e->cum[0];
	kp[1] = e->cum[1];
	kp[2] = e->cum[2];
	kp[3] = e->cum[3];
	kp[4] = e->cum[4];
	uint64_t all = kp[0] + kp[1] + kp[2] + kp[3] + kp[4];
	if (e->state < S_UNKNOWN) {
		kp[e->state] += x - e->t;
		all += x - e->t;
	}
	return all;
}

/* An end of a hop at @x on @v (@k the entry at or before it, @at_t0
 * which end), the clock windows covering its side from @x to @w (x - err
 * for t1 with a window of its own; for t0, x + err, or tn's window's start
 * when that is nearer; @x without one): the running totals at @w into
 * @kp (what the side knows, the windows taken out), the known time
 * between x and w into *@clock and what is in no known state up to @x
 * into *@lost.  A side's part of a split is the difference of these at
 * its two ends, as charge() (sched_join.c) finds it span by span.  0: @w
 * is before what is kept. */
static int end_sums(const struct xft_sj *j, const struct vcpu *v, uint64_t x, int64_t k, uint64_t w, int at_t0,
		    uint64_t kp[S_UNKNOWN], uint64_t *clock, uint64_t *lost)
{
	uint64_t all = totals(j, v, x, k, kp);
	*lost = x - all;
	*clock = 0;
	if (w == x)
		return 1;
	int64_t kw = step_to(j, v, w, k);
	if (kw < 0)
		return 0;
	uint64_t at_w = totals(j, v, w, kw, kp);
	/* Mod 2^64: at t0, w is below x once its window is tn's. */
	*clock = at_t0 ? at_w - all : all - at_w;
	return 1;
}

/* Move @m's t1 to @t1 (struct memo): its split there and the piece of t1
 * around it. */
static int cross1(struct xft_sj *j, struct memo *m, uint64_t t1, uint64_t err)
{
	const struct vcpu *rv = m->rv;
	if (t1 < m->floor1 || t1 >= m->ceil1 || t1 <= err)
		return 0;
	int64_t r1 = find(j, rv, t1, H_T1);
	if (r1 < m->kw || !memo_no_culprit(j, rv, m->kw, r1))
		return 0;
	uint64_t c = err ? change_near(j, rv, t1, (uint64_t)r1, err) : UINT64_MAX;
	int own = c != UINT64_MAX;
	uint64_t reach = own ? err : 0;
	if (t1 < m->floor1 + reach)
		return 0;
	if (!m->sums1) {
		/* The memo's own t1 may lie before the wake or in another
		 * window: then its split is of another shape than t1's. */
		uint64_t mreach = m->own1 ? err : 0;
		if (m->t1 < m->floor1 + mreach ||
		    !end_sums(j, rv, m->t1, find(j, rv, m->t1, H_T1), m->t1 - mreach, 0, m->kp1, &m->clock1,
			      &m->lost1))
			return 0;
		m->sums1 = 1;
	}
	uint64_t kp[S_UNKNOWN], clock, lost;
	if (!end_sums(j, rv, t1, r1, t1 - reach, 0, kp, &clock, &lost))
		return 0;
	/* The split at (m->t0, t1): the memo's, with the awake side's part
	 * of t1 taken at the new end. */
	uint64_t dclock = clock - m->clock1, dlost = lost - m->lost1;
	for (unsigned s = 0; s < S_UNKNOWN; s++)
		*memo_cell(&m->out, side_state[RECEIVER_AWAKE][s]) += kp[s] - m->kp1[s];
	m->out.ns[XFT_ST_UNKNOWN] += dclock + dlost;
	m->out.unknown_ns[XFT_UNK_CLOCK] += dclock;
	m->out.unknown_ns[XFT_UNK_LOST] += dlost;
	memcpy(m->kp1, kp, sizeof(kp));
	m->clock1 = clock;
	m->lost1 = lost;
	m->t1 = t1;
	m->own1 = own;
	m->r1 = r1;
	/* The receiver's entries since the memo was made lie past t1 and
	 * its window (memo_get()): from here they are the memo's. */
	m->rn = rv->n;
	m->rlim = UINT64_MAX - err;
	m->lim = m->slim < m->hlim ? m->slim : m->hlim;
	unsigned st1 = ent_at(j, rv, (uint64_t)r1)->state;
	/* t1 mostly crosses an interrupt inside the run it was in: the run
	 * is the one the memo has, when that is as the timeline is now. */
	int same_run = m->in_run && m->run_n == rv->n && m->run.ka != UINT64_MAX &&
		       state_entered(j, rv, (uint64_t)r1) == m->run.ka;
	m->in_run = st1 == S_RUNNING || st1 == S_XEN;
	if (m->in_run && !same_run) {
		/* The checks its answers hold are of the run it leaves. */
		xft_sj_checks_flush(j, m);
		xft_sj_run_of(j, rv, (uint64_t)r1, &m->run);
	} else if (!m->in_run)
		xft_sj_runs_near(j, rv, (uint64_t)r1, &m->near);
	m->run_n = rv->n;
	/* The piece of t1 around the new end, as xft_sj_memo_put() draws
	 * it: where the entry at t1, the one at t1 - err and the window
	 * are the same. */
	uint64_t tr1 = t_at(j, rv, (uint64_t)r1);
	uint64_t lo1 = tr1 < t1 ? tr1 + 1 : tr1, hi1 = m->ceil1;
	if (m->floor1 + reach > lo1)
		lo1 = m->floor1 + reach;
	memo_within(j, rv, (uint64_t)r1, &lo1, &hi1);
	struct dense d1 = { { 0 }, 0 };
	slope_add(&d1, 1, RECEIVER_AWAKE, st1, own);
	if (own) {
		memo_keeps_change(j, rv, c, err, &lo1, &hi1);
		if (c < m->rmin)
			m->rmin = c;
		int64_t k2 = step_to(j, rv, t1 - err, r1);
		unsigned st2 = ent_at(j, rv, (uint64_t)k2)->state;
		slope_add(&d1, -1, RECEIVER_AWAKE, st2, 1);
		slope_add(&d1, 1, RECEIVER_AWAKE, st2, 0);
		uint64_t a = t_at(j, rv, (uint64_t)k2) + err, b = UINT64_MAX;
		if ((uint64_t)k2 + 1 < rv->n)
			b = t_at(j, rv, (uint64_t)k2 + 1) + err;
		if (a > lo1)
			lo1 = a;
		if (b < hi1)
			hi1 = b;
	} else {
		memo_clear_of_changes(j, rv, (uint64_t)r1, err, &lo1, &hi1);
	}
	m->nd1 = memo_terms(&d1, m->at1, m->by1);
	/* Outside it, every t1 crosses again. */
	m->lo1 = lo1 <= t1 && t1 < hi1 ? lo1 : t1;
	m->hi1 = lo1 <= t1 && t1 < hi1 ? hi1 : t1;
	return 1;
}

/* Where t0 has a clock window of its own, as split_anew() (sched_join.c)
 * finds it: a change of the sender near it, or of the receiver when tn is
 * t0; the change, and its vCPU in *@cv.  @s0 and @e0 are the entries at
 * or before t0 of each. */
static uint64_t t0_change(const struct xft_sj *j, const struct memo *m, uint64_t t0, int64_t s0, int64_t e0,
			  uint64_t err, const struct vcpu **cv)
{
	*cv = m->sv;
	uint64_t c = change_near(j, m->sv, t0, (uint64_t)s0, err);
	if (c == UINT64_MAX && m->cross0 == CROSS0_AWAKE) {
		*cv = m->rv;
		c = change_near(j, m->rv, t0, (uint64_t)e0, err);
	}
	return c;
}

/* Move @m's t0 to @t0 (struct memo): its split there and the piece of t0
 * around it.  t0 and its window must stay short of tn's window and of
 * t1's, wherever t1 goes in [lo1, hi1).  With tn an evtchn_op, t0 moves
 * the start of the sender's side; with tn at t0 and the receiver awake
 * there, the start of the receiver's awake side, which must stay awake
 * (its wake is t0).  @t1: the hop's other end, in [lo1, hi1) (UINT64_MAX:
 * it crosses too). */
static int cross0(struct xft_sj *j, struct memo *m, uint64_t t0, uint64_t t1, uint64_t err)
{
	const struct vcpu *sv = m->sv, *rv = m->rv;
	int awake = m->cross0 == CROSS0_AWAKE;
	const struct vcpu *v = awake ? rv : sv;
	int side = awake ? RECEIVER_AWAKE : SENDER;
	unsigned hint = awake ? H_TN : H_T0;
	uint64_t reach1 = m->own1 ? err : 0;
	/* t0 must stay below t1's piece, which begins where t1's entry or
	 * window does or at the line drawn halfway between the ends when the
	 * piece was made.  t1 has gone on since, and t0 reaches there long
	 * before it nears t1's window: the piece is cut at a line drawn
	 * again halfway between t0's widest window and the hop's t1.  It
	 * only shrinks from below, which t1, as hops come, has left.  The
	 * memo's own t1 may lie below it then: its split there is the one
	 * the slopes carry on from, exact for every t1 in the piece, where
	 * the sides of t0 and t1 are apart. */
	if (t1 != UINT64_MAX && m->lo1 >= reach1 && t0 + err >= m->lo1 - reach1 && t0 <= UINT64_MAX - err &&
	    t1 >= reach1 && t0 + err < t1 - reach1) {
		uint64_t mid = t0 + err + (t1 - reach1 - t0 - err) / 2;
		m->lo1 = mid + 1 + reach1;
	}
	/* t0's window stays short of t1's. */
	uint64_t below1 = m->lo1 - reach1;
	if (m->lo1 < reach1 || t0 < m->floor0 || t0 >= m->ceil0 || t0 >= below1 || t0 <= err ||
	    t0 > UINT64_MAX - err)
		return 0;
	int64_t s0 = find(j, sv, t0, H_T0), e0 = awake ? find(j, rv, t0, H_TN) : s0;
	if (s0 < 0 || e0 < 0)
		return 0;
	unsigned st0 = ent_at(j, v, (uint64_t)e0)->state;
	if (awake) {
		/* The receiver's wake is t0 only while it is awake there. */
		if ((st0 != S_RUNNING && st0 != S_RUNNABLE && st0 != S_XEN) || e0 > m->r1 ||
		    !memo_no_culprit(j, rv, e0, m->r1))
			return 0;
	} else if (s0 > m->sn_k || !memo_no_culprit(j, sv, s0, m->sn_k)) {
		return 0;
	}
	const struct vcpu *cv = sv;
	uint64_t c = err ? t0_change(j, m, t0, s0, e0, err, &cv) : UINT64_MAX;
	int own = c != UINT64_MAX;
	uint64_t reach = own ? err : 0;
	/* Past tn (spill0) the window takes from the receiver's awake side
	 * too, when that begins at tn: its part is the receiver's running
	 * totals at the window's end, tn's without. */
	int spill = t0 + reach > m->spill0;
	if ((spill && !m->spill_awake) || t0 + reach >= below1)
		return 0;
	if (!m->sums0) {
		uint64_t mreach = m->own0 ? err : 0, mw = m->t0 + mreach;
		if (m->t0 < m->floor0 || m->t0 >= m->ceil0 || mw >= below1 || (mw > m->spill0 && !m->spill_awake))
			return 0;
		uint64_t ws = mw > m->tnwin0 ? m->tnwin0 : mw > m->spill0 ? m->spill0 : mw;
		if (!end_sums(j, v, m->t0, find(j, v, m->t0, hint), ws, 1, m->kp0, &m->clock0, &m->lost0))
			return 0;
		m->wr0 = mw > m->spill0 ? mw : m->spill0;
		m->kpr_at = 0;
		m->sums0 = 1;
	}
	/* Within tn's window, t0's ends where tn's begins: the two are one. */
	int merged = t0 + reach >= m->tnwin0;
	uint64_t kp[S_UNKNOWN], clock, lost;
	if (!end_sums(j, v, t0, e0, merged ? m->tnwin0 : spill ? m->spill0 : t0 + reach, 1, kp, &clock, &lost))
		return 0;
	/* The receiver's totals where the window ends past tn, or at tn:
	 * asked only when that point moves (wr0, kpr_at: where kpr0 is). */
	uint64_t kpr[S_UNKNOWN], spillr = 0, wr = spill ? t0 + reach : m->spill0;
	int64_t kr = -1;
	if (spill) {
		kr = find(j, rv, wr, H_TN);
		if (kr < 0)
			return 0;
	}
	int moved = m->spill0 < UINT64_MAX && wr != m->wr0;
	if (moved) {
		if (m->kpr_at != m->wr0) {
			int64_t k = find(j, rv, m->wr0, H_TN);
			if (k < 0)
				return 0;
			m->spillr0 = totals(j, rv, m->wr0, k, m->kpr0);
			m->kpr_at = m->wr0;
		}
		if (kr < 0 && (kr = find(j, rv, wr, H_TN)) < 0)
			return 0;
		spillr = totals(j, rv, wr, kr, kpr);
	}
	/* The split at (t0, m->t1): the side starts later, so what it knew
	 * up to t0 is taken out; the receiver's side loses to the window
	 * what it spills over. */
	uint64_t dclock = clock - m->clock0, dlost = lost - m->lost0;
	for (unsigned s = 0; s < S_UNKNOWN; s++)
		*memo_cell(&m->out, side_state[side][s]) -= kp[s] - m->kp0[s];
	m->out.ns[XFT_ST_UNKNOWN] += dclock - dlost;
	m->out.unknown_ns[XFT_UNK_CLOCK] += dclock;
	m->out.unknown_ns[XFT_UNK_LOST] -= dlost;
	if (moved) {
		uint64_t dr = spillr - m->spillr0;
		for (unsigned s = 0; s < S_UNKNOWN; s++)
			*memo_cell(&m->out, side_state[RECEIVER_AWAKE][s]) -= kpr[s] - m->kpr0[s];
		m->out.ns[XFT_ST_UNKNOWN] += dr;
		m->out.unknown_ns[XFT_UNK_CLOCK] += dr;
		memcpy(m->kpr0, kpr, sizeof(kpr));
		m->spillr0 = spillr;
		m->kpr_at = wr;
	}
	m->wr0 = wr;
	memcpy(m->kp0, kp, sizeof(kp));
	m->clock0 = clock;
	m->lost0 = lost;
	m->t0 = t0;
	m->own0 = own;
	if ((uint64_t)s0 < m->smin)
		m->smin = (uint64_t)s0;
	if (awake) {
		if ((uint64_t)e0 < m->rmin)
			m->rmin = (uint64_t)e0;
		m->kw = e0;
	}
	/* The piece of t0 around the new end: where t0 stays in its entry,
	 * its window's end in its entry (of the sender, or of the receiver
	 * past tn) and on the same side of tn and of tn's window.  The
	 * sender's entry at t0 matters, when it is not charged, only for the
	 * window: past it, t0 may go on over its interrupts. */
	uint64_t lo0 = m->floor0, hi0 = below1 - reach;
	if (m->ceil0 < hi0)
		hi0 = m->ceil0;
	if (m->spill0 < UINT64_MAX) {
		uint64_t edge = m->spill0 - reach + 1; /* t0 from which it spills */
		if (spill && edge > lo0)
			lo0 = edge;
		else if (!spill && edge < hi0)
			hi0 = edge;
	}
	uint64_t meet = m->tnwin0 > reach ? m->tnwin0 - reach : 0;
	if (merged && meet > lo0)
		lo0 = meet;
	else if (!merged && meet < hi0)
		hi0 = meet;
	memo_within(j, v, (uint64_t)e0, &lo0, &hi0);
	if (awake && t_at(j, sv, (uint64_t)s0) > lo0)
		lo0 = t_at(j, sv, (uint64_t)s0);
	struct dense d0 = { { 0 }, 0 };
	slope_add(&d0, -1, side, st0, own || merged);
	if (own) {
		memo_keeps_change(j, cv, c, err, &lo0, &hi0);
		if (cv == sv && c < m->smin)
			m->smin = c;
		if (cv == rv && c < m->rmin)
			m->rmin = c;
	} else {
		memo_clear_of_changes(j, sv, (uint64_t)s0, err, &lo0, &hi0);
		if (awake)
			memo_clear_of_changes(j, rv, (uint64_t)e0, err, &lo0, &hi0);
	}
	if (own && !merged) {
		/* The window's end moves with t0, over the entries of the side
		 * it ends in. */
		const struct vcpu *wv = spill ? rv : v;
		int wside = spill ? RECEIVER_AWAKE : side;
		int64_t k2 = spill ? kr : step_to(j, v, t0 + err, e0);
		unsigned st2 = ent_at(j, wv, (uint64_t)k2)->state;
		slope_add(&d0, 1, wside, st2, 1);
		slope_add(&d0, -1, wside, st2, 0);
		uint64_t tk = t_at(j, wv, (uint64_t)k2), a = tk > err ? tk - err : 0, b = UINT64_MAX;
		if ((uint64_t)k2 + 1 < wv->n)
			b = t_at(j, wv, (uint64_t)k2 + 1) - err;
		if (a > lo0)
			lo0 = a;
		if (b < hi0)
			hi0 = b;
	}
	m->nd0 = memo_terms(&d0, m->at0, m->by0);
	if (!(lo0 <= t0 && t0 < hi0))
		lo0 = hi0 = t0;
	m->lo0 = lo0;
	m->hi0 = hi0;
	/* t1 may now come nearer, or must stay farther: past t0's window
	 * wherever t0 goes in its piece, or past this t0's with none. */
	uint64_t top = hi0 > t0 ? hi0 : t0 + 1;
	m->floor1 = top + reach > m->shape_floor1 ? top + reach : m->shape_floor1;
	return 1;
}

int xft_sj_memo_cross(struct xft_sj *j, struct memo *m, int which, uint64_t t0, uint64_t t1, uint64_t err)
{
	/* A crossing takes the running totals at the memo's own ends from
	 * the trace as it is now: past lim, the trace may have changed under
	 * them since its split was made (an event late in the merged order),
	 * and the two would not agree.  Its answers before lim still hold. */
	if (m->t1 > m->lim)
		return 0;
	/* Its answers so far were of the ends it is about to leave. */
	xft_sj_memo_pay(m);
	/* t0 first: t1's floor follows its piece. */
	if ((which & MEMO_CROSS0) && !cross0(j, m, t0, which & MEMO_CROSS1 ? UINT64_MAX : t1, err))
		return 0;
	if ((which & MEMO_CROSS1) && !cross1(j, m, t1, err))
		return 0;
	return 1;
}
