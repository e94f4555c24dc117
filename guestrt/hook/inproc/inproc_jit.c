/*
 * Advice compiled to machine code: one function per hook (an address and a
 * placement, with the plan sites there), called by the trampoline instead
 * of the runtime's interpreter.  The bytecode is verified (equal stack
 * depth on every path into an instruction, jumps only forward), so each
 * stack cell, local and input gets a fixed slot of the frame and every
 * operation compiles to a few instructions on them; the flow-id table and
 * fault-safe accesses are calls into the runtime (rt_jit.c), records are
 * written straight into the lane's ring.  The program's semantics are the
 * interpreter's (guestrt/interp/interp.c), operation for operation: the tests run
 * both on the same programs.
 *
 * The function (entered by `call` from a trampoline that stepped over the
 * red zone):
 *
 *   pushfq; push rax rcx rdx rsi rdi r8 r9 r10 r11 rbx rbp
 *   rbp = rsp (the saved registers: DWARF's registers are read there, and
 *   r12-r15 where they are, untouched); rsp aligned, the frame below it
 *   rbx = the lane, found inline (lane_begin) or by rt_jit_begin(), or
 *   straight out
 *   per binding: its advice's flag, a hit counted, inputs fetched, the
 *   program (under the flow-id table's lock if it changes the table; one
 *   that only looks ids up takes none), its marker record; a fault ends
 *   that binding (counted)
 *   the lane let go; everything restored.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "guestrt/hook/inproc/inproc_priv.h"
#include "guestrt/interp/interp.h"
#include "guestrt/x86/x86_asm.h"
#include "xflow/plan.h"

/* The frame, from the aligned rsp. */
#define F_CELL(i) (8 * (i))
#define F_LOCAL(i) (8 * XFLOW_BC_MAX_STACK + 8 * (i))
#define F_INPUT(i) (F_LOCAL(XFLOW_BC_MAX_LOCALS) + 8 * (i))
#define F_SCRATCH(i) (F_INPUT(XFLOW_BC_MAX_INPUTS) + 8 * (i))
#define F_LAST_ID F_SCRATCH(XFLOW_BC_MAX_INPUTS)
#define F_LAST_KIND (F_LAST_ID + 8)
#define F_TMP (F_LAST_ID + 16)
#define F_LAST_REG (F_LAST_ID + 24)  /* the last flow operation registered the id */
#define F_OP_REC (F_LAST_ID + 32)    /* the run wrote its operation's own record */
#define F_SIZE ((F_LAST_ID + 48 + 15) & ~15)

/* Where the program's registers are, by DWARF number: offsets from rbp of
 * the pushes above, -1 for a register left where it is, -2 for rsp.  A
 * lean frame (a hook whose common path calls nothing of the runtime's)
 * pushes only the registers its code writes; rdi and r8-r10 stay where
 * they are, and its calls on rare paths keep them around the call. */
static const enum xreg saved_all[] = { XR_RAX, XR_RCX, XR_RDX, XR_RSI, XR_RDI, XR_R8,
				       XR_R9,  XR_R10, XR_R11, XR_RBX, XR_RBP };
static const int16_t reg_at_all[16] = { 80, 64, 72, 8, 56, 48, 0, -2, 40, 32, 24, 16, -1, -1, -1, -1 };
static const enum xreg saved_lean[] = { XR_RAX, XR_RCX, XR_RDX, XR_RSI, XR_R11, XR_RBX, XR_RBP };
static const int16_t reg_at_lean[16] = { 48, 32, 40, 8, 24, -1, 0, -2, -1, -1, -1, 16, -1, -1, -1, -1 };
static const enum xreg reg_live[16] = { [5] = XR_RDI, [8] = XR_R8, [9] = XR_R9, [10] = XR_R10,
					[12] = XR_R12, [13] = XR_R13, [14] = XR_R14, [15] = XR_R15 };

struct jit {
	struct xasm a;
	const struct ip_jit_env *env;
	const struct xflow_rt_ctl *c; /* our view */
	uint64_t addr;                /* the site */
	uint32_t site;                /* plan site of the binding being compiled */
	const struct xflow_rt_advice *adv;
	uint32_t adv_index;
	uint32_t l_fault, l_end;      /* this binding's labels */
	bool spec;                    /* the table read without its lock: an
	                               * operation that changes it jumps to
	                               * l_retry instead (speculable()) */
	uint32_t l_retry;
	bool flow_ops;                /* the binding's program may give its run a
	                               * flow (FLOW_GET, _REG, _DEL: set_last) */
	int32_t rax_at;               /* the frame slot rax holds now, -1: none */
	bool lean;                    /* the lean frame (reg_at_lean) */
	const int16_t *reg_at;
	int32_t flags_at;             /* the program's flags, from rbp */
	/* Paths a hit rarely takes (a full ring, a fault), written after the
	 * function's ret, so that the common path runs straight through,
	 * without a taken jump. */
	struct cold {
		uint8_t fault;        /* 1: a binding's fault; 0: a full ring;
		                       * 2: the hit's start, by the runtime */
		uint8_t unlock;       /* fault: the flow-id table's lock is held */
		uint32_t from, back, drop, done; /* labels */
		int32_t counter;      /* the drops' or the faults' counter */
	} cold[XA_MAX_LABELS / 4];
	uint32_t ncold;
};

static struct cold *cold_add(struct jit *j)
{
	if (j->ncold == sizeof(j->cold) / sizeof(j->cold[0])) {
		if (!j->a.c.err)
			j->a.c.err = -ENOSPC; /* the interpreter runs the hook */
		return NULL;
	}
	return &j->cold[j->ncold++];
}

#define LANE(field) ((int32_t)offsetof(struct xflow_rt_lane, field))
#define PROD(field) ((int32_t)(offsetof(struct xflow_rt_lane, prod) + offsetof(struct xflow_ring_producer, field)))

static int32_t counter(const struct jit *j, unsigned which)
{
	return (int32_t)(sizeof(struct xflow_rt_lane) +
			 (which * XFLOW_RT_NCOUNTERS + j->adv->counter) * sizeof(uint64_t));
}

static void call_rt(struct jit *j, enum xflow_rt_jit_fn fn)
{
	xa_call_abs(&j->a, j->env->image + j->env->head->off_jit[fn]);
}

static const void *at_ctl(const struct jit *j, uint64_t target_addr)
{
	return (const char *)j->c + (target_addr - j->env->ctl_addr);
}

/* The program's DWARF register @reg into @r. */
static void get_reg(struct jit *j, enum xreg r, unsigned reg)
{
	if (reg == 16)
		xa_mov_ri(&j->a, r, j->addr);
	else if (j->reg_at[reg] >= 0)
		xa_load(&j->a, r, XR_RBP, j->reg_at[reg], 8);
	else if (j->reg_at[reg] == -2)
		/* past the pushes and the flags, the return address and the
		 * red zone */
		xa_lea(&j->a, r, XR_RBP, j->flags_at + 8 + 8 + 128);
	else
		xa_mov_rr(&j->a, r, reg_live[reg]);
}

/* Input @i as the recipe says (guestrt/hook/inproc/rt/rt_hit.c's fetch, compiled). */
static int fetch(struct jit *j, const struct xflow_rt_fetch *f, unsigned i)
{
	struct xasm *a = &j->a;
	if (f->reg > 16 || (f->scale && f->index > 16))
		return -EINVAL;
	switch (f->kind) {
	case XFLOW_FETCH_REG:
		get_reg(j, XR_RAX, f->reg);
		break;
	case XFLOW_FETCH_MEM:
		get_reg(j, XR_RAX, f->reg);
		if (f->off)
			xa_mov_ri(a, XR_RCX, (uint64_t)f->off), xa_alu_rr(a, XA_ADD, XR_RAX, XR_RCX);
		xa_store(a, XR_RSP, F_INPUT(i), XR_RAX, 8);
		return 0;
	case XFLOW_FETCH_STATIC: {
		const struct xflow_rt_site *s = (const struct xflow_rt_site *)((const char *)j->c + j->c->off_sites) + j->site;
		const uint64_t *base = (const uint64_t *)((const char *)j->c + j->c->off_bases);
		xa_mov_ri(a, XR_RAX, (s->binary < j->c->nbases ? base[s->binary] : 0) + (uint64_t)f->off);
		xa_store(a, XR_RSP, F_INPUT(i), XR_RAX, 8);
		return 0;
	}
	case XFLOW_FETCH_VALUE:
		get_reg(j, XR_RAX, f->reg);
		if (f->scale) {
			get_reg(j, XR_RCX, f->index);
			xa_imul_rri(a, XR_RCX, XR_RCX, f->scale);
			xa_alu_rr(a, XA_ADD, XR_RAX, XR_RCX);
		}
		if (f->off)
			xa_mov_ri(a, XR_RCX, (uint64_t)f->off), xa_alu_rr(a, XA_ADD, XR_RAX, XR_RCX);
		break;
	default:
		return -EINVAL;
	}
	if (f->local) {
		/* No address of its own: a scratch cell the accessors serve. */
		xa_store(a, XR_RSP, F_SCRATCH(i), XR_RAX, 8);
		xa_mov_ri(a, XR_RAX, XFLOW_INTERP_SCRATCH_BASE + 8u * i);
	}
	xa_store(a, XR_RSP, F_INPUT(i), XR_RAX, 8);
	return 0;
}

