/*
 * xflow/plan.h — the weave plan: what `xflowc plan -o` writes and what the
 * agent in each domain (guestrt/) loads to know where to hook, what to run
 * there, and how to fetch the advice's inputs.
 *
 * The plan carries, once: the flow table (xflow definitions, numbered as the
 * records' flow_kind), the field table ({struct, member} pairs the advice
 * reads or writes, numbered as in the bytecode's LDF/STF), and the compiled
 * advice (xflow/bytecode.h programs, in weave order: xflow-derived first).
 * Per domain: the binaries it was resolved against, the field table's
 * layout in that domain's binaries (offsets differ between builds), the site
 * table, which advice runs at which site (bindings, in weave order), and the
 * fetch recipe of every input of every binding.
 *
 * Addresses of sites and of STATIC fetches are link-time virtual addresses
 * of the binary the site belongs to; if that binary is relocatable (PIE or
 * shared object, XFLOW_PLAN_BIN_RELOCATABLE) the agent adds the load base
 * it finds at attach time.  Registers are DWARF x86-64 numbers: 0 rax,
 * 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8..15 r8..r15, 16 rip.
 *
 * ---- The file format (version 5) -------------------------------------------
 *
 * All integers little-endian, no padding between fields; records follow one
 * another in the order below.  A string is a u32 offset into the string
 * table; offset 0 is the empty string, which stands for "none".
 *
 *   header, 64 bytes:
 *     0  magic "XFLOWPLN" (8 bytes)
 *     8  u32 version              XFLOW_PLAN_VERSION
 *    12  u32 bc_version           XFLOW_BC_VERSION of the programs
 *    16  u64 file_size            the whole file, header included
 *    24  u32 strtab_off           from the start of the file
 *    28  u32 strtab_size          bytes; the table starts and ends with NUL
 *    32  u32 nflows
 *    36  u32 nfields
 *    40  u32 nadvice
 *    44  u32 ndomains
 *    48  u32 checksum             FNV-1a (32 bits) of bytes [64, file_size)
 *    52  u32 flags                0
 *    56  u64 reserved             0
 *   flows, nflows × { u32 name }
 *   fields, nfields × { u32 struct, u32 member }
 *   advice, nadvice × {
 *     u32 origin (enum xflow_advice_origin), i32 flow (-1: none),
 *     u32 flags (enum xflow_advice_flag; RECEIVES only from version 4,
 *                NOTIFIES only from version 5),
 *     i32 after_store_field (-1: none),
 *     u32 rec_flags, u32 file, u32 line, u32 col,
 *     u32 ninsns, u32 nconsts, u32 nlocals, u32 ninputs,
 *     insns:   ninsns × { u8 op, u8 a, u16 b, i32 k },
 *     consts:  nconsts × u64,
 *     locals:  nlocals × u8 (enum xflow_bc_type),
 *     inputs:  ninputs × { u8 kind, u8 type, u32 local, u32 struct } }
 *   domains, ndomains × {
 *     u32 name, u32 nbinaries, u32 nsites, u32 nbindings, u32 nfetches,
 *     binaries: nbinaries × { u32 path, u32 build_id (hex), u32 flags,
 *                             u64 size, u64 code_hash }   (version 3),
 *     layouts:  nfields × { i64 offset (-1: not in this domain), u32 size,
 *                           u32 bit_offset, u32 bit_size, u32 flags,
 *                           u32 nelems, u32 stride },
 *     sites:    nsites × { u64 addr, u32 binary, u8 kind, u8 len,
 *                          u8 when_mask, u32 file, u32 line, u32 func,
 *                          u32 inlined_into, u32 insn, i32 field,
 *                          u32 struct, u32 member, u32 moff, u32 msize,
 *                          fetch target },
 *     bindings: nbindings × { u32 site, u32 advice, u8 when, u8 ninputs,
 *                             u32 first_fetch },
 *     fetches:  nfetches × fetch }
 *   where fetch = { u8 kind, u8 reg, u8 size, u8 index, u8 scale, i64 off }
 *   string table, strtab_size bytes
 *
 * Rules a reader enforces (xflow_plan_read; a plan file is hostile input):
 * sizes and the checksum match; every count fits in what is left of the
 * file; every string offset is inside the table and NUL-terminated there;
 * every index (flow, field, binary, site, advice, fetch) is in range; enums
 * hold known values; sites are sorted by (binary, addr, kind) without
 * duplicates; bindings are sorted by site, and within a site they are in
 * weave order (the order of the advice table); a binding's inputs are the
 * advice's inputs and each has a fetch recipe; every program passes
 * xflow_bc_verify().
 *
 * Identity of a binary.  A binary with a build id is the build of that id.
 * One without (linked with --build-id=none, or stripped of its note) is
 * known by what planning saw instead: its size in bytes, and code_hash,
 * xflow_plan_hash() of the bytes of every one of its sites' instructions
 * (len bytes at addr, in the file's PT_LOAD image) in site order.  Both 0:
 * not recorded (a kernel; a version 2 plan, which the reader still takes,
 * binaries without them).  The agent refuses to patch a mapped file that
 * differs (guestrt/agent).
 *
 * Determinism: the writer emits tables in the order the in-memory plan has
 * them and interns strings in order of first use, with no time stamps or
 * pointers; the same plan gives the same bytes.
 */
