/* Sleep lateness: see late.h. */
#include "sim/late.h"

#include <inttypes.h>
#include <stdio.h>

void sim_late_note(struct sim_late *l, int64_t late_ns)
{
	int64_t us = late_ns > 0 ? late_ns / 1000 : 0;

	l->count++;
	if (late_ns > l->max_ns)
		l->max_ns = late_ns;
	if (us < SIM_LATE_STEPS)
		l->us[us]++;
	else
		l->over++;
}

int64_t sim_late_quantile(const struct sim_late *l, double q)
{
	uint64_t want = (uint64_t)((double)l->count * q + 0.5), seen = 0;

	if (want == 0)
		want = 1;
	for (unsigned i = 0; i < SIM_LATE_STEPS; i++) {
		seen += l->us[i];
		if (seen >= want)
			return ((int64_t)i + 1) * 1000;
	}
	return l->max_ns;
}

int sim_late_line(char *buf, size_t size, uint32_t dom, const char *what, const struct sim_late *l)
{
	int n = snprintf(buf, size, "#late\t%u\t%s\t%" PRIu64 "\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\t%" PRId64 "\n",
			 dom, what, l->count, sim_late_quantile(l, 0.5), sim_late_quantile(l, 0.9),
			 sim_late_quantile(l, 0.99), l->max_ns);

	return n > 0 && (size_t)n < size ? n : -1;
}
