/*
 * guestrt/interp/interp.h — the advice interpreter every hook backend shares.
 *
 * Runs a verified program (xflow/bytecode.h) at one join point hit: reads
 * and writes the traced program's memory only through a fault-safe accessor,
 * applies flow-id operations to the domain's flow-id table, and emits
 * records.  A fault ends the advice (counted by the caller from the return
 * value); the traced program never sees it.  Programs must have passed
 * xflow_bc_verify(): the interpreter trusts the verifier for stack depth,
 * operand ranges and jump targets and checks nothing of that again.
 *
 * Allocation: none.  Locking: none; one hit at a time per flow-id table.
 */
#ifndef XFLOW_GUESTRT_INTERP_INTERP_H
#define XFLOW_GUESTRT_INTERP_INTERP_H

#include <stddef.h>
#include <stdint.h>

#include "xflow/bytecode.h"
#include "xflow/flowid.h"
#include "xflow/record.h"

/* Scratch cells of local_var() inputs whose variable has no address at the
 * site (a register or a computed value): the hit's runtime passes
 * XFLOW_INTERP_SCRATCH_BASE + 8 * input and serves those addresses from its
 * own memory in the memory accessors.  Non-canonical, so no x86-64 process
 * can have them mapped; writes to them never reach the program. */
#define XFLOW_INTERP_SCRATCH_BASE UINT64_C(0xfffe800000000000)

/* A {struct, member} of the program's field table, resolved from DWARF. */
struct xflow_field_rt {
	uint32_t offset;     /* bytes from the struct's start */
	uint8_t size;        /* bytes read or written: 1, 2, 4 or 8 */
	uint8_t is_signed;   /* sign-extend on read */
	uint8_t bit_offset;  /* bitfields: first bit within those bytes */
	uint8_t bit_size;    /* bitfields: width; 0 for a whole member */
	uint32_t nelems;     /* an array element (XFLOW_OP_ELEM): the count, */
	uint32_t stride;     /* and the element's size; 0 otherwise */
};

/* Fault-safe access to the traced program's memory: 0 or a negative
 * errno (-EFAULT for an unmapped address).  Must never crash the target. */
struct xflow_mem_ops {
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	int (*write)(void *ctx, uint64_t addr, const void *buf, size_t len);
};

/* Receives each record the advice appends (timestamp, flow, flags and
 * data filled in; the caller's template supplies site, domain, thread).
 * Returns 0, or -ENOBUFS when it dropped the record (counted). */
typedef int (*xflow_record_sink_fn)(void *ctx, struct xflow_record *r);

struct xflow_interp_env {
	const struct xflow_bc_prog *prog;
	const uint64_t *inputs;              /* prog->ninputs values */
	const struct xflow_field_rt *fields; /* prog->nfields entries */
	struct xflow_flowtab *flows;
	const struct xflow_mem_ops *mem;
	void *mem_ctx;
	uint64_t pc;                         /* $pc$ */
	uint64_t (*clock)(void *ctx);        /* DO_RDTSC */
	void *clock_ctx;
	/* get_new_flowid(): NULL takes the next id of @flows.  Where several
	 * tables share one id space (a table per process, flows told apart
	 * by id alone), the id comes from their common counter. */
	uint64_t (*new_id)(void *ctx);
	void *new_id_ctx;
	xflow_record_sink_fn sink;
	void *sink_ctx;
	const struct xflow_record *tmpl;     /* site, domain, thread of records */
	/* xflow-derived advice: flags of its flow operation.  When nonzero
	 * and the advice acted on a flow (a non-zero id), a marker record
	 * (ndata 0) with these flags is appended at the end: one record per
	 * operation, so none when the advice wrote the operation's own
	 * record (a split's, a keyed handoff's), and none with START unless
	 * the advice registered the id it ends with (a start that found the
	 * object's id in place created no flow). */
	unsigned marker_flags;
};

/* The field table of @p as laid out in domain @d, for the interpreter:
 * @out has p->nfields entries.  A member the domain does not have, wider
 * than 8 bytes, or a bitfield that does not fit its bytes gets size 0:
 * every access to it faults (and is counted), none reads garbage. */
struct xflow_plan;
struct xflow_plan_domain;
void xflow_interp_fields(const struct xflow_plan *p, const struct xflow_plan_domain *d, struct xflow_field_rt *out);

struct xflow_interp_result {
	int rc;            /* 0, or -EFAULT: a memory access faulted */
	uint32_t at;       /* the faulting instruction */
	uint32_t records;  /* records appended */
	uint32_t dropped;  /* records the sink refused */
};

void xflow_interp_run(const struct xflow_interp_env *env, struct xflow_interp_result *res);

#endif
