/*
 * The kernel backend's loss notes (guestrt/hook/kernel/kn_tail.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "guestrt/hook/kernel/kn_tail.h"

_Static_assert(XK_STREAM(5, 3) == (0x80000000u | (5 * XK_SEQ_LEVELS + 3)), "a stream's index is its thread_id's low bits");


int kn_tail_init(struct kn_tail *t, uint32_t ncpu)
{
	memset(t, 0, sizeof(*t));
	t->next = calloc((size_t)ncpu * XK_SEQ_LEVELS, sizeof(*t->next));
	t->seen = calloc((size_t)ncpu * XK_SEQ_LEVELS, sizeof(*t->seen));
	if (!t->next || !t->seen) {
		kn_tail_fini(t);
		return -ENOMEM;
	}
	t->ncpu = ncpu;
	return 0;
}

void kn_tail_fini(struct kn_tail *t)
{
	free(t->next);
	free(t->seen);
	memset(t, 0, sizeof(*t));
}

/* The stream of @r, or -1: a record of a stream is flagged as numbered
 * and names it in thread_id (XK_STREAM). */
static int64_t stream_of(const struct kn_tail *t, const struct xflow_record *r)
{
	if (!(r->flags & XFLOW_REC_SEQ_COUNTS_LOST) || !(r->thread_id & 0x80000000u))
		return -1;
	uint32_t s = r->thread_id & 0x7fffffffu;
	return s / XK_SEQ_LEVELS < t->ncpu ? (int64_t)s : -1;
}

void kn_tail_kept(struct kn_tail *t, const struct xflow_record *r)
{
	int64_t s = stream_of(t, r);
	if (s >= 0)
		t->next[s] = r->thread_seq + 1;
}

void kn_tail_seen(struct kn_tail *t, uint32_t s, uint32_t next)
{
	if (s / XK_SEQ_LEVELS < t->ncpu)
		t->seen[s] = next;
}

uint32_t kn_tail_lost(const struct kn_tail *t, uint32_t s)
{
	if (s / XK_SEQ_LEVELS >= t->ncpu)
		return 0;
	/* A step back: the stream is not the one followed (a reload the
	 * agent has not seen yet); nothing is said of it. */
	return xflow_seq_ahead(t->next[s], t->seen[s]) ? t->seen[s] - t->next[s] : 0;
}

void kn_tail_note(const struct kn_tail *t, uint32_t s, uint16_t domain, uint64_t now_ns, struct xflow_record *out)
{
	/* XK_STREAM(cpu, level); from after its last record kept to before
	 * the next seen. */
	xflow_record_loss_note(out, domain, 0x80000000u | s, t->next[s], t->seen[s] - 1, now_ns);
}

void kn_tail_noted(struct kn_tail *t, uint32_t s)
{
	t->next[s] = t->seen[s];
}
