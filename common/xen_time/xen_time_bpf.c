/*
 * The timekeeper's read by BPF (common/xen_time/xen_time.bpf.c): its layout
 * from the kernel's BTF once, the program loaded per reader, one
 * BPF_PROG_TEST_RUN per read.  See xflow/xen_time.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "xflow/xen_time.h"
#include "common/xen_time/xtime_abi.h"
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

/* The byte offset of member @name in struct @id of @btf, and its type's
 * id in *@type; -1 when it has none such. */
static long member_at(const struct btf *btf, int id, const char *name, int *type)
{
	const struct btf_type *t = btf__type_by_id(btf, (uint32_t)id);
	if (!t || !btf_is_struct(t))
		return -1;
	const struct btf_member *m = btf_members(t);
	for (uint16_t i = 0; i < btf_vlen(t); i++, m++) {
		const char *n = btf__name_by_offset(btf, m->name_off);
		if (n && !strcmp(n, name) && btf_member_bitfield_size(t, i) == 0) {
			if (type)
				*type = (int)m->type;
			return (long)(btf_member_bit_offset(t, i) / 8);
		}
	}
	return -1;
}

int xen_time_bpf_layout(struct xen_time_layout *at, char *why, size_t whylen)
{
	struct btf *btf = btf__load_vmlinux_btf();
	if (!btf) {
		int rc = -errno;
		snprintf(why, whylen, "cannot read the kernel's BTF: %s", strerror(errno));
		return rc;
	}
	int rc = -ENOENT;
	int tk = btf__find_by_name_kind(btf, "timekeeper", BTF_KIND_STRUCT);
	int trb = btf__find_by_name_kind(btf, "tk_read_base", BTF_KIND_STRUCT);
	int cs = btf__find_by_name_kind(btf, "clocksource", BTF_KIND_STRUCT);
	int data = btf__find_by_name_kind(btf, "tk_data", BTF_KIND_STRUCT);
	int seq = btf__find_by_name_kind(btf, "seqcount_raw_spinlock", BTF_KIND_STRUCT);
	long mono = tk > 0 ? member_at(btf, tk, "tkr_mono", NULL) : -1;
	long off[6] = { -1, -1, -1, -1, -1, -1 };
	static const char *const names[6] = { "cycle_last", "xtime_nsec", "base", "mult", "shift", "clock" };
	for (int i = 0; i < 6 && trb > 0; i++)
		off[i] = member_at(btf, trb, names[i], NULL);
	long name = cs > 0 ? member_at(btf, cs, "name", NULL) : -1;
	/* The container: 6.17's struct tk_data, or before it tk_core, an
	 * anonymous struct of the seqcount then the timekeeper at the next
	 * multiple of 8 (the timekeeper holds u64s). */
	long tkoff = data > 0 ? member_at(btf, data, "timekeeper", NULL)
			      : seq > 0 ? (long)((btf__resolve_size(btf, (uint32_t)seq) + 7) & ~7) : -1;
	for (int i = 0; i < 6; i++)
		if (off[i] < 0)
			mono = -1;
	if (mono < 0 || name < 0 || tkoff < 0) {
		snprintf(why, whylen, "the kernel's BTF does not have the timekeeper this reader knows "
				      "(struct timekeeper's tkr_mono, struct clocksource's name)");
		goto out;
	}
	*at = (struct xen_time_layout){ .tk = (uint32_t)tkoff,
					.cycle_last = (uint32_t)(mono + off[0]),
					.xtime_nsec = (uint32_t)(mono + off[1]),
					.base = (uint32_t)(mono + off[2]),
					.mult = (uint32_t)(mono + off[3]),
					.shift = (uint32_t)(mono + off[4]),
					.clock = (uint32_t)(mono + off[5]),
					.cs_name = (uint32_t)name };
	rc = 0;
out:
	btf__free(btf);
	return rc;
}

int xen_time_bpf_open(struct xen_time_reader *r, char *why, size_t whylen)
{
	int rc = 0;
	libbpf_print_fn_t was = libbpf_set_print(quiet);
	struct xflow_xtime *sk = xflow_xtime__open();
	if (!sk) {
		rc = -errno;
		snprintf(why, whylen, "cannot open the timekeeper's BPF reader: %s", strerror(errno));
		goto out;
	}
	sk->rodata->xt_core = r->core;
	const struct xen_time_layout *a = &r->at;
	sk->rodata->xt_at = (struct xt_layout){ .tk = a->tk, .cycle_last = a->cycle_last,
						.xtime_nsec = a->xtime_nsec, .base = a->base, .mult = a->mult,
						.shift = a->shift, .clock = a->clock, .cs_name = a->cs_name };
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
