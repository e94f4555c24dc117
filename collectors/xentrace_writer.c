/*
 * A small writer of xentrace files, for tests and benchmarks.
 *
 * Like xentrace, it keeps one buffer per cpu and writes a cpu's records as
 * one window (a TRC_TRACE_CPU_CHANGE record {cpu, bytes}, then the records)
 * when that buffer fills or on request.  Windows of different cpus therefore
 * interleave in the order their buffers filled, not in time order: exactly
 * what a reader has to merge.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/xentrace.h"

struct wbuf {
	uint8_t *data;
	size_t len;
};

struct xentrace_writer {
	FILE *f;
	unsigned ncpus;
	size_t window;
	int err;
	struct wbuf cpu[];
};

int xentrace_writer_new(struct xentrace_writer **out, FILE *f, unsigned ncpus, size_t window_bytes)
{
	*out = NULL;
	if (ncpus == 0 || ncpus > XENTRACE_MAX_CPUS || window_bytes < 64 || window_bytes > UINT32_MAX)
		return -EINVAL;
	struct xentrace_writer *w = calloc(1, sizeof(*w) + ncpus * sizeof(w->cpu[0]));
	if (!w)
		return -ENOMEM;
	w->f = f;
	w->ncpus = ncpus;
	w->window = window_bytes & ~(size_t)3;
	for (unsigned i = 0; i < ncpus; i++) {
		/* Room for one more record past the window size. */
		if (!(w->cpu[i].data = malloc(w->window + 64))) {
			for (unsigned j = 0; j < i; j++)
				free(w->cpu[j].data);
			free(w);
			return -ENOMEM;
		}
	}
	*out = w;
	return 0;
}

int xentrace_writer_flush_cpu(struct xentrace_writer *w, unsigned cpu)
{
	if (cpu >= w->ncpus)
		return -EINVAL;
	struct wbuf *b = &w->cpu[cpu];
	if (b->len == 0)
		return w->err;
	uint32_t hdr[3] = { XENTRACE_EV_CPU_CHANGE | (2u << 28), cpu, (uint32_t)b->len };
	if (fwrite(hdr, sizeof(hdr), 1, w->f) != 1 || fwrite(b->data, b->len, 1, w->f) != 1)
		w->err = w->err ? w->err : -EIO;
	b->len = 0;
	return w->err;
}

int xentrace_writer_raw(struct xentrace_writer *w, const void *bytes, size_t len)
{
	if (len && fwrite(bytes, len, 1, w->f) != 1)
		w->err = w->err ? w->err : -EIO;
	return w->err;
}

int xentrace_writer_add(struct xentrace_writer *w, unsigned cpu, uint64_t tsc, bool has_tsc, uint32_t event,
			unsigned nextra, const uint32_t *extra)
{
	if (cpu >= w->ncpus || nextra > XENTRACE_MAX_EXTRA || event > 0x0fffffffu)
		return -EINVAL;
	struct wbuf *b = &w->cpu[cpu];
	uint32_t h = event | (uint32_t)nextra << 28 | (has_tsc ? 1u << 31 : 0);
	uint8_t *p = b->data + b->len;
	memcpy(p, &h, 4);
	p += 4;
	if (has_tsc) {
		uint32_t t[2] = { (uint32_t)tsc, (uint32_t)(tsc >> 32) };
		memcpy(p, t, 8);
		p += 8;
	}
	if (nextra)
		memcpy(p, extra, 4 * nextra);
	p += 4 * nextra;
	b->len = (size_t)(p - b->data);
	if (b->len >= w->window)
		return xentrace_writer_flush_cpu(w, cpu);
	return w->err;
}

int xentrace_writer_close(struct xentrace_writer *w)
{
	if (!w)
		return 0;
	for (unsigned i = 0; i < w->ncpus; i++)
		xentrace_writer_flush_cpu(w, i);
	if (fflush(w->f) != 0 && !w->err)
		w->err = -EIO;
	int rc = w->err;
	for (unsigned i = 0; i < w->ncpus; i++)
		free(w->cpu[i].data);
	free(w);
	return rc;
}

int xentrace_writer_runstate(struct xentrace_writer *w, unsigned cpu, uint64_t tsc, unsigned dom, unsigned vcpu,
			     enum xentrace_runstate from, enum xentrace_runstate to)
{
	/* TRC_SCHED_RUNSTATE_CHANGE with the old and new states in the event. */
	uint32_t ev = 0x21001u | ((uint32_t)to & 0xf) << 4 | ((uint32_t)from & 0xf) << 8;
	uint32_t x = (vcpu & 0xffff) | (dom & 0xffff) << 16;
	return xentrace_writer_add(w, cpu, tsc, true, ev, 1, &x);
}

int xentrace_writer_continue(struct xentrace_writer *w, unsigned cpu, uint64_t tsc, unsigned dom, unsigned vcpu)
{
	uint32_t x = (vcpu & 0xffff) | (dom & 0xffff) << 16;
	return xentrace_writer_add(w, cpu, tsc, true, 0x21002u, 1, &x);
}

int xentrace_writer_lost(struct xentrace_writer *w, unsigned cpu, uint64_t tsc, uint32_t count, unsigned dom,
			 unsigned vcpu, uint64_t first_tsc)
{
	uint32_t x[4] = { count, (dom & 0xffff) | (vcpu & 0xffff) << 16, (uint32_t)first_tsc,
			  (uint32_t)(first_tsc >> 32) };
	return xentrace_writer_add(w, cpu, tsc, true, XENTRACE_EV_LOST_RECORDS, 4, x);
}

int xentrace_writer_vmexit(struct xentrace_writer *w, unsigned cpu, uint64_t tsc, unsigned reason, uint64_t rip)
{
	uint32_t x[3] = { reason, (uint32_t)rip, (uint32_t)(rip >> 32) };
	return xentrace_writer_add(w, cpu, tsc, true, 0x81102u, 3, x);
}

int xentrace_writer_vmentry(struct xentrace_writer *w, unsigned cpu, uint64_t tsc)
{
	return xentrace_writer_add(w, cpu, tsc, true, 0x81001u, 0, NULL);
}

int xentrace_writer_hypercall(struct xentrace_writer *w, unsigned cpu, uint64_t tsc, unsigned op)
{
	uint32_t x = op & 0xfffffu;
	return xentrace_writer_add(w, cpu, tsc, true, 0x20100du, 1, &x);
}
