/*
 * guestrt/hook/kernel/kn_tail.h — the kernel backend's loss notes: what the
 * agent knows of each CPU stream's numbers (kabi.h, "Numbering"), and when
 * it may say that a stream lost records after its last one (xflow/record.h,
 * "Losses").
 *
 * A stream numbers from 0 when its program is loaded; each record it
 * writes or counts lost takes the next number, and the stream's next moves
 * past a number only once its record is in its slot (kabi.h, "Numbering"):
 * every number below next is final.  The agent keeps, per stream, the
 * number after the last record it passed on and kept; once it has read
 * the stream's ring up to a next it read (kn_tail_seen), the numbers from
 * the last kept to that next were lost: the program's (its ring full, the
 * id map full, a fault) or the agent's (its own ring full).  Nothing can
 * still be on its way below next, so the note is said at once.
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
	uint32_t *seen; /* per stream: its next as the agent last read it,
	                 * with every slot below it read */
};

/* For a program of @ncpu possible CPUs, just loaded: every stream at 0.
 * 0 or -ENOMEM. */
int kn_tail_init(struct kn_tail *t, uint32_t ncpu);
void kn_tail_fini(struct kn_tail *t);

/* @r, just read from its stream's ring, was passed on and kept.  Records
 * that are not of a stream (none of its flags, or a stream beyond ncpu)
 * are no stream's business. */
void kn_tail_kept(struct kn_tail *t, const struct xflow_record *r);

/* Stream @s's ring was read up to @next, the stream's next number as read
 * before its slots. */
void kn_tail_seen(struct kn_tail *t, uint32_t s, uint32_t next);

/* How many numbers stream @s lost after its last record kept, up to the
 * next last seen: 0 when nothing was lost. */
uint32_t kn_tail_lost(const struct kn_tail *t, uint32_t s);

/* Stream @s's note for what kn_tail_lost counted, of @domain, at @now_ns
 * (CLOCK_MONOTONIC, the program's clock). */
void kn_tail_note(const struct kn_tail *t, uint32_t s, uint16_t domain, uint64_t now_ns, struct xflow_record *out);

/* The note for stream @s was kept: the stream goes on from the next seen. */
void kn_tail_noted(struct kn_tail *t, uint32_t s);

#endif
