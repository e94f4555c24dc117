/*
 * xflow/bytecode.h — compiled advice: the form the weaver emits, the weave
 * plan carries, and the guest runtime's interpreter runs.
 *
 * A program is a straight-line stack machine with forward jumps only, so
 * every advice terminates in at most ninsns steps: the advice language has no
 * loops and the verifier refuses a backward jump.  Values are 64-bit cells
 * typed INT or PTR for the verifier only (the runtime does not tag them).
 *
 * Nothing in a program is a name.  Names are resolved through tables the
 * weave plan carries next to it:
 *   inputs  — variables bound by the pointcut (target(v), local_var(n, v)),
 *             numbered per advice; the plan gives a fetch recipe for each
 *             join point (register, frame slot, memory) and the runtime puts
 *             the value in the input slot before running the program;
 *   fields  — {struct, member} pairs, numbered per unit; offset and size are
 *             filled in from DWARF at plan time;
 *   flows   — xflow definitions ("flow kinds"), numbered per unit; the index
 *             is the flow-id table to use and the record's flow_kind.
 *
 * Versioning: XFLOW_BC_VERSION changes whenever an opcode changes meaning or
 * an operand changes position; opcodes are only ever added at the end.
 *
 * Instruction format (8 bytes): op, a (8 bits), b (16 bits), k (signed 32).
 * Stack effects are written [before -- after], top of stack on the right.
 * "Fault-safe read" means the runtime reads with a primitive that cannot
 * crash the traced program (probe_read, process_vm_readv, ...); a fault
 * ends the advice early, counted, with no record written.
 */
#ifndef XFLOW_BYTECODE_H
#define XFLOW_BYTECODE_H

#include <stddef.h>
#include <stdint.h>

#define XFLOW_BC_VERSION 1

#define XFLOW_BC_MAX_INSNS 4096   /* per program */
#define XFLOW_BC_MAX_STACK 32     /* cells */
#define XFLOW_BC_MAX_LOCALS 64
#define XFLOW_BC_MAX_INPUTS 16
#define XFLOW_BC_MAX_CONSTS 256

enum xflow_bc_op {
	/* ---- constants and variables ---- */
	XFLOW_OP_NOP = 0,   /* [ -- ] */
	XFLOW_OP_PUSHI,     /* [ -- k:INT ]  k sign-extended to 64 bits */
	XFLOW_OP_PUSHK,     /* [ -- consts[b]:INT ] */
	XFLOW_OP_LDIN,      /* [ -- input[a] ]  type of input a */
	XFLOW_OP_LDL,       /* [ -- local[a] ]  type of local a; locals start 0 */
	XFLOW_OP_STL,       /* [ v -- ]  local[a] = v; v's type must be the local's */
	XFLOW_OP_DUP,       /* [ v -- v v ] */
	XFLOW_OP_DROP,      /* [ v -- ] */
	/* ---- memory: the only instructions that touch the traced program ---- */
	XFLOW_OP_LDF,       /* [ p:PTR -- v:INT ]  fault-safe read of field b of the
	                     * struct at p; extended per the member's DWARF type */
	XFLOW_OP_STF,       /* [ p:PTR v:INT -- ]  write the low bytes of v to field
	                     * b of the struct at p (fault-safe write) */
	XFLOW_OP_LDM,       /* [ p:PTR -- v ]  fault-safe read of a bytes (1, 2, 4,
	                     * 8) at p; b bit 0: sign-extend; b bit 1: result is PTR
	                     * (a must be 8) */
	/* ---- conversions (no-ops at run time, retype for the verifier) ---- */
	XFLOW_OP_TOPTR,     /* [ v -- v:PTR ] */
	XFLOW_OP_TOINT,     /* [ v -- v:INT ] */
	/* ---- arithmetic: two's complement, 64 bits, wrap on overflow ---- */
	XFLOW_OP_ADD,       /* [ x y -- x+y ]  PTR if x is PTR, else INT */
	XFLOW_OP_SUB,       /* [ x y -- x-y ]  INT */
	XFLOW_OP_MUL,       /* [ x y -- x*y ] */
	XFLOW_OP_DIV,       /* [ x y -- x/y ]  signed; y == 0 gives 0, and
	                     * INT64_MIN / -1 gives INT64_MIN (no trap) */
	XFLOW_OP_DIVU,      /* [ x y -- x/y ]  unsigned; y == 0 gives 0 */
	XFLOW_OP_MOD,       /* [ x y -- x%y ]  signed; y == 0 gives x */
	XFLOW_OP_MODU,      /* [ x y -- x%y ]  unsigned; y == 0 gives x */
	XFLOW_OP_AND,       /* [ x y -- x&y ] */
	XFLOW_OP_OR,        /* [ x y -- x|y ] */
	XFLOW_OP_XOR,       /* [ x y -- x^y ] */
	XFLOW_OP_SHL,       /* [ x y -- x<<(y&63) ] */
	XFLOW_OP_SHR,       /* [ x y -- x>>(y&63) ]  logical */
	XFLOW_OP_SAR,       /* [ x y -- x>>(y&63) ]  arithmetic */
	XFLOW_OP_NEG,       /* [ x -- -x ] */
	XFLOW_OP_NOT,       /* [ x -- ~x ] */
	XFLOW_OP_LNOT,      /* [ x -- x==0 ] */
	XFLOW_OP_EQ,        /* [ x y -- x==y ]  comparisons push 0 or 1, INT */
	XFLOW_OP_NE,
	XFLOW_OP_LT,        /* signed */
	XFLOW_OP_LE,
	XFLOW_OP_GT,
	XFLOW_OP_GE,
	XFLOW_OP_LTU,       /* unsigned (and every pointer comparison) */
	XFLOW_OP_LEU,
	XFLOW_OP_GTU,
	XFLOW_OP_GEU,
	/* ---- control: k is relative to the next instruction and > 0 ---- */
	XFLOW_OP_JMP,       /* [ -- ]  pc += k */
	XFLOW_OP_JZ,        /* [ c -- ]  if c == 0, pc += k */
	XFLOW_OP_JNZ,       /* [ c -- ]  if c != 0, pc += k */
	XFLOW_OP_RET,       /* [ -- ]  end of advice; the stack must be empty */
	/* ---- builtins ---- */
	XFLOW_OP_RDTSC,     /* [ -- t:INT ]  DO_RDTSC: the clock of the ring header */
	XFLOW_OP_PC,        /* [ -- pc:INT ]  $pc$: address of the join point */
	XFLOW_OP_FLOW_NEW,  /* [ -- id:INT ]  get_new_flowid(): fresh id, never 0 */
	XFLOW_OP_FLOW_GET,  /* [ key:PTR -- id:INT ]  get_flowid(flow b, key); 0 if none */
	XFLOW_OP_FLOW_REG,  /* [ key:PTR id:INT -- ]  register_flowid(flow b, key, id);
	                     * id 0 is ignored */
	XFLOW_OP_FLOW_DEL,  /* [ key:PTR -- ]  remove_flowid(flow b, key) */
	XFLOW_OP_STORE,     /* [ v1 .. va -- ]  STORE_DATAa: append one record with
	                     * data[0..a-1] = v1..va, flags b (enum
	                     * xflow_record_flag), flow_id/flow_kind of the last
	                     * FLOW_GET/FLOW_NEW of this run that gave a non-zero id
	                     * (0 / none if there was none); 1 <= a <= 6 */
	XFLOW_OP_HANDOFF,   /* [ key:INT id:INT -- ]  keyed cross-domain transit of
	                     * flow b: append a record with flow_id = id, data[0] =
	                     * key, data[1] = a (0 sending side, 1 receiving side),
	                     * flags TRANSIT|CROSS_DOMAIN|KEYED.  The monitor
	                     * joins a receiving record to the outstanding sending
	                     * record of the same flow kind and key from another
	                     * domain, in either order (the record contract is in
	                     * xflow/record.h, the join in xflow(5)).  a = 2: the
	                     * receiving side with the sender's domain id as it
	                     * knows it, [ key:INT id:INT dom:INT -- ]: data[1] =
	                     * 1, data[2] = dom + 1 (0 stays "unknown"). */
	XFLOW_OP_SPLIT,     /* [ child:INT parent:INT -- ]  append a record of flow
	                     * b with flow_id = child, data[0] = parent, flags
	                     * START|TRANSIT: the child is a fragment of the parent */
	XFLOW_OP_ELEM,      /* [ p:PTR i:INT -- q:PTR ]  &p->arr[i].m: q = p +
	                     * offset(field b) + i * stride(field b), no memory
	                     * read.  Field b names an element of an embedded
	                     * array ("arr[]", or "arr[].m" for a member of the
	                     * element); its layout gives the element count, and
	                     * i >= that count (unsigned) is a fault, as is a
	                     * field that is not an array element in this domain:
	                     * a guest's index never reaches past the array */
	XFLOW_OP_COUNT
};

