/*
 * weaver/jp/joinpoint.h — join points from a binary's own ELF symbols, DWARF
 * and machine code (DESIGN.md §2; KLASY's source-based binary-level weaving
 * without a modified compiler).
 *
 * One struct jp_image per binary: the ELF file (elf_image.c), its debug
 * info index (dwarf_index.c, the only file that includes libdwarf), and its
 * functions decoded on demand (insn_decode.c, the only file that includes
 * capstone).  Queries (access_find.c) turn pointcut primitives into
 * sites; weaver/plan_build.c tests each against a whole pointcut of the
 * front end.
 *
 * Addresses are link-time virtual addresses as the ELF file says; for PIE
 * executables and shared objects (ET_DYN) they are relative to the load
 * base, which the runtime adds at attach time (jp_image_is_relocatable()).
 * x86-64 only: other machines are refused with a clear error.
 *
 * Register numbers everywhere in this API and in plans are DWARF's x86-64
 * numbers: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp,
 * 8..15 r8..r15, 16 rip.
 *
 * Errors: functions return 0 or a negative errno and fill a struct jp_err
 * with one line that names the binary and what went wrong, with a "did you
 * mean" for a near name where one exists.
 */
#ifndef XFLOW_WEAVER_JP_JOINPOINT_H
#define XFLOW_WEAVER_JP_JOINPOINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "weaver/util.h"
#include "weaver/weave.h"

#define JP_REG_NONE 0xff
#define JP_REG_RIP 16
#define JP_NREGS 17

struct jp_err {
	char msg[1024];
};

/* ---- the debug-info index (filled by dwarf_index.c) ---------------------- */

enum jp_type_kind {
	JP_T_OTHER, JP_T_BASE, JP_T_POINTER, JP_T_STRUCT, JP_T_UNION, JP_T_TYPEDEF,
	JP_T_CV, JP_T_ARRAY, JP_T_ENUM, JP_T_FUNC,
};

struct jp_member {
	const char *name;        /* NULL: an anonymous struct/union member */
	uint64_t offset;         /* bytes from the start of the struct */
	uint64_t size;           /* bytes the member spans (bitfields: the bytes
	                          * its bits touch) */
	uint32_t bit_offset;     /* bitfields: first bit from the struct start */
	uint32_t bit_size;       /* 0 unless a bitfield */
	int32_t type;            /* index in jp_index.types, or -1 */
};

struct jp_type {
	uint64_t die;            /* global .debug_info offset: the key refs use */
	enum jp_type_kind kind;
	const char *name;        /* NULL if anonymous */
	uint64_t size;           /* byte size, 0 if unknown */
	int32_t target;          /* pointer/typedef/cv/array: the type it names */
	uint64_t target_die;     /* until resolved */
	bool is_signed;
	bool declaration;        /* incomplete: struct S; */
	int32_t def;             /* struct/union: the complete definition of
	                          * its name (itself if complete), or -1 */
	struct jp_member *members;
	uint32_t nmembers;
};

/* One DWARF expression operation, as decoded from DW_OP bytes. */
struct jp_op {
	uint8_t atom;            /* DW_OP_* */
	uint64_t a, b;
};

/* A location expression valid for [lo, hi); lo = 0, hi = UINT64_MAX for a
 * single expression that holds wherever the variable is in scope. */
struct jp_loc {
	uint64_t lo, hi;
	struct jp_op *ops;
	uint32_t nops;
};

struct jp_range {
	uint64_t lo, hi;
};

struct jp_var {
	const char *name;
	int32_t type;
	uint64_t type_die;
	bool param;
	struct jp_loc *locs;
	uint32_t nlocs;
	struct jp_range *scope;  /* lexical block ranges; NULL: the whole function */
	uint32_t nscope;
	const char *decl_file;
	uint32_t decl_line;
};