/*
 * The hit's time and CPU in the lane (rbx), read at its first record or
 * change of the flow-id table: most hits of a real server's flows write
 * nothing (a quit peeking at every touch of a connection finds no flow), and
 * rdtsc was a fifth of the compiled code's time in memcached (issue 27).
 * Time order holds: a change of the table is stamped before it is made,
 * and a hit that finds a flow stamps its record after it looked.  Clobbers
 * rax, rcx, rdx.
 */
static void hit_time(struct jit *j)
{
	struct xasm *a = &j->a;
	uint32_t have = xa_label(a);
	xa_load(a, XR_RDX, XR_RBX, LANE(now), 8);
	xa_test_rr(a, XR_RDX, XR_RDX);
	xa_jcc(a, XC_NE, have);
	/* The time and the CPU as rt_tsc_cpu reads them, for the CPU's way
	 * the agent chose (fixed in the control region). */
	static const uint8_t rdtsc[] = { 0x0f, 0x31 }, rdtscp[] = { 0x0f, 0x01, 0xf9 },
			     rdpid_rcx[] = { 0xf3, 0x0f, 0xc7, 0xf9 }; /* rdpid %rcx */
	unsigned how = j->c->cpu_how;
	if (how == XFLOW_RT_CPU_RDTSCP)
		xa_bytes(a, rdtscp, sizeof(rdtscp));
	else
		xa_bytes(a, rdtsc, sizeof(rdtsc));
	xa_shift_i(a, 4, XR_RDX, 32);
	xa_alu_rr(a, XA_OR, XR_RDX, XR_RAX);
	xa_store(a, XR_RBX, LANE(now), XR_RDX, 8);
	if (how == XFLOW_RT_CPU_RDPID)
		xa_bytes(a, rdpid_rcx, sizeof(rdpid_rcx));
	if (how == XFLOW_RT_CPU_RDPID || how == XFLOW_RT_CPU_RDTSCP) {
		xa_alu_ri(a, XA_AND, XR_RCX, 0xfff);
		xa_alu_ri(a, XA_ADD, XR_RCX, 1);
		xa_store(a, XR_RBX, LANE(cpu_plus1), XR_RCX, 4);
	} else {
		xa_store_i(a, XR_RBX, LANE(cpu_plus1),
			   how == XFLOW_RT_CPU_FIXED ? (int32_t)(j->c->cpu_fixed + 1) : 0, 4);
	}
	xa_bind(a, have);
	j->rax_at = -1;
}

/*
 * A record into the lane's ring, as the interpreter's emit() fills it: the
 * hit's time, the id in @id_reg (r8; 0: none) of flow kind @kind (or the
 * kind in F_LAST_KIND when kind < 0), @flags, @n values from the cells at
 * @cell.  A full ring drops it and counts it, for the ring and the advice,
 * and its thread_seq is used all the same, so that the gap it leaves tells
 * the monitor a record of this thread was lost there (xflow/record.h,
 * "Losses"): the cost is in the drop path only.  @no_id: the id is 0 for
 * certain (a program with no flow operation), r8 is not read and the
 * words it would change are constants.
 */
static void emit_record(struct jit *j, int kind, unsigned flags, unsigned n, int cell, bool no_id)
{
	struct xasm *a = &j->a;
	uint32_t room = xa_label(a), full = xa_label(a), drop = xa_label(a), done = xa_label(a);
	struct cold *c = cold_add(j);
	if (!c)
		return;
	*c = (struct cold){ .from = full, .back = room, .drop = drop, .done = done,
			    .counter = counter(j, XFLOW_RT_CNT_DROPS) };
	hit_time(j);
	/* rax = prod; room if prod - cons_cache < mask + 1, else the cold
	 * path (cold_write) asks again */
	xa_load(a, XR_RAX, XR_RBX, PROD(prod), 8);
	xa_mov_rr(a, XR_RCX, XR_RAX);
	xa_alu_rm(a, XA_SUB, XR_RCX, XR_RBX, PROD(cons_cache));
	xa_load(a, XR_RDX, XR_RBX, PROD(mask), 4);
	xa_alu_ri(a, XA_ADD, XR_RDX, 1);
	xa_alu_rr(a, XA_CMP, XR_RCX, XR_RDX);
	xa_jcc(a, XC_AE, full);
	xa_bind(a, room);
	/* rcx = slots + (prod & mask) * XFLOW_RECORD_SIZE */
	xa_load(a, XR_RCX, XR_RBX, PROD(mask), 4);
	xa_alu_rr(a, XA_AND, XR_RCX, XR_RAX);
	xa_imul_rri(a, XR_RCX, XR_RCX, XFLOW_RECORD_SIZE);
	xa_alu_rm(a, XA_ADD, XR_RCX, XR_RBX, PROD(slots));
	/* The line a few records on, asked for as to be written: its last
	 * write was a lap of the ring ago, far from this core (a prefetch
	 * past the ring's end is dropped, never a fault). */
	static const uint8_t prefetchw[] = { 0x0f, 0x0d, 0x89, 0x80, 0x01, 0x00, 0x00 }; /* prefetchw 384(%rcx) */
	xa_bytes(a, prefetchw, sizeof(prefetchw));
	/* timestamp */
	xa_load(a, XR_RDX, XR_RBX, LANE(now), 8);
	xa_store(a, XR_RCX, 0, XR_RDX, 8);
	if (no_id) {
		/* flow_id 0, and the kind "none" beside the site and domain */
		xa_store_i(a, XR_RCX, 8, 0, 8);
		xa_mov_ri(a, XR_RDX,
			  (uint64_t)j->site | (uint64_t)XFLOW_FLOW_KIND_NONE << 32 | (uint64_t)j->c->domain_id << 48);
		xa_store(a, XR_RCX, 16, XR_RDX, 8);
	} else {
		/* flow_id: the id cut to 48 bits */
		xa_mov_rr(a, XR_RDX, XR_R8);
		xa_shift_i(a, 4, XR_RDX, 16);
		xa_shift_i(a, 5, XR_RDX, 16);
		xa_store(a, XR_RCX, 8, XR_RDX, 8);
		/* site_id | flow_kind << 32 | domain_id << 48; the kind is
		 * "none" without an id */
		xa_mov_ri(a, XR_RDX, XFLOW_FLOW_KIND_NONE);
		if (kind >= 0)
			xa_mov_ri(a, XR_RSI, (uint64_t)kind);
		else
			xa_load(a, XR_RSI, XR_RSP, F_LAST_KIND, 8);
		xa_test_rr(a, XR_R8, XR_R8);
		xa_cmov(a, XC_NE, XR_RDX, XR_RSI);
		xa_shift_i(a, 4, XR_RDX, 32);
		xa_mov_ri(a, XR_RSI, (uint64_t)j->site | (uint64_t)j->c->domain_id << 48);
		xa_alu_rr(a, XA_OR, XR_RDX, XR_RSI);
		xa_store(a, XR_RCX, 16, XR_RDX, 8);
	}
	/* flags | version << 16 | ndata << 24 | thread_id << 32 */
	xa_load(a, XR_RDX, XR_RBX, LANE(tid), 4);
	xa_shift_i(a, 4, XR_RDX, 32);
	xa_alu_ri(a, XA_OR, XR_RDX,
		  (int32_t)(flags | XFLOW_REC_SEQ_COUNTS_LOST | (uint32_t)XFLOW_RECORD_VERSION << 16 | n << 24));
	xa_store(a, XR_RCX, 24, XR_RDX, 8);
	/* thread_seq | cpu_plus1 << 32 (the hit's CPU, rt_jit_begin's) */
	xa_load(a, XR_RDX, XR_RBX, LANE(seq), 4);
	xa_lea(a, XR_RSI, XR_RDX, 1);
	xa_store(a, XR_RBX, LANE(seq), XR_RSI, 4);
	xa_load(a, XR_RSI, XR_RBX, LANE(cpu_plus1), 4);
	xa_shift_i(a, 4, XR_RSI, 32);
	xa_alu_rr(a, XA_OR, XR_RDX, XR_RSI);
	xa_store(a, XR_RCX, 32, XR_RDX, 8);
	for (unsigned i = 0; i < XFLOW_RECORD_MAX_DATA; i++) {
		if (i < n) {
			xa_load(a, XR_RDX, XR_RSP, F_CELL(cell + (int)i), 8);
			xa_store(a, XR_RCX, 40 + 8 * (int32_t)i, XR_RDX, 8);
		} else {
			xa_store_i(a, XR_RCX, 40 + 8 * (int32_t)i, 0, 8);
		}
	}
	/* Publish: the slot's stores are before the index's (x86 keeps
	 * stores in order; this is the release of xflow_ring_push_n). */
	xa_alu_ri(a, XA_ADD, XR_RAX, 1);
	xa_store(a, XR_RBX, PROD(prod), XR_RAX, 8);
	xa_load(a, XR_RDX, XR_RBX, PROD(hdr), 8);
	xa_store(a, XR_RDX, (int32_t)offsetof(struct xflow_ring_hdr, prod), XR_RAX, 8);
	xa_bind(a, done);
}

