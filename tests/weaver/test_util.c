/*
 * Arena and string buffer.
 */
#include "wtest.h"
#include "weaver/util.h"

Test(util, arena_zeroes_aligns_and_grows)
{
	struct fl_arena a;
	fl_arena_init(&a);
	for (int i = 0; i < 1000; i++) {
		unsigned char *p = fl_arena_alloc(&a, (size_t)i * 7 + 1);
		cr_assert_eq((uintptr_t)p % 16, 0);
		for (int k = 0; k < i * 7 + 1; k++)
			cr_assert_eq(p[k], 0);
		memset(p, 0xab, (size_t)i * 7 + 1);
	}
	/* A block bigger than a chunk. */
	char *big = fl_arena_alloc(&a, 100000);
	big[99999] = 1;
	cr_expect_str_eq(fl_arena_printf(&a, "%s-%d", "x", 42), "x-42");
	cr_expect_str_eq(fl_arena_strndup(&a, "abcdef", 3), "abc");
	int *arr = NULL;
	size_t n = 0, cap = 0;
	for (int i = 0; i < 100; i++)
		FL_PUSH(&a, arr, n, cap, i);
	cr_expect_eq(n, 100);
	cr_expect_eq(arr[99], 99);
	cr_expect_geq(cap, 100);
	fl_arena_fini(&a);
}

Test(util, buf)
{
	struct fl_buf b = { 0 };
	fl_buf_puts(&b, "a");
	fl_buf_putc(&b, 'b');
	for (int i = 0; i < 1000; i++)
		fl_buf_printf(&b, "%d", i % 10);
	cr_expect_eq(b.len, 1002);
	cr_expect_eq(strncmp(b.s, "ab0123", 6), 0);
	fl_buf_free(&b);
	cr_expect_null(b.s);
}
