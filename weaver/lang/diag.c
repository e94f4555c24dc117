/*
 * Diagnostics: collected during every pass, printed once, gcc-style:
 *
 *   file:line:col: error: message
 *    7 |   access(sk_buff.) AND
 *      |                  ^
 *   file:line:col: note: hint
 */
#include "weaver/lang/diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_MAX_ERRORS 20

const struct fl_warn_name fl_warn_names[] = {
	{ "unused-binding", FL_W_UNUSED },
	{ "flowid-truncation", FL_W_TRUNCATION },
	{ "empty-flow", FL_W_EMPTY_FLOW },
	{ NULL, 0 },
};

void fl_diag_init(struct fl_diag *d, struct fl_arena *arena)
{
	memset(d, 0, sizeof(*d));
	d->arena = arena;
	d->max_errors = DEFAULT_MAX_ERRORS;
	/* The rest are for -Wall: each fires on correct files too (a fragment
	 * with no <start>, the paper's own 12-bit field). */
	d->warn_enabled = 0;
}

struct fl_src *fl_src_new(struct fl_arena *arena, const char *path,
			  const char *text, size_t len)
{
	struct fl_src *s = fl_arena_alloc(arena, sizeof(*s));
	s->path = fl_arena_strdup(arena, path);
	s->text = fl_arena_strndup(arena, text, len);
	s->len = len;
	size_t n = 1;
	for (size_t i = 0; i < len; i++)
		n += text[i] == '\n';
	s->lines = fl_arena_alloc(arena, n * sizeof(*s->lines));
	s->lines[0] = 0;
	s->nlines = 1;
	for (size_t i = 0; i < len; i++)
		if (text[i] == '\n')
			s->lines[s->nlines++] = (uint32_t)(i + 1);
	return s;
}

struct fl_loc fl_loc_at(const struct fl_src *src, size_t off, size_t len)
{
	struct fl_loc l = { src, (uint32_t)off, (uint32_t)len };
	return l;
}

void fl_loc_linecol(struct fl_loc loc, unsigned *line, unsigned *col)
{
	*line = *col = 0;
	if (!loc.src)
		return;
	size_t lo = 0, hi = loc.src->nlines;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (loc.src->lines[mid] <= loc.off)
			lo = mid;
		else
			hi = mid;
	}
	*line = (unsigned)lo + 1;
	*col = loc.off - loc.src->lines[lo] + 1;
}

static void add(struct fl_diag *d, enum fl_sev sev, struct fl_loc loc,
		bool caret, const char *hint, const char *wname,
		const char *fmt, va_list ap) __attribute__((format(printf, 7, 0)));

static void add(struct fl_diag *d, enum fl_sev sev, struct fl_loc loc,
		bool caret, const char *hint, const char *wname,
		const char *fmt, va_list ap)
{
	if (d->stopped)
		return;
	if (sev == FL_SEV_ERROR && d->nerrors >= d->max_errors) {
		d->stopped = true;
		return;
	}
	struct fl_buf b = { 0 };
	fl_buf_vprintf(&b, fmt, ap);
	struct fl_msg m = {
		.sev = sev,
		.loc = loc,
		.caret = caret,
		.text = fl_arena_strndup(d->arena, b.s ? b.s : "", b.len),
		.hint = hint ? fl_arena_strdup(d->arena, hint) : NULL,
		.wname = wname,
	};
	fl_buf_free(&b);
	FL_PUSH(d->arena, d->msgs, d->nmsgs, d->cap, m);
	if (sev == FL_SEV_ERROR)
		d->nerrors++;
	else if (sev == FL_SEV_WARNING)
		d->nwarnings++;
}

void fl_error(struct fl_diag *d, struct fl_loc loc, const char *hint,
	      const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add(d, FL_SEV_ERROR, loc, false, hint, NULL, fmt, ap);
	va_end(ap);
}

void fl_error_caret(struct fl_diag *d, struct fl_loc loc, const char *hint,
		    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add(d, FL_SEV_ERROR, loc, true, hint, NULL, fmt, ap);
	va_end(ap);
}

void fl_warning(struct fl_diag *d, enum fl_warn w, struct fl_loc loc,
		const char *hint, const char *fmt, ...)
{
	if (!(d->warn_enabled & w))
		return;
	const char *wname = NULL;
	for (const struct fl_warn_name *n = fl_warn_names; n->name; n++)
		if (n->bit == w)
			wname = n->name;
	va_list ap;
	va_start(ap, fmt);
	add(d, FL_SEV_WARNING, loc, false, hint, wname, fmt, ap);
	va_end(ap);
}

void fl_note(struct fl_diag *d, struct fl_loc loc, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	add(d, FL_SEV_NOTE, loc, false, NULL, NULL, fmt, ap);
	va_end(ap);
}

unsigned fl_diag_errors(const struct fl_diag *d)
{
	return d->nerrors + (d->werror ? d->nwarnings : 0);
}