struct jp_func {
	const char *name;
	const char *linkage;
	uint32_t cu;
	struct jp_range *ranges;
	uint32_t nranges;
	uint64_t entry;          /* lowest address, or DW_AT_entry_pc */
	bool inlined;            /* an inlined instance (DW_TAG_inlined_subroutine) */
	bool external;
	int32_t parent;          /* inlined: the function it is inlined into */
	const char *call_file;   /* inlined: the call site */
	uint32_t call_line;
	const char *decl_file;
	uint32_t decl_line;
	struct jp_op *fb;        /* DW_AT_frame_base */
	uint32_t nfb;
	struct jp_var *vars;
	uint32_t nvars;
	int32_t ret_type;        /* what it returns (index in types), -1: void
	                          * or unknown */
	uint64_t ret_type_die;   /* until resolved */
	uint32_t ninl;           /* out-of-line: how many inlined instances (at
	                          * any depth) follow it in jp_index.funcs */
};

struct jp_cu {
	const char *name;        /* DW_AT_name as written */
	const char *comp_dir;
	const char *path;        /* name joined to comp_dir */
	const char *producer;
	uint16_t version;        /* DWARF version of the unit */
};

enum jp_line_flag { JP_LINE_STMT = 1, JP_LINE_PROLOGUE_END = 2, JP_LINE_END_SEQ = 4 };

struct jp_line {
	uint64_t addr;
	const char *file;        /* full path (comp_dir applied) */
	uint32_t line;
	uint32_t flags;          /* enum jp_line_flag */
};

/* A global or static variable with a fixed address. */
struct jp_global {
	const char *name;
	uint64_t addr;
	int32_t type;
	uint64_t type_die;
};

struct jp_index {
	struct fl_arena arena;
	struct jp_cu *cus;
	size_t ncus, cus_cap;
	struct jp_func *funcs;   /* concrete functions and inlined instances */
	size_t nfuncs, funcs_cap;
	const char **fnames;     /* every function name seen, sorted, unique
	                          * (abstract ones too): for "did you mean" */
	size_t nfnames, fnames_cap;
	struct jp_type *types;   /* sorted by die */
	size_t ntypes, types_cap;
	int32_t *named;          /* types with a name, by (name, index) */
	size_t nnamed;
	struct jp_line *lines;   /* sorted by address */
	size_t nlines, lines_cap;
	struct jp_global *globals;
	size_t nglobals, globals_cap;
	struct jp_fmap {
		uint64_t lo, hi;
		int32_t f;
	} *fmap;                 /* ranges of out-of-line functions, sorted */
	size_t nfmap;
	void *dw;                /* dwarf_index.c's private state (CFI) */
};

struct jp_elf;

/* Build @ix from the DWARF of @dbg_elf (the binary itself or its separate
 * debug file); CFI comes from @code_elf's .eh_frame when @dbg_elf has no
 * frame info.  -ENODATA: no DWARF at all. */
int jp_dwarf_index_build(struct jp_index *ix, struct jp_elf *dbg_elf,
			 struct jp_elf *code_elf, struct jp_err *err);
void jp_dwarf_index_fini(struct jp_index *ix);
/* The CFA rule at @pc: CFA = value of register *reg + *off.  -ENOENT if no
 * CFI covers @pc or the rule is an expression. */
int jp_dwarf_cfa(struct jp_index *ix, uint64_t pc, unsigned *reg, int64_t *off);

/* ---- ELF (elf_image.c) --------------------------------------------------- */

struct jp_elf {
	char *name;              /* for messages */
	unsigned char *data;     /* the whole file */
	size_t size;
	void *elf;               /* Elf * of libelf */
	uint16_t type;           /* ET_EXEC, ET_DYN, ET_REL */
	bool has_symtab;
	bool has_dwarf;          /* a non-empty .debug_info */
	char build_id[41 + 64];  /* hex, "" if none */
	char debuglink[256];     /* .gnu_debuglink file name, "" if none */
	struct jp_elf_sec {
		uint64_t addr, size, off;
		bool exec;
	} *secs;
	size_t nsecs;
	struct jp_elf_sym {
		const char *name;
		uint64_t addr, size;
	} *syms;                 /* FUNC symbols, sorted by address */
	size_t nsyms;
	char *symstr;            /* owned copy of names */
};

