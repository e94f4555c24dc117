/*
 * weaver/lang/diag.h — source locations and gcc-style diagnostics.
 *
 * Every AST node carries a struct fl_loc: the source it came from and a byte
 * offset into that source's raw text.  Line and column are computed only when
 * a message is printed, so locations stay cheap to copy and to compare.
 * Columns are 1-based byte columns in the file as written (gcc's
 * -fdiagnostics-column-unit=byte), never within an element's decoded text.
 */
#ifndef XFLOW_WEAVER_LANG_DIAG_H
#define XFLOW_WEAVER_LANG_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "weaver/util.h"

struct fl_src {
	const char *path;       /* as given, or as resolved for an include */
	const char *text;       /* raw bytes, NUL-terminated copy */
	size_t len;
	uint32_t *lines;        /* byte offset of each line start */
	size_t nlines;
	unsigned seq;           /* load order, for sorting messages */
};

struct fl_loc {
	const struct fl_src *src; /* NULL: no location (command line, internal) */
	uint32_t off;
	uint32_t len;             /* bytes the caret underlines; 0 means 1 */
};

enum fl_sev { FL_SEV_ERROR, FL_SEV_WARNING, FL_SEV_NOTE };

/* Warnings that -W options switch; the -W name is in fl_warn_names. */
enum fl_warn {
	FL_W_UNUSED = 1u << 0,      /* -Wunused-binding: pointcut binds a variable no code reads */
	FL_W_TRUNCATION = 1u << 1,  /* -Wflowid-truncation: header field narrower than a flow id */
	FL_W_EMPTY_FLOW = 1u << 2,  /* -Wempty-flow: xflow with no start or no quit */
	FL_W_ALL = (1u << 3) - 1,
};

struct fl_warn_name {
	const char *name;
	enum fl_warn bit;
};
extern const struct fl_warn_name fl_warn_names[];

struct fl_msg {
	enum fl_sev sev;
	struct fl_loc loc;
	bool caret;             /* print the source line and a caret under loc */
	const char *text;
	const char *hint;       /* what to write instead; may be NULL */
	const char *wname;      /* the -W option of a warning, else NULL */
};

struct fl_diag {
	struct fl_arena *arena;  /* owner of messages and sources */
	struct fl_msg *msgs;
	size_t nmsgs, cap;
	unsigned nerrors, nwarnings;
	unsigned nsrcs;
	unsigned max_errors;     /* stop recording after this many errors; 0 = 20 */
	unsigned warn_enabled;   /* enum fl_warn bits */
	bool werror;             /* -Werror: warnings count as errors */
	bool stopped;            /* max_errors reached */
};

void fl_diag_init(struct fl_diag *d, struct fl_arena *arena);

struct fl_src *fl_src_new(struct fl_arena *arena, const char *path,
			  const char *text, size_t len);
void fl_loc_linecol(struct fl_loc loc, unsigned *line, unsigned *col);
struct fl_loc fl_loc_at(const struct fl_src *src, size_t off, size_t len);

/* Record an error.  @hint says what to write instead (may be NULL). */
void fl_error(struct fl_diag *d, struct fl_loc loc, const char *hint,
	      const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The same, with the source line and a caret under @loc. */
void fl_error_caret(struct fl_diag *d, struct fl_loc loc, const char *hint,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
void fl_warning(struct fl_diag *d, enum fl_warn w, struct fl_loc loc,
		const char *hint, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
void fl_note(struct fl_diag *d, struct fl_loc loc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Errors so far, counting warnings under -Werror. */
unsigned fl_diag_errors(const struct fl_diag *d);
void fl_diag_print(const struct fl_diag *d, FILE *out);
/* The first error in printed order, with its hint, on one line into @buf;
 * -ENOENT if none. */
int fl_diag_first_error(const struct fl_diag *d, char *buf, size_t len);
/* Parse a -W option body ("all", "error", "no-unused-binding", ...). */
int fl_diag_set_option(struct fl_diag *d, const char *opt);

#endif