/* A call of @fn (lane in rbx as its argument where it takes one) from a
 * rare path, keeping what the call would clobber: in a lean frame the
 * program's rdi and r8-r10 (four pushes keep rsp aligned), in the full
 * one the run's flow id in r8 when @id_live (pushed twice, for the same
 * reason). */
static void rare_call(struct jit *j, enum xflow_rt_jit_fn fn, bool id_live)
{
	struct xasm *a = &j->a;
	static const enum xreg lean[] = { XR_RDI, XR_R8, XR_R9, XR_R10 }, id[] = { XR_R8, XR_R8 };
	const enum xreg *kept = j->lean ? lean : id_live ? id : NULL;
	size_t n = j->lean ? 4 : id_live ? 2 : 0;
	for (size_t i = 0; i < n; i++)
		xa_push(a, kept[i]);
	xa_mov_rr(a, XR_RDI, XR_RBX);
	call_rt(j, fn);
	for (size_t i = n; i-- > 0;)
		xa_pop(a, kept[i]);
}

/* The paths emit_record and binding put aside, after the function's end. */
static void cold_write(struct jit *j)
{
	struct xasm *a = &j->a;
	for (uint32_t i = 0; i < j->ncold; i++) {
		const struct cold *c = &j->cold[i];
		xa_bind(a, c->from);
		if (c->fault == 2) {
			/* Whatever the inline start did not take: the runtime's
			 * rt_jit_begin, from the start (nothing was changed). */
			rare_call(j, XFLOW_RT_JIT_BEGIN, false);
			xa_test_rr(a, XR_RAX, XR_RAX);
			xa_jcc(a, XC_E, c->done);
			xa_mov_rr(a, XR_RBX, XR_RAX);
			xa_jmp(a, c->back);
			continue;
		}
		if (c->fault) {
			if (c->unlock) {
				xa_mov_rr(a, XR_RDI, XR_RBX);
				call_rt(j, XFLOW_RT_JIT_UNLOCK);
			}
			xa_alu_mi(a, XA_ADD, XR_RBX, c->counter, 1);
			xa_jmp(a, c->back);
			continue;
		}
		/* The ring looked full by the cached index: read the
		 * consumer's again, or drop. */
		rare_call(j, XFLOW_RT_JIT_ROOM, true);
		xa_test_rr(a, XR_RAX, XR_RAX);
		xa_jcc(a, XC_E, c->drop);
		xa_load(a, XR_RAX, XR_RBX, PROD(prod), 8);
		xa_jmp(a, c->back);
		xa_bind(a, c->drop);
		xa_alu_mi(a, XA_ADD, XR_RBX, c->counter, 1);
		/* The lost record's number, skipped (32 bits: seq is followed
		 * by another field). */
		xa_load(a, XR_RDX, XR_RBX, LANE(seq), 4);
		xa_lea(a, XR_RSI, XR_RDX, 1);
		xa_store(a, XR_RBX, LANE(seq), XR_RSI, 4);
		xa_jmp(a, c->done);
	}
}

/* The flow of the records of this run: the last lookup, creation or
 * removal that gave an id (rax) of kind @kind, and whether it registered
 * the id. */
static void set_last(struct jit *j, unsigned kind, int registered)
{
	struct xasm *a = &j->a;
	uint32_t skip = xa_label(a);
	xa_test_rr(a, XR_RAX, XR_RAX);
	xa_jcc(a, XC_E, skip);
	xa_store(a, XR_RSP, F_LAST_ID, XR_RAX, 8);
	xa_store_i(a, XR_RSP, F_LAST_KIND, (int32_t)kind, 8);
	xa_store_i(a, XR_RSP, F_LAST_REG, registered, 8);
	xa_bind(a, skip);
}

/* rt_jit_read/_write of @size bytes at the address in rdi, through
 * F_TMP; a fault ends the binding. */
static void mem_access(struct jit *j, unsigned size, int write)
{
	struct xasm *a = &j->a;
	xa_lea(a, XR_RSI, XR_RSP, F_TMP);
	xa_mov_ri(a, XR_RDX, size);
	xa_lea(a, XR_RCX, XR_RSP, F_SCRATCH(0));
	call_rt(j, write ? XFLOW_RT_JIT_WRITE : XFLOW_RT_JIT_READ);
	xa_test_rr(a, XR_RAX, XR_RAX);
	xa_jcc(a, XC_NE, j->l_fault);
}

/* rax (the raw bytes of field @f, zero-extended) to its value. */
static void field_value(struct jit *j, const struct xflow_field_rt *f)
{
	struct xasm *a = &j->a;
	unsigned bits = f->size * 8u;
	if (f->bit_size) {
		if (f->bit_offset)
			xa_shift_i(a, 5, XR_RAX, f->bit_offset);
		bits = f->bit_size;
		if (bits < 64) {
			xa_shift_i(a, 4, XR_RAX, (uint8_t)(64 - bits));
			xa_shift_i(a, 5, XR_RAX, (uint8_t)(64 - bits));
		}
	}
	if (f->is_signed && bits < 64) {
		xa_shift_i(a, 4, XR_RAX, (uint8_t)(64 - bits));
		xa_shift_i(a, 7, XR_RAX, (uint8_t)(64 - bits));
	}
}

static const struct xflow_field_rt *field(const struct jit *j, unsigned b)
{
	return b < j->c->nfields ? (const struct xflow_field_rt *)((const char *)j->c + j->c->off_fields) + b : NULL;
}