/* Open and validate an ELF file (bounds of every header and section).  The
 * _mem form copies @buf. */
int jp_elf_open(struct jp_elf *e, const char *path, struct jp_err *err);
int jp_elf_open_mem(struct jp_elf *e, const char *name, const void *buf, size_t len,
		    struct jp_err *err);
void jp_elf_close(struct jp_elf *e);
/* Bytes of an executable section at @addr: pointer and bytes available. */
const uint8_t *jp_elf_code(const struct jp_elf *e, uint64_t addr, size_t *avail);

/* ---- decoded code (insn_decode.c) ---------------------------------------- */

enum jp_insn_kind {
	JP_I_OTHER, JP_I_MOV, JP_I_LEA, JP_I_CALL, JP_I_RET, JP_I_JMP, JP_I_JCC,
	JP_I_NOMEM,   /* has a memory operand that is not an access (nop, prefetch) */
	JP_I_HALT,    /* hlt, ud2, int3: ends a block */
	JP_I_ADD,     /* add/sub reg, reg or imm (sub as add of -imm) */
	JP_I_SHL,     /* shl reg, imm */
};

enum jp_access { JP_ACC_READ = 1, JP_ACC_WRITE = 2 };

struct jp_insn {
	uint64_t addr;
	uint64_t target;         /* direct branch or call target, else 0 */
	int64_t disp;            /* memory operand */
	uint16_t wregs;          /* GPRs (DWARF numbers 0..15) written */
	uint8_t len;
	uint8_t kind;            /* enum jp_insn_kind */
	uint8_t has_mem;
	uint8_t base, index;     /* DWARF numbers, JP_REG_NONE */
	uint8_t scale;
	uint8_t msize;           /* bytes accessed */
	uint8_t macc;            /* enum jp_access */
	uint8_t dst, src;        /* MOV/LEA: destination register; MOV reg, reg: source */
	uint8_t dst_size;        /* bytes of dst written */
	bool leader;             /* starts a basic block */
	bool jtarget;            /* a direct branch goes here */
	int64_t imm;             /* ADD, SHL: the immediate (src is JP_REG_NONE) */
	uint32_t npred;          /* instructions control can come from ... */
	uint32_t pred0;          /* ... in jp_code.preds[pred0 .. pred0+npred) */
};

struct jp_code {
	struct jp_insn *insns;
	size_t ninsns;
	bool truncated;          /* bytes ran out or did not decode */
	bool has_indirect;       /* an indirect jump: blocks may have entries
	                          * nobody can see, so every npred is 0 */
	uint32_t *preds;         /* predecessor lists (instruction indexes) */
};

int jp_code_decode(const struct jp_elf *e, const struct jp_range *ranges, size_t nranges,
		   struct jp_code *out, struct jp_err *err);
void jp_code_free(struct jp_code *c);
/* "mov rax, qword ptr [rbp - 0x18]" for the instruction at @addr. */
int jp_insn_text(const struct jp_elf *e, uint64_t addr, char *buf, size_t len);
const char *jp_reg_name(unsigned dwarf_reg);

/* ---- the image: a binary, its debug info and its code --------------------- */

struct jp_image_opts {
	const char *debug_root;  /* where build-id and debuglink files live;
	                          * NULL: /usr/lib/debug */
};

struct jp_image;

int jp_image_open(struct jp_image **out, const char *path,
		  const struct jp_image_opts *opts, struct jp_err *err);
/* The same over a memory buffer (copied); no separate debug file lookup. */
int jp_image_open_mem(struct jp_image **out, const char *name, const void *buf,
		      size_t len, struct jp_err *err);
void jp_image_free(struct jp_image *img);

