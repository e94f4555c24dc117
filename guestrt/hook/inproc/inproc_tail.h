/*
 * guestrt/hook/inproc/inproc_tail.h — what the agent knows of a lane's
 * record numbers, and when it writes a loss note (xflow/record.h,
 * "Losses").
 *
 * A thread numbers every record it tries to write in its lane's seq, one
 * the full lane drops included, so a lost record is a gap between two
 * records of its thread, seen once the thread writes again.  Records lost
 * after its last one leave no gap.  The agent, which empties the lane,
 * knows both ends: the number after the last record it kept (handed on
 * and not lost in its own ring) and the lane's seq, the thread's next
 * number.  When the lane was emptied with the thread outside any hit, or
 * the thread exited, and seq is past the last kept record, every number
 * between was lost, and the agent says so in a note.
 *
 * Pure bookkeeping, off the target's path: the lanes and the compiled
 * hits are not touched (hook_inproc.c reads seq and busy, in the order
 * its comment gives).
 */
#ifndef XFLOW_GUESTRT_HOOK_INPROC_INPROC_TAIL_H
#define XFLOW_GUESTRT_HOOK_INPROC_INPROC_TAIL_H

#include <stdbool.h>
#include <stdint.h>

#include "xflow/record.h"

/* One lane's numbers, as its records were kept. */
struct ip_tail {
	uint32_t next;     /* the number after the last record kept or noted */
	uint32_t tid;      /* that record's thread */
	bool known;        /* next and tid say something */
	bool exited;       /* tid exited; its numbers end before exit_seq */
	uint32_t exit_seq;
};

/* The lane as the agent read it: seq, then busy, then its ring emptied. */
struct ip_tail_seen {
	uint32_t seq;      /* the lane's next number, read first */
	uint32_t tid;      /* the lane's thread */
	bool busy;         /* a hit was running, read after seq */
	bool drained;      /* the ring was then found empty, and whole */
};

/* @r was handed on and kept. */
void ip_tail_kept(struct ip_tail *t, const struct xflow_record *r);

/* Thread @tid, whose lane's seq is @seq, exited: its numbers end there,
 * and whatever it lost after its last record kept is noted once the lane
 * has given what it had (ip_tail_exit_lost). */
void ip_tail_exit(struct ip_tail *t, uint32_t tid, uint32_t seq);

/* How many records the thread followed lost after its last one kept, as
 * the lane was seen: 0 unless the lane was emptied with no hit running,
 * is still that thread's, and seq is past the last kept record by less
 * than half the numbers (more is a lane begun again, nothing lost). */
uint32_t ip_tail_idle_lost(const struct ip_tail *t, const struct ip_tail_seen *s);

/* How many records the exited thread lost after its last one kept: 0
 * when it has not exited, or lost none.  Its records before the exit must
 * all have been handed on: call when the lane was emptied, or before the
 * first record of another thread. */
uint32_t ip_tail_exit_lost(const struct ip_tail *t);

/* The note for @lost records (not 0) of t's thread ending before @seq,
 * of @domain, at @now (the lane's clock). */
void ip_tail_note(const struct ip_tail *t, uint32_t seq, uint16_t domain, uint64_t now, struct xflow_record *out);

/* The note @n was kept: the thread is followed from its number on; after
 * an exit, the lane waits for its next thread. */
void ip_tail_noted(struct ip_tail *t, const struct xflow_record *n);

/* The exited thread lost nothing: the lane waits for its next thread. */
void ip_tail_forget(struct ip_tail *t);

#endif
