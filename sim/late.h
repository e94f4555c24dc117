/*
 * How late a sleep really ended: a thread that sleeps until a due time is
 * woken by the kernel late, by microseconds on an idle machine and by far
 * more on a loaded one.  Whatever the simulation makes wait on purpose (a
 * delay line, a vCPU held off a pCPU, a delayed notification) measures that
 * lateness, and the truth carries it ("#late" lines, sim/README), so that a
 * test bounds what it measures by what this run's machine really did.
 *
 * The counts are plain memory with no lock of their own: callers serialize.
 * They may live in memory shared between processes.
 */
#ifndef SIM_LATE_H
#define SIM_LATE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Lateness in 1 us steps up to SIM_LATE_STEPS us, beyond that counted
 * together (with the largest seen kept apart).  The simulated domains link
 * none of xflowtop's code, so not its histogram either.
 */
#define SIM_LATE_STEPS 8192

struct sim_late {
	uint64_t count;
	int64_t max_ns;
	uint32_t over; /* later than SIM_LATE_STEPS us */
	uint32_t us[SIM_LATE_STEPS];
};

/* Counts one release @late_ns after its due time (early counts as 0). */
void sim_late_note(struct sim_late *l, int64_t late_ns);

/* The lateness below which a share @q of the releases came, rounded up to
 * the next microsecond (the largest seen, past the last step). */
int64_t sim_late_quantile(const struct sim_late *l, double q);

/*
 * Formats the truth's comment line for @l: "#late <TAB> dom <TAB> what <TAB>
 * releases <TAB> p50 <TAB> p90 <TAB> p99 <TAB> max", newline included.
 * Returns its length, or -1 when it does not fit in @size.
 */
int sim_late_line(char *buf, size_t size, uint32_t dom, const char *what, const struct sim_late *l);

#endif