const char *jp_image_path(const struct jp_image *img);
const char *jp_image_debug_path(const struct jp_image *img); /* where DWARF came from */
const char *jp_image_build_id(const struct jp_image *img);   /* hex, "" if none */
bool jp_image_is_relocatable(const struct jp_image *img);     /* PIE or .so */
struct jp_index *jp_image_index(struct jp_image *img);
const struct jp_elf *jp_image_elf(const struct jp_image *img);
/* The function symbol at exactly @addr named @name, else one named @name
 * and a suffix after a dot (a copy GCC made: name.part.0, name.cold,
 * name.constprop.0), else NULL. */
const char *jp_image_symbol_at(const struct jp_image *img, uint64_t addr, const char *name);
/* Decoded code of function @f (index into the index's funcs), cached. */
const struct jp_code *jp_image_code(struct jp_image *img, size_t f, struct jp_err *err);

/* ---- fetch recipes and sites --------------------------------------------- */

enum jp_recipe_kind {
	JP_RECIPE_NONE = 0,
	JP_RECIPE_REG = 1,       /* the value is in register reg */
	JP_RECIPE_MEM = 2,       /* the variable lives at address reg + off */
	JP_RECIPE_STATIC = 3,    /* the variable lives at load base + off */
	JP_RECIPE_VALUE = 4,     /* the value is reg + index * scale + off
	                          * (DW_OP_stack_value, or an element's
	                          * address); no address of its own */
};

struct jp_recipe {
	uint8_t kind;            /* enum jp_recipe_kind */
	uint8_t reg;
	uint8_t size;            /* bytes of the variable, 0 if unknown */
	uint8_t index, scale;    /* VALUE: scale 0 means no index register */
	int64_t off;
};

enum jp_site_kind {
	JP_SITE_LOAD = 1,        /* the instruction reads the member */
	JP_SITE_STORE = 2,       /* writes it */
	JP_SITE_RMW = 3,         /* reads and writes it (add [rdi+8], 1) */
	JP_SITE_ENTRY = 4,       /* call(f): after the prologue */
	JP_SITE_RETURN = 5,      /* return(f): a return instruction */
};

struct jp_site {
	uint64_t addr;
	uint8_t len;             /* instruction bytes */
	uint8_t kind;            /* enum jp_site_kind */
	const char *file;
	uint32_t line;
	const char *func;        /* innermost function (the inlined one, if so) */
	const char *inlined_into;/* the out-of-line function holding the code,
	                          * NULL if func is not inlined here */
	int32_t fidx;            /* innermost function index */
	int32_t outer;           /* out-of-line function index */
	char text[96];           /* the instruction */
	/* Accesses. */
	const char *sname;
	const char *member;      /* the member asked for, or the first touched */
	uint64_t moff;           /* byte range touched, relative to the struct */
	uint32_t msize;
	struct jp_recipe target; /* the base pointer: the struct instance */
	const char *why;         /* how the base was typed, for dumps */
	const char *clone;       /* call(f): the symbol of the copy of f this
	                          * entry is in (f.constprop.0), NULL: f's own */
	bool self_inlined;       /* call(f): an instance of f inlined into f */
};

struct jp_sites {
	struct jp_site *v;
	size_t n, cap;
	/* access(): instructions in scope that may touch the member asked
	 * (the displacement falls inside it) but whose base register the
	 * typer could not type, so they are not sites; kind, place, sname,
	 * member, moff (the displacement) and msize are filled.  For
	 * access(S.%) only in a function scope: elsewhere that would be most
	 * memory accesses of the binary. */
	struct jp_site *untyped;
	size_t nuntyped, untyped_cap;
	/* call(f): places that look like an entry of f and are not one (a
	 * part GCC split off f), so no site; why says which. */
	struct jp_site *passed;
	size_t npassed, passed_cap;
};

void jp_sites_free(struct jp_sites *s);

