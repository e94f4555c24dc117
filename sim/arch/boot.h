/*
 * What a simulated domain is told at boot by xensim (its "start info" and
 * the toolstack's xenstore entries): its knobs, its domain id, and for each
 * guest connection the shared memory and event channel file descriptors.
 */
#ifndef SIM_ARCH_BOOT_H
#define SIM_ARCH_BOOT_H

#include <signal.h>
#include <stdint.h>

#include "sim/knobs.h"

struct boot_guest {
	uint32_t domid;
	int memfd;
	int net_local, net_remote; /* eventfds: our end's upcall, the other end's */
	int blk_local, blk_remote;
	int xenbus_fd;             /* guest: held open; dom0: EOF when the guest dies */
};

struct boot_info {
	struct sim_knobs knobs;
	uint32_t domid;
	uint32_t nguests;
	struct boot_guest guests[KNOBS_MAX_GUESTS]; /* a guest has one: dom0 */
	int stop_fd;  /* an eventfd the signal handler writes: readable = shut down */
	int sched_fd; /* the scheduler model's memfd (sim/sched.h), or -1 */
};

/* Joins the scheduler model when xensim runs one (before any thread starts).
 * Returns 0, or -1 after printing why. */
int boot_sched(struct boot_info *bi, const char *prog);

/*
 * Parses the command line a domain gets from xensim.  Returns 0, or -1 after
 * printing an error naming the option.
 */
int boot_parse(struct boot_info *bi, int argc, char **argv, const char *prog, int dom0);

/* Sets up the stop eventfd and the SIGINT/SIGTERM handlers that write it. */
int boot_signals(struct boot_info *bi);

/* True once a stop signal has arrived. */
int boot_stopping(void);

/*
 * With --hold: waits for SIGUSR1 (the launcher's "go") or a stop signal.
 * Returns 0 to go on, -1 when stopping.
 */
int boot_wait_go(struct boot_info *bi);

/* Fires the stop eventfd from the program itself. */
void boot_stop(struct boot_info *bi);

#endif