/* One binary operation on cells d-2 (x) and d-1 (y) into d-2. */
static int binop(struct jit *j, unsigned op, int d)
{
	struct xasm *a = &j->a;
	uint32_t l1, l2;
	xa_load(a, XR_RAX, XR_RSP, F_CELL(d - 2), 8);
	xa_load(a, XR_RCX, XR_RSP, F_CELL(d - 1), 8);
	switch (op) {
	case XFLOW_OP_ADD: xa_alu_rr(a, XA_ADD, XR_RAX, XR_RCX); break;
	case XFLOW_OP_SUB: xa_alu_rr(a, XA_SUB, XR_RAX, XR_RCX); break;
	case XFLOW_OP_MUL: xa_imul_rr(a, XR_RAX, XR_RCX); break;
	case XFLOW_OP_AND: xa_alu_rr(a, XA_AND, XR_RAX, XR_RCX); break;
	case XFLOW_OP_OR: xa_alu_rr(a, XA_OR, XR_RAX, XR_RCX); break;
	case XFLOW_OP_XOR: xa_alu_rr(a, XA_XOR, XR_RAX, XR_RCX); break;
	case XFLOW_OP_SHL: xa_shift_cl(a, 4, XR_RAX); break; /* the count is masked to 63 */
	case XFLOW_OP_SHR: xa_shift_cl(a, 5, XR_RAX); break;
	case XFLOW_OP_SAR: xa_shift_cl(a, 7, XR_RAX); break;
	case XFLOW_OP_DIV:
	case XFLOW_OP_MOD:
	case XFLOW_OP_DIVU:
	case XFLOW_OP_MODU: {
		/* Never a trap: y == 0 gives 0 (x for the remainder), and
		 * INT64_MIN / -1 gives INT64_MIN (0 for the remainder). */
		bool sgn = op == XFLOW_OP_DIV || op == XFLOW_OP_MOD, rem = op == XFLOW_OP_MOD || op == XFLOW_OP_MODU;
		l1 = xa_label(a);
		l2 = xa_label(a);
		xa_test_rr(a, XR_RCX, XR_RCX);
		if (!rem) {
			uint32_t nz = xa_label(a);
			xa_jcc(a, XC_NE, nz);
			xa_mov_ri(a, XR_RAX, 0);
			xa_jmp(a, l2);
			xa_bind(a, nz);
		} else {
			xa_jcc(a, XC_E, l2); /* x % 0 is x: rax holds it */
		}
		if (sgn) {
			uint32_t go = xa_label(a);
			xa_alu_ri(a, XA_CMP, XR_RCX, -1);
			xa_jcc(a, XC_NE, go);
			if (rem)
				xa_mov_ri(a, XR_RAX, 0);
			else
				xa_neg(a, XR_RAX); /* -x, and INT64_MIN stays */
			xa_jmp(a, l2);
			xa_bind(a, go);
			xa_cqo(a);
		} else {
			xa_mov_ri(a, XR_RDX, 0);
		}
		xa_div(a, XR_RCX, sgn);
		if (rem)
			xa_mov_rr(a, XR_RAX, XR_RDX);
		xa_bind(a, l1);
		xa_bind(a, l2);
		break;
	}
	default: {
		static const struct { unsigned op; enum xcc cc; } cmp[] = {
			{ XFLOW_OP_EQ, XC_E }, { XFLOW_OP_NE, XC_NE }, { XFLOW_OP_LT, XC_L }, { XFLOW_OP_LE, XC_LE },
			{ XFLOW_OP_GT, XC_G }, { XFLOW_OP_GE, XC_GE }, { XFLOW_OP_LTU, XC_B }, { XFLOW_OP_LEU, XC_BE },
			{ XFLOW_OP_GTU, XC_A }, { XFLOW_OP_GEU, XC_AE },
		};
		size_t k;
		for (k = 0; k < sizeof(cmp) / sizeof(cmp[0]) && cmp[k].op != op; k++)
			;
		if (k == sizeof(cmp) / sizeof(cmp[0]))
			return -ENOTSUP;
		xa_alu_rr(a, XA_CMP, XR_RAX, XR_RCX);
		xa_setcc(a, cmp[k].cc, XR_RAX);
	}
	}
	xa_store(a, XR_RSP, F_CELL(d - 2), XR_RAX, 8);
	return 0;
}

/* The stack depth before each instruction, from a program the verifier
 * passed: equal on every path, so one forward walk finds it.  -1 for an
 * instruction nothing reaches. */
static int depths(const struct xflow_bc_prog *p, int *d)
{
	for (uint32_t i = 0; i < p->ninsns; i++)
		d[i] = -1;
	int cur = 0;
	bool live = true;
	for (uint32_t pc = 0; pc < p->ninsns; pc++) {
		const struct xflow_bc_insn *in = &p->insns[pc];
		if (d[pc] >= 0)
			cur = d[pc], live = true;
		if (!live)
			continue;
		d[pc] = cur;
		int eff;
		switch ((enum xflow_bc_op)in->op) {
		case XFLOW_OP_PUSHI: case XFLOW_OP_PUSHK: case XFLOW_OP_LDIN: case XFLOW_OP_LDL:
		case XFLOW_OP_DUP: case XFLOW_OP_RDTSC: case XFLOW_OP_PC: case XFLOW_OP_FLOW_NEW:
			eff = 1;
			break;
		case XFLOW_OP_STL: case XFLOW_OP_DROP: case XFLOW_OP_JZ: case XFLOW_OP_JNZ: case XFLOW_OP_FLOW_DEL:
		case XFLOW_OP_ADD: case XFLOW_OP_SUB: case XFLOW_OP_MUL: case XFLOW_OP_DIV: case XFLOW_OP_DIVU:
		case XFLOW_OP_MOD: case XFLOW_OP_MODU: case XFLOW_OP_AND: case XFLOW_OP_OR: case XFLOW_OP_XOR:
		case XFLOW_OP_SHL: case XFLOW_OP_SHR: case XFLOW_OP_SAR: case XFLOW_OP_EQ: case XFLOW_OP_NE:
		case XFLOW_OP_LT: case XFLOW_OP_LE: case XFLOW_OP_GT: case XFLOW_OP_GE: case XFLOW_OP_LTU:
		case XFLOW_OP_LEU: case XFLOW_OP_GTU: case XFLOW_OP_GEU: case XFLOW_OP_ELEM:
			eff = -1;
			break;
		case XFLOW_OP_STF: case XFLOW_OP_FLOW_REG: case XFLOW_OP_SPLIT:
			eff = -2;
			break;
		case XFLOW_OP_HANDOFF:
			eff = in->a == 2 ? -3 : -2;
			break;
		case XFLOW_OP_STORE:
			eff = -(int)in->a;
			break;
		default:
			eff = 0;
			break;
		}
		if (in->op == XFLOW_OP_JMP || in->op == XFLOW_OP_JZ || in->op == XFLOW_OP_JNZ) {
			uint32_t to = pc + 1 + (uint32_t)in->k;
			if (to > p->ninsns)
				return -EINVAL;
			if (to < p->ninsns)
				d[to] = cur + eff;
		}
		cur += eff;
		if (cur < 0 || cur > XFLOW_BC_MAX_STACK)
			return -EINVAL;
		if (in->op == XFLOW_OP_JMP || in->op == XFLOW_OP_RET)
			live = false;
	}
	return 0;
}

/* rax from the frame slot at @off, unless it holds it already: a value
 * pushed and at once stored into a local, or a local stored and read
 * again, goes through rax without a load that waits on the store. */
static void load_rax(struct jit *j, int32_t off)
{
	if (j->rax_at != off)
		xa_load(&j->a, XR_RAX, XR_RSP, off, 8);
	j->rax_at = off;
}

static void store_rax(struct jit *j, int32_t off)
{
	xa_store(&j->a, XR_RSP, off, XR_RAX, 8);
	j->rax_at = off;
}

/*
 * rax = the id of (@kind, the key in rdx) as rt_jit_flow_peek finds it,
 * without the lock: inline where the key's home slot answers (it holds the
 * key, or nothing), the call otherwise, or when a change overlapped.  Most
 * hits of a request flow look up one key that sits at home or is absent,
 * and the call with its saves was a third of the lookup's time in
 * memcached (issue 27).  Clobbers rax, rcx, rsi, rdi, r10, r11, as a
 * call would; rdx is kept for the call.
 */