/*
 * A scope: the functions and files a query looks in.  Empty lists mean
 * everything.  Function names match the function itself, its inlined
 * instances, and code inlined into it.  File patterns are matched against
 * the site's source file (the line table's, comp_dir applied) with the
 * front end's xflow_path_match(): "..." matches any run of components
 * (none too), and a pattern without a leading '/' matches a suffix.
 */
struct jp_scope {
	const char *const *funcs;
	size_t nfuncs;
	const char *const *files;
	size_t nfiles;
};

bool jp_path_match(const char *pattern, const char *path);

/* access(S.m) (member "%" or NULL: any member; "a.b" walks nested
 * members), in @scope, appended to @out sorted by address.  -ENOENT with a
 * did-you-mean when S or m does not exist; 0 with no sites added when
 * nothing in scope touches it. */
int jp_find_access(struct jp_image *img, const char *sname, const char *member,
		   const struct jp_scope *scope, struct jp_sites *out, struct jp_err *err);
/* call(f): each instance's entry, one per call: out-of-line copies at
 * their symbol's address (or after the prologue when every call goes
 * there straight from it), inlined instances at their entry (those inlined
 * into f itself marked self_inlined); GCC's split parts go to out->passed
 * instead.
 * return(f): each return instruction of the out-of-line copies, and tail
 * jumps out of them. */
int jp_find_entry(struct jp_image *img, const char *func, const struct jp_scope *scope,
		  struct jp_sites *out, struct jp_err *err);
int jp_find_return(struct jp_image *img, const char *func, const struct jp_scope *scope,
		   struct jp_sites *out, struct jp_err *err);
/* How to read variable @name at @site: visible there (parameter or local of
 * the innermost function, then the enclosing ones).  -ENOENT: no such
 * variable (did you mean); -ENODATA: optimized out at this site (the
 * message names the site). */
int jp_local_var(struct jp_image *img, const struct jp_site *site, const char *name,
		 struct jp_recipe *out, struct jp_err *err);
/* Layout of S.m: byte offset, size, bit offset/size (0 if not a bitfield),
 * signedness and pointerness of its type. */
struct jp_field_layout {
	uint64_t offset, size;
	uint32_t bit_offset, bit_size;
	bool is_signed, is_ptr;
};
int jp_field_layout(struct jp_image *img, const char *sname, const char *member,
		    struct jp_field_layout *out, struct jp_err *err);

/* Function index containing @addr (innermost inlined instance), or -1. */
int32_t jp_func_at(struct jp_index *ix, uint64_t addr, bool innermost);
/* Line-table row for @addr, or NULL. */
const struct jp_line *jp_line_at(const struct jp_index *ix, uint64_t addr);
/* Struct (or union, or typedef of one) named @name with members, or -1. */
int32_t jp_struct_find(const struct jp_index *ix, const char *name);
/* Strip typedefs and qualifiers. */
int32_t jp_type_strip(const struct jp_index *ix, int32_t t);

/* Levenshtein distance, capped at @cap + 1. */
unsigned jp_edit_distance(const char *a, const char *b, unsigned cap);

void jp_site_print(const struct jp_site *s, FILE *out);

/* ---- plans (plan_build.c): weaver/weave.h ---------------------------------- */

/*
 * `xflowc plan` (plan_cmd.c): @argv is xflowc's own (argv[1] == "plan";
 * a call without the program name, argv[0] == "plan", works too), and the
 * return value is the exit status: 0 clean, 1 errors, 2 usage.  xflowc's
 * dispatcher calls xflowc_plan_main(argc, argv) when argv[1] is "plan";
 * xflowc_plan_run is the same with the streams given, for tests.
 */
int xflowc_plan_run(int argc, char **argv, FILE *out, FILE *err);
int xflowc_plan_main(int argc, char **argv);
/* The help lines of the options only `xflowc plan` takes. */
extern const char xflowc_plan_options[];
void jp_recipe_print(const struct jp_recipe *r, FILE *out);

#endif
