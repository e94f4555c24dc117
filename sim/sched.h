/*
 * The scheduler model of the simulated host: what Xen's scheduler would do
 * with each domain's vCPU, made real for the domains' threads and written as
 * Xen 4.17 writes it to its trace (sim/README, THE SCHEDULER MODEL).
 *
 * Each domain has one vCPU (vcpu 0).  It is BLOCKED while none of the
 * domain's threads has work for it: the event-processing threads wait on
 * their event channels (evtchn_wait), and any other thread counts only while
 * it makes an event channel hypercall.  A notification wakes the receiver's
 * vCPU (RUNNABLE; the WAKE is logged on the notifier's pCPU), and the vCPU
 * RUNS once it has a pCPU: at once on an idle one, else in FIFO order when
 * one is given up.  A running vCPU is never preempted.  A thread that has
 * work for a vCPU that does not run really waits until it does.
 *
 * --wake-delay DOM=D: after each wake of DOM's vCPU a CPU hog, the vCPU
 * DOM of the hog domain (id guests + 1, no process), takes the pCPU that
 * DOM's vCPU was to run on and holds it until D after the wake, as if the
 * two were pinned to one pCPU.  --notify-delay D: the receiver's WAKE comes
 * D after the sender's evtchn_op, its thread held until then.  --xen-irq D:
 * each time a pCPU switches to a domain's vCPU, Xen first handles an
 * interrupt there for D (TRC_HW_IRQ_HANDLED), the vCPU's threads held until
 * it is over.
 *
 * All the state is in one memfd that the launcher creates and every domain
 * maps: a robust process-shared lock over everything, per-pCPU trace
 * buffers (Xen's t_bufs) that the launcher drains into the xentrace file,
 * and a ring of closed state intervals for the truth.  The TSC of the
 * records is CLOCK_MONOTONIC at SCHED_CPU_HZ, made strictly increasing.
 */
#ifndef SIM_SCHED_H
#define SIM_SCHED_H

#include <stdint.h>
#include <stdio.h>

#include "sim/knobs.h"

#define SCHED_CPU_HZ UINT64_C(2400000000)
/* Xen's idle domain: the idle vCPU of pCPU p is d32767vp. */
#define SCHED_IDLE_DOMAIN 32767

/* --- the launcher -------------------------------------------------------- */

/*
 * Creates the model for the host @k describes (every vCPU blocked from now)
 * and maps it; returns the memfd (close-on-exec) for the domains, or a
 * negative errno.
 */
int sched_create(const struct sim_knobs *k);

/*
 * Moves what the domains logged since the last call: the trace records to
 * @trace as xentrace windows (NULL: dropped) and the closed intervals to
 * @truth as "#sched" lines, the interrupts as "#xen" ones (NULL: dropped).
 * Returns 0 or -EIO.
 */
int sched_drain(FILE *trace, FILE *truth);

/* Domain @domid has exited: its vCPU goes offline. */
void sched_domain_gone(uint32_t domid);

/*
 * The host has stopped: closes every vCPU's interval now, drains, writes
 * the lateness of the model's waits ("#late" lines) and the clocks'
 * relation ("#xentrace") to @truth, then unmaps.  Prints what was lost to
 * stderr.  Returns 0 or -EIO.
 */
int sched_finish(FILE *trace, FILE *truth);

/* --- a domain ------------------------------------------------------------ */

/*
 * Maps the model from @memfd as domain @domid and hooks its event channels
 * (evtchn_set_hooks); then closes @memfd.  Returns 0 or a negative errno.
 */
int sched_attach(int memfd, uint32_t domid);

#endif
