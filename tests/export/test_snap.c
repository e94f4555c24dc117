/*
 * Snapshots (export/snap.c): what the builder accepts and refuses, and how
 * label values from guests are made safe.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "export/export.h"
#include "export/snap_priv.h"

static const struct xfx_family fam_a = { "t_a_total", XFX_COUNTER, "a" };
static const struct xfx_family fam_b = { "t_b", XFX_GAUGE, "b" };

Test(snap, a_sample_needs_a_family_and_a_family_comes_once)
{
	struct xfx_snap *s;
	cr_assert_eq(xfx_snap_new(&s), 0);
	xfx_snap_reset(s, "h");
	cr_assert_eq(xfx_snap_u64(s, 1), -EINVAL);
	cr_assert_eq(xfx_snap_family(s, &fam_a), 0);
	cr_assert_eq(xfx_snap_u64(s, 1), 0);
	cr_assert_eq(xfx_snap_family(s, &fam_b), 0);
	cr_assert_eq(xfx_snap_family(s, &fam_a), -EEXIST);
	/* Another table with the same name is the same family. */
	static const struct xfx_family again = { "t_b", XFX_COUNTER, "other" };
	cr_assert_eq(xfx_snap_family(s, &again), -EEXIST);
	cr_assert_eq(xfx_snap_samples(s), 1);
	/* A reset forgets everything, capacity aside. */
	xfx_snap_reset(s, "h");
	cr_assert_eq(xfx_snap_samples(s), 0);
	cr_assert_eq(xfx_snap_family(s, &fam_a), 0);
	xfx_snap_free(s);
}

static const char *esc(const char *in)
{
	static char out[XFX_ESCAPED_MAX + 1];
	xfx_label_escape(in, out);
	return out;
}

Test(snap, label_values_are_escaped)
{
	cr_assert_str_eq(esc("plain:value"), "plain:value");
	cr_assert_str_eq(esc("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
	cr_assert_str_eq(esc(""), "");
}

Test(snap, invalid_utf8_and_control_bytes_become_question_marks)
{
	cr_assert_str_eq(esc("caf\xc3\xa9"), "caf\xc3\xa9");             /* valid: kept */
	cr_assert_str_eq(esc("\xe2\x82\xac euro"), "\xe2\x82\xac euro");
	cr_assert_str_eq(esc("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80");
	cr_assert_str_eq(esc("a\xff" "b"), "a?b");                        /* not UTF-8 */
	cr_assert_str_eq(esc("\xc0\xaf"), "??");                           /* overlong '/' */
	cr_assert_str_eq(esc("\xed\xa0\x80"), "???");                      /* a surrogate */
	cr_assert_str_eq(esc("\xf4\x90\x80\x80"), "????");                 /* above U+10FFFF */
	cr_assert_str_eq(esc("\xe2\x82"), "??");                           /* cut short */
	cr_assert_str_eq(esc("tab\there\r\x7f"), "tab?here??");
}

Test(snap, long_values_are_cut_at_a_character_boundary)
{
	char in[400];
	memset(in, 'x', 127);
	memcpy(in + 127, "\xc3\xa9zzzz", 7); /* a 2-byte character straddling 128 */
	cr_assert_eq(strlen(esc(in)), 127, "the straddling character is left out whole");
	memset(in, '"', 300);
	in[300] = '\0';
	cr_assert_eq(strlen(esc(in)), 2 * XFX_LABEL_MAX, "each quote doubled, 128 of them");
}

Test(snap, labels_before_a_family_belong_to_no_sample)
{
	struct xfx_snap *s;
	cr_assert_eq(xfx_snap_new(&s), 0);
	xfx_snap_reset(s, "h");
	xfx_snap_family(s, &fam_a);
	xfx_snap_label(s, "stray", "x");
	xfx_snap_family(s, &fam_b);
	xfx_snap_label(s, "k", "v");
	xfx_snap_u64(s, 7);
	char *text;
	size_t len;
	cr_assert_eq(xfx_snap_format(s, &text, &len), 0);
	cr_assert(strstr(text, "t_b{host=\"h\",k=\"v\"} 7\n"), "%s", text);
	cr_assert_null(strstr(text, "stray"));
	free(text);
	xfx_snap_free(s);
}

Test(snap, values_that_sanitize_alike_make_one_label)
{
	/* What callers key their series by: distinct bytes, one label. */
	char a[XFX_LABEL_MAX + 1], b[XFX_LABEL_MAX + 1];
	xfx_label_sanitize("f\xed\xa0\xe2", a);
	xfx_label_sanitize("f\xff\xfe\x01", b);
	cr_assert_str_eq(a, b);
	cr_assert_str_eq(a, "f???");
	/* Sanitizing is idempotent and leaves escaping to the writer. */
	xfx_label_sanitize("a\"b\\c\nd", a);
	cr_assert_str_eq(a, "a\"b\\c\nd");
	xfx_label_sanitize(a, b);
	cr_assert_str_eq(a, b);
}
