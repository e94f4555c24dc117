/*
 * Following each thread's record numbers to see where records were lost
 * (tui/seq_gap.h).  Set-associative so that a lookup is a few compares in
 * one place and memory stays what init took, whatever the threads.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tui/seq_gap.h"

int xft_seqs_init(struct xft_seqs *s, uint32_t max_threads)
{
	memset(s, 0, sizeof(*s));
	if (!max_threads)
		max_threads = 4096;
	if (max_threads > (1u << 24))
		max_threads = 1u << 24;
	uint32_t sets = 1;
	while ((uint64_t)sets * XFT_SEQ_WAYS < max_threads)
		sets <<= 1;
	s->v = calloc((size_t)sets * XFT_SEQ_WAYS, sizeof(*s->v));
	if (!s->v)
		return -ENOMEM;
	s->nsets = sets;
	return 0;
}

void xft_seqs_fini(struct xft_seqs *s)
{
	free(s->v);
	memset(s, 0, sizeof(*s));
}

void xft_seqs_clear(struct xft_seqs *s)
{
	if (s->v)
		memset(s->v, 0, (size_t)s->nsets * XFT_SEQ_WAYS * sizeof(*s->v));
	s->gaps = s->lost = s->restarts = s->forgotten = 0;
}

size_t xft_seqs_bytes(const struct xft_seqs *s)
{
	return (size_t)s->nsets * XFT_SEQ_WAYS * sizeof(*s->v);
}

static struct xft_seq_thread *set_of(const struct xft_seqs *s, uint16_t domain, uint32_t tid)
{
	uint64_t k = ((uint64_t)domain << 32 | tid) * UINT64_C(0x9E3779B97F4A7C15);
	return &s->v[(size_t)((k >> 32) & (s->nsets - 1)) * XFT_SEQ_WAYS];
}

uint32_t xft_seqs__check(struct xft_seqs *s, const struct xflow_record *r, uint64_t t_ns, uint64_t *prev_ns)
{
	/* Records come in runs of one thread's (a lane is read a batch at a
	 * time): the last record's thread first. */
	struct xft_seq_thread *th = s->last;
	if (th && !(th->used && th->domain == r->domain_id && th->tid == r->thread_id))
		th = NULL;
	struct xft_seq_thread *set = th ? NULL : set_of(s, r->domain_id, r->thread_id);
	struct xft_seq_thread *oldest = set, *own = NULL;
	/* A thread seen before, the common case, is found by this loop
	 * alone; the place a new one takes is chosen only when it is not. */
	for (unsigned w = 0; w < XFT_SEQ_WAYS && !th; w++)
		if (set[w].used && set[w].domain == r->domain_id && set[w].tid == r->thread_id)
			th = &set[w];
	for (unsigned w = 0; w < XFT_SEQ_WAYS && !th; w++) {
		struct xft_seq_thread *e = &set[w];
		if (!e->used) {
			if (oldest->used)
				oldest = e;
		} else if (oldest->used && e->t_ns < oldest->t_ns) {
			oldest = e;
		}
		if (e->used && e->domain == r->domain_id && (!own || e->t_ns < own->t_ns))
			own = e;
	}
	/* A full set gives up the oldest thread of the newcomer's own domain
	 * when it has one there: a guest inventing thread ids takes at most
	 * one place from the other domains in each set, and cannot make the
	 * monitor forget their threads (and the losses they would show). */
	if (!th && oldest->used && own)
		oldest = own;
	uint32_t lost = 0;
	/* A loss note (xflow/record.h, "Losses") is the last record its
	 * thread lost: counted with the gap before it, so that a loss after
	 * the thread's last record is one gap like any other. */
	uint32_t note = !!(r->flags & XFLOW_REC_LOSS_NOTE);
	if (th) {
		/* Unsigned: the numbers wrap.  A step back is no loss we can
		 * count; a thread id the kernel gave again, whose new lane
		 * numbers from elsewhere, is the likely story (a note that
		 * steps back, a note seen twice, counts nothing either). */
		uint32_t d = r->thread_seq - th->next;
		if (!xflow_seq_ahead(th->next, r->thread_seq)) {
			s->restarts++;
		} else if (d + note) {
			lost = d + note;
			*prev_ns = th->t_ns;
		}
	} else {
		th = oldest;
		s->forgotten += th->used;
		th->used = 1;
		th->domain = r->domain_id;
		th->tid = r->thread_id;
		/* Its first word a note: every record it kept was lost, the
		 * numbers the note names from its first (decoded: fewer than
		 * 2^31 of them), before now. */
		if (note) {
			lost = r->thread_seq - (uint32_t)r->data[0] + 1;
			*prev_ns = t_ns;
		}
	}
	if (lost) {
		s->gaps++;
		s->lost += lost;
	}
	th->next = r->thread_seq + 1;
	th->t_ns = t_ns;
	s->last = th;
	return lost;
}
