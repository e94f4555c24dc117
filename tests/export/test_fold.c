/*
 * The bounded table of series (export/fold.c): stable slots for the first
 * keys, XFX_FOLDED for the rest, whatever comes.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "export/export.h"

Test(fold, first_keys_get_stable_slots_the_rest_fold)
{
	struct xfx_fold *f;
	cr_assert_eq(xfx_fold_new(100, &f), 0);
	char key[32];
	for (unsigned i = 0; i < 1000; i++) {
		int n = snprintf(key, sizeof(key), "k%u", i % 300);
		uint32_t slot = xfx_fold_slot(f, key, (size_t)n);
		if (i % 300 < 100)
			cr_assert_eq(slot, i % 300, "key %s", key);
		else
			cr_assert_eq(slot, XFX_FOLDED, "key %s", key);
	}
	cr_assert_eq(xfx_fold_count(f), 100);
	cr_assert_eq(xfx_fold_max(f), 100);
	size_t len;
	const char *k = xfx_fold_key(f, 42, &len);
	cr_assert_eq(len, 3);
	cr_assert_eq(memcmp(k, "k42", 3), 0);
	xfx_fold_key(f, 100, &len);
	cr_assert_eq(len, 0);
	xfx_fold_free(f);
}

Test(fold, keys_are_bytes_and_long_ones_are_cut)
{
	struct xfx_fold *f;
	cr_assert_eq(xfx_fold_new(4, &f), 0);
	/* Embedded NULs separate label values: "a\0bc" is not "ab\0c". */
	cr_assert_eq(xfx_fold_slot(f, "a\0bc", 4), 0);
	cr_assert_eq(xfx_fold_slot(f, "ab\0c", 4), 1);
	cr_assert_eq(xfx_fold_slot(f, "", 0), 2);
	cr_assert_eq(xfx_fold_slot(f, "a\0bc", 4), 0);
	char big[1000];
	memset(big, 'z', sizeof(big));
	uint32_t s = xfx_fold_slot(f, big, sizeof(big));
	cr_assert_eq(s, 3);
	size_t len;
	xfx_fold_key(f, s, &len);
	cr_assert_eq(len, 2 * XFX_LABEL_MAX + 2);
	/* Same first bytes, cut to the same key. */
	cr_assert_eq(xfx_fold_slot(f, big, sizeof(big) - 1), s);
	xfx_fold_free(f);
}

Test(fold, bad_sizes)
{
	struct xfx_fold *f;
	cr_assert_eq(xfx_fold_new(0, &f), -EINVAL);
	cr_assert_eq(xfx_fold_new((1u << 24) + 1, &f), -EINVAL);
}
