/*
 * guestrt/hook/kernel/kn_tail.h — the kernel backend's loss notes: what the
 * agent knows of each CPU stream's numbers (kabi.h, "Numbering"), and when
 * it may say that a stream lost records after its last one (xflow/record.h,
 * "Losses").
 *
 * A stream numbers from 0 when its program is loaded; each record it
 * reserves or counts lost takes the next number, under the stream's busy
 * flag, which the run sets before and clears after its ring buffer commit.
 * The agent keeps, per stream, the number after the last record it passed
 * on and kept.  To know that the numbers above it were lost and not still
 * on their way, it reads the streams' map (A), empties the ring buffer,
 * reads the map again (B) and finds the ring buffer empty once more:
 *
 *   - any stream busy in B: nothing is concluded, for any stream.  That
 *     run's record, reserved and not yet committed, may head the ring
 *     buffer, and the ring reads as empty up to it while committed records
 *     of other streams wait behind it;
 *   - a stream busy in A, or whose next number moved from A to B, had a
 *     run in flight: nothing is concluded for it;
 *   - else every number below B's next was taken by a run that had ended
 *     (a read that tore, busy read before a run began and next after it
 *     took a number, shows as a move at B or as busy there), and that run
 *     committed its record before it ended, where no uncommitted record
 *     could be ahead of it (its run would have been busy in B): the ring
 *     buffer, empty after B, held it, so it was passed on.  The numbers
 *     from the last kept to B's next were lost: the program's (ring buffer
 *     full, id map full, a fault) or the agent's (its ring full).
 *
 * Pure bookkeeping, unit-tested; hook_kernel.c reads the map and the ring.
 */
#ifndef XFLOW_GUESTRT_HOOK_KERNEL_KN_TAIL_H
#define XFLOW_GUESTRT_HOOK_KERNEL_KN_TAIL_H

#include <stdbool.h>
#include <stdint.h>

#include "guestrt/hook/kernel/kabi.h"
#include "xflow/record.h"

struct kn_tail {
	uint32_t ncpu;
	uint32_t *next; /* per stream (cpu * XK_SEQ_LEVELS + level): the
	                 * number after the last record kept or noted */
	struct xk_seq *a, *b; /* the map's two reads, ncpu values each */
	bool quiet;           /* no stream busy in b (kn_tail_settle) */
};

/* For a program of @ncpu possible CPUs, just loaded: every stream at 0.
 * 0 or -ENOMEM. */
int kn_tail_init(struct kn_tail *t, uint32_t ncpu);
void kn_tail_fini(struct kn_tail *t);

/* @r, just read from the ring buffer, was passed on and kept.  Records
 * that are not of a stream (none of its flags, or a stream beyond ncpu)
 * are no stream's business. */
void kn_tail_kept(struct kn_tail *t, const struct xflow_record *r);

/* t->b was read, after t->a and an emptied ring buffer, and the ring
 * buffer found empty again: whether any stream was busy in it. */
void kn_tail_settle(struct kn_tail *t);

/* How many numbers stream @s lost after its last record kept, from the
 * reads t->a and t->b as kn_tail_settle found them: 0 when a run was in
 * flight or nothing was lost. */
uint32_t kn_tail_lost(const struct kn_tail *t, uint32_t s);

/* Stream @s's note for what kn_tail_lost counted, of @domain, at @now_ns
 * (CLOCK_MONOTONIC, the program's clock). */
void kn_tail_note(const struct kn_tail *t, uint32_t s, uint16_t domain, uint64_t now_ns, struct xflow_record *out);

/* The note for stream @s was kept: the stream goes on from B's next. */
void kn_tail_noted(struct kn_tail *t, uint32_t s);

#endif
