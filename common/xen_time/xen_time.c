/*
 * Xen's system time against CLOCK_MONOTONIC: the arithmetic and the
 * timekeeper's address (the BPF read is common/xen_time/xen_time_bpf.c).  See
 * xflow/xen_time.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xflow/xen_time.h"

/* An update older than this is not the running kernel's timekeeper: it
 * updates at every tick, and at the latest when a CPU leaves idle. */
#define XEN_TIME_MAX_AGE_NS (60ull * 1000 * 1000 * 1000)

int xen_time_offset(const struct xen_time_sample *s, uint64_t mono_now_ns, int64_t *xen_minus_mono,
		    char *why, size_t whylen)
{
	char cs[sizeof(s->clocksource) + 1];
	memcpy(cs, s->clocksource, sizeof(s->clocksource));
	cs[sizeof(s->clocksource)] = 0;
	for (char *c = cs; *c; c++)
		if (*c < 0x20 || *c > 0x7e)
			*c = '?';
	if (strcmp(cs, "xen") != 0) {
		snprintf(why, whylen, "the clocksource is %s, not xen: no Xen system time", cs[0] ? cs : "unnamed");
		return -EINVAL;
	}
	if (s->shift > 63 || s->mult == 0) {
		snprintf(why, whylen, "the timekeeper read has mult %" PRIu32 ", shift %" PRIu32 ": not a timekeeper",
			 s->mult, s->shift);
		return -EINVAL;
	}
	uint64_t mono = (uint64_t)s->base + (s->xtime_nsec >> s->shift);
	if (s->base < 0 || mono > mono_now_ns || mono_now_ns - mono > XEN_TIME_MAX_AGE_NS) {
		snprintf(why, whylen,
			 "the timekeeper read says CLOCK_MONOTONIC was %" PRIu64 " ns at its update, and it is %" PRIu64
			 " ns now: not a timekeeper",
			 mono, mono_now_ns);
		return -EINVAL;
	}
	/* The xen clocksource counts nanoseconds: its count is Xen's time. */
	*xen_minus_mono = (int64_t)(s->cycle_last - mono);
	return 0;
}

int xen_time_core_addr(const char *kallsyms, uint64_t *addr)
{
	FILE *f = fopen(kallsyms ? kallsyms : "/proc/kallsyms", "re");
	if (!f)
		return -errno;
	char line[512];
	uint64_t found = 0;
	int listed = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, name[256];
		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3)
			continue;
		/* Static data, so a local symbol ('d', 'b'), in vmlinux (a
		 * module's symbol ends in its [name]). */
		if (type != 'd' && type != 'D' && type != 'b' && type != 'B')
			continue;
		if (strcmp(name, "tk_core") != 0 && strcmp(name, "timekeeper_data") != 0)
			continue;
		listed = 1;
		found = a;
		break;
	}
	fclose(f);
	if (!listed || !found)
		return -ENOENT;
	*addr = found;
	return 0;
}

/* The simulated host's D, when this is one: 1, 0 when not, or -EINVAL. */
static int simulated(struct xen_time_reader *r, char *why, size_t whylen)
{
	const char *sim = getenv("XFLOW_SIMXEN_XEN_TIME_NS");
	if (!sim || !*sim)
		return 0;
	char *end;
	errno = 0;
	long long v = strtoll(sim, &end, 10);
	if (errno || *end) {
		snprintf(why, whylen, "XFLOW_SIMXEN_XEN_TIME_NS is not a decimal number of ns: '%.40s'", sim);
		return -EINVAL;
	}
	r->simulated = true;
	r->sim_d = v;
	return 1;
}

int xen_time_reader_prepare_at(struct xen_time_reader *r, uint64_t core, char *why, size_t whylen)
{
	memset(r, 0, sizeof(*r));
	int rc = simulated(r, why, whylen);
	if (rc)
		return rc < 0 ? rc : 0;
	if (!core && (rc = xen_time_core_addr(NULL, &core))) {
		snprintf(why, whylen, "%s",
			 rc == -ENOENT ? "/proc/kallsyms lists no tk_core (a kernel without CONFIG_KALLSYMS_ALL, "
					 "or addresses hidden from us)"
				       : "cannot read /proc/kallsyms");
		return rc;
	}
	if ((rc = xen_time_bpf_layout(&r->at, why, whylen)))
		return rc;
	r->core = core;
	r->prepared = true;
	return 0;
}

int xen_time_reader_prepare(struct xen_time_reader *r, char *why, size_t whylen)
{
	return xen_time_reader_prepare_at(r, 0, why, whylen);
}

int xen_time_reader_open(struct xen_time_reader *r, char *why, size_t whylen)
{
	if (r->simulated || r->bpf)
		return 0;
	int rc;
	if (!r->prepared && (rc = xen_time_reader_prepare(r, why, whylen)))
		return rc;
	if (r->simulated)
		return 0;
	return xen_time_bpf_open(r, why, whylen);
}

int xen_time_reader_read(struct xen_time_reader *r, int64_t *xen_minus_mono, char *why, size_t whylen)
{
	int rc;
	if (!r->simulated && !r->bpf && (rc = xen_time_reader_open(r, why, whylen)))
		return rc;
	if (r->simulated) {
		*xen_minus_mono = r->sim_d;
		return 0;
	}
	return xen_time_bpf_read(r, xen_minus_mono, why, whylen);
}

void xen_time_reader_close(struct xen_time_reader *r)
{
	if (!r->simulated && r->bpf)
		xen_time_bpf_close(r);
}

uint32_t xen_time_reader_prog_id(const struct xen_time_reader *r)
{
	return r->bpf ? xen_time_bpf_prog_id(r) : 0;
}
