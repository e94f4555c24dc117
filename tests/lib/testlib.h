/*
 * Helpers shared by the unit tests.
 */
#ifndef XFLOW_TESTLIB_H
#define XFLOW_TESTLIB_H

#include <stddef.h>
#include <stdint.h>

/* splitmix64: a tiny, good, seedable generator for reproducible tests. */
static inline uint64_t test_rand_next(uint64_t *state)
{
	uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

/* Uniform double in [0, 1). */
static inline double test_rand_unit(uint64_t *state)
{
	return (double)(test_rand_next(state) >> 11) * 0x1.0p-53;
}

/*
 * Memory of exactly @size usable bytes followed by an inaccessible guard
 * page, so any read or write past the end faults even without ASan.
 */
void *test_guarded_alloc(size_t size);
void test_guarded_free(void *p, size_t size);

#endif