static void flow_peek(struct jit *j, uint16_t kind)
{
	struct xasm *a = &j->a;
	uint32_t slow = xa_label(a), absent = xa_label(a), check = xa_label(a), done = xa_label(a);
#define PROC(f) ((int32_t)offsetof(struct xflow_rt_proc, f))
	/* r10 = the lock's count, even: no change under way */
	xa_load(a, XR_R11, XR_RBX, LANE(proc), 8);
	xa_load(a, XR_R10, XR_R11, PROC(flow_lock), 4);
	xa_mov_rr(a, XR_RCX, XR_R10);
	xa_alu_ri(a, XA_AND, XR_RCX, 1);
	xa_jcc(a, XC_NE, slow);
	/* rax = the home slot, as xflow_flowtab__hash */
	xa_mov_ri(a, XR_RAX, (uint64_t)kind * XFLOW_FLOWTAB__KIND_MUL);
	xa_alu_rr(a, XA_XOR, XR_RAX, XR_RDX);
	xa_mov_ri(a, XR_RCX, XFLOW_FLOWTAB__MUL);
	xa_imul_rr(a, XR_RAX, XR_RCX);
	xa_load(a, XR_RCX, XR_R11, PROC(flows.shift), 4);
	xa_shift_cl(a, 5, XR_RAX);
	xa_shift_i(a, 4, XR_RAX, 4);
	xa_alu_rm(a, XA_ADD, XR_RAX, XR_R11, PROC(flows.slots));
	/* its key: none ends the walk, another key goes on (the call) */
	xa_load(a, XR_RCX, XR_RAX, (int32_t)offsetof(struct xflow_flowtab_slot, ptr), 8);
	xa_test_rr(a, XR_RCX, XR_RCX);
	xa_jcc(a, XC_E, absent);
	xa_alu_rr(a, XA_CMP, XR_RCX, XR_RDX);
	xa_jcc(a, XC_NE, slow);
	/* the key of another kind goes on too; else the id, 48 bits */
	xa_load(a, XR_RAX, XR_RAX, (int32_t)offsetof(struct xflow_flowtab_slot, val), 8);
	xa_mov_rr(a, XR_RCX, XR_RAX);
	xa_shift_i(a, 5, XR_RCX, XFLOW_FLOWID_BITS);
	xa_alu_ri(a, XA_CMP, XR_RCX, kind);
	xa_jcc(a, XC_NE, slow);
	xa_shift_i(a, 4, XR_RAX, 64 - XFLOW_FLOWID_BITS);
	xa_shift_i(a, 5, XR_RAX, 64 - XFLOW_FLOWID_BITS);
	xa_jmp(a, check);
	xa_bind(a, absent);
	xa_mov_ri(a, XR_RAX, 0);
	/* The count again: x86 keeps loads in order, so the slot's were
	 * done before it; a change that overlapped them moved it. */
	xa_bind(a, check);
	xa_load(a, XR_RCX, XR_R11, PROC(flow_lock), 4);
	xa_alu_rr(a, XA_CMP, XR_RCX, XR_R10);
	xa_jcc(a, XC_E, done);
#undef PROC
	xa_bind(a, slow);
	xa_mov_rr(a, XR_RDI, XR_RBX);
	xa_mov_ri(a, XR_RSI, kind);
	call_rt(j, XFLOW_RT_JIT_FLOW_PEEK);
	xa_bind(a, done);
}

