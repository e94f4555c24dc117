/*
 * The timekeeper's read by BPF (kernel/bpf/xen_time.bpf.c): load, one
 * BPF_PROG_TEST_RUN, unload.  See xflow/xen_time.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xflow/xen_time.h"
#include "kernel/xtime_abi.h"
#include "xflow/clock.h"
#include "xflow_xtime.skel.h"

/* The read fails often on purpose (no Xen, no kallsyms): the reason goes
 * to the caller, not libbpf's lines to stderr. */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

int xen_time_read_kernel(int64_t *xen_minus_mono, char *why, size_t whylen)
{
	uint64_t core;
	int rc = xen_time_core_addr(NULL, &core);
	if (rc) {
		snprintf(why, whylen, "%s",
			 rc == -ENOENT ? "/proc/kallsyms lists no tk_core (a kernel without CONFIG_KALLSYMS_ALL, "
					 "or addresses hidden from us)"
				       : "cannot read /proc/kallsyms");
		return rc;
	}
	return xen_time_read_at(core, xen_minus_mono, why, whylen);
}

int xen_time_read_at(uint64_t core, int64_t *xen_minus_mono, char *why, size_t whylen)
{
	int rc;
	libbpf_print_fn_t was = libbpf_set_print(quiet);
	struct xflow_xtime *sk = xflow_xtime__open();
	if (!sk) {
		rc = -errno;
		snprintf(why, whylen, "cannot open the timekeeper's BPF reader: %s", strerror(errno));
		goto out;
	}
	sk->rodata->xt_core = core;
	if ((rc = xflow_xtime__load(sk))) {
		snprintf(why, whylen, "the kernel refused the timekeeper's BPF reader: %s", strerror(-rc));
		goto out;
	}
	LIBBPF_OPTS(bpf_test_run_opts, run);
	if ((rc = bpf_prog_test_run_opts(bpf_program__fd(sk->progs.xt_read), &run))) {
		rc = -errno;
		snprintf(why, whylen, "cannot run the timekeeper's BPF reader: %s", strerror(errno));
		goto out;
	}
	uint64_t now = xflow_monotonic_ns();
	const struct xt_out *o = &sk->bss->xt_out;
	if (o->err || !o->tries) {
		rc = o->err ? o->err : -EAGAIN;
		snprintf(why, whylen, "%s", o->err ? "the timekeeper could not be read"
						   : "the timekeeper changed under every read");
		goto out;
	}
	struct xen_time_sample s = { .cycle_last = o->cycle_last, .xtime_nsec = o->xtime_nsec, .base = o->base,
				     .mult = o->mult, .shift = o->shift };
	memcpy(s.clocksource, o->clocksource, sizeof(s.clocksource));
	rc = xen_time_offset(&s, now, xen_minus_mono, why, whylen);
out:
	xflow_xtime__destroy(sk);
	libbpf_set_print(was);
	return rc;
}
