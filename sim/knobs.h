/*
 * The knobs of a simulated host: parsed once by xensim, which validates them
 * and passes them on, in canonical form, to every domain.  Both use the same
 * parser, so an option means the same thing everywhere and every bad value is
 * reported the same way, naming the option.
 */
#ifndef SIM_KNOBS_H
#define SIM_KNOBS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/stage.h"

#define KNOBS_MAX_GUESTS 64
#define KNOBS_MAX_SIZE (1u << 20)

struct sim_knobs {
	double rate;              /* messages per second, per guest; 0 = none */
	uint32_t size;            /* bytes per message */
	uint32_t guests;          /* number of domUs */
	int64_t delay_ns[ST_COUNT]; /* injected pipeline delay before a stage */
	double jitter_pct;        /* +-% applied to delays and service times */
	uint64_t seed;
	double duration_s;        /* how long guests generate traffic */
	double block_rate;        /* block requests per second, per guest */
	int64_t block_service_ns; /* the disk's service time per request */
	const char *truth;        /* truth file, or NULL */
	bool hold;                /* guests wait for SIGUSR1 before sending */
	/* The scheduler model (sim/sched.h): */
	const char *xentrace;     /* xentrace file the launcher writes, or NULL */
	uint32_t pcpus;           /* physical CPUs; 0: not given (KNOBS_PCPUS) */
	int64_t wake_delay_ns[KNOBS_MAX_GUESTS + 1]; /* per domain id */
	int64_t notify_delay_ns;  /* evtchn_op to the receiver's wake */
	int64_t xen_irq_ns;       /* Xen's interrupt at each switch to a guest's vCPU */
};

#define KNOBS_PCPUS 2
#define KNOBS_MAX_PCPUS 16
/* --xen-irq's bound: far below 2^32 cycles, as the record carries the
 * interrupt's TSCs in their low 32 bits (2^32 cycles are 1.79 s at 2.4 GHz). */
#define KNOBS_MAX_XEN_IRQ_NS INT64_C(100000000)

/* Whether the scheduler model runs: any of its knobs was given. */
bool sim_knobs_sched(const struct sim_knobs *k);

/*
 * Checks what single options cannot: a --wake-delay for a domain that the
 * host does not have.  Returns 0, or -1 after writing a message naming the
 * option to @err.
 */
int sim_knobs_check(const struct sim_knobs *k, FILE *err);

void sim_knobs_init(struct sim_knobs *k);

/*
 * Applies one option: @name without dashes ("rate"), @value its argument.
 * Returns 0, 1 when @name is not a knob, or -1 after writing a message
 * naming the option to @err.
 */
int sim_knobs_set(struct sim_knobs *k, const char *name, const char *value, FILE *err);

/* Appends the knobs as "--name=value" arguments to @argv at *@argc. */
void sim_knobs_to_argv(const struct sim_knobs *k, char **argv, int *argc, int max);

/* Parses "2ms", "150us", "1.5s", "500ns" into ns.  Returns 0 or -1. */
int sim_parse_duration(const char *s, int64_t *ns);

/* Writes the knob part of --help. */
void sim_knobs_usage(FILE *out);

/* The getopt_long entries for the knobs (all take an argument). */
extern const char *const sim_knob_names[];

#endif