/* The program of one binding. */
static int body(struct jit *j, const struct xflow_bc_prog *p)
{
	struct xasm *a = &j->a;
	int d[XFLOW_BC_MAX_INSNS];
	uint32_t lab[XFLOW_BC_MAX_INSNS + 1];
	const struct xflow_bc_insn *insns = at_ctl(j, (uint64_t)(uintptr_t)p->insns);
	const uint64_t *consts = at_ctl(j, (uint64_t)(uintptr_t)p->consts);
	struct xflow_bc_prog q = *p;
	q.insns = insns;
	if (p->ninsns > XFLOW_BC_MAX_INSNS || depths(&q, d) < 0)
		return -EINVAL;
	/* Where a jump lands, rax holds whatever the path there left. */
	bool target[XFLOW_BC_MAX_INSNS + 1] = { false };
	for (uint32_t pc = 0; pc < p->ninsns; pc++)
		if (insns[pc].op == XFLOW_OP_JMP || insns[pc].op == XFLOW_OP_JZ || insns[pc].op == XFLOW_OP_JNZ)
			target[pc + 1 + (uint32_t)insns[pc].k] = true; /* in range: depths() checked */
	for (uint32_t i = 0; i <= p->ninsns; i++)
		lab[i] = xa_label(a);
	j->rax_at = -1;
	for (uint32_t pc = 0; pc < p->ninsns; pc++) {
		const struct xflow_bc_insn *in = &insns[pc];
		int s = d[pc];
		xa_bind(a, lab[pc]);
		/* Only the operations below that end with rax stored keep it. */
		int32_t rax_at = target[pc] ? -1 : j->rax_at;
		j->rax_at = -1;
		if (s < 0)
			continue;
		const struct xflow_field_rt *f;
		switch ((enum xflow_bc_op)in->op) {
		case XFLOW_OP_NOP: case XFLOW_OP_TOPTR: case XFLOW_OP_TOINT: case XFLOW_OP_DROP:
			break;
		case XFLOW_OP_PUSHI:
			xa_mov_ri(a, XR_RAX, (uint64_t)(int64_t)in->k);
			store_rax(j, F_CELL(s));
			break;
		case XFLOW_OP_PUSHK:
			if (in->b >= p->nconsts)
				return -EINVAL;
			xa_mov_ri(a, XR_RAX, consts[in->b]);
			store_rax(j, F_CELL(s));
			break;
		case XFLOW_OP_LDIN:
			xa_load(a, XR_RAX, XR_RSP, F_INPUT(in->a), 8);
			store_rax(j, F_CELL(s));
			break;
		case XFLOW_OP_LDL:
			j->rax_at = rax_at;
			load_rax(j, F_LOCAL(in->a));
			store_rax(j, F_CELL(s));
			break;
		case XFLOW_OP_STL:
			j->rax_at = rax_at;
			load_rax(j, F_CELL(s - 1));
			store_rax(j, F_LOCAL(in->a));
			break;
		case XFLOW_OP_DUP:
			j->rax_at = rax_at;
			load_rax(j, F_CELL(s - 1));
			store_rax(j, F_CELL(s));
			break;
		case XFLOW_OP_LDF:
			f = field(j, in->b);
			if (!f || f->size == 0) {
				xa_jmp(a, j->l_fault); /* not in this domain: every access faults */
				break;
			}
			xa_load(a, XR_RDI, XR_RSP, F_CELL(s - 1), 8);
			if (f->offset)
				xa_alu_ri(a, XA_ADD, XR_RDI, (int32_t)f->offset);
			mem_access(j, f->size, 0);
			xa_load(a, XR_RAX, XR_RSP, F_TMP, 8);
			field_value(j, f);
			xa_store(a, XR_RSP, F_CELL(s - 1), XR_RAX, 8);
			break;
		case XFLOW_OP_ELEM:
			/* [p i -- p + offset + i * stride], i below the count. */
			f = field(j, in->b);
			if (!f || !f->nelems) {
				xa_jmp(a, j->l_fault); /* no such array here: fault */
				break;
			}
			xa_load(a, XR_RAX, XR_RSP, F_CELL(s - 1), 8);
			xa_mov_ri(a, XR_RCX, f->nelems);
			xa_alu_rr(a, XA_CMP, XR_RAX, XR_RCX);
			xa_jcc(a, XC_AE, j->l_fault);
			xa_mov_ri(a, XR_RCX, f->stride);
			xa_imul_rr(a, XR_RAX, XR_RCX);
			xa_mov_ri(a, XR_RCX, f->offset);
			xa_alu_rr(a, XA_ADD, XR_RAX, XR_RCX);
			xa_alu_rm(a, XA_ADD, XR_RAX, XR_RSP, F_CELL(s - 2));
			xa_store(a, XR_RSP, F_CELL(s - 2), XR_RAX, 8);
			break;
		case XFLOW_OP_STF:
			f = field(j, in->b);
			if (!f || f->size == 0) {
				xa_jmp(a, j->l_fault);
				break;
			}
			if (f->bit_size) {
				/* Read-modify-write of the bytes holding the bitfield. */
				uint64_t m = (f->bit_size >= 64 ? UINT64_MAX : (UINT64_C(1) << f->bit_size) - 1)
					     << f->bit_offset;
				xa_load(a, XR_RDI, XR_RSP, F_CELL(s - 2), 8);
				if (f->offset)
					xa_alu_ri(a, XA_ADD, XR_RDI, (int32_t)f->offset);
				mem_access(j, f->size, 0);
				xa_load(a, XR_RAX, XR_RSP, F_CELL(s - 1), 8);
				if (f->bit_offset)
					xa_shift_i(a, 4, XR_RAX, f->bit_offset);
				xa_mov_ri(a, XR_RCX, m);
				xa_alu_rr(a, XA_AND, XR_RAX, XR_RCX);
				xa_not(a, XR_RCX);
				xa_alu_rm(a, XA_AND, XR_RCX, XR_RSP, F_TMP);
				xa_alu_rr(a, XA_OR, XR_RAX, XR_RCX);
				xa_store(a, XR_RSP, F_TMP, XR_RAX, 8);
			} else {
				xa_load(a, XR_RAX, XR_RSP, F_CELL(s - 1), 8);
				xa_store(a, XR_RSP, F_TMP, XR_RAX, 8);
			}
			xa_load(a, XR_RDI, XR_RSP, F_CELL(s - 2), 8);
			if (f->offset)
				xa_alu_ri(a, XA_ADD, XR_RDI, (int32_t)f->offset);
			mem_access(j, f->size, 1);
			break;
		case XFLOW_OP_LDM:
			if (in->a != 1 && in->a != 2 && in->a != 4 && in->a != 8)
				return -EINVAL;
			xa_load(a, XR_RDI, XR_RSP, F_CELL(s - 1), 8);
			mem_access(j, in->a, 0);
			if (in->b & XFLOW_LDM_SIGNED)
				xa_loads(a, XR_RAX, XR_RSP, F_TMP, in->a);
			else
				xa_load(a, XR_RAX, XR_RSP, F_TMP, 8);
			xa_store(a, XR_RSP, F_CELL(s - 1), XR_RAX, 8);
			break;
		case XFLOW_OP_NEG: case XFLOW_OP_NOT: case XFLOW_OP_LNOT:
			xa_load(a, XR_RAX, XR_RSP, F_CELL(s - 1), 8);
			if (in->op == XFLOW_OP_NEG)
				xa_neg(a, XR_RAX);
			else if (in->op == XFLOW_OP_NOT)
				xa_not(a, XR_RAX);
			else
				xa_test_rr(a, XR_RAX, XR_RAX), xa_setcc(a, XC_E, XR_RAX);
			xa_store(a, XR_RSP, F_CELL(s - 1), XR_RAX, 8);
			break;
		case XFLOW_OP_JMP:
			xa_jmp(a, lab[pc + 1 + (uint32_t)in->k]);
			break;
		case XFLOW_OP_JZ:
		case XFLOW_OP_JNZ:
			xa_load(a, XR_RAX, XR_RSP, F_CELL(s - 1), 8);
			xa_test_rr(a, XR_RAX, XR_RAX);
			xa_jcc(a, in->op == XFLOW_OP_JZ ? XC_E : XC_NE, lab[pc + 1 + (uint32_t)in->k]);
			break;
		case XFLOW_OP_RET:
			xa_jmp(a, j->l_end);
			break;
		case XFLOW_OP_RDTSC:
			hit_time(j);
			xa_load(a, XR_RAX, XR_RBX, LANE(now), 8);
			store_rax(j, F_CELL(s));
			break;
		case XFLOW_OP_PC:
			xa_mov_ri(a, XR_RAX, j->addr);
			store_rax(j, F_CELL(s));
			break;
		case XFLOW_OP_FLOW_NEW:
			if (j->spec) {
				xa_jmp(a, j->l_retry); /* an id is for a change */
				break;
			}
			xa_mov_rr(a, XR_RDI, XR_RBX);
			call_rt(j, XFLOW_RT_JIT_NEW_ID);
			xa_store(a, XR_RSP, F_CELL(s), XR_RAX, 8);
			break;
		case XFLOW_OP_FLOW_GET:
			xa_load(a, XR_RDX, XR_RSP, F_CELL(s - 1), 8);
			if (j->adv->uses_flows == 2 || j->spec) {
				flow_peek(j, in->b);
			} else {
				xa_mov_rr(a, XR_RDI, XR_RBX);
				xa_mov_ri(a, XR_RSI, in->b);
				call_rt(j, XFLOW_RT_JIT_FLOW_GET);
			}
			xa_store(a, XR_RSP, F_CELL(s - 1), XR_RAX, 8);
			set_last(j, in->b, 0);
			break;
		case XFLOW_OP_FLOW_REG:
			if (j->spec) {
				xa_jmp(a, j->l_retry);
				break;
			}
			xa_mov_rr(a, XR_RDI, XR_RBX);
			xa_mov_ri(a, XR_RSI, in->b);
			xa_load(a, XR_RDX, XR_RSP, F_CELL(s - 2), 8);
			xa_load(a, XR_RCX, XR_RSP, F_CELL(s - 1), 8);
			call_rt(j, XFLOW_RT_JIT_FLOW_REG);
			set_last(j, in->b, 1);
			break;
		case XFLOW_OP_FLOW_DEL:
			xa_mov_rr(a, XR_RDI, XR_RBX);
			xa_mov_ri(a, XR_RSI, in->b);
			xa_load(a, XR_RDX, XR_RSP, F_CELL(s - 1), 8);
			if (j->spec) {
				/* Nothing to remove is a removal that did nothing;
				 * anything else is a change. */
				flow_peek(j, in->b);
				xa_test_rr(a, XR_RAX, XR_RAX);
				xa_jcc(a, XC_NE, j->l_retry);
				break;
			}
			call_rt(j, XFLOW_RT_JIT_FLOW_DEL);
			set_last(j, in->b, 0);
			break;
		case XFLOW_OP_STORE:
			if (in->a < 1 || in->a > XFLOW_RECORD_MAX_DATA)
				return -EINVAL;
			if (j->flow_ops)
				xa_load(a, XR_R8, XR_RSP, F_LAST_ID, 8);
			emit_record(j, -1, in->b, in->a, s - in->a, !j->flow_ops);
			break;
		case XFLOW_OP_HANDOFF:
			if (in->a == 2) {
				/* [key id dom --]: data = key, 1, dom + 1 */
				xa_load(a, XR_R8, XR_RSP, F_CELL(s - 2), 8);
				xa_mov_ri(a, XR_RAX, 1);
				xa_store(a, XR_RSP, F_CELL(s - 2), XR_RAX, 8);
				xa_load(a, XR_RAX, XR_RSP, F_CELL(s - 1), 8);
				xa_alu_ri(a, XA_ADD, XR_RAX, 1);
				xa_store(a, XR_RSP, F_CELL(s - 1), XR_RAX, 8);
				emit_record(j, in->b,
					    XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_KEYED | XFLOW_REC_START,
					    3, s - 3, false);
				xa_store_i(a, XR_RSP, F_OP_REC, 1, 8);
				break;
			}
			/* [key id --]: data = key, the side */
			xa_load(a, XR_R8, XR_RSP, F_CELL(s - 1), 8);
			xa_mov_ri(a, XR_RAX, in->a);
			xa_store(a, XR_RSP, F_CELL(s - 1), XR_RAX, 8);
			emit_record(j, in->b,
				    XFLOW_REC_TRANSIT | XFLOW_REC_CROSS_DOMAIN | XFLOW_REC_KEYED |
					    (in->a ? XFLOW_REC_START : 0),
				    2, s - 2, false);
			xa_store_i(a, XR_RSP, F_OP_REC, 1, 8);
			break;
		case XFLOW_OP_SPLIT:
			/* [child parent --]: id child, data = parent */
			xa_load(a, XR_R8, XR_RSP, F_CELL(s - 2), 8);
			xa_load(a, XR_RAX, XR_RSP, F_CELL(s - 1), 8);
			xa_store(a, XR_RSP, F_CELL(s - 2), XR_RAX, 8);
			emit_record(j, in->b, XFLOW_REC_START | XFLOW_REC_TRANSIT | XFLOW_REC_SPLIT, 1, s - 2, false);
			xa_store_i(a, XR_RSP, F_OP_REC, 1, 8);
			break;
		default:
			if (binop(j, in->op, s) < 0)
				return -ENOTSUP;
			break;
		}
	}
	xa_bind(a, lab[p->ninsns]);
	return 0;
}

/* Whether program @p may give its run a flow: only these set F_LAST_ID
 * (set_last).  Without one the run's records carry no id, and no marker
 * is due, whatever the run does. */
static bool has_flow_ops(const struct jit *j, const struct xflow_bc_prog *p)
{
	const struct xflow_bc_insn *insns = at_ctl(j, (uint64_t)(uintptr_t)p->insns);
	for (uint32_t pc = 0; pc < p->ninsns && pc < XFLOW_BC_MAX_INSNS; pc++)
		if (insns[pc].op == XFLOW_OP_FLOW_GET || insns[pc].op == XFLOW_OP_FLOW_REG ||
		    insns[pc].op == XFLOW_OP_FLOW_DEL)
			return true;
	return false;
}

/* Whether program @p, which changes the flow-id table, may run first with
 * the table read without its lock (struct jit's spec): it changes nothing
 * but the table (no record, no store to memory), so that a run cut short
 * where it would change it leaves nothing behind, and runs again locked. */
static bool speculable(const struct jit *j, const struct xflow_bc_prog *p)
{
	const struct xflow_bc_insn *insns = at_ctl(j, (uint64_t)(uintptr_t)p->insns);
	for (uint32_t pc = 0; pc < p->ninsns && pc < XFLOW_BC_MAX_INSNS; pc++)
		switch (insns[pc].op) {
		case XFLOW_OP_STF: case XFLOW_OP_STORE: case XFLOW_OP_HANDOFF: case XFLOW_OP_SPLIT:
			return false;
		default:
			break;
		}
	return true;
}

