/*
 * The timekeeper's read by BPF (kernel/bpf/xen_time.bpf.c): loaded once
 * per reader, one BPF_PROG_TEST_RUN per read.  See xflow/xen_time.h.
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

int xen_time_bpf_open(struct xen_time_reader *r, uint64_t core, char *why, size_t whylen)
{
	int rc;
	if (!core && (rc = xen_time_core_addr(NULL, &core))) {
		snprintf(why, whylen, "%s",
			 rc == -ENOENT ? "/proc/kallsyms lists no tk_core (a kernel without CONFIG_KALLSYMS_ALL, "
					 "or addresses hidden from us)"
				       : "cannot read /proc/kallsyms");
		return rc;
	}
	libbpf_print_fn_t was = libbpf_set_print(quiet);
	struct xflow_xtime *sk = xflow_xtime__open();
	if (!sk) {
		rc = -errno;
		snprintf(why, whylen, "cannot open the timekeeper's BPF reader: %s", strerror(errno));
		goto out;
	}
	sk->rodata->xt_core = core;
	/* The load relocates against the kernel's BTF, which libbpf parses
	 * whole: seconds under emulation, so it is done once per reader. */
	if ((rc = xflow_xtime__load(sk))) {
		snprintf(why, whylen, "the kernel refused the timekeeper's BPF reader: %s", strerror(-rc));
		xflow_xtime__destroy(sk);
		sk = NULL;
	}
out:
	libbpf_set_print(was);
	r->bpf = sk;
	return sk ? 0 : rc;
}

int xen_time_bpf_read(struct xen_time_reader *r, int64_t *xen_minus_mono, char *why, size_t whylen)
{
	struct xflow_xtime *sk = r->bpf;
	LIBBPF_OPTS(bpf_test_run_opts, run);
	if (bpf_prog_test_run_opts(bpf_program__fd(sk->progs.xt_read), &run)) {
		int rc = -errno;
		snprintf(why, whylen, "cannot run the timekeeper's BPF reader: %s", strerror(errno));
		return rc;
	}
	uint64_t now = xflow_monotonic_ns();
	const struct xt_out *o = &sk->bss->xt_out;
	if (o->err || !o->tries) {
		snprintf(why, whylen, "%s", o->err ? "the timekeeper could not be read"
						   : "the timekeeper changed under every read");
		return o->err ? o->err : -EAGAIN;
	}
	struct xen_time_sample s = { .cycle_last = o->cycle_last, .xtime_nsec = o->xtime_nsec, .base = o->base,
				     .mult = o->mult, .shift = o->shift };
	memcpy(s.clocksource, o->clocksource, sizeof(s.clocksource));
	return xen_time_offset(&s, now, xen_minus_mono, why, whylen);
}

void xen_time_bpf_close(struct xen_time_reader *r)
{
	xflow_xtime__destroy(r->bpf);
	r->bpf = NULL;
}

uint32_t xen_time_bpf_prog_id(const struct xen_time_reader *r)
{
	const struct xflow_xtime *sk = r->bpf;
	struct bpf_prog_info info;
	uint32_t len = sizeof(info);
	memset(&info, 0, sizeof(info));
	if (bpf_obj_get_info_by_fd(bpf_program__fd(sk->progs.xt_read), &info, &len))
		return 0;
	return info.id;
}