#ifndef XFLOW_PLAN_H
#define XFLOW_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "xflow/bytecode.h"

#define XFLOW_PLAN_MAGIC "XFLOWPLN"
/* 3: a binary's size and code_hash.
 * 4: the advice flag XFLOW_ADVICE_RECEIVES.  Nothing else changed, but a
 *    reader of version 3 would refuse the flag as an unknown bit of one
 *    advice; the version tells it what it faces instead ("plan: version 4,
 *    this reader knows 2 to 3").  Versions 2 and 3 are read too: they have
 *    no RECEIVES, so their sites' roles are not known (xflow_plan_site_roles).
 * 5: the advice flag XFLOW_ADVICE_NOTIFIES (a point written notify="yes"),
 *    for the same reason: an agent of version 4 names the version instead
 *    of calling the bit an unknown flag.  A NOTIFIES bit in an older plan
 *    is refused as damage. */
#define XFLOW_PLAN_VERSION 5
#define XFLOW_PLAN_VERSION_MIN 2
#define XFLOW_PLAN_HEADER_SIZE 64

/* Limits a reader accepts; `xflowc check` holds a unit to the advice,
 * field and flow limits before any plan is built. */
#define XFLOW_PLAN_MAX_DOMAINS 256
#define XFLOW_PLAN_MAX_ADVICE 65536
#define XFLOW_PLAN_MAX_FIELDS 65535
#define XFLOW_PLAN_MAX_FLOWS 65535
#define XFLOW_PLAN_MAX_SITES (1u << 24)

enum xflow_plan_site_kind {
	XFLOW_SITE_LOAD = 1,     /* the instruction reads the member */
	XFLOW_SITE_STORE = 2,    /* writes it */
	XFLOW_SITE_RMW = 3,      /* reads and writes it */
	XFLOW_SITE_ENTRY = 4,    /* call(f): function entry after the prologue */
	XFLOW_SITE_RETURN = 5,   /* return(f): a return (or tail jump) */
	XFLOW_SITE_TRACEPOINT = 6, /* tracepoint(c:n) of a kernel domain: func is
	                          * "c:n", addr a key unique in the domain */
};

/* A fetch recipe: how the agent computes an input at a site.  The input
 * of a target(v) is the struct pointer; of a local_var(name, v), the
 * variable's address. */
enum xflow_plan_fetch_kind {
	XFLOW_FETCH_REG = 1,     /* the value is in register reg */
	XFLOW_FETCH_MEM = 2,     /* the object is at address reg + off */
	XFLOW_FETCH_STATIC = 3,  /* the object is at load base + off */
	XFLOW_FETCH_VALUE = 4,   /* the value is reg + index * scale + off (scale
	                          * 0: no index), with no address of its own:
	                          * an element of an array of structs, or
	                          * DW_OP_stack_value */
};
/* For a local_var() input, REG and VALUE mean the variable has no address
 * at that site: the agent copies the value into a per-hit scratch cell and
 * passes the cell's address (stores through it do not reach the program). */

