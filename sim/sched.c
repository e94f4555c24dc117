/* The scheduler model: see sched.h and sim/README (THE SCHEDULER MODEL). */
#include "sim/sched.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sim/evtchn.h"
#include "sim/late.h"

#define SCHED_MAGIC UINT64_C(0x78656e7363686431) /* "xenschd1" */
#define SCHED_NDOMS (KNOBS_MAX_GUESTS + 1)
/* vCPU index: domain d's own is d; the hog that delays d's wakes is NDOMS + d. */
#define SCHED_NVCPUS (2 * SCHED_NDOMS)
#define HOG(vi) (SCHED_NDOMS + (vi))
#define IS_HOG(vi) ((vi) >= SCHED_NDOMS)
#define IDLE (-1)
/* Each pCPU's trace buffer, drained by the launcher every few tens of ms. */
#define SCHED_TRACE_BYTES (4u << 20)
#define SCHED_INTERVALS (1u << 17)

/* Xen's runstates (public/vcpu.h), as RUNSTATE_CHANGE encodes them. */
enum { RS_RUNNING, RS_RUNNABLE, RS_BLOCKED, RS_OFFLINE };
static const char *const rs_name[] = { "running", "runnable", "blocked", "offline" };
/* Not a runstate: an interval of the ring that is an interrupt Xen handled
 * inside a vCPU's run ("#xen" in the truth, not "#sched", whose intervals
 * of a vCPU never overlap). */
#define IV_XEN 4

/* Xen 4.17's public/trace.h. */
#define TRC_LOST_RECORDS 0x0001f001u
#define TRC_TRACE_CPU_CHANGE 0x0001f003u
#define TRC_SCHED_RUNSTATE_CHANGE 0x00021001u
#define TRC_SCHED_WAKE 0x00028004u
#define TRC_SCHED_BLOCK 0x00028006u
#define TRC_SCHED_SWITCH 0x0002800au
#define TRC_PV_HYPERCALL_V2 0x0020100du
#define HYPERCALL_SCHED_OP 29
#define HYPERCALL_EVTCHN_OP 32
#define SCHEDOP_BLOCK 1
#define TRC_HW_IRQ_HANDLED 0x00802008u
/* The line of --xen-irq's interrupts: the model has one source of them. */
#define SCHED_IRQ 24

struct sched_vcpu {
	uint8_t used, state, queued;
	int32_t pcpu;      /* running there, or its hog holds that pCPU for it; -1 */
	int32_t last_pcpu;
	uint32_t busy;     /* threads with work for it */
	uint32_t arrivals; /* upcalls raised by a wake whose thread has not come yet */
	uint64_t since;    /* TSC at which the current state began */
	uint64_t hog_due;  /* its hog holds its pCPU until this TSC; 0: no hog */
	uint64_t qseq;     /* place in the run queue */
	uint64_t delay_tsc; /* --wake-delay */
	atomic_uint seq;   /* futex word: bumped at each change of state */
};

struct sched_pcpu {
	int32_t cur;       /* vCPU index, or IDLE */
	uint32_t lost;     /* records not written since the last that was */
	uint64_t lost_first;
	/* --xen-irq: Xen handles an interrupt here from irq_start until
	 * irq_due (TSCs) or, on a loaded machine, until someone notices that
	 * it is over (run_expired); irq_due 0: none. */
	uint64_t irq_start, irq_due;
	/* The producers write under the lock; the launcher reads without it. */
	_Atomic uint64_t prod, cons;
};

struct sched_interval {
	uint64_t start, end; /* TSC */
	uint32_t ident;      /* dom << 16 | vcpu */
	int32_t culprit;     /* ident of who held the pCPU before it ran, or -1 */
	uint64_t sent;       /* TSC of the evtchn_op whose notification ended it; 0 */
	uint8_t state;       /* a runstate, or IV_XEN */
	int8_t pcpu;
};

