/*
 * The curses renderer: the only file that includes curses.h.
 *
 * It copies the canvas the views drew to the screen, turns curses key codes
 * into xflowtop's (tui/app.h), and always gives the terminal back: on quit,
 * on SIGINT/SIGTERM (through the loop), at exit(), and on a crash, where a
 * handler restores the terminal and re-raises the signal, as htop does.
 */
#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include <wchar.h>

#include "common/crash.h"
#include "tui/app.h"

struct curses_state {
	SCREEN *screen;
	attr_t attrs[XFT_A_COUNT];
	FILE *tty; /* keys from /dev/tty when standard input carries data */
};

/*
 * The one piece of global state: whether curses holds the terminal.  A
 * crash handler or atexit() cannot be handed our struct, and they must
 * know whether there is a terminal to restore.
 */
static volatile sig_atomic_t curses_active;

static void restore_terminal(void)
{
	if (curses_active) {
		curses_active = 0;
		endwin();
	}
}

static void on_crash(int sig, siginfo_t *si, void *uc)
{
	restore_terminal();
	/* On the terminal as it was: what killed us, and where. */
	if (sig != SIGQUIT)
		xflow_crash_say(sig, si, uc);
	/* SA_RESETHAND put the default action back: die of the same signal. */
	raise(sig);
}

static void set_attrs(struct curses_state *st, int color)
{
	attr_t *a = st->attrs;
	if (color && has_colors() && start_color() == OK) {
		use_default_colors();
		init_pair(1, COLOR_BLACK, COLOR_GREEN);
		init_pair(2, COLOR_BLACK, COLOR_CYAN);
		init_pair(3, COLOR_CYAN, -1);
		init_pair(4, COLOR_GREEN, -1);
		init_pair(5, COLOR_BLUE, -1);
		init_pair(6, COLOR_RED, -1);
		a[XFT_A_NORMAL] = A_NORMAL;
		a[XFT_A_HEADER] = COLOR_PAIR(1);
		a[XFT_A_SORTED] = COLOR_PAIR(2) | A_BOLD;
		a[XFT_A_SELECTED] = COLOR_PAIR(2);
		a[XFT_A_TITLE] = COLOR_PAIR(3) | A_BOLD;
		a[XFT_A_VALUE] = A_BOLD;
		a[XFT_A_DIM] = COLOR_PAIR(5) | A_BOLD;
		a[XFT_A_BAR] = COLOR_PAIR(4);
		a[XFT_A_KEY] = A_NORMAL;
		a[XFT_A_KEYTEXT] = COLOR_PAIR(2);
		a[XFT_A_WARN] = COLOR_PAIR(6) | A_BOLD;
		a[XFT_A_TAB] = COLOR_PAIR(1) | A_BOLD;
		/* Split bars: run green, wait red, notify yellow, backend
		 * blue, blocked magenta, offline and Xen cyan and white, '?'
		 * dim; their glyphs tell them apart without colour. */
		static const short state_fg[] = { COLOR_GREEN, COLOR_RED,  COLOR_YELLOW, COLOR_BLUE,
						  COLOR_MAGENTA, COLOR_CYAN, COLOR_WHITE, -1 };
		for (int i = 0; i < XFT_A_COUNT - XFT_A_STATE; i++) {
			init_pair((short)(7 + i), state_fg[i], -1);
			a[XFT_A_STATE + i] = COLOR_PAIR(7 + i) | (i == 1 ? A_BOLD : 0);
		}
		return;
	}
	/* No colours: reverse video and bold carry the structure. */
	a[XFT_A_NORMAL] = A_NORMAL;
	a[XFT_A_HEADER] = A_REVERSE;
	a[XFT_A_SORTED] = A_REVERSE | A_BOLD;
	a[XFT_A_SELECTED] = A_REVERSE;
	a[XFT_A_TITLE] = A_BOLD;
	a[XFT_A_VALUE] = A_BOLD;
	a[XFT_A_DIM] = A_NORMAL;
	a[XFT_A_BAR] = A_NORMAL;
	a[XFT_A_KEY] = A_BOLD;
	a[XFT_A_KEYTEXT] = A_REVERSE;
	a[XFT_A_WARN] = A_BOLD;
	a[XFT_A_TAB] = A_REVERSE | A_BOLD;
	for (int i = XFT_A_STATE; i < XFT_A_COUNT; i++)
		a[i] = A_NORMAL; /* the glyphs carry the states */
}

static void fit_canvas(struct xft_app *app)
{
	int rows, cols;
	getmaxyx(stdscr, rows, cols);
	xft_canvas_resize(&app->canvas, rows, cols);
}

static int curses_start(struct xft_app *app, char *err, size_t errlen)
{
	struct curses_state *st = calloc(1, sizeof(*st));
	if (!st) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	setlocale(LC_CTYPE, "");
	const char *cs = nl_langinfo(CODESET);
	app->canvas.ascii = !(cs && (!strcasecmp(cs, "UTF-8") || !strcasecmp(cs, "utf8")));
	if (!isatty(STDOUT_FILENO)) {
		snprintf(err, errlen, "standard output must be a terminal (use -b for batch mode)");
		free(st);
		return -1;
	}
	FILE *in = stdin;
	if (!isatty(STDIN_FILENO)) {
		/* Standard input carries data (`xentrace ... | xflowtop
		 * --xentrace -`): keys come from the controlling terminal, as
		 * less(1) takes them. */
		st->tty = fopen("/dev/tty", "r+e");
		if (!st->tty) {
			snprintf(err, errlen, "standard input is not a terminal and /dev/tty cannot be opened (use -b for batch mode)");
			free(st);
			return -1;
		}
		in = st->tty;
	}
	st->screen = newterm(NULL, stdout, in);
	if (!st->screen) {
		if (st->tty)
			fclose(st->tty);
		const char *term = getenv("TERM");
		snprintf(err, errlen, "cannot use the terminal TERM=%s (use -b for batch mode)",
			 term ? term : "(unset)");
		free(st);
		return -1;
	}
	curses_active = 1;
	atexit(restore_terminal);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_crash;
	sa.sa_flags = (int)(SA_RESETHAND | SA_SIGINFO);
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGQUIT };
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		sigaction(fatal[i], &sa, NULL);
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	set_attrs(st, app->ui.color);
	app->rstate = st;
	fit_canvas(app);
	return 0;
}

