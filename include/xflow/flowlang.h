/*
 * xflow/flowlang.h — the flow language front end, as a library: load flow
 * files, expand xflows, check, and compile advice to bytecode.  Used by
 * `xflowc`, and later by `xflowc plan` and `xflowtop` (which add join-point
 * resolution against each domain's binaries on top of this).
 *
 * Usage: xflow_unit_new, then xflow_unit_add_file (or _add_buffer) for each
 * file, then xflow_unit_compile; read the results with the accessors; print
 * what went wrong with xflow_unit_print_diags; xflow_unit_free.
 */
#ifndef XFLOW_FLOWLANG_H
#define XFLOW_FLOWLANG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "xflow/bytecode.h"

struct xflow_unit;

struct xflow_unit_opts {
	unsigned max_errors;    /* 0: 20 */
	bool no_include;        /* refuse <include> (fuzzing, untrusted input) */
};

/* Where a compiled advice came from. */
enum xflow_advice_origin {
	XFLOW_ADVICE_USER,      /* an <advice> or <aspect> */
	XFLOW_ADVICE_START,     /* expansion of an xflow's <start> */
	XFLOW_ADVICE_TRANSIT,
	XFLOW_ADVICE_QUIT,
};

/* Placement flags of struct xflow_advice_info. */
enum xflow_advice_flag {
	XFLOW_ADVICE_AFTER = 1u << 0,   /* run after the join point's instruction */
	/* The xin_move trap: when the join point is an instruction that stores
	 * field after_store_field, run after it instead of before, or the
	 * program's own store overwrites the id bits just written. */
	XFLOW_ADVICE_AFTER_STORE = 1u << 1,
	/* It takes a flow from another domain through a ring header's bits
	 * (an unkeyed xout): its records may continue a handoff.  The
	 * monitor lets only records of sites where such advice is bound take
	 * an unkeyed handoff, so that a record anywhere else, a guest's lie
	 * or a flow whose beginning was lost, cannot take another's. */
	XFLOW_ADVICE_RECEIVES = 1u << 2,
	/* Of a point written notify="yes" (xflow(5)): where it runs, the
	 * domain has published its request and notifies the next one, so
	 * the hop that begins at its records crosses to the next vCPU at
	 * their time.  The monitor splits such a hop there instead of at the
	 * sender's first event-channel hypercall (tui/sched_join.h). */
	XFLOW_ADVICE_NOTIFIES = 1u << 3,
};

struct xflow_advice_info {
	enum xflow_advice_origin origin;
	int flow;                      /* flow index of xflow-derived advice, else -1 */
	unsigned flags;                /* enum xflow_advice_flag */
	int after_store_field;         /* field index, or -1 */
	unsigned rec_flags;            /* enum xflow_record_flag of what it does */
	const char *file;              /* where it was written */
	unsigned line, col;
	const struct xflow_bc_prog *prog;
};

int xflow_unit_new(struct xflow_unit **out, const struct xflow_unit_opts *opts);
void xflow_unit_free(struct xflow_unit *u);
/* -W option body: "all", "error", "no-<name>", "<name>".  -EINVAL if unknown. */
int xflow_unit_set_warning(struct xflow_unit *u, const char *opt);

/* Returns 0, or a negative errno (the reason is also a diagnostic). */
int xflow_unit_add_file(struct xflow_unit *u, const char *path);
int xflow_unit_add_buffer(struct xflow_unit *u, const char *name,
			  const void *buf, size_t len);
/* Expand, check, emit, verify.  Returns 0, or -EINVAL if any error. */
int xflow_unit_compile(struct xflow_unit *u);

unsigned xflow_unit_errors(const struct xflow_unit *u);
unsigned xflow_unit_warnings(const struct xflow_unit *u);
void xflow_unit_print_diags(const struct xflow_unit *u, FILE *out);
/* The first error as xflowc prints it, on one line with its note:
 * "file:line:col: message; what to write instead".  0, or -ENOENT when
 * there is no error (warnings do not count unless -Werror). */
int xflow_unit_first_error(const struct xflow_unit *u, char *buf, size_t len);

/* Compiled advice in weave order (xflow-derived first). */
size_t xflow_unit_advice_count(const struct xflow_unit *u);
int xflow_unit_advice(const struct xflow_unit *u, size_t i, struct xflow_advice_info *out);
size_t xflow_unit_flow_count(const struct xflow_unit *u);
const char *xflow_unit_flow_name(const struct xflow_unit *u, size_t i);
size_t xflow_unit_field_count(const struct xflow_unit *u);
/* Field i as {struct, member}; *min_bits is what xin/xout need of it. */
int xflow_unit_field(const struct xflow_unit *u, size_t i, const char **sname,
		     const char **member, unsigned *min_bits);

/* `xflowc dump`: the expanded advice as flow-file XML, in weave order;
 * with @bytecode, each advice's compiled program too. */
void xflow_unit_dump(const struct xflow_unit *u, FILE *out, bool bytecode);

/* Print one program, one instruction per line. */
void xflow_bc_dump(const struct xflow_unit *u, const struct xflow_bc_prog *p, FILE *out,
		   const char *indent);

/*
 * Does source path @path match the within_file() pattern @pattern (without
 * its @domain)?  "..." matches any run of whole components, none included;
 * a pattern without a leading '/' matches the end of the path.  So
 * "drivers/.../netfront.c" matches "sim/linux/drivers/xen/netfront/netfront.c".
 */
bool xflow_path_match(const char *pattern, const char *path);

/* The whole `xflowc` command, for the thin main and the tests. */
int xflowc_run(int argc, char **argv, FILE *out, FILE *err);

#endif