struct sched_shared {
	uint64_t magic;
	pthread_mutex_t lock; /* robust and process-shared: over everything below */
	uint32_t npcpus, nguests, hog_dom, log_intervals;
	uint64_t notify_delay_ns;
	uint64_t xen_irq_tsc;
	uint64_t start_tsc, last_tsc, qseq;
	uint64_t lost_records, lost_intervals;
	struct sched_vcpu v[SCHED_NVCPUS];
	struct sched_pcpu p[KNOBS_MAX_PCPUS];
	_Atomic uint64_t iprod, icons;
	struct sched_interval iv[SCHED_INTERVALS];
	struct sim_late wake_late[SCHED_NDOMS], notify_late[SCHED_NDOMS], xen_late[SCHED_NDOMS];
};

#define TRACE_OFF (((sizeof(struct sched_shared) + 4095) / 4096) * 4096)

static struct sched_shared *S;
static size_t S_size;
static int my_vi = -1;                /* this domain's vCPU */
static _Thread_local bool entered;    /* this thread counts in my vCPU's busy */
static _Thread_local bool slack_set;
static _Thread_local uint64_t op_tsc; /* this thread's last evtchn_op */

/* --- clocks and locking -------------------------------------------------- */

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t ns_to_tsc(uint64_t ns)
{
	return ns / 5 * 12 + ns % 5 * 12 / 5;
}

static uint64_t tsc_to_ns(uint64_t tsc)
{
	return tsc / 12 * 5 + tsc % 12 * 5 / 12;
}

/* A TSC for the next record: now, and above every one before (under the
 * lock), so that records of different pCPUs never tie in the merge. */
static uint64_t tick(void)
{
	uint64_t t = ns_to_tsc((uint64_t)mono_ns());

	if (t <= S->last_tsc)
		t = S->last_tsc + 1;
	S->last_tsc = t;
	return t;
}