/* The frame as a run of the program finds it: no flow yet, locals 0. */
static void frame_start(struct jit *j)
{
	struct xasm *a = &j->a;
	if (j->flow_ops) {
		xa_store_i(a, XR_RSP, F_LAST_ID, 0, 8);
		xa_store_i(a, XR_RSP, F_LAST_KIND, XFLOW_FLOW_KIND_NONE, 8);
		xa_store_i(a, XR_RSP, F_LAST_REG, 0, 8);
		xa_store_i(a, XR_RSP, F_OP_REC, 0, 8);
	}
	for (uint32_t i = 0; i < j->adv->prog.nlocals && i < XFLOW_BC_MAX_LOCALS; i++)
		xa_store_i(a, XR_RSP, F_LOCAL(i), 0, 8);
}

/* One run of the binding's program, its marker, and its faults' way out
 * to @next: with the table's lock held and let go at the end when
 * @locked. */
static int run(struct jit *j, uint32_t next, bool locked)
{
	struct xasm *a = &j->a;
	j->l_fault = xa_label(a);
	j->l_end = xa_label(a);
	int rc = body(j, &j->adv->prog);
	if (rc < 0)
		return rc;
	xa_bind(a, j->l_end);
	if (j->adv->marker_flags && j->flow_ops) {
		/* An xflow operation that acted on a flow says so, unless its
		 * operation wrote its own record (split, handoff), or it is a
		 * start that kept an id in place (guestrt/interp/interp.c's
		 * marker_due). */
		uint32_t none = xa_label(a);
		xa_load(a, XR_RAX, XR_RSP, F_OP_REC, 8);
		xa_test_rr(a, XR_RAX, XR_RAX);
		xa_jcc(a, XC_NE, none);
		if (j->adv->marker_flags & XFLOW_REC_START) {
			xa_load(a, XR_RAX, XR_RSP, F_LAST_REG, 8);
			xa_test_rr(a, XR_RAX, XR_RAX);
			xa_jcc(a, XC_E, none);
		}
		xa_load(a, XR_R8, XR_RSP, F_LAST_ID, 8);
		xa_test_rr(a, XR_R8, XR_R8);
		xa_jcc(a, XC_E, none);
		emit_record(j, -1, j->adv->marker_flags, 0, 0, false);
		xa_bind(a, none);
	}
	if (locked) {
		xa_mov_rr(a, XR_RDI, XR_RBX);
		call_rt(j, XFLOW_RT_JIT_UNLOCK);
	}
	struct cold *c = cold_add(j);
	if (c)
		*c = (struct cold){ .fault = 1, .unlock = locked, .from = j->l_fault, .back = next,
				    .counter = counter(j, XFLOW_RT_CNT_FAULTS) };
	return 0;
}

/* One binding: its flag, a hit, its inputs, its program. */
static int binding(struct jit *j, const struct xflow_rt_binding *b)
{
	struct xasm *a = &j->a;
	const struct xflow_rt_advice *adv = (const struct xflow_rt_advice *)((const char *)j->c + j->c->off_advice);
	const struct xflow_rt_fetch *fetches = (const struct xflow_rt_fetch *)((const char *)j->c + j->c->off_fetches);
	if (b->advice >= j->c->nadvice || b->ninputs > XFLOW_BC_MAX_INPUTS || b->first_fetch + b->ninputs > j->c->nfetches)
		return -EINVAL;
	j->adv = &adv[b->advice];
	j->adv_index = b->advice;
	j->flow_ops = has_flow_ops(j, &j->adv->prog);
	uint32_t next = xa_label(a);
	/* Relaxed, as the interpreter: a toggle takes effect at the next hit. */
	xa_mov_ri(a, XR_RAX, j->env->ctl_addr + j->c->off_enabled + b->advice);
	xa_load(a, XR_RAX, XR_RAX, 0, 1);
	xa_test_rr(a, XR_RAX, XR_RAX);
	xa_jcc(a, XC_E, next);
	xa_alu_mi(a, XA_ADD, XR_RBX, counter(j, XFLOW_RT_CNT_HITS), 1);
	for (unsigned i = 0; i < b->ninputs; i++) {
		int rc = fetch(j, &fetches[b->first_fetch + i], i);
		if (rc < 0)
			return rc;
	}
	bool spec = j->adv->uses_flows == 1 && speculable(j, &j->adv->prog);
	frame_start(j);
	if (spec) {
		/* Issue 27: the run first reads the table as lookups do, without
		 * its lock, and takes the lock only where it would change the
		 * table.  A quit at every touch of a request's last function,
		 * or a start at every touch of its first, finds nothing to do
		 * but once; each lock taken is a shared line written, which
		 * every other thread's lookups then fetch again. */
		j->spec = true;
		j->l_retry = xa_label(a);
		int rc = run(j, next, false);
		j->spec = false;
		if (rc < 0)
			return rc;
		xa_jmp(a, next);
		xa_bind(a, j->l_retry);
		frame_start(j);
	}
	bool locked = j->adv->uses_flows == 1;
	if (locked) {
		hit_time(j);
		xa_mov_rr(a, XR_RDI, XR_RBX);
		call_rt(j, XFLOW_RT_JIT_LOCK);
	}
	int rc = run(j, next, locked);
	if (rc < 0)
		return rc;
	xa_bind(a, next);
	return 0;
}

/*
 * rbx = the calling thread's lane, marked busy, the hit's time and CPU in
 * it: rt_jit_begin's common case, inline (issue 27: no call, no search,
 * no test of what the compiler knows: the control region, set in the
 * image's config before any code was compiled for it, and the thread-key
 * mode).  Where the image tells threads apart by %fs:0 (rt_safe_fs0,
 * fault-safe), the lane where the hash of that key puts it, owned by the
 * thread, ready and idle.  Anything else (no data region yet, as in a
 * forked child, no TLS, a first hit, a lane taken elsewhere, stale or
 * busy), and every hit where the key is rdfsbase, is rt_jit_begin's,
 * called from the start by the cold path, which counts what it counts
 * and jumps to @out when the hit must do nothing.
 */
static void lane_begin(struct jit *j, uint32_t out)
{
	struct xasm *a = &j->a;
	if (j->env->fs_mode != XFLOW_RT_FS_TCB) {
		call_rt(j, XFLOW_RT_JIT_BEGIN);
		xa_test_rr(a, XR_RAX, XR_RAX);
		xa_jcc(a, XC_E, out);
		xa_mov_rr(a, XR_RBX, XR_RAX);
		return;
	}
	uint32_t slow = xa_label(a), begun = xa_label(a);
	struct cold *c = cold_add(j);
	if (!c)
		return;
	*c = (struct cold){ .fault = 2, .from = slow, .back = begun, .done = out };
	uint64_t globals = j->env->image + j->env->head->off_globals;
#define PROC(f) ((int32_t)offsetof(struct xflow_rt_proc, f))
	/* rsi = rt_globals.proc */
	xa_mov_ri(a, XR_RSI, globals + offsetof(struct xflow_rt_globals, proc));
	xa_load(a, XR_RSI, XR_RSI, 0, 8);
	xa_test_rr(a, XR_RSI, XR_RSI);
	xa_jcc(a, XC_E, slow);
	/* rax = the key: a fault gives -EFAULT's 32 bits, no TLS 0 */
	call_rt(j, XFLOW_RT_JIT_FS0);
	xa_mov_ri(a, XR_RCX, (uint32_t)-14);
	xa_alu_rr(a, XA_CMP, XR_RAX, XR_RCX);
	xa_jcc(a, XC_E, slow);
	xa_test_rr(a, XR_RAX, XR_RAX);
	xa_jcc(a, XC_E, slow);
	/* rcx = the lane at ((key * golden) >> 40) & (nlanes - 1), as
	 * rt_lane_at has it */
	xa_mov_ri(a, XR_RCX, UINT64_C(0x9E3779B97F4A7C15));
	xa_imul_rr(a, XR_RCX, XR_RAX);
	xa_shift_i(a, 5, XR_RCX, 40);
	xa_load(a, XR_RDX, XR_RSI, PROC(nlanes), 4);
	xa_alu_ri(a, XA_ADD, XR_RDX, -1);
	xa_alu_rr(a, XA_AND, XR_RCX, XR_RDX);
	xa_load(a, XR_RDX, XR_RSI, PROC(lane_size), 8);
	xa_imul_rr(a, XR_RCX, XR_RDX);
	xa_alu_rm(a, XA_ADD, XR_RCX, XR_RSI, PROC(off_lanes));
	xa_alu_rr(a, XA_ADD, XR_RCX, XR_RSI);
#undef PROC
	/* ours, not stale, ready, not busy (x86 loads are acquires) */
	xa_alu_rm(a, XA_CMP, XR_RAX, XR_RCX, LANE(owner));
	xa_jcc(a, XC_NE, slow);
	xa_load(a, XR_RDX, XR_RCX, LANE(stale), 4);
	xa_test_rr(a, XR_RDX, XR_RDX);
	xa_jcc(a, XC_NE, slow);
	xa_load(a, XR_RDX, XR_RCX, LANE(ready), 4);
	xa_test_rr(a, XR_RDX, XR_RDX);
	xa_jcc(a, XC_E, slow);
	xa_load(a, XR_RDX, XR_RCX, LANE(busy), 4);
	xa_test_rr(a, XR_RDX, XR_RDX);
	xa_jcc(a, XC_NE, slow);
	xa_mov_rr(a, XR_RBX, XR_RCX);
	/* Busy before anything of the lane is touched: a signal handler of
	 * this thread hitting a site sees it (x86 keeps the stores in
	 * order, and so does this code). */
	xa_store_i(a, XR_RBX, LANE(busy), 1, 4);
	/* No time yet: the first record or change of the flow-id table reads
	 * the clock (hit_time). */
	xa_store_i(a, XR_RBX, LANE(now), 0, 8);
	xa_bind(a, begun);
}

