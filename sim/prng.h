/*
 * A small deterministic generator (splitmix64): the same --seed gives the
 * same message sizes, block sectors and jitter draws on every run.
 */
#ifndef SIM_PRNG_H
#define SIM_PRNG_H

#include <stdint.h>

struct sim_prng {
	uint64_t s;
};

static inline void sim_prng_seed(struct sim_prng *r, uint64_t seed)
{
	r->s = seed;
}

static inline uint64_t sim_prng_next(struct sim_prng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Uniform in [-1, 1). */
static inline double sim_prng_signed_unit(struct sim_prng *r)
{
	return (double)(sim_prng_next(r) >> 11) * 0x1.0p-52 - 1.0;
}

#endif
