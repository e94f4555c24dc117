/*
 * The ptrace backend's record numbers (xflow/record.h, "Losses"): each of
 * a thread's records takes its next number before the agent's ring is
 * asked for room, so that one the full ring drops leaves a gap the
 * monitor sees between its thread's records around it; and a thread whose
 * last records the ring dropped gets a loss note.
 */
#include <errno.h>

#include "guestrt/agent/agent_priv.h"

static bool tseq_owes(const struct agent_tseq *e)
{
	return e->used && e->next != e->kept;
}

/* Thread @tid's numbers.  A few probes from the tid's place; a thread not
 * found takes the first free entry, else the one of the thread idle
 * longest (whose note, if it owed one, is not written: its loss stays in
 * the drops). */
#define TSEQ_PROBES 16
static struct agent_tseq *tseq_of(struct agent *a, uint32_t tid)
{
	uint32_t at = (uint32_t)((tid * UINT64_C(0x9E3779B97F4A7C15)) >> 40) & (AGENT_TSEQ - 1);
	struct agent_tseq *e = NULL, *victim = NULL;
	a->tseq_uses++;
	for (unsigned i = 0; i < TSEQ_PROBES; i++) {
		struct agent_tseq *x = &a->tseq[(at + i) & (AGENT_TSEQ - 1)];
		if (x->used && x->tid == tid) {
			e = x;
			break;
		}
		/* Entries are never freed one by one: past a free one, the
		 * thread has none. */
		if (!x->used) {
			victim = x;
			break;
		}
		if (!victim || x->used < victim->used)
			victim = x;
	}
	if (!e) {
		a->tseq_evicted += victim->used != 0;
		a->tseq_owed -= tseq_owes(victim);
		*victim = (struct agent_tseq){ .tid = tid };
		e = victim;
	}
	e->used = a->tseq_uses;
	return e;
}

int agent_tseq_push(struct agent *a, struct xflow_record *r)
{
	struct agent_tseq *e = tseq_of(a, r->thread_id);
	bool owed = tseq_owes(e);
	r->thread_seq = e->next++;
	r->flags |= XFLOW_REC_SEQ_COUNTS_LOST;
	int rc = xflow_ring_push_record(&a->prod, r) != 0 ? -ENOBUFS : 0;
	if (rc == 0) {
		/* A gap before it, if any, is one the monitor sees. */
		e->kept = e->next;
		a->records++;
	}
	a->tseq_owed += (uint32_t)tseq_owes(e) - (uint32_t)owed;
	return rc;
}

/*
 * A thread whose last records the ring refused shows no gap until it
 * writes again.  The agent writes every record of the ptrace backend
 * itself, one hit at a time, so between hits it knows each thread's
 * numbers whole: a note numbered as the last one lost is exact whenever
 * the ring takes it, and the thread's next record follows it.  Called as
 * the agent goes idle, so a note comes within one slice of the loss, or
 * of the ring's first room after it.
 */
void agent_tseq_notes(struct agent *a)
{
	for (uint32_t i = 0; i < AGENT_TSEQ && a->tseq_owed; i++) {
		struct agent_tseq *e = &a->tseq[i];
		if (!tseq_owes(e))
			continue;
		struct xflow_record n;
		/* The first lost is after the last kept. */
		xflow_record_loss_note(&n, a->o.domain_id, e->tid, e->kept, e->next - 1, xflow_clock_ticks(&a->clock));
		/* Room first: a note the ring refused is no record lost, and
		 * must not be counted with the drops the monitor is told. */
		if (xflow_ring_free_slots(&a->prod) == 0 || xflow_ring_push_record(&a->prod, &n) != 0)
			return; /* still full: at the next idle */
		e->kept = e->next;
		a->tseq_owed--;
		a->records++;
		a->notes++;
	}
}