/* Placement of a binding.  AFTER runs once the site's instruction has
 * executed; at a RETURN site that is on arrival at the return address in
 * the caller (the instruction is a ret or a tail jump), with the return
 * value still in rax. */
enum xflow_plan_when { XFLOW_WHEN_BEFORE = 0, XFLOW_WHEN_AFTER = 1 };

enum xflow_plan_bin_flag { XFLOW_PLAN_BIN_RELOCATABLE = 1u << 0 };
enum xflow_plan_layout_flag {
	XFLOW_LAYOUT_SIGNED = 1u << 0,
	XFLOW_LAYOUT_POINTER = 1u << 1,
};

struct xflow_plan_fetch {
	uint8_t kind;            /* enum xflow_plan_fetch_kind */
	uint8_t reg;             /* DWARF number; 0xff for STATIC */
	uint8_t size;            /* bytes of the object, 0 if unknown */
	uint8_t index;           /* VALUE with scale != 0: index register */
	uint8_t scale;           /* 0, or 1, 2, 4, 8 (VALUE only) */
	int64_t off;
};

struct xflow_plan_binary {
	const char *path;
	const char *build_id;    /* hex, or NULL */
	uint32_t flags;          /* enum xflow_plan_bin_flag */
	uint64_t size;           /* bytes of the file at planning; 0: not recorded */
	uint64_t code_hash;      /* xflow_plan_hash() of its sites' bytes; 0: not recorded */
};

/* FNV-1a, 64 bits: @h (XFLOW_PLAN_HASH_INIT to begin) carried over @n bytes
 * at @p.  Not a defence against a forger (who can write the build id he
 * likes): the plan's binary and another build of it differ here. */
#define XFLOW_PLAN_HASH_INIT UINT64_C(0xcbf29ce484222325)
static inline uint64_t xflow_plan_hash(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * UINT64_C(0x100000001b3);
	return h;
}

struct xflow_plan_layout {
	int64_t offset;          /* -1: the struct or member is not in this domain */
	uint32_t size;
	uint32_t bit_offset;     /* from the start of the struct; bitfields only */
	uint32_t bit_size;       /* 0 unless a bitfield */
	uint32_t flags;          /* enum xflow_plan_layout_flag */
	/* An element of an embedded array (a field "arr[]" or "arr[].m", for
	 * XFLOW_OP_ELEM): the array's element count and the element's size;
	 * offset is the first element's (or its member's), size the
	 * element's (or its member's).  0 and 0 for any other member. */
	uint32_t nelems;
	uint32_t stride;
};

struct xflow_plan_site {
	uint64_t addr;
	uint32_t binary;         /* index into the domain's binaries */
	uint8_t kind;            /* enum xflow_plan_site_kind */
	uint8_t len;             /* bytes of the instruction, 1..15 */
	uint8_t when_mask;       /* 1 << XFLOW_WHEN_*: placements bound here */
	const char *file;
	uint32_t line;
	const char *func;
	const char *inlined_into;/* NULL unless func is inlined here */
	const char *insn;        /* the instruction, for people */
	int32_t field;           /* field table index of the member, or -1 */
	const char *sname, *member;
	uint32_t moff, msize;    /* bytes of the struct the instruction touches */
	struct xflow_plan_fetch target;  /* the struct instance (accesses) */
};

struct xflow_plan_binding {
	uint32_t site;
	uint32_t advice;
	uint8_t when;            /* enum xflow_plan_when */
	uint8_t ninputs;         /* = the advice's ninputs */
	uint32_t first_fetch;    /* input i's recipe: fetches[first_fetch + i] */
};

