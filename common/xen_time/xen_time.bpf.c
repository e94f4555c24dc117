/*
 * One read of the kernel's timekeeper, for common/xen_time/xen_time_bpf.c: the
 * clocksource's count at the timekeeper's last update (cycle_last) and
 * what CLOCK_MONOTONIC was then (base + xtime_nsec >> shift), taken
 * under the timekeeper's seqcount so that the two belong together, and
 * the clocksource's name.  Under Xen the clocksource "xen" counts Xen's
 * system time in nanoseconds, which every domain of the host shares.
 *
 * Run with BPF_PROG_TEST_RUN, never attached.  The loader gives the
 * address of the timekeeper's container (tk_core, or on newer kernels
 * timekeeper_data[0]) from /proc/kallsyms, neither being in BTF, and the
 * fields' offsets, which it took from the running kernel's BTF once:
 * with no CO-RE relocation here, loading does not make libbpf parse the
 * kernel's whole BTF again, which takes seconds under emulation.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "common/xen_time/xtime_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader. */
const volatile __u64 xt_core = 0;      /* the container: its seqcount first */
const volatile struct xt_layout xt_at = {};

/* The answer, read back through the skeleton's .bss. */
struct xt_out xt_out = {};

#define XT_TRIES 8

static __always_inline long rd(void *dst, __u32 size, __u64 at)
{
	return bpf_probe_read_kernel(dst, size, (const void *)at);
}

SEC("raw_tp")
int xt_read(void *ctx)
{
	__u64 core = xt_core, tk = core + xt_at.tk;
	__u64 cs = 0;
	__u32 s0 = 0, s1 = 0;
	long err = 0;

	xt_out.tries = 0;
	for (int i = 1; i <= XT_TRIES; i++) {
		if ((err = rd(&s0, sizeof(s0), core)))
			break;
		if (s0 & 1)
			continue; /* an update is under way */
		err = rd(&xt_out.cycle_last, 8, tk + xt_at.cycle_last);
		err = err ?: rd(&xt_out.xtime_nsec, 8, tk + xt_at.xtime_nsec);
		err = err ?: rd(&xt_out.base, 8, tk + xt_at.base);
		err = err ?: rd(&xt_out.mult, 4, tk + xt_at.mult);
		err = err ?: rd(&xt_out.shift, 4, tk + xt_at.shift);
		err = err ?: rd(&cs, 8, tk + xt_at.clock);
		err = err ?: rd(&s1, sizeof(s1), core);
		if (err)
			break;
		if (s0 == s1) {
			xt_out.seq = s0;
			xt_out.tries = (__u32)i;
			break;
		}
	}
	xt_out.err = (__s32)err;
	xt_out.clocksource[0] = 0;
	if (!err && cs) {
		__u64 name = 0;
		if (!rd(&name, 8, cs + xt_at.cs_name) && name)
			bpf_probe_read_kernel_str(xt_out.clocksource, sizeof(xt_out.clocksource), (const void *)name);
	}
	return 0;
}
