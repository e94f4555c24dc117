/*
 * The off-screen grid.  See tui/canvas.h.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui/canvas.h"

int xft_canvas_resize(struct xft_canvas *c, int rows, int cols)
{
	if (rows < 1)
		rows = 1;
	if (cols < 1)
		cols = 1;
	if (rows == c->rows && cols == c->cols && c->ch)
		return 0;
	size_t n = (size_t)rows * (size_t)cols;
	uint32_t *ch = malloc(n * sizeof(*ch));
	uint8_t *attr = malloc(n);
	if (!ch || !attr) {
		free(ch);
		free(attr);
		return -ENOMEM;
	}
	free(c->ch);
	free(c->attr);
	c->ch = ch;
	c->attr = attr;
	c->rows = rows;
	c->cols = cols;
	xft_canvas_clear(c);
	return 0;
}

void xft_canvas_free(struct xft_canvas *c)
{
	free(c->ch);
	free(c->attr);
	c->ch = NULL;
	c->attr = NULL;
	c->rows = c->cols = 0;
}

void xft_canvas_clear(struct xft_canvas *c)
{
	size_t n = (size_t)c->rows * (size_t)c->cols;
	for (size_t i = 0; i < n; i++)
		c->ch[i] = ' ';
	memset(c->attr, XFT_A_NORMAL, n);
}

static uint32_t ascii_of(uint32_t cp)
{
	switch (cp) {
	case 0x2014: case 0x2013: case 0x2500: return '-';
	case 0x00b5: case 0x03bc: return 'u';
	case 0x2192: return '>';
	case 0x2190: return '<';
	case 0x2588: case 0x2589: case 0x258a: case 0x258b:
	case 0x258c: case 0x258d: case 0x258e: case 0x258f: return '#';
	case 0x2502: return '|';
	case 0x25bc: return 'v';
	case 0x25b2: return '^';
	case 0x00b7: case 0x2026: return '.';
	case 0x00b1: return '~'; /* a clock error's plus-or-minus */
	default: return '?';
	}
}

/* Decode one code point; invalid bytes become U+FFFD. */
static uint32_t next_cp(const unsigned char **p)
{
	const unsigned char *s = *p;
	uint32_t c = s[0];
	int len = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3
		: c >= 0xf0 && c <= 0xf4 ? 4 : 0;
	if (len == 0) {
		*p = s + 1;
		return 0xfffd;
	}
	if (len == 1) {
		*p = s + 1;
		return c;
	}
	c &= 0x3f >> (len - 1);
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			*p = s + i;
			return 0xfffd;
		}
		c = c << 6 | (s[i] & 0x3f);
	}
	*p = s + len;
	return c;
}

int xft_canvas_put(struct xft_canvas *c, int y, int x, int attr, const char *s, int maxw)
{
	if (y < 0 || y >= c->rows || !s)
		return 0;
	int end = maxw < 0 ? c->cols : x + maxw;
	if (end > c->cols)
		end = c->cols;
	const unsigned char *p = (const unsigned char *)s;
	int w = 0;
	while (*p && x < end) {
		uint32_t cp = next_cp(&p);
		if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
			cp = '?'; /* never send control characters to the terminal */
		else if (cp >= 0x80 && c->ascii)
			cp = ascii_of(cp);
		if (x >= 0) {
			size_t i = (size_t)y * (size_t)c->cols + (size_t)x;
			c->ch[i] = cp;
			c->attr[i] = (uint8_t)attr;
		}
		x++;
		w++;
	}
	return w;
}

int xft_canvas_printf(struct xft_canvas *c, int y, int x, int attr, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return xft_canvas_put(c, y, x, attr, buf, -1);
}

void xft_canvas_fill(struct xft_canvas *c, int y, int x, int n, int attr, uint32_t ch)
{
	if (y < 0 || y >= c->rows)
		return;
	if (c->ascii && ch >= 0x80)
		ch = ascii_of(ch);
	for (int i = 0; i < n; i++, x++)
		if (x >= 0 && x < c->cols) {
			size_t k = (size_t)y * (size_t)c->cols + (size_t)x;
			c->ch[k] = ch;
			c->attr[k] = (uint8_t)attr;
		}
}

void xft_canvas_paint(struct xft_canvas *c, int y, int x, int n, int attr)
{
	if (y < 0 || y >= c->rows)
		return;
	for (int i = 0; i < n; i++, x++)
		if (x >= 0 && x < c->cols)
			c->attr[(size_t)y * (size_t)c->cols + (size_t)x] = (uint8_t)attr;
}

size_t xft_canvas_row(const struct xft_canvas *c, int y, char *buf, size_t len)
{
	size_t o = 0;
	if (!len)
		return 0;
	if (y < 0 || y >= c->rows) {
		buf[0] = '\0';
		return 0;
	}
	for (int x = 0; x < c->cols; x++) {
		uint32_t cp = c->ch[(size_t)y * (size_t)c->cols + (size_t)x];
		char tmp[4];
		size_t n;
		if (cp < 0x80) {
			tmp[0] = (char)cp;
			n = 1;
		} else if (cp < 0x800) {
			tmp[0] = (char)(0xc0 | cp >> 6);
			tmp[1] = (char)(0x80 | (cp & 0x3f));
			n = 2;
		} else if (cp < 0x10000) {
			tmp[0] = (char)(0xe0 | cp >> 12);
			tmp[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
			tmp[2] = (char)(0x80 | (cp & 0x3f));
			n = 3;
		} else {
			tmp[0] = (char)(0xf0 | cp >> 18);
			tmp[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
			tmp[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
			tmp[3] = (char)(0x80 | (cp & 0x3f));
			n = 4;
		}
		if (o + n + 1 > len)
			break;
		memcpy(buf + o, tmp, n);
		o += n;
	}
	buf[o] = '\0';
	return o;
}
