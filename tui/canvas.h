/*
 * tui/canvas.h — an off-screen grid of cells that views draw into.
 *
 * Views never call curses: they draw here, and the one file that owns the
 * terminal (curses_ui.c) copies the grid to the screen.  The same drawing
 * runs off-screen in tests and benchmarks.  Text is UTF-8; every code point
 * takes one cell.  When the terminal cannot show UTF-8 (`ascii`), the few
 * non-ASCII characters the views use are replaced by ASCII look-alikes.
 */
#ifndef XFLOW_TUI_CANVAS_H
#define XFLOW_TUI_CANVAS_H

#include <stddef.h>
#include <stdint.h>

enum xft_attr {
	XFT_A_NORMAL,
	XFT_A_HEADER,   /* column headers */
	XFT_A_SORTED,   /* the sorted column's header */
	XFT_A_SELECTED, /* the selected row */
	XFT_A_TITLE,    /* header labels */
	XFT_A_VALUE,    /* header values */
	XFT_A_DIM,
	XFT_A_BAR,      /* bars of gaps and histograms */
	XFT_A_KEY,      /* function-key numbers */
	XFT_A_KEYTEXT,  /* function-key labels */
	XFT_A_WARN,
	XFT_A_TAB,      /* the current view's tab */
	/* The cells of split bars, XFT_A_STATE + enum xft_state
	 * (tui/hop_split.h): each state has its colour, and its glyph too,
	 * so that a bar reads without colour. */
	XFT_A_STATE,
	XFT_A_COUNT = XFT_A_STATE + 8
};

struct xft_canvas {
	int rows, cols;
	int ascii;
	uint32_t *ch;
	uint8_t *attr;
};

int xft_canvas_resize(struct xft_canvas *c, int rows, int cols);
void xft_canvas_free(struct xft_canvas *c);
void xft_canvas_clear(struct xft_canvas *c);
/* Write @s at (y, x) in at most @maxw cells (-1: to the right edge);
 * returns the cells written.  Off-grid parts are clipped. */
int xft_canvas_put(struct xft_canvas *c, int y, int x, int attr, const char *s, int maxw);
int xft_canvas_printf(struct xft_canvas *c, int y, int x, int attr, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void xft_canvas_fill(struct xft_canvas *c, int y, int x, int n, int attr, uint32_t ch);
/* Change the attribute of a run of cells. */
void xft_canvas_paint(struct xft_canvas *c, int y, int x, int n, int attr);
/* Row @y as UTF-8 (trailing blanks kept); returns the length. */
size_t xft_canvas_row(const struct xft_canvas *c, int y, char *buf, size_t len);

#endif
