/*
 * Injected delays (--delay STAGE=DURATION).
 *
 * Each delayable stage is entered through sim_gate() at the call site just
 * before it.  Without a delay for that stage the call is made at once, in the
 * caller's thread; with one, fn(arg) is queued on the stage's delay line and
 * runs when due, on the line's thread, so the hop into the stage takes
 * DURATION longer while the stages before it carry on (a pipeline delay).
 */
#ifndef SIM_GATE_H
#define SIM_GATE_H

#include <stdbool.h>

#include "sim/delayline.h"
#include "sim/knobs.h"

/* Starts a delay line for each delayed stage of this side of the host. */
int sim_gate_init(const struct sim_knobs *k, bool dom0, uint32_t domid);

void sim_gate(enum sim_stage st, delayline_fn *fn, void *arg);

/* Stops the lines, running what they still hold. */
void sim_gate_fini(void);

#endif
