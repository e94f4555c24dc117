/*
 * xflow/xen_time.h — where Xen's system time stands against this
 * kernel's CLOCK_MONOTONIC, said in an agent's HELLO and STATS replies
 * (xflow/control.h) so that the monitor can place a guest's clock on its
 * own exactly.
 *
 * Every domain of a Xen host can read one clock, Xen's system time
 * (nanoseconds since the hypervisor started), and a PV kernel keeps its
 * time by it: its clocksource "xen" counts those nanoseconds, and
 * CLOCK_MONOTONIC is that count less a constant set at the kernel's boot
 * (changing slowly only while NTP slews the clock).  The timekeeper holds
 * both at its last update: cycle_last, the count, and base + (xtime_nsec
 * >> shift), CLOCK_MONOTONIC then.  Their difference, D, is the constant.
 * Two domains' D differ by how far apart their CLOCK_MONOTONICs are, to
 * the nanosecond, where a round trip between domains places them only to
 * within half of it (milliseconds under nested virtualization).
 *
 * The timekeeper is read by a BPF program (common/xen_time/xen_time.bpf.c):
 * that needs root, a kernel that lists
 * tk_core (or timekeeper_data) in /proc/kallsyms (CONFIG_KALLSYMS_ALL,
 * as Debian's) and an agent built with the kernel backend.  Where any is
 * missing, or the clocksource is not "xen", nothing is said and the
 * monitor falls back on round trips.
 */
#ifndef XFLOW_XEN_TIME_H
#define XFLOW_XEN_TIME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* D moves only while NTP slews a clock: read again at most this often. */
#define XFLOW_XEN_TIME_EVERY_NS (2ull * 1000 * 1000 * 1000)

/* One read of the timekeeper's monotonic side. */
struct xen_time_sample {
	uint64_t cycle_last;
	uint64_t xtime_nsec;
	int64_t base;
	uint32_t mult, shift;
	char clocksource[32];
};

/*
 * Xen's system time minus CLOCK_MONOTONIC from @s, read when
 * CLOCK_MONOTONIC was @mono_now_ns.  0, or -EINVAL with @why (naming
 * what) when @s is not Xen's time (another clocksource) or makes no sense
 * (a shift past 63, an update in the future or more than a minute old:
 * the address read was not the timekeeper).
 */
int xen_time_offset(const struct xen_time_sample *s, uint64_t mono_now_ns, int64_t *xen_minus_mono,
		    char *why, size_t whylen);

/*
 * The address of the timekeeper's container in @kallsyms (NULL:
 * /proc/kallsyms): tk_core, or timekeeper_data on kernels with auxiliary
 * clocks (6.17 on).  0, -ENOENT when neither is listed or its address is
 * hidden (0), or the errno of opening the file.
 */
int xen_time_core_addr(const char *kallsyms, uint64_t *addr);

/*
 * A reader of D.  Preparing it parses the kernel's BTF (tens of
 * milliseconds, seconds under emulation); opening it loads a small BPF
 * program (common/xen_time/xen_time.bpf.c) given the fields' offsets, which
 * is quick; each read is one BPF_PROG_TEST_RUN.  Its program stays loaded
 * while it is open: close it when the monitor it serves is gone.  The
 * kernel unloads it if the process dies.
 *
 * On the simulated Xen host (sim/), whose domains are processes of one
 * kernel, D is the simulated hypervisor's: XFLOW_SIMXEN_XEN_TIME_NS, set
 * for each simulated domain, is taken as it is (a decimal, possibly
 * negative), and nothing is loaded.
 */
/* Where the timekeeper's fields are, in bytes: the timekeeper in its
 * container, the members of its tkr_mono in it, the name in a
 * clocksource. */
struct xen_time_layout {
	uint32_t tk;
	uint32_t cycle_last, xtime_nsec, base, mult, shift, clock;
	uint32_t cs_name;
};

struct xen_time_reader {
	void *bpf;          /* the loaded object, NULL when closed */
	bool simulated;
	int64_t sim_d;
	bool prepared;      /* core and layout found */
	uint64_t core;      /* the timekeeper's container */
	struct xen_time_layout at;
};

/*
 * Find the timekeeper (/proc/kallsyms) and its layout (the kernel's BTF,
 * parsed whole: the slow part), loading nothing: done once, before any
 * monitor is served, so that opening is quick.  0, or a negative errno
 * and @why (no root, no timekeeper in /proc/kallsyms, no BTF).
 */
int xen_time_reader_prepare(struct xen_time_reader *r, char *why, size_t whylen);
/* The same, the container at @core rather than where /proc/kallsyms says:
 * for tests, which give an address known not to be a timekeeper. */
int xen_time_reader_prepare_at(struct xen_time_reader *r, uint64_t core, char *why, size_t whylen);
/* Load the reader's program, preparing first if that was not done (@r
 * zeroed, or prepared).  0, or a negative errno and @why (no BPF in this
 * build, refused). */
int xen_time_reader_open(struct xen_time_reader *r, char *why, size_t whylen);
/* D now, opening @r first when it is not open: 0 and *xen_minus_mono, or
 * a negative errno and @why (open's, or -EINVAL when the clocksource is
 * not Xen's, which a kernel may yet change). */
int xen_time_reader_read(struct xen_time_reader *r, int64_t *xen_minus_mono, char *why, size_t whylen);
/* Unload (what prepare found is kept); @r may be closed already. */
void xen_time_reader_close(struct xen_time_reader *r);
/* The id of the program @r holds loaded (bpftool's), 0 when none. */
uint32_t xen_time_reader_prog_id(const struct xen_time_reader *r);

/* The BPF side of a reader (common/xen_time/xen_time_bpf.c, or
 * common/xen_time/xen_time_none.c where the build had no BPF). */
int xen_time_bpf_layout(struct xen_time_layout *at, char *why, size_t whylen);
int xen_time_bpf_open(struct xen_time_reader *r, char *why, size_t whylen);
int xen_time_bpf_read(struct xen_time_reader *r, int64_t *xen_minus_mono, char *why, size_t whylen);
void xen_time_bpf_close(struct xen_time_reader *r);
uint32_t xen_time_bpf_prog_id(const struct xen_time_reader *r);

#endif
