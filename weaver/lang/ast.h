/*
 * weaver/lang/ast.h — the front end's syntax trees: pointcuts, advice code, and
 * xflow definitions.  All nodes live in the unit's arena and carry the
 * location of the token or element they came from.
 */
#ifndef XFLOW_WEAVER_LANG_AST_H
#define XFLOW_WEAVER_LANG_AST_H

#include <stdbool.h>
#include <stdint.h>

#include "weaver/lang/diag.h"
#include "weaver/lang/xml.h"

/* ---- pointcuts ---------------------------------------------------------- */

enum fl_pc_kind {
	FL_PC_AND,
	FL_PC_OR,
	FL_PC_NOT,
	FL_PC_ACCESS,          /* a = struct, b = member or "%" */
	FL_PC_WITHIN_FUNCTION, /* a = function, dom = domain or NULL */
	FL_PC_WITHIN_FILE,     /* a = path pattern, dom */
	FL_PC_CALL,            /* a = function, dom: function entry */
	FL_PC_RETURN,          /* a = function, dom: function return */
	FL_PC_TARGET,          /* a = variable bound to the accessed instance */
	FL_PC_LOCAL_VAR,       /* a = program local, b = variable bound to its address */
	FL_PC_XFLOW,           /* a = flow, b = keyed variable, c = id variable or NULL */
	FL_PC_TRACEPOINT,      /* a = "category:name", dom: a kernel tracepoint */
};

struct fl_pc {
	enum fl_pc_kind kind;
	struct fl_loc loc;     /* the keyword or operator */
	struct fl_pc *l, *r;   /* operands of AND/OR (l, r) and NOT (l) */
	const char *a, *b, *c, *dom;
	struct fl_loc aloc, bloc, cloc;
	bool generated;        /* added by xflow expansion */
};

/* ---- advice code: the C subset ------------------------------------------ */

enum fl_tbase { FL_T_VOID, FL_T_INT, FL_T_STRUCT };

struct fl_type {
	enum fl_tbase base;
	bool is_unsigned;
	uint8_t ptr;           /* levels of '*' */
	uint8_t size;          /* FL_T_INT: bytes in memory (for *p loads); every
	                        * local is a 64-bit cell whatever its type */
	bool member;           /* a p->m value: its C type is known only at plan
	                        * time, so it converts to integer or pointer */
	const char *sname;     /* FL_T_STRUCT */
};

enum fl_expr_kind {
	FL_E_NUM,
	FL_E_VAR,
	FL_E_PC,               /* $pc$ */
	FL_E_UNARY,            /* op: '-', '~', '!', '+' */
	FL_E_BINARY,           /* op: token kind of the operator */
	FL_E_ASSIGN,           /* op: '=' or the compound operator's base op */
	FL_E_CAST,
	FL_E_DEREF,            /* *x */
	FL_E_MEMBER,           /* x->name */
	FL_E_ELEM,             /* &x->a[r].m: name "a[].m", the element (or its
	                        * member) of an embedded array; its address */
	FL_E_CALL,             /* builtin call */
	FL_E_LAND,
	FL_E_LOR,
};

struct fl_sym;

struct fl_expr {
	enum fl_expr_kind kind;
	struct fl_loc loc;
	int op;
	uint64_t num;
	const char *name;      /* VAR, MEMBER member, CALL function */
	struct fl_expr *l, *r;
	struct fl_expr **args;
	size_t nargs;
	struct fl_type cast;   /* CAST */
	/* Filled in by the checker. */
	struct fl_type type;
	struct fl_sym *sym;    /* VAR */
	int field;             /* MEMBER: field table index */
	int flow;              /* CALL: flow index of a flow builtin */
	int builtin;           /* CALL: enum fl_builtin */
};

enum fl_stmt_kind { FL_S_DECL, FL_S_EXPR, FL_S_IF, FL_S_BLOCK, FL_S_EMPTY };

struct fl_stmt {
	enum fl_stmt_kind kind;
	struct fl_loc loc;
	struct fl_stmt *next;
	/* DECL */
	struct fl_type type;
	const char *name;
	struct fl_loc nloc;
	struct fl_expr *init;
	struct fl_sym *sym;
	/* EXPR, IF condition */
	struct fl_expr *expr;
	/* IF */
	struct fl_stmt *then, *els;
	/* BLOCK */
	struct fl_stmt *body;
};

/* A variable visible to advice code: bound by the pointcut or declared. */
enum fl_sym_kind { FL_SYM_INPUT, FL_SYM_LOCAL };

struct fl_sym {
	enum fl_sym_kind kind;
	const char *name;
	struct fl_type type;
	struct fl_loc loc;
	unsigned slot;
	bool used;
	int in_kind;            /* INPUT: enum xflow_bc_input_kind */
	const char *in_local;   /* INPUT from local_var(): the program's variable */
};

