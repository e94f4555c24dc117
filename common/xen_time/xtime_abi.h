/*
 * common/xen_time/xtime_abi.h — what the timekeeper reader (common/xen_time/xen_time.bpf.c)
 * answers, shared with its loader (common/xen_time/xen_time_bpf.c).  BPF C and host
 * C both include it, so it uses the kernel's __u* types only.
 */
#ifndef XFLOW_COMMON_XEN_TIME_XTIME_ABI_H
#define XFLOW_COMMON_XEN_TIME_XTIME_ABI_H

#ifndef __bpf__
#include <linux/types.h>
#endif

/* Where the fields are, in bytes, from the running kernel's BTF: the
 * timekeeper in its container, its tkr_mono members in it, the name in a
 * clocksource. */
struct xt_layout {
	__u32 tk;
	__u32 cycle_last, xtime_nsec, base, mult, shift, clock;
	__u32 cs_name;
};

struct xt_out {
	__u64 cycle_last;   /* the clocksource's count at the last update */
	__u64 xtime_nsec;   /* CLOCK_MONOTONIC's nanoseconds past base then, << shift */
	__s64 base;         /* CLOCK_MONOTONIC then, less xtime_nsec >> shift */
	__u32 mult, shift;  /* the clocksource's count to ns: * mult >> shift */
	__u32 seq;          /* the even sequence the fields were read under */
	__u32 tries;        /* reads it took; 0: no consistent read */
	__s32 err;          /* a failed kernel read's error, else 0 */
	__u32 pad;
	char clocksource[32];
};

#endif