/* Whether every program of the hook at (@sites, @when) runs without a
 * call into the runtime, and without r8, but on the rare paths (cold_write
 * and lane_begin's, which keep what they clobber): then the hook's frame
 * is lean.  What calls: field and memory accesses (fault-safe, through
 * the runtime), every flow operation and the flow-id table's lock; what
 * writes r8: the flow id of a record (handoff, split, a run's flow). */
static bool hook_lean(const struct jit *j, unsigned when, const uint32_t *sites, uint32_t n)
{
	const struct xflow_rt_site *sv = (const struct xflow_rt_site *)((const char *)j->c + j->c->off_sites);
	const struct xflow_rt_binding *bv = (const struct xflow_rt_binding *)((const char *)j->c + j->c->off_bindings);
	const struct xflow_rt_advice *adv = (const struct xflow_rt_advice *)((const char *)j->c + j->c->off_advice);
	if (j->env->fs_mode != XFLOW_RT_FS_TCB)
		return false; /* rt_jit_begin on the common path */
	for (uint32_t i = 0; i < n; i++) {
		if (sites[i] >= j->c->nsites)
			continue;
		const struct xflow_rt_site *s = &sv[sites[i]];
		for (uint32_t k = 0; k < s->nbindings; k++) {
			uint32_t bi = s->first_binding + k;
			if (bi >= j->c->nbindings || bv[bi].when != when)
				continue;
			if (bv[bi].advice >= j->c->nadvice)
				return false;
			const struct xflow_rt_advice *ad = &adv[bv[bi].advice];
			if (ad->uses_flows || ad->prog.ninsns > XFLOW_BC_MAX_INSNS)
				return false;
			const struct xflow_bc_insn *in = at_ctl(j, (uint64_t)(uintptr_t)ad->prog.insns);
			for (uint32_t pc = 0; pc < ad->prog.ninsns; pc++) {
				switch ((enum xflow_bc_op)in[pc].op) {
				case XFLOW_OP_LDF: case XFLOW_OP_STF: case XFLOW_OP_LDM: case XFLOW_OP_FLOW_NEW:
				case XFLOW_OP_FLOW_GET: case XFLOW_OP_FLOW_REG: case XFLOW_OP_FLOW_DEL:
				case XFLOW_OP_HANDOFF: case XFLOW_OP_SPLIT:
					return false;
				default:
					break;
				}
			}
		}
	}
	return true;
}

int ip_jit_hook(const struct ip_jit_env *env, uint64_t addr, unsigned when, const uint32_t *sites, uint32_t n,
		uint64_t at, uint8_t *out, size_t max)
{
	struct jit *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	struct xasm *a = &j->a;
	xa_init(a, out, max, at);
	j->env = env;
	j->c = env->ctl;
	j->addr = addr;
	j->lean = hook_lean(j, when, sites, n);
	const enum xreg *saved = j->lean ? saved_lean : saved_all;
	size_t nsaved = j->lean ? sizeof(saved_lean) / sizeof(saved_lean[0]) : sizeof(saved_all) / sizeof(saved_all[0]);
	j->reg_at = j->lean ? reg_at_lean : reg_at_all;
	j->flags_at = (int32_t)(8 * nsaved);
	uint32_t out_l = xa_label(a);
	xa_op(a, 0x9c); /* pushfq */
	for (size_t i = 0; i < nsaved; i++)
		xa_push(a, saved[i]);
	xa_mov_rr(a, XR_RBP, XR_RSP);
	xa_alu_ri(a, XA_AND, XR_RSP, -16);
	xa_alu_ri(a, XA_SUB, XR_RSP, F_SIZE);
	/* The runtime's calls assume the direction flag clear; cld only when
	 * the program had it set (1.7 ns a hit here, for a flag almost never
	 * set). */
	uint32_t df_clear = xa_label(a);
	const uint8_t test_df[] = { 0xf7, 0x45, (uint8_t)j->flags_at, 0x00, 0x04, 0x00, 0x00 }; /* testl $0x400, flags(%rbp) */
	xa_bytes(a, test_df, sizeof(test_df));
	xa_jcc(a, XC_E, df_clear);
	xa_op(a, 0xfc); /* cld */
	xa_bind(a, df_clear);
	lane_begin(j, out_l);
	const struct xflow_rt_site *sv = (const struct xflow_rt_site *)((const char *)j->c + j->c->off_sites);
	const struct xflow_rt_binding *bv = (const struct xflow_rt_binding *)((const char *)j->c + j->c->off_bindings);
	int rc = 0;
	for (uint32_t i = 0; i < n && rc == 0; i++) {
		if (sites[i] >= j->c->nsites)
			continue;
		j->site = sites[i];
		const struct xflow_rt_site *s = &sv[sites[i]];
		for (uint32_t k = 0; k < s->nbindings && rc == 0; k++) {
			uint32_t bi = s->first_binding + k;
			if (bi < j->c->nbindings && bv[bi].when == when)
				rc = binding(j, &bv[bi]);
		}
	}
	xa_store_i(a, XR_RBX, LANE(busy), 0, 4);
	xa_bind(a, out_l);
	xa_mov_rr(a, XR_RSP, XR_RBP);
	/* The flags as the zone stub restores them: sahf and an add for OF
	 * (a quarter of popfq's cost), popfq when DF or AC was set. */
	uint32_t slow = xa_label(a);
	xa_load(a, XR_RAX, XR_RSP, j->flags_at, 8);
	static const uint8_t test_df_ac[] = { 0xa9, 0x00, 0x04, 0x04, 0x00 }; /* test $0x40400, %eax */
	xa_bytes(a, test_df_ac, sizeof(test_df_ac));
	xa_jcc(a, XC_NE, slow);
	static const uint8_t fast[] = {
		0x89, 0xc2,             /* mov %eax, %edx */
		0xc1, 0xea, 0x0b,       /* shr $11, %edx */
		0x83, 0xe2, 0x01,       /* and $1, %edx: OF */
		0x88, 0xc4,             /* mov %al, %ah: SF ZF AF PF CF */
		0x88, 0xd0,             /* mov %dl, %al */
		0x04, 0x7f,             /* add $0x7f, %al: OF = (al == 1) */
		0x9e,                   /* sahf */
	};
	xa_bytes(a, fast, sizeof(fast));
	for (size_t i = nsaved; i-- > 0;)
		xa_pop(a, saved[i]);
	xa_lea(a, XR_RSP, XR_RSP, 8); /* over the flags, which are restored */
	xa_op(a, 0xc3);
	xa_bind(a, slow);
	for (size_t i = nsaved; i-- > 0;)
		xa_pop(a, saved[i]);
	xa_op(a, 0x9d); /* popfq */
	xa_op(a, 0xc3);
	cold_write(j);
	int len = rc < 0 ? rc : xa_finish(a);
	free(j);
	return len;
}