static void print_prefix(FILE *out, struct fl_loc loc)
{
	unsigned line, col;
	if (!loc.src) {
		fputs("xflowc: ", out);
		return;
	}
	fl_loc_linecol(loc, &line, &col);
	fprintf(out, "%s:%u:%u: ", loc.src->path, line, col);
}

/* The offending line, then a caret under the token; tabs are kept so the
 * caret lines up in any terminal. */
static void print_caret(FILE *out, struct fl_loc loc)
{
	unsigned line, col;
	fl_loc_linecol(loc, &line, &col);
	const char *s = loc.src->text + loc.src->lines[line - 1];
	size_t n = strcspn(s, "\n");
	if (n > 0 && s[n - 1] == '\r')
		n--;
	fprintf(out, " %5u | %.*s\n       | ", line, (int)n, s);
	for (unsigned i = 0; i + 1 < col && i < n; i++)
		fputc(s[i] == '\t' ? '\t' : ' ', out);
	fputc('^', out);
	for (unsigned i = 1; i < loc.len && col - 1 + i < n; i++)
		fputc('~', out);
	fputc('\n', out);
}

/* Messages print in source order (file, then offset), whichever pass found
 * them, as a reader walks the file; ties keep the order they were found. */
static int msg_cmp(const void *pa, const void *pb)
{
	const struct fl_msg *a = *(const struct fl_msg *const *)pa;
	const struct fl_msg *b = *(const struct fl_msg *const *)pb;
	unsigned sa = a->loc.src ? a->loc.src->seq : 0, sb = b->loc.src ? b->loc.src->seq : 0;
	if (sa != sb)
		return sa < sb ? -1 : 1;
	if (a->loc.off != b->loc.off)
		return a->loc.off < b->loc.off ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* The messages in the order they print; free() the array. */
static const struct fl_msg **msgs_sorted(const struct fl_diag *d)
{
	const struct fl_msg **order = malloc((d->nmsgs + 1) * sizeof(*order));
	if (!order)
		fl_oom();
	for (size_t i = 0; i < d->nmsgs; i++)
		order[i] = &d->msgs[i];
	qsort(order, d->nmsgs, sizeof(*order), msg_cmp);
	return order;
}

int fl_diag_first_error(const struct fl_diag *d, char *buf, size_t len)
{
	const struct fl_msg **order = msgs_sorted(d);
	int rc = -ENOENT;
	for (size_t i = 0; i < d->nmsgs && rc; i++) {
		const struct fl_msg *m = order[i];
		if (m->sev != FL_SEV_ERROR && !(m->sev == FL_SEV_WARNING && d->werror))
			continue;
		unsigned line, col;
		fl_loc_linecol(m->loc, &line, &col);
		if (m->loc.src)
			snprintf(buf, len, "%s:%u:%u: %s%s%s", m->loc.src->path, line, col, m->text,
				 m->hint ? "; " : "", m->hint ? m->hint : "");
		else
			snprintf(buf, len, "%s%s%s", m->text, m->hint ? "; " : "", m->hint ? m->hint : "");
		rc = 0;
	}
	free(order);
	return rc;
}

void fl_diag_print(const struct fl_diag *d, FILE *out)
{
	static const char *const sevname[] = { "error", "warning", "note" };
	const struct fl_msg **order = msgs_sorted(d);
	for (size_t i = 0; i < d->nmsgs; i++) {
		const struct fl_msg *m = order[i];
		const char *sev = sevname[m->sev];
		if (m->sev == FL_SEV_WARNING && d->werror)
			sev = "error";
		print_prefix(out, m->loc);
		fprintf(out, "%s: %s", sev, m->text);
		if (m->wname)
			fprintf(out, " [-W%s%s]", d->werror ? "error=" : "", m->wname);
		fputc('\n', out);
		if (m->caret && m->loc.src)
			print_caret(out, m->loc);
		if (m->hint) {
			print_prefix(out, m->loc);
			fprintf(out, "note: %s\n", m->hint);
		}
	}
	free(order);
	if (d->stopped)
		fprintf(out, "xflowc: too many errors (%u), stopping; use --max-errors=N to see more\n",
			d->max_errors);
}

int fl_diag_set_option(struct fl_diag *d, const char *opt)
{
	bool no = false;
	if (strcmp(opt, "all") == 0 || strcmp(opt, "extra") == 0) {
		d->warn_enabled = FL_W_ALL;
		return 0;
	}
	if (strcmp(opt, "error") == 0) {
		d->werror = true;
		return 0;
	}
	if (strcmp(opt, "no-error") == 0) {
		d->werror = false;
		return 0;
	}
	if (strncmp(opt, "no-", 3) == 0) {
		no = true;
		opt += 3;
	}
	for (const struct fl_warn_name *n = fl_warn_names; n->name; n++) {
		if (strcmp(n->name, opt) == 0) {
			if (no)
				d->warn_enabled &= ~n->bit;
			else
				d->warn_enabled |= n->bit;
			return 0;
		}
	}
	return -EINVAL;
}
