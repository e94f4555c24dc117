/*
 * Delay lines: hold work items until their due time, then run them, in FIFO
 * order, on the line's own thread.
 *
 * They model time that passes without holding up the caller: the injected
 * pipeline delay of a stage (--delay), a NIC's wire time before its tx-done
 * interrupt, a disk's service time.  A line adds latency, not a per-item
 * cost: items are due at put time + delay, so with a constant delay the
 * throughput is that of the stages around it.  With --jitter, an item never
 * overtakes the one before it (a queue does not reorder), so it may wait a
 * little past its own due time.
 *
 * A line also measures how late it really releases each item (its release
 * time minus its due time): the thread's wake-up is up to the kernel, and on
 * a loaded machine it comes late by anything from microseconds to a
 * scheduler slice.  That lateness is part of every hop through the line, so
 * the line writes it to the truth (truth_note_lateness) when it stops, and a
 * test bounds a delayed hop by the delay plus what the line really added.
 */
#ifndef SIM_DELAYLINE_H
#define SIM_DELAYLINE_H

#include <stdint.h>

struct delayline;

typedef void delayline_fn(void *arg);

/*
 * Starts a line whose items wait @delay_ns varied by +-@jitter_pct percent
 * (drawn from a generator seeded with @seed).  @name is what the line
 * delays (a stage's name where it is one): its lateness is reported under
 * it, and its thread is named by its first 15 characters.  Returns 0 or a
 * negative errno.
 */
int delayline_new(struct delayline **out, const char *name, int64_t delay_ns,
		  double jitter_pct, uint64_t seed);

/* Queues fn(arg) to run after the line's delay plus @extra_ns. */
void delayline_put(struct delayline *dl, delayline_fn *fn, void *arg, int64_t extra_ns);

/*
 * Stops the thread.  Items still queued are run at once, in order, so that
 * what they hold is released; the caller ensures nothing puts meanwhile.
 */
void delayline_free(struct delayline *dl);

/* CLOCK_MONOTONIC in ns. */
int64_t sim_now_ns(void);

#endif
