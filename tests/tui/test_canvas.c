/*
 * The off-screen grid: clipping, UTF-8, ASCII fallbacks, control bytes.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "tui/canvas.h"

static const char *row(struct xft_canvas *c, int y)
{
	static char buf[1024];
	xft_canvas_row(c, y, buf, sizeof(buf));
	return buf;
}

Test(canvas, put_clips_and_reports_width)
{
	struct xft_canvas c = { 0 };
	cr_assert_eq(xft_canvas_resize(&c, 3, 10), 0);
	cr_assert_eq(xft_canvas_put(&c, 0, 0, XFT_A_NORMAL, "hello world!", -1), 10);
	cr_assert_str_eq(row(&c, 0), "hello worl");
	cr_assert_eq(xft_canvas_put(&c, 1, 8, XFT_A_NORMAL, "abc", -1), 2);
	cr_assert_eq(xft_canvas_put(&c, 1, -2, XFT_A_NORMAL, "xyz", -1), 3);
	cr_assert_str_eq(row(&c, 1), "z       ab");
	cr_assert_eq(xft_canvas_put(&c, 2, 0, XFT_A_NORMAL, "abcdef", 3), 3);
	cr_assert_str_eq(row(&c, 2), "abc       ");
	cr_assert_eq(xft_canvas_put(&c, 5, 0, XFT_A_NORMAL, "x", -1), 0);
	cr_assert_eq(xft_canvas_put(&c, -1, 0, XFT_A_NORMAL, "x", -1), 0);
	xft_canvas_fill(&c, 0, 5, 100, XFT_A_BAR, '#');
	cr_assert_str_eq(row(&c, 0), "hello#####");
	cr_assert_eq(c.attr[9], XFT_A_BAR);
	xft_canvas_paint(&c, 0, -5, 7, XFT_A_HEADER);
	cr_assert_eq(c.attr[0], XFT_A_HEADER);
	cr_assert_eq(c.attr[2], XFT_A_NORMAL);
	xft_canvas_free(&c);
}

Test(canvas, utf8_one_cell_per_code_point_and_ascii_fallback)
{
	struct xft_canvas c = { 0 };
	cr_assert_eq(xft_canvas_resize(&c, 2, 8), 0);
	cr_assert_eq(xft_canvas_put(&c, 0, 0, 0, "\xc2\xb5s\xe2\x86\x92\xe2\x96\x88", -1), 4);
	cr_assert_str_eq(row(&c, 0), "\xc2\xb5s\xe2\x86\x92\xe2\x96\x88    ");
	c.ascii = 1;
	xft_canvas_put(&c, 1, 0, 0, "\xc2\xb5s\xe2\x86\x92\xe2\x96\x88\xe2\x80\x94", -1);
	xft_canvas_fill(&c, 1, 5, 1, 0, 0x2588);
	xft_canvas_put(&c, 1, 6, 0, "\xe2\x96\xbc\xe2\x96\xb2", -1);
	cr_assert_str_eq(row(&c, 1), "us>#-#v^");
	/* Control characters and broken UTF-8 never reach the terminal. */
	c.ascii = 0;
	xft_canvas_put(&c, 0, 0, 0, "\x1b[2J\xff\x07", -1);
	const char *r = row(&c, 0);
	cr_assert_null(strchr(r, 0x1b));
	cr_assert_null(strchr(r, 0x07));
	cr_assert(!strncmp(r, "?[2J\xef\xbf\xbd?", 8), "%s", r);
	xft_canvas_free(&c);
}

Test(canvas, resize_and_tiny_sizes)
{
	struct xft_canvas c = { 0 };
	cr_assert_eq(xft_canvas_resize(&c, 0, -4), 0);
	cr_assert_eq(c.rows, 1);
	cr_assert_eq(c.cols, 1);
	cr_assert_eq(xft_canvas_resize(&c, 60, 200), 0);
	xft_canvas_put(&c, 59, 199, 0, "xy", -1);
	char small[4];
	cr_assert_eq(xft_canvas_row(&c, 59, small, sizeof(small)), 3);
	xft_canvas_free(&c);
}