enum xflow_bc_type { XFLOW_BC_INT = 1, XFLOW_BC_PTR = 2 };

/* LDM's b bits. */
#define XFLOW_LDM_SIGNED 1u
#define XFLOW_LDM_PTR 2u

struct xflow_bc_insn {
	uint8_t op;    /* enum xflow_bc_op */
	uint8_t a;
	uint16_t b;
	int32_t k;
};

/* Where the runtime gets an input slot's value at a join point. */
enum xflow_bc_input_kind {
	XFLOW_IN_TARGET = 1,    /* the struct instance the access() touches */
	XFLOW_IN_LOCAL_VAR = 2, /* the address of the program's local variable */
};

struct xflow_bc_input {
	uint8_t kind;           /* enum xflow_bc_input_kind */
	uint8_t type;           /* enum xflow_bc_type (always PTR today) */
	const char *local;      /* LOCAL_VAR: the program's variable name */
	const char *sname;      /* TARGET: the struct of the access(), if one */
};

struct xflow_bc_prog {
	uint32_t version;       /* XFLOW_BC_VERSION */
	uint32_t ninsns;
	const struct xflow_bc_insn *insns;
	uint32_t nconsts;
	const uint64_t *consts;
	uint32_t nlocals;
	const uint8_t *local_types;   /* enum xflow_bc_type per local */
	uint32_t ninputs;
	const struct xflow_bc_input *inputs;
	uint32_t nfields;       /* size of the unit's field table */
	uint32_t nflows;        /* size of the unit's flow table */
	uint32_t max_stack;     /* set by the verifier */
};

/*
 * Check that @p is safe to run: known opcodes, operands in range (locals,
 * inputs, constants, fields, flows, record sizes and flags), every jump
 * forward and inside the program, the stack within XFLOW_BC_MAX_STACK and
 * equally deep and typed on every path into an instruction, PTR where memory
 * or the flow table is addressed, and RET reached with an empty stack on
 * every path.  Returns 0 and sets p->max_stack, or -EINVAL with @why (if not
 * NULL) set to a static description and @at to the offending instruction.
 */
int xflow_bc_verify(struct xflow_bc_prog *p, const char **why, uint32_t *at);

/* The mnemonic of @op, or NULL. */
const char *xflow_bc_op_name(unsigned op);

#endif
