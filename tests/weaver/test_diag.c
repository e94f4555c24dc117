/*
 * Diagnostics: locations, order, limits, -W options.
 */
#include "wtest.h"
#include "weaver/lang/diag.h"

__attribute__((noinline)) static char *print(struct fl_diag *d)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	fl_diag_print(d, f);
	fclose(f);
	return buf;
}

static long pos(const char *hay, const char *needle)
{
	const char *p = strstr(hay, needle);
	return p ? (long)(p - hay) : -1;
}

Test(diag, line_and_column)
{
	struct fl_arena a;
	fl_arena_init(&a);
	const char text[] = "ab\n\tcd\n\nx";
	struct fl_src *s = fl_src_new(&a, "f", text, sizeof(text) - 1);
	unsigned l, c;
	fl_loc_linecol(fl_loc_at(s, 0, 1), &l, &c);
	cr_expect(l == 1 && c == 1);
	fl_loc_linecol(fl_loc_at(s, 4, 1), &l, &c);
	cr_expect(l == 2 && c == 2, "%u:%u", l, c);
	fl_loc_linecol(fl_loc_at(s, 8, 1), &l, &c);
	cr_expect(l == 4 && c == 1, "%u:%u", l, c);
	fl_arena_fini(&a);
}

Test(diag, gcc_format_with_caret_and_hint)
{
	struct fl_arena a;
	fl_arena_init(&a);
	struct fl_diag d;
	fl_diag_init(&d, &a);
	struct fl_src *s = fl_src_new(&a, "f.xml", "one\n\tx = yy;\n", 13);
	fl_error_caret(&d, fl_loc_at(s, 9, 2), "write y", "bad '%s'", "yy");
	char *out = print(&d);
	cr_expect_str_eq(out, "f.xml:2:6: error: bad 'yy'\n"
			      "     2 | \tx = yy;\n"
			      "       | \t    ^~\n"
			      "f.xml:2:6: note: write y\n");
	free(out);
	fl_arena_fini(&a);
}

Test(diag, sorted_by_file_position_and_limited)
{
	struct fl_arena a;
	fl_arena_init(&a);
	struct fl_diag d;
	fl_diag_init(&d, &a);
	d.max_errors = 3;
	struct fl_src *s = fl_src_new(&a, "f", "a\nb\nc\nd\n", 8);
	s->seq = 1;
	fl_error(&d, fl_loc_at(s, 4, 1), NULL, "third line");
	fl_error(&d, fl_loc_at(s, 0, 1), NULL, "first line");
	fl_error(&d, fl_loc_at(s, 2, 1), NULL, "second line");
	fl_error(&d, fl_loc_at(s, 6, 1), NULL, "dropped");
	cr_expect_eq(d.nerrors, 3);
	cr_expect(d.stopped);
	char *out = print(&d);
	long p1 = pos(out, "f:1:1: error: first line"), p2 = pos(out, "f:2:1: error: second"),
	     p3 = pos(out, "f:3:1: error: third");
	cr_expect(p1 >= 0 && p1 < p2 && p2 < p3, "%s", out);
	cr_expect_null(strstr(out, "dropped"));
	cr_expect(strstr(out, "too many errors (3), stopping"));
	free(out);
	fl_arena_fini(&a);
}

Test(diag, warning_options)
{
	struct fl_arena a;
	fl_arena_init(&a);
	struct fl_diag d;
	fl_diag_init(&d, &a);
	fl_warning(&d, FL_W_UNUSED, (struct fl_loc){ 0 }, NULL, "off by default");
	cr_expect_eq(d.nwarnings, 0);
	cr_expect_eq(fl_diag_set_option(&d, "all"), 0);
	cr_expect_eq(fl_diag_set_option(&d, "no-empty-flow"), 0);
	cr_expect_eq(fl_diag_set_option(&d, "bogus"), -EINVAL);
	fl_warning(&d, FL_W_EMPTY_FLOW, (struct fl_loc){ 0 }, NULL, "disabled");
	fl_warning(&d, FL_W_UNUSED, (struct fl_loc){ 0 }, NULL, "on");
	cr_expect_eq(d.nwarnings, 1);
	cr_expect_eq(fl_diag_errors(&d), 0);
	fl_diag_set_option(&d, "error");
	cr_expect_eq(fl_diag_errors(&d), 1);
	char *out = print(&d);
	cr_expect_str_eq(out, "xflowc: error: on [-Werror=unused-binding]\n");
	free(out);
	fl_arena_fini(&a);
}
