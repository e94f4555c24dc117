/*
 * The trace generator: the bytes it writes are the xen/trace.h layout, in
 * per-cpu windows that interleave as buffers fill.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/xentrace.h"

static uint32_t word(const char *data, size_t i)
{
	uint32_t v;
	memcpy(&v, data + 4 * i, 4);
	return v;
}

Test(xentrace_writer, record_layout_and_windows)
{
	char *data = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&data, &len);
	struct xentrace_writer *w;
	cr_assert_eq(xentrace_writer_new(&w, f, 2, 64), 0);
	uint32_t x[2] = { 0xaaaa, 0xbbbb };
	cr_assert_eq(xentrace_writer_add(w, 1, 0x123456789ull, true, 0x28004, 2, x), 0);
	cr_assert_eq(xentrace_writer_add(w, 0, 0, false, 0x28005, 0, NULL), 0);
	cr_assert_eq(xentrace_writer_flush_cpu(w, 1), 0);
	cr_assert_eq(xentrace_writer_close(w), 0);
	fclose(f);
	cr_assert_eq(len, 12 + 20 + 12 + 4);
	/* cpu 1's window first: it was flushed first. */
	cr_assert_eq(word(data, 0), 0x2001f003u);
	cr_assert_eq(word(data, 1), 1);
	cr_assert_eq(word(data, 2), 20);
	cr_assert_eq(word(data, 3), 0x28004u | 2u << 28 | 1u << 31);
	cr_assert_eq(word(data, 4), 0x23456789u);
	cr_assert_eq(word(data, 5), 0x1);
	cr_assert_eq(word(data, 6), 0xaaaa);
	cr_assert_eq(word(data, 7), 0xbbbb);
	cr_assert_eq(word(data, 8), 0x2001f003u);
	cr_assert_eq(word(data, 9), 0);
	cr_assert_eq(word(data, 10), 4);
	cr_assert_eq(word(data, 11), 0x28005u);
	free(data);
}

Test(xentrace_writer, full_buffers_become_windows)
{
	char *data = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&data, &len);
	struct xentrace_writer *w;
	cr_assert_eq(xentrace_writer_new(&w, f, 1, 64), 0);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(xentrace_writer_runstate(w, 0, 100 + i, 1, 0, XENTRACE_RS_RUNNABLE, XENTRACE_RS_RUNNING), 0);
	cr_assert_eq(xentrace_writer_close(w), 0);
	fclose(f);
	/* 16-byte records, windows close at 64 bytes: two windows of four. */
	cr_assert_eq(len, 2 * (12 + 64));
	cr_assert_eq(word(data, 2), 64);
	cr_assert_eq(word(data, 3), 0x21101u | 1u << 28 | 1u << 31, "runnable->running: %x", word(data, 3));
	cr_assert_eq(word(data, 6), 1u << 16, "dom 1 vcpu 0");
	cr_assert_eq(word(data, 19 + 2), 64);
	free(data);
}

Test(xentrace_writer, bad_arguments)
{
	struct xentrace_writer *w;
	FILE *f = fopen("/dev/null", "w");
	cr_assert_eq(xentrace_writer_new(&w, f, 0, 4096), -EINVAL);
	cr_assert_eq(xentrace_writer_new(&w, f, XENTRACE_MAX_CPUS + 1, 4096), -EINVAL);
	cr_assert_eq(xentrace_writer_new(&w, f, 1, 8), -EINVAL);
	cr_assert_eq(xentrace_writer_new(&w, f, 2, 4096), 0);
	uint32_t x[8] = { 0 };
	cr_assert_eq(xentrace_writer_add(w, 2, 1, true, 0x28004, 0, NULL), -EINVAL);
	cr_assert_eq(xentrace_writer_add(w, 0, 1, true, 0x28004, 8, x), -EINVAL);
	cr_assert_eq(xentrace_writer_add(w, 0, 1, true, 0x10000000u, 0, NULL), -EINVAL);
	cr_assert_eq(xentrace_writer_close(w), 0);
	fclose(f);
}