static void lock(void)
{
	/* A domain killed while holding the lock leaves it to the others. */
	if (pthread_mutex_lock(&S->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&S->lock);
}

static void unlock(void)
{
	pthread_mutex_unlock(&S->lock);
}

static void futex_wait_until(atomic_uint *word, unsigned val, int64_t due_ns)
{
	struct timespec ts = { .tv_sec = due_ns / 1000000000, .tv_nsec = due_ns % 1000000000 };

	if (!slack_set) {
		/* Wake at the due time, not up to 50us later (the default slack). */
		prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
		slack_set = true;
	}
	/* FUTEX_WAIT_BITSET: an absolute CLOCK_MONOTONIC deadline. */
	syscall(SYS_futex, word, FUTEX_WAIT_BITSET, val, &ts, NULL, FUTEX_BITSET_MATCH_ANY);
}

static void futex_wake_all(atomic_uint *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

/* --- records ------------------------------------------------------------- */

static uint8_t *trace_buf(unsigned p)
{
	return (uint8_t *)S + TRACE_OFF + (size_t)p * SCHED_TRACE_BYTES;
}

static uint32_t ident(int vi, unsigned p)
{
	if (vi == IDLE)
		return (uint32_t)SCHED_IDLE_DOMAIN << 16 | p;
	if (IS_HOG(vi))
		return S->hog_dom << 16 | (uint32_t)(vi - SCHED_NDOMS);
	return (uint32_t)vi << 16;
}

static void put_bytes(unsigned p, uint64_t at, const void *src, size_t len)
{
	uint8_t *buf = trace_buf(p);
	size_t off = at % SCHED_TRACE_BYTES, first = SCHED_TRACE_BYTES - off;

	if (first > len)
		first = len;
	memcpy(buf + off, src, first);
	memcpy(buf, (const uint8_t *)src + first, len - first);
}

/* Writes one record with a TSC on pCPU @p; returns the TSC. */
static uint64_t emit(unsigned p, uint32_t event, unsigned n, const uint32_t *extra)
{
	struct sched_pcpu *pc = &S->p[p];
	uint64_t t = tick();
	uint32_t rec[3 + 7];
	size_t len = 12 + 4 * (size_t)n;
	/* Acquire: the launcher has copied out what it freed before we overwrite it. */
	uint64_t cons = atomic_load_explicit(&pc->cons, memory_order_acquire);
	uint64_t prod = atomic_load_explicit(&pc->prod, memory_order_relaxed);

	if (pc->lost && SCHED_TRACE_BYTES - (prod - cons) >= len + 28) {
		/* As Xen does: say how many were lost, before the next record. */
		uint32_t cur = ident(pc->cur, p);
		uint32_t lost[7] = { TRC_LOST_RECORDS | 4u << 28 | 1u << 31, (uint32_t)t, (uint32_t)(t >> 32),
				     pc->lost, (cur >> 16) | (cur & 0xffff) << 16, (uint32_t)pc->lost_first,
				     (uint32_t)(pc->lost_first >> 32) };

		put_bytes(p, prod, lost, sizeof(lost));
		prod += sizeof(lost);
		pc->lost = 0;
		t = tick();
	}
	if (SCHED_TRACE_BYTES - (prod - cons) < len) {
		if (!pc->lost++)
			pc->lost_first = t;
		S->lost_records++;
		return t;
	}
	rec[0] = event | (uint32_t)n << 28 | 1u << 31;
	rec[1] = (uint32_t)t;
	rec[2] = (uint32_t)(t >> 32);
	memcpy(rec + 3, extra, 4 * (size_t)n);
	put_bytes(p, prod, rec, len);
	/* Release: the record's bytes before the index that publishes them. */
	atomic_store_explicit(&pc->prod, prod + len, memory_order_release);
	return t;
}

static uint64_t emit2(unsigned p, uint32_t event, uint32_t a, uint32_t b)
{
	uint32_t x[2] = { a, b };

	return emit(p, event, 2, x);
}

/* RUNSTATE_CHANGE of @vi on @p: its TSC is when the new state begins. */
static uint64_t runstate(unsigned p, int vi, int from, int to)
{
	uint32_t x = ident(vi, p);

	return emit(p, TRC_SCHED_RUNSTATE_CHANGE | (uint32_t)from << 8 | (uint32_t)to << 4, 1, &x);
}

/* --- state --------------------------------------------------------------- */

static void log_interval(int vi, int state, uint64_t start, uint64_t end, int pcpu, int32_t culprit, uint64_t sent)
{
	uint64_t prod = atomic_load_explicit(&S->iprod, memory_order_relaxed);
	struct sched_interval *iv;

	if (!S->log_intervals)
		return;
	if (prod - atomic_load_explicit(&S->icons, memory_order_acquire) >= SCHED_INTERVALS) {
		S->lost_intervals++;
		return;
	}
	iv = &S->iv[prod % SCHED_INTERVALS];
	*iv = (struct sched_interval){ .start = start, .end = end, .ident = ident(vi, 0), .culprit = culprit,
				       .sent = sent, .state = (uint8_t)state, .pcpu = (int8_t)pcpu };
	atomic_store_explicit(&S->iprod, prod + 1, memory_order_release);
}

/* @vi enters @state at TSC @t; the interval it leaves ran on @pcpu (or -1)
 * and ended because @culprit gave up the pCPU (a wait) or notified it with
 * the evtchn_op at TSC @sent (a block). */
static void change(int vi, int state, uint64_t t, int pcpu, int32_t culprit, uint64_t sent)
{
	struct sched_vcpu *v = &S->v[vi];

	log_interval(vi, v->state, v->since, t, pcpu, culprit, sent);
	v->state = (uint8_t)state;
	v->since = t;
	atomic_fetch_add(&v->seq, 1);
	futex_wake_all(&v->seq);
}

/*
 * The interrupt pCPU @p handles is over now: written as Xen's do_IRQ writes
 * it on exit, {irq, low words of the TSC at entry and at exit}, the exit's
 * TSC read before the record takes its own.  Its end is when the model let
 * the vCPU go, however late that was: the truth says what happened.
 */
static void irq_close(unsigned p)
{
	struct sched_pcpu *pc = &S->p[p];
	int vi = pc->cur;
	uint64_t end = tick();
	uint32_t x[3] = { SCHED_IRQ, (uint32_t)pc->irq_start, (uint32_t)end };

	emit(p, TRC_HW_IRQ_HANDLED, 3, x);
	log_interval(vi, IV_XEN, pc->irq_start, end, (int)p, -1, 0);
	/* (Cut short only by the domain's exit: no lateness to count.) */
	if (end >= pc->irq_due)
		sim_late_note(&S->xen_late[vi], (int64_t)tsc_to_ns(end - pc->irq_due));
	pc->irq_due = 0;
	/* Its threads held for the interrupt (enter_locked) may go. */
	atomic_fetch_add(&S->v[vi].seq, 1);
	futex_wake_all(&S->v[vi].seq);
}

/* pCPU @p switches from whoever runs there (who goes to @prev_state) to
 * @next (IDLE or a vCPU that is runnable), in Xen's order of records.  With
 * --xen-irq, a guest's vCPU begins its run with Xen handling an interrupt
 * on the pCPU (not a hog's: no thread of it would be held). */
static void switch_to(unsigned p, int next, int prev_state)
{
	int prev = S->p[p].cur;
	uint32_t a = ident(prev, p), b = ident(next, p);
	uint32_t x[4] = { a >> 16, a & 0xffff, b >> 16, b & 0xffff };
	uint64_t t;

	/* Only a domain's exit takes the pCPU from a vCPU inside its
	 * interrupt: Xen finishes the handler before it schedules. */
	if (S->p[p].irq_due)
		irq_close(p);
	emit(p, TRC_SCHED_SWITCH, 4, x);
	if (prev == IDLE) {
		runstate(p, IDLE, RS_RUNNING, RS_RUNNABLE);
	} else {
		t = runstate(p, prev, RS_RUNNING, prev_state);
		change(prev, prev_state, t, (int)p, -1, 0);
		S->v[prev].pcpu = -1;
	}
	if (next == IDLE) {
		runstate(p, IDLE, RS_RUNNABLE, RS_RUNNING);
	} else {
		t = runstate(p, next, RS_RUNNABLE, RS_RUNNING);
		change(next, RS_RUNNING, t, (int)p, prev == IDLE ? -1 : (int32_t)a, 0);
		S->v[next].pcpu = (int32_t)p;
		S->v[next].last_pcpu = (int32_t)p;
		if (S->xen_irq_tsc && !IS_HOG(next)) {
			S->p[p].irq_start = t;
			S->p[p].irq_due = t + S->xen_irq_tsc;
		}
	}
	S->p[p].cur = next;
}

/* Blocked @vi becomes runnable, logged on pCPU @wp (the waker's); @waker
 * is the ident of the notifier and @sent the TSC of its evtchn_op, or -1
 * and 0 for a timer or the domain's own thread. */
static void wake_record(int vi, unsigned wp, int32_t waker, uint64_t sent)
{
	uint32_t id = ident(vi, wp);

	emit2(wp, TRC_SCHED_WAKE, id >> 16, id & 0xffff);
	change(vi, RS_RUNNABLE, runstate(wp, vi, RS_BLOCKED, RS_RUNNABLE), -1, waker, sent);
}

/* pCPU @p, whose current goes to @prev_state, is given to runnable @vi; with
 * a wake delay still to run, its hog takes the pCPU first. */
static void give(unsigned p, int vi, int prev_state)
{
	struct sched_vcpu *v = vi == IDLE ? NULL : &S->v[vi];

	if (v && v->delay_tsc && S->last_tsc < v->since + v->delay_tsc) {
		wake_record(HOG(vi), p, -1, 0);
		switch_to(p, HOG(vi), prev_state);
		v->hog_due = v->since + v->delay_tsc;
		v->pcpu = (int32_t)p;
		return;
	}
	switch_to(p, vi, prev_state);
}

static int pick_next(void)
{
	int best = IDLE;

	for (int i = 0; i < SCHED_NDOMS; i++)
		if (S->v[i].queued && (best == IDLE || S->v[i].qseq < S->v[best].qseq))
			best = i;
	if (best != IDLE)
		S->v[best].queued = 0;
	return best;
}

/* Runnable @vi gets an idle pCPU (its last one first) or joins the queue. */
static void place(int vi)
{
	struct sched_vcpu *v = &S->v[vi];
	int p = -1;

	if (v->last_pcpu >= 0 && S->p[v->last_pcpu].cur == IDLE)
		p = v->last_pcpu;
	for (unsigned i = 0; p < 0 && i < S->npcpus; i++)
		if (S->p[i].cur == IDLE)
			p = (int)i;
	if (p < 0) {
		v->queued = 1;
		v->qseq = ++S->qseq;
		return;
	}
	give((unsigned)p, vi, RS_RUNNABLE);
}

static void wake(int vi, unsigned wp, int32_t waker, uint64_t sent)
{
	wake_record(vi, wp, waker, sent);
	place(vi);
}

static void block(int vi)
{
	struct sched_vcpu *v = &S->v[vi];
	unsigned p = (unsigned)v->pcpu;
	uint32_t op[2] = { HYPERCALL_SCHED_OP | 1u << 20, SCHEDOP_BLOCK };
	uint32_t id = ident(vi, p);

	emit(p, TRC_PV_HYPERCALL_V2, 2, op);
	emit2(p, TRC_SCHED_BLOCK, id >> 16, id & 0xffff);
	give(p, pick_next(), RS_BLOCKED);
}

/* Ends the hogs and the interrupts whose time is up: each hog gives its
 * pCPU to the vCPU it held it from.  Whoever takes the lock next does it,
 * and the held vCPU's own threads wait with the due time as their
 * deadline. */
static void run_expired(void)
{
	uint64_t now = ns_to_tsc((uint64_t)mono_ns());

	for (unsigned p = 0; p < S->npcpus; p++) {
		int h = S->p[p].cur;
		struct sched_vcpu *v;
		uint32_t id;

		if (h == IDLE || !IS_HOG(h))
			continue;
		v = &S->v[h - SCHED_NDOMS];
		if (!v->hog_due || v->hog_due > now)
			continue;
		sim_late_note(&S->wake_late[h - SCHED_NDOMS], (int64_t)tsc_to_ns(now - v->hog_due));
		v->hog_due = 0;
		id = ident(h, p);
		emit2(p, TRC_SCHED_BLOCK, id >> 16, id & 0xffff);
		switch_to(p, h - SCHED_NDOMS, RS_BLOCKED);
	}
	for (unsigned p = 0; p < S->npcpus; p++)
		if (S->p[p].irq_due && S->p[p].irq_due <= now)
			irq_close(p);
}

/* Whether @v's threads are held: it waits for a pCPU, or Xen handles an
 * interrupt on its pCPU.  *@due_ns: until when at most (the hog's or the
 * interrupt's due time; else a timeout that only re-checks). */
static bool held(const struct sched_vcpu *v, int64_t *due_ns)
{
	if (v->state == RS_RUNNABLE) {
		*due_ns = v->hog_due ? (int64_t)tsc_to_ns(v->hog_due) : mono_ns() + 50000000;
		return true;
	}
	if (v->state == RS_RUNNING && S->p[v->pcpu].irq_due) {
		/* Rounded up: not woken a fraction of a ns before it is due. */
		*due_ns = (int64_t)tsc_to_ns(S->p[v->pcpu].irq_due) + 1;
		return true;
	}
	return false;
}

/*
 * The calling thread has work for my vCPU: counts it, wakes the vCPU if it
 * is blocked (logged on @wp for @waker's notification, or where it last ran
 * for a timer or an interrupt), and returns, with the lock held, once the
 * vCPU runs and Xen is not handling an interrupt on its pCPU.
 */
static void enter_locked(bool arrival, int wp, int32_t waker, uint64_t sent)
{
	struct sched_vcpu *v = &S->v[my_vi];

	lock();
	run_expired();
	v->busy++;
	if (arrival && v->arrivals)
		v->arrivals--;
	if (v->state == RS_BLOCKED)
		wake(my_vi, (unsigned)(wp >= 0 ? wp : v->last_pcpu), wp >= 0 ? waker : -1, wp >= 0 ? sent : 0);
	for (int64_t due; held(v, &due);) {
		unsigned seq = atomic_load(&v->seq);

		unlock();
		futex_wait_until(&v->seq, seq, due);
		lock();
		run_expired();
	}
}

static void leave(void)
{
	struct sched_vcpu *v = &S->v[my_vi];

	lock();
	run_expired();
	if (v->busy)
		v->busy--;
	if (!v->busy && !v->arrivals && v->state == RS_RUNNING)
		block(my_vi);
	unlock();
}

/* --- event channel hooks ------------------------------------------------- */

static void on_notify_begin(struct evtchn *ch)
{
	uint32_t op = HYPERCALL_EVTCHN_OP;

	(void)ch;
	enter_locked(false, -1, -1, 0);
	if (S->v[my_vi].state == RS_RUNNING)
		op_tsc = emit((unsigned)S->v[my_vi].pcpu, TRC_PV_HYPERCALL_V2, 1, &op);
	unlock();
}

static void on_notify_raised(struct evtchn *ch)
{
	int remote = !ch->end;
	uint32_t dom = ch->sh->domid[remote];
	int wp;

	if (dom >= SCHED_NDOMS)
		return;
	lock();
	/* Where the sender runs: it cannot change while it notifies (its busy
	 * count holds it running), but it is read under the lock all the same. */
	wp = S->v[my_vi].pcpu;
	if (S->notify_delay_ns) {
		/* The receiver wakes itself when the delay is over (on_wait_end). */
		atomic_store(&ch->sh->sent_pcpu[remote], wp);
		atomic_store(&ch->sh->sent_ns[remote], (int64_t)tsc_to_ns(op_tsc));
	} else {
		struct sched_vcpu *t = &S->v[dom];

		t->arrivals++;
		if (t->state == RS_BLOCKED && wp >= 0)
			wake((int)dom, (unsigned)wp, (int32_t)ident(my_vi, 0), op_tsc);
	}
	unlock();
}

static void on_notify_end(struct evtchn *ch)
{
	(void)ch;
	leave();
}

static void on_wait_begin(struct evtchn *ch)
{
	(void)ch;
	if (entered) {
		entered = false;
		leave();
	}
}

static void on_wait_end(struct evtchn *ch, const struct pollfd *pfd, nfds_t nfds, int n)
{
	bool event = false;
	int wp = -1;

	for (nfds_t i = 0; n > 0 && i < nfds; i++) {
		if (!pfd[i].revents)
			continue;
		if (pfd[i].fd != evtchn_fd(ch))
			return; /* stopping or hung up: no more work for the vCPU */
		event = true;
	}
	if (event && S->notify_delay_ns) {
		int64_t sent = atomic_load(&ch->sh->sent_ns[ch->end]);
		int64_t due = sent + (int64_t)S->notify_delay_ns, late;

		if (sent) {
			struct timespec ts = { .tv_sec = due / 1000000000, .tv_nsec = due % 1000000000 };

			if (!slack_set) {
				prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
				slack_set = true;
			}
			while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
				;
			late = mono_ns() - due;
			wp = atomic_load(&ch->sh->sent_pcpu[ch->end]);
			atomic_store(&ch->sh->sent_ns[ch->end], 0);
			enter_locked(true, wp, (int32_t)(ch->sh->domid[!ch->end] << 16), ns_to_tsc((uint64_t)sent));
			sim_late_note(&S->notify_late[my_vi], late);
			unlock();
			entered = true;
			return;
		}
	}
	/* A timeout is a timer's wake; an upcall's wake was the sender's. */
	enter_locked(event, wp, -1, 0);
	unlock();
	entered = true;
}

static const struct evtchn_hooks sched_hooks = {
	.notify_begin = on_notify_begin,
	.notify_raised = on_notify_raised,
	.notify_end = on_notify_end,
	.wait_begin = on_wait_begin,
	.wait_end = on_wait_end,
};

/* --- the domains' side --------------------------------------------------- */

static int map_shared(int fd)
{
	void *m;

	S_size = TRACE_OFF + (size_t)KNOBS_MAX_PCPUS * SCHED_TRACE_BYTES;
	m = mmap(NULL, S_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
	if (m == MAP_FAILED)
		return -errno;
	S = m;
	return 0;
}

int sched_attach(int memfd, uint32_t domid)
{
	int rc = map_shared(memfd);

	close(memfd);
	if (rc < 0)
		return rc;
	if (S->magic != SCHED_MAGIC || domid > S->nguests) {
		munmap(S, S_size);
		S = NULL;
		return -EINVAL;
	}
	my_vi = (int)domid;
	evtchn_set_hooks(&sched_hooks);
	return 0;
}

/* --- the launcher's side ------------------------------------------------- */

int sched_create(const struct sim_knobs *k)
{
	pthread_mutexattr_t ma;
	int fd = memfd_create("xensim-sched", MFD_CLOEXEC), rc;

	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)(TRACE_OFF + (size_t)KNOBS_MAX_PCPUS * SCHED_TRACE_BYTES)) < 0 ||
	    (rc = map_shared(fd)) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&S->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	S->npcpus = k->pcpus ? k->pcpus : KNOBS_PCPUS;
	S->nguests = k->guests;
	S->hog_dom = k->guests + 1;
	S->log_intervals = k->truth != NULL;
	S->notify_delay_ns = (uint64_t)k->notify_delay_ns;
	S->xen_irq_tsc = ns_to_tsc((uint64_t)k->xen_irq_ns);
	S->start_tsc = tick();
	for (unsigned p = 0; p < S->npcpus; p++)
		S->p[p].cur = IDLE;
	for (uint32_t d = 0; d <= k->guests; d++) {
		struct sched_vcpu *v = &S->v[d];

		*v = (struct sched_vcpu){ .used = 1, .state = RS_BLOCKED, .pcpu = -1,
					  .last_pcpu = (int32_t)(d % S->npcpus), .since = S->start_tsc,
					  .delay_tsc = ns_to_tsc((uint64_t)k->wake_delay_ns[d]) };
		if (k->wake_delay_ns[d])
			S->v[HOG(d)] = (struct sched_vcpu){ .used = 1, .state = RS_BLOCKED, .pcpu = -1,
							    .last_pcpu = v->last_pcpu, .since = S->start_tsc };
	}
	S->magic = SCHED_MAGIC;
	return fd;
}

void sched_domain_gone(uint32_t domid)
{
	struct sched_vcpu *v;
	unsigned lp;

	if (!S || domid > S->nguests)
		return;
	v = &S->v[domid];
	lock();
	run_expired();
	v->busy = v->arrivals = 0;
	lp = (unsigned)v->last_pcpu;
	if (v->state == RS_RUNNING) {
		give((unsigned)v->pcpu, pick_next(), RS_OFFLINE);
	} else if (v->state != RS_OFFLINE) {
		if (v->queued)
			v->queued = 0;
		if (v->hog_due) { /* its hog gives the pCPU to the next in line */
			unsigned p = (unsigned)v->pcpu;
			uint32_t id = ident(HOG((int)domid), p);

			v->hog_due = 0;
			emit2(p, TRC_SCHED_BLOCK, id >> 16, id & 0xffff);
			give(p, pick_next(), RS_BLOCKED);
			v->pcpu = -1;
		}
		change((int)domid, RS_OFFLINE, runstate(lp, (int)domid, v->state, RS_OFFLINE), -1, -1, 0);
	}
	unlock();
}

/* Writes what pCPU @p's buffer holds as one xentrace window. */
static int drain_cpu(unsigned p, FILE *trace)
{
	struct sched_pcpu *pc = &S->p[p];
	/* Acquire: pairs with emit's release, the bytes are there. */
	uint64_t prod = atomic_load_explicit(&pc->prod, memory_order_acquire);
	uint64_t cons = atomic_load_explicit(&pc->cons, memory_order_relaxed);
	size_t len = (size_t)(prod - cons), off = cons % SCHED_TRACE_BYTES, first;
	uint32_t hdr[3] = { TRC_TRACE_CPU_CHANGE | 2u << 28, p, (uint32_t)len };
	int rc = 0;

	if (!len)
		return 0;
	first = SCHED_TRACE_BYTES - off < len ? SCHED_TRACE_BYTES - off : len;
	if (trace && (fwrite(hdr, sizeof(hdr), 1, trace) != 1 ||
		      fwrite(trace_buf(p) + off, first, 1, trace) != 1 ||
		      (len > first && fwrite(trace_buf(p), len - first, 1, trace) != 1)))
		rc = -EIO;
	/* Release: the copy is done before the producers may reuse the space. */
	atomic_store_explicit(&pc->cons, prod, memory_order_release);
	return rc;
}

static void culprit_name(char *buf, size_t n, int32_t c)
{
	if (c < 0)
		snprintf(buf, n, "-");
	else
		snprintf(buf, n, "d%uv%u", (unsigned)c >> 16, (unsigned)c & 0xffff);
}

static int drain_intervals(FILE *truth)
{
	uint64_t prod = atomic_load_explicit(&S->iprod, memory_order_acquire);
	uint64_t cons = atomic_load_explicit(&S->icons, memory_order_relaxed);
	int rc = 0;

	for (; cons != prod; cons++) {
		const struct sched_interval *iv = &S->iv[cons % SCHED_INTERVALS];
		char culprit[24], sent[24];

		if (iv->state == IV_XEN) {
			if (truth && fprintf(truth, "#xen\t%u\t%u\t%" PRIu64 "\t%" PRIu64 "\t%d\n", iv->ident >> 16,
					     iv->ident & 0xffff, tsc_to_ns(iv->start), tsc_to_ns(iv->end), iv->pcpu) < 0)
				rc = -EIO;
			continue;
		}
		culprit_name(culprit, sizeof(culprit), iv->culprit);
		if (iv->sent)
			snprintf(sent, sizeof(sent), "%" PRIu64, tsc_to_ns(iv->sent));
		else
			snprintf(sent, sizeof(sent), "-");
		if (truth && fprintf(truth, "#sched\t%u\t%u\t%s\t%" PRIu64 "\t%" PRIu64 "\t%s\t%d\t%s\n", iv->ident >> 16,
				     iv->ident & 0xffff, rs_name[iv->state & 3], tsc_to_ns(iv->start),
				     tsc_to_ns(iv->end), culprit, iv->pcpu, sent) < 0)
			rc = -EIO;
	}
	atomic_store_explicit(&S->icons, prod, memory_order_release);
	return rc;
}

int sched_drain(FILE *trace, FILE *truth)
{
	int rc = 0;

	if (!S)
		return 0;
	for (unsigned p = 0; p < S->npcpus; p++)
		if (drain_cpu(p, trace) < 0)
			rc = -EIO;
	/* As xentrace writes each pass: a window held in stdio's buffer
	 * until the next 4 KiB would hold the reader's watermark back. */
	if (trace && fflush(trace) != 0)
		rc = -EIO;
	if (drain_intervals(truth) < 0)
		rc = -EIO;
	return rc;
}

int sched_finish(FILE *trace, FILE *truth)
{
	char line[160];
	int rc;

	if (!S)
		return 0;
	lock();
	run_expired();
	/* The intervals still open end with the host, the interrupts first:
	 * each lies inside its vCPU's run. */
	for (unsigned p = 0; p < S->npcpus; p++)
		if (S->p[p].irq_due)
			irq_close(p);
	uint64_t end = tick();
	for (int i = 0; i < SCHED_NVCPUS; i++) {
		struct sched_vcpu *v = &S->v[i];

		if (v->used)
			log_interval(i, v->state, v->since, end, v->state == RS_RUNNING ? v->pcpu : -1, -1, 0);
	}
	unlock();
	rc = sched_drain(trace, truth);
	for (uint32_t d = 0; truth && d < SCHED_NDOMS; d++) {
		if (S->wake_late[d].count &&
		    sim_late_line(line, sizeof(line), d, "wake-delay", &S->wake_late[d]) > 0)
			fputs(line, truth);
		if (S->notify_late[d].count &&
		    sim_late_line(line, sizeof(line), d, "notify-delay", &S->notify_late[d]) > 0)
			fputs(line, truth);
		if (S->xen_late[d].count && sim_late_line(line, sizeof(line), d, "xen-irq", &S->xen_late[d]) > 0)
			fputs(line, truth);
	}
	if (truth)
		fprintf(truth, "#xentrace\t%" PRIu64 "\t%" PRIu64 "\t%" PRIu64 "\t%u\t%u\n", SCHED_CPU_HZ,
			S->start_tsc, tsc_to_ns(S->start_tsc), S->npcpus, S->hog_dom);
	if (S->lost_records)
		fprintf(stderr, "xensim: --xentrace: %" PRIu64 " scheduler records lost (trace buffers full)\n",
			S->lost_records);
	if (S->lost_intervals)
		fprintf(stderr, "xensim: --truth: %" PRIu64 " scheduler intervals lost (buffer full)\n",
			S->lost_intervals);
	munmap(S, S_size);
	S = NULL;
	return rc;
}
