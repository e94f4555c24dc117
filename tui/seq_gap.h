/*
 * tui/seq_gap.h — where records were lost: each (domain, thread)'s
 * thread_seq followed, for the records flagged XFLOW_REC_SEQ_COUNTS_LOST
 * (xflow/record.h, "Losses"), in the order they arrive.
 *
 * Memory is fixed at init: a table of threads in sets of XFT_SEQ_WAYS
 * slots.  A thread that finds its set full takes the place of the one
 * of its own domain whose last record is the oldest, else of any domain's
 * (so that a guest inventing threads evicts its own); that thread, if it
 * writes again, starts afresh, and a loss just before it goes unseen:
 * counted in `forgotten`, so that the figures say when they may have
 * missed one.
 */
#ifndef XFLOW_TUI_SEQ_GAP_H
#define XFLOW_TUI_SEQ_GAP_H

#include <stddef.h>
#include <stdint.h>

#include "xflow/record.h"

#define XFT_SEQ_WAYS 8

struct xft_seq_thread {
	uint64_t t_ns;       /* its last record's time */
	uint32_t tid;
	uint32_t next;       /* the thread_seq its next record should have */
	uint16_t domain;
	uint16_t used;
};

struct xft_seqs {
	struct xft_seq_thread *v; /* nsets * XFT_SEQ_WAYS */
	uint32_t nsets;           /* a power of two */
	uint64_t gaps;            /* losses seen: runs of numbers skipped */
	uint64_t lost;            /* records in them */
	uint64_t restarts;        /* a thread's numbers went back: taken as a
	                           * new producer under a reused thread id */
	uint64_t forgotten;       /* threads let go to make room */
	struct xft_seq_thread *last; /* the last record's thread, tried first
	                              * (its key checked: NULL or any entry) */
};

/* Room for at least @max_threads threads (0: 4096).  0 or -ENOMEM. */
int xft_seqs_init(struct xft_seqs *s, uint32_t max_threads);
void xft_seqs_fini(struct xft_seqs *s);
/* Forget every thread and zero the counts. */
void xft_seqs_clear(struct xft_seqs *s);
size_t xft_seqs_bytes(const struct xft_seqs *s);

/*
 * Follow @r (flagged SEQ_COUNTS_LOST), of time @t_ns.  Returns how many
 * records its thread lost just before it, and then sets *@prev_ns to the
 * time of the thread's record before the gap: the lost ones were written
 * between *@prev_ns and @t_ns.  0 when none was lost, or when the thread
 * was not followed before (its first record, or one forgotten).  A loss
 * note (XFLOW_REC_LOSS_NOTE) is itself a lost record, counted in the gap
 * before it; one of a thread not followed is counted alone, its gap
 * starting at @t_ns.
 */
uint32_t xft_seqs__check(struct xft_seqs *s, const struct xflow_record *r, uint64_t t_ns, uint64_t *prev_ns);

static inline uint32_t xft_seqs_check(struct xft_seqs *s, const struct xflow_record *r, uint64_t t_ns,
				      uint64_t *prev_ns)
{
	/* The common record, inline: the next number of the last record's
	 * thread, no note.  Anything else is xft_seqs__check()'s. */
	struct xft_seq_thread *th = s->last;
	if (th && th->used && th->domain == r->domain_id && th->tid == r->thread_id && r->thread_seq == th->next &&
	    !(r->flags & XFLOW_REC_LOSS_NOTE)) {
		th->next = r->thread_seq + 1;
		th->t_ns = t_ns;
		return 0;
	}
	return xft_seqs__check(s, r, t_ns, prev_ns);
}

#endif
