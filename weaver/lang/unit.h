/*
 * weaver/lang/unit.h — one compilation: the files given together, their
 * includes, and the tables the passes fill.  Passes, in order:
 *
 *   flow_build.c     XML tree → flows and advice (elements, attributes)
 *   pointcut_parse.c pointcut text → struct fl_pc
 *   advice_parse.c   advice text → statements
 *   xflow_expand.c   flows → advice (Figures 5–7), xflow() guards (Figure 8)
 *   advice_check.c   names, bindings, types
 *   advice_emit.c    statements → bytecode, then bytecode_verify.c
 */
#ifndef XFLOW_WEAVER_LANG_UNIT_H
#define XFLOW_WEAVER_LANG_UNIT_H

#include <stdbool.h>
#include <stddef.h>

#include "weaver/lang/ast.h"
#include "weaver/lang/diag.h"
#include "weaver/util.h"
#include "xflow/bytecode.h"
#include "xflow/flowlang.h"

/* A struct member some advice reads or writes: offset and size come from
 * DWARF at plan time (issue 4); min_bits is what the advice needs. */
struct fl_field {
	const char *sname, *member;
	unsigned min_bits;      /* xin/xout header bits: offset + size */
	struct fl_loc loc;      /* its first use, for messages */
};

/* How deep <include> may nest. */
#define FL_MAX_INCLUDE_DEPTH 8
/* Advice code and pointcuts nest no deeper than this. */
#define FL_MAX_NEST 64
/* Nodes per advice body and primitives per pointcut: bound the depth of
 * left-leaning chains (a + b + c ..., a AND b AND c ...) as well. */
#define FL_MAX_NODES 2048
#define FL_MAX_PRIMS 256

struct xflow_unit {
	struct fl_arena arena;
	struct fl_diag diag;
	struct xflow_unit_opts opts;
	struct fl_xflow *flows, **flows_tail;
	size_t nflows;
	struct fl_advice *user, **user_tail;   /* general advice, file order */
	struct fl_advice *woven;               /* weave order, after expansion */
	size_t nwoven;
	struct fl_advice **by_index;
	struct fl_field *fields;
	size_t nfields, fields_cap;
	struct fl_map flow_map;                /* name → struct fl_xflow */
	struct fl_map field_map;               /* "struct.member" → index + 1 */
	struct fl_map xin_map;                 /* xin name → struct fl_xop (first) */
	const char **files;                    /* canonical paths loaded */
	size_t nfiles, files_cap;
	unsigned gensym;                       /* counter for generated names */
	bool compiled;
};

/* The builtins of the advice language. */
enum fl_builtin {
	FL_B_GET_NEW_FLOWID,
	FL_B_GET_FLOWID,
	FL_B_REGISTER_FLOWID,
	FL_B_REMOVE_FLOWID,
	FL_B_DO_RDTSC,
	FL_B_STORE_DATA,       /* STORE_DATA1 .. STORE_DATA6 */
	FL_B_STORE_HANDOFF_OUT,
	FL_B_STORE_HANDOFF_IN,
	FL_B_STORE_HANDOFF_IN_FROM,
	FL_B_STORE_SPLIT,
};

/* Passes (each in its own file). */
int fl_build_file(struct xflow_unit *u, const char *path, int depth,
		  struct fl_loc from);
int fl_build_buffer(struct xflow_unit *u, const char *path, const char *buf,
		    size_t len, int depth);
struct fl_pc *fl_pointcut_parse(struct xflow_unit *u, const struct fl_xnode *n);
struct fl_stmt *fl_advice_parse(struct xflow_unit *u, const struct fl_code *code,
				bool *ok);
void fl_xflow_expand(struct xflow_unit *u);
void fl_advice_check(struct xflow_unit *u, struct fl_advice *a);
int fl_advice_emit(struct xflow_unit *u, struct fl_advice *a);

/* Helpers shared by passes. */
struct fl_xflow *fl_unit_flow(struct xflow_unit *u, const char *name);
int fl_unit_field(struct xflow_unit *u, const char *sname, const char *member, struct fl_loc where);
struct fl_loc fl_code_loc(const struct fl_code *c, size_t i, size_t len);
void fl_pc_print(struct fl_buf *b, const struct fl_pc *pc);
bool fl_ident_ok(const char *s);

#endif
