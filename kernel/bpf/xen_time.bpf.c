/*
 * One read of the kernel's timekeeper, for guestrt/xen_time.c: the
 * clocksource's count at the timekeeper's last update (cycle_last) and
 * what CLOCK_MONOTONIC was then (base + xtime_nsec >> shift), taken
 * under the timekeeper's seqcount so that the two belong together, and
 * the clocksource's name.  Under Xen the clocksource "xen" counts Xen's
 * system time in nanoseconds, which every domain of the host shares.
 *
 * Run once per read with BPF_PROG_TEST_RUN, never attached.  The loader
 * gives the address of the timekeeper's container (tk_core, or on newer
 * kernels timekeeper_data[0]) from /proc/kallsyms: neither is in BTF.
 * The fields are read with CO-RE relocations, so the object built here
 * reads Debian 12's 6.1 as well as this machine's kernel.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "kernel/xtime_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader: the container's address (its seqcount first). */
const volatile __u64 xt_core = 0;

/* The answer, read back through the skeleton's .bss. */
struct xt_out xt_out = {};

#define XT_TRIES 8

SEC("raw_tp")
int xt_read(void *ctx)
{
	/* The timekeeper follows the seqcount that guards it, at the next
	 * multiple of its alignment (it holds u64s): 8 bytes on, or more
	 * with lockdep's map in the seqcount. */
	__u64 core = xt_core;
	__u64 off = ((__u64)bpf_core_type_size(struct seqcount_raw_spinlock) + 7) & ~7ULL;
	const struct timekeeper *tk = (const void *)(core + off);
	const struct clocksource *cs = 0;
	__u32 s0 = 0, s1 = 0;
	long err;

	xt_out.tries = 0;
	for (int i = 1; i <= XT_TRIES; i++) {
		if ((err = bpf_probe_read_kernel(&s0, sizeof(s0), (const void *)core))) {
			xt_out.err = (__s32)err;
			return 0;
		}
		if (s0 & 1)
			continue; /* an update is under way */
		xt_out.cycle_last = BPF_CORE_READ(tk, tkr_mono.cycle_last);
		xt_out.xtime_nsec = BPF_CORE_READ(tk, tkr_mono.xtime_nsec);
		xt_out.base = BPF_CORE_READ(tk, tkr_mono.base);
		xt_out.mult = BPF_CORE_READ(tk, tkr_mono.mult);
		xt_out.shift = BPF_CORE_READ(tk, tkr_mono.shift);
		cs = BPF_CORE_READ(tk, tkr_mono.clock);
		if ((err = bpf_probe_read_kernel(&s1, sizeof(s1), (const void *)core))) {
			xt_out.err = (__s32)err;
			return 0;
		}
		if (s0 == s1) {
			xt_out.seq = s0;
			xt_out.tries = (__u32)i;
			break;
		}
	}
	xt_out.err = 0;
	xt_out.clocksource[0] = 0;
	if (cs) {
		const char *name = BPF_CORE_READ(cs, name);
		if (name)
			bpf_probe_read_kernel_str(xt_out.clocksource, sizeof(xt_out.clocksource), name);
	}
	return 0;
}