static void blit(struct xft_app *app)
{
	struct curses_state *st = app->rstate;
	struct xft_canvas *cv = &app->canvas;
	wchar_t run[1024];
	for (int y = 0; y < cv->rows; y++) {
		int x = 0;
		while (x < cv->cols) {
			size_t base = (size_t)y * (size_t)cv->cols;
			uint8_t a = cv->attr[base + (size_t)x];
			int n = 0;
			while (x + n < cv->cols && n < 1023 && cv->attr[base + (size_t)(x + n)] == a) {
				run[n] = (wchar_t)cv->ch[base + (size_t)(x + n)];
				n++;
			}
			run[n] = 0;
			attrset(st->attrs[a < XFT_A_COUNT ? a : 0]);
			/* The bottom-right cell makes curses report a scroll
			 * it did not do; the cell is written all the same. */
			mvaddnwstr(y, x, run, n);
			x += n;
		}
	}
	attrset(A_NORMAL);
	wnoutrefresh(stdscr);
	doupdate();
}

static void curses_draw(struct xft_app *app)
{
	if (!curses_active)
		return;
	xft_ui_draw(app, &app->canvas);
	blit(app);
}

static void curses_resize(struct xft_app *app)
{
	struct winsize ws;
	if (!curses_active)
		return;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
		resizeterm(ws.ws_row, ws.ws_col);
	fit_canvas(app);
	clearok(curscr, TRUE);
}

static int translate(int rc, wint_t ch)
{
	if (rc == KEY_CODE_YES) {
		if (ch >= (wint_t)KEY_F(1) && ch <= (wint_t)KEY_F(12))
			return XFT_KEY_F((int)ch - KEY_F0);
		switch (ch) {
		case KEY_UP: return XFT_KEY_UP;
		case KEY_DOWN: return XFT_KEY_DOWN;
		case KEY_LEFT: return XFT_KEY_LEFT;
		case KEY_RIGHT: return XFT_KEY_RIGHT;
		case KEY_PPAGE: return XFT_KEY_PGUP;
		case KEY_NPAGE: return XFT_KEY_PGDN;
		case KEY_HOME: return XFT_KEY_HOME;
		case KEY_END: return XFT_KEY_END;
		case KEY_ENTER: return XFT_KEY_ENTER;
		case KEY_BACKSPACE: return XFT_KEY_BACKSPACE;
		case KEY_DC: return XFT_KEY_DELETE;
		case KEY_BTAB: return XFT_KEY_BTAB;
		default: return -1;
		}
	}
	switch (ch) {
	case '\r': case '\n': return XFT_KEY_ENTER;
	case 127: case 8: return XFT_KEY_BACKSPACE;
	case 27: return XFT_KEY_ESC;
	default: return ch > 0x10ffff ? -1 : (int)ch;
	}
}

static unsigned curses_input(struct xft_app *app)
{
	unsigned rx = 0;
	wint_t ch;
	int rc, n = 0;
	if (!curses_active)
		return 0;
	/* Everything that is ready, but never more than a screenful of keys
	 * between two draws. */
	while (n++ < 64 && (rc = get_wch(&ch)) != ERR) {
		/* Any key read, even one ignored, is a redraw: the loop takes
		 * "readable but nothing read" for a terminal that hung up. */
		rx |= XFT_RX_REDRAW;
		if (rc == KEY_CODE_YES && ch == KEY_RESIZE) {
			/* resizeterm() queued this: curses already knows the size.
			 * Calling it again would queue another, forever.  Whoever
			 * called it (curses_resize, or curses itself noticing the
			 * size in get_wch), what the terminal kept of the old
			 * screen is not what curses thinks: paint it all again. */
			fit_canvas(app);
			clearok(curscr, TRUE);
			rx |= XFT_RX_REDRAW;
			continue;
		}
		int key = translate(rc, ch);
		if (key < 0)
			continue;
		unsigned r = xft_ui_key(app, key);
		xft_app_react(app, r & ~(unsigned)XFT_RX_QUIT);
		rx |= r & (XFT_RX_QUIT | XFT_RX_REDRAW);
		if (r & XFT_RX_QUIT)
			break;
		if (r)
			rx |= XFT_RX_REDRAW;
	}
	return rx;
}

static int curses_input_fd(struct xft_app *app)
{
	const struct curses_state *st = app->rstate;
	return st && st->tty ? fileno(st->tty) : STDIN_FILENO;
}

static void curses_stop(struct xft_app *app)
{
	struct curses_state *st = app->rstate;
	restore_terminal();
	if (st) {
		if (st->screen)
			delscreen(st->screen);
		if (st->tty)
			fclose(st->tty);
		free(st);
		app->rstate = NULL;
	}
}

const struct xft_renderer xft_renderer_curses = {
	.name = "curses",
	.start = curses_start,
	.frame = curses_draw,
	.draw = curses_draw,
	.input_fd = curses_input_fd,
	.input = curses_input,
	.resize = curses_resize,
	.stop = curses_stop,
};
