/*
 * The agent's bookkeeping of a lane's record numbers, and the loss notes
 * it writes from them (guestrt/hook/inproc/inproc_tail.h).
 */
#include "guestrt/hook/inproc/inproc_tail.h"


void ip_tail_kept(struct ip_tail *t, const struct xflow_record *r)
{
	if (!(r->flags & XFLOW_REC_SEQ_COUNTS_LOST))
		return;
	/* Another thread's record before the exited one's note was kept:
	 * that note's moment has passed (the monitor would see it after a
	 * record the note should have come before). */
	if (t->exited && r->thread_id != t->tid)
		t->exited = false;
	t->next = r->thread_seq + 1;
	t->tid = r->thread_id;
	t->known = true;
}

void ip_tail_exit(struct ip_tail *t, uint32_t tid, uint32_t seq)
{
	/* A thread none of whose records was kept: where its numbers began
	 * is not known, so neither is what it lost. */
	if (!t->known || t->tid != tid)
		return;
	t->exited = true;
	t->exit_seq = seq;
}

static uint32_t lost_before(const struct ip_tail *t, uint32_t seq)
{
	return xflow_seq_ahead(t->next, seq) ? seq - t->next : 0;
}

uint32_t ip_tail_idle_lost(const struct ip_tail *t, const struct ip_tail_seen *s)
{
	/* Busy: the running hit may have taken a number for a record it has
	 * not yet pushed.  Not drained: what is left may hold the numbers.
	 * Another thread's lane now: the numbers since are its too. */
	if (!t->known || t->exited || s->busy || !s->drained || s->tid != t->tid)
		return 0;
	return lost_before(t, s->seq);
}

uint32_t ip_tail_exit_lost(const struct ip_tail *t)
{
	return t->known && t->exited ? lost_before(t, t->exit_seq) : 0;
}

void ip_tail_note(const struct ip_tail *t, uint32_t seq, uint16_t domain, uint64_t now, struct xflow_record *out)
{
	/* The thread's numbers from after its last record kept to before
	 * its next one (numbered seq). */
	xflow_record_loss_note(out, domain, t->tid, t->next, seq - 1, now);
}

void ip_tail_noted(struct ip_tail *t, const struct xflow_record *n)
{
	if (t->exited)
		ip_tail_forget(t);
	else
		t->next = n->thread_seq + 1;
}

void ip_tail_forget(struct ip_tail *t)
{
	t->known = false;
	t->exited = false;
}