/* ---- xflow definitions -------------------------------------------------- */

#define FL_MAX_KEYS 4     /* <key>s of one xin */
#define FL_MAX_DEREF 4    /* '->' in one member chain */

enum fl_xop_kind {
	FL_X_MOVE, FL_X_COPY,
	FL_X_XIN_MOVE, FL_X_XIN_COPY,
	FL_X_XOUT_MOVE, FL_X_XOUT_COPY,
	FL_X_SPLIT,
};

struct fl_xop {
	enum fl_xop_kind kind;
	struct fl_loc loc;
	const char *name;      /* xin/xout */
	struct fl_loc name_loc;
	const char *from, *to;
	struct fl_loc from_loc, to_loc;
	/* xin: header bits ... */
	bool has_field;
	const char *field;
	unsigned offset, size;
	struct fl_loc field_loc, offset_loc, size_loc;
	/* ... or a key member both domains see (no free bits needed); several
	 * <key>s pack into one 64-bit key, the first in the highest bits. */
	bool has_key;
	bool carrier_seen;     /* a <field> or <key> was given, valid or not */
	const char *key;       /* keys[0].member */
	struct fl_loc key_loc;
	struct fl_xkey {
		const char *member;
		unsigned bits;     /* 0: the whole member (a lone <key> only) */
		struct fl_loc loc, bits_loc;
	} keys[FL_MAX_KEYS];
	size_t nkeys;
	/* xout with a key: the sending domain's id as the receiving side
	 * knows it, a member chain (<sender domid="queue->vif->domid"/>). */
	const char *sender;
	struct fl_loc sender_loc;
	struct fl_xflow *flow;
	const struct fl_xpoint *point; /* the transit it is in */
	const struct fl_xop *xin;   /* xout: its xin, after checking */
};

enum fl_xpoint_kind { FL_XP_START, FL_XP_TRANSIT, FL_XP_QUIT };

/* <cast var="PATH" struct="S"/>: the struct the pointer at PATH (a bound
 * variable or a member chain of one) points to, so that a chain through it
 * can name its members, as a C cast of a void * does. */
struct fl_xcast {
	const char *path, *sname;
	struct fl_loc loc;
};

struct fl_xpoint {
	enum fl_xpoint_kind kind;
	struct fl_loc loc;
	struct fl_pc *pc;
	const struct fl_xnode *pc_node;
	const char *select;          /* start/quit: <select local_var> */
	struct fl_loc select_loc;
	bool notifies;               /* notify="yes": XFLOW_ADVICE_NOTIFIES */
	struct fl_xop **ops;
	size_t nops, ops_cap;
	const struct fl_xnode *action;  /* free advice code, or NULL */
	struct fl_xcast *casts;
	size_t ncasts, casts_cap;
	struct fl_xpoint *next;
};

struct fl_xflow {
	const char *name;
	struct fl_loc loc;
	int index;                   /* flow kind */
	struct fl_xpoint *points, **tail;
	struct fl_xflow *next;
};

/* ---- advice ------------------------------------------------------------- */

enum fl_when { FL_BEFORE, FL_AFTER };

enum fl_origin { FL_ORIGIN_USER, FL_ORIGIN_START, FL_ORIGIN_TRANSIT, FL_ORIGIN_QUIT };

/* Source text of an advice body: a decoded element text or generated code.
 * loc_of(i) maps byte i to the file. */
struct fl_code {
	const char *text;
	size_t len;
	const struct fl_xnode *node;   /* text of this element, or NULL */
	struct fl_loc gen_loc;         /* generated code: every byte maps here */
};

struct fl_advice {
	struct fl_loc loc;
	enum fl_origin origin;
	enum fl_when when;
	struct fl_xflow *flow;         /* xflow-derived: its flow */
	struct fl_pc *pc;
	const struct fl_xnode *pc_node;
	struct fl_code code;
	struct fl_stmt *body;          /* parsed (and, after expansion, guarded) */
	const char *guard_open;        /* Figure 8 guard around the code, for dumps */
	const char *guard_close;
	unsigned rec_flags;            /* enum xflow_record_flag of its records */
	int after_store_field;         /* xin trap: place after stores of this field */
	bool receives;                 /* an unkeyed xout: XFLOW_ADVICE_RECEIVES */
	bool notifies;                 /* of a notify="yes" point: XFLOW_ADVICE_NOTIFIES */
	struct fl_advice *next;
	/* Checker results. */
	struct fl_sym **inputs;
	size_t ninputs, inputs_cap;
	struct fl_sym **locals;
	size_t nlocals, locals_cap;
	bool bad;                      /* had errors: not emitted */
	struct xflow_bc_prog *prog;    /* emitted */
};

#endif