struct xflow_plan_domain {
	const char *name;
	struct xflow_plan_binary *binaries;
	uint32_t nbinaries;
	struct xflow_plan_layout *layouts;   /* one per plan field */
	struct xflow_plan_site *sites;
	uint32_t nsites;
	struct xflow_plan_binding *bindings;
	uint32_t nbindings;
	struct xflow_plan_fetch *fetches;
	uint32_t nfetches;
};

struct xflow_plan_field {
	const char *sname, *member;
};

struct xflow_plan_advice {
	uint32_t origin;         /* enum xflow_advice_origin (xflow/flowlang.h) */
	int32_t flow;
	uint32_t flags;          /* enum xflow_advice_flag */
	int32_t after_store_field;
	uint32_t rec_flags;
	const char *file;
	uint32_t line, col;
	struct xflow_bc_prog prog;
};

struct xflow_plan {
	const char **flows;
	uint32_t nflows;
	struct xflow_plan_field *fields;
	uint32_t nfields;
	struct xflow_plan_advice *advice;
	uint32_t nadvice;
	struct xflow_plan_domain *domains;
	uint32_t ndomains;
	uint32_t version;        /* the format version it was read from; 0 for
	                          * a plan built in memory (the current one) */
	void *mem;               /* the allocations the plan owns (the plan
	                          * itself among them), freed by
	                          * xflow_plan_free; NULL if the caller owns
	                          * everything */
};

/* Check @p against the rules above (what the writer refuses to write and
 * the reader refuses to load).  0, or -EINVAL with @why. */
int xflow_plan_check(const struct xflow_plan *p, char *why, size_t whylen);
/* The table-size limits alone: 0, or -EINVAL with @why naming the first
 * limit exceeded, the count and the limit. */
int xflow_plan_limits_check(uint64_t ndomains, uint64_t nadvice, uint64_t nfields, uint64_t nflows,
			    char *why, size_t whylen);

/* Serialize @p into a malloc'd buffer (*out, *len).  Returns 0, -EINVAL if
 * @p breaks a rule above (with @why), or -ENOMEM. */
int xflow_plan_write(const struct xflow_plan *p, void **out, size_t *len, char *why,
		     size_t whylen);
/* The same into a file, atomically (temporary file + rename). */
int xflow_plan_write_file(const struct xflow_plan *p, const char *path, char *why,
			  size_t whylen);

/* Parse and validate @len bytes.  On success *out is a plan owning its
 * memory (xflow_plan_free).  On error, -EINVAL (or -ENOMEM) and @why, if
 * not NULL, says what is wrong and where, in at most @whylen bytes. */
int xflow_plan_read(const void *buf, size_t len, struct xflow_plan **out, char *why,
		    size_t whylen);
int xflow_plan_read_file(const char *path, struct xflow_plan **out, char *why, size_t whylen);
void xflow_plan_free(struct xflow_plan *p);

/* A readable listing: tables, sites with their bound advice and fetches,
 * and with @bytecode each program. */
void xflow_plan_dump(const struct xflow_plan *p, FILE *out, bool bytecode);

/*
 * The roles of site @site of @d, a domain of @p, in unkeyed cross-domain
 * handoffs (enum xflow_site_roles of xflow/collector.h): XFLOW_SITE_SENDS
 * when advice bound there records an id leaving through a ring header
 * (rec_flags CROSS_DOMAIN, not RECEIVES, no keyed HANDOFF in its program),
 * XFLOW_SITE_RECEIVES when advice bound there is XFLOW_ADVICE_RECEIVES,
 * XFLOW_SITE_NOTIFIES when advice bound there is XFLOW_ADVICE_NOTIFIES
 * (whatever else it is), all with XFLOW_SITE_ROLES_KNOWN.  0 (not known) for a site out of range
 * and for a plan read from a version before 4, which could not say which
 * side an advice is.  A binary search of the bindings: callers on a hot
 * path compute it once per site.
 */
uint32_t xflow_plan_site_roles(const struct xflow_plan *p, const struct xflow_plan_domain *d,
			       uint32_t site);

const char *xflow_plan_site_kind_name(unsigned kind);
void xflow_plan_fetch_print(const struct xflow_plan_fetch *f, FILE *out);

#endif
