/*
 * The kernel backend's BPF program: one generic body, instantiated once
 * per slot, that runs the flow operations the loader put in xk_plan[slot]
 * (guestrt/hook/kernel/kabi.h) and writes struct xflow_record-shaped
 * records into a ring per CPU and level that the agent maps (kabi.h,
 * "Numbering").  Built with clang -target bpf against the running kernel's
 * vmlinux.h; CO-RE relocations are not needed: the program reads no kernel
 * struct by its C type, only the traced function's arguments, through
 * helpers that check the argument index at run time, and the member
 * chains the loader gives as (offset, size) loads from the plan's BTF
 * layouts, each with bpf_probe_read_kernel.
 *
 * Nothing here writes kernel memory: the only stores are to this program's
 * maps.  A kernel advice that would write (an xin_* with a <field>) is
 * refused by the loader before anything is loaded.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "guestrt/hook/kernel/kabi.h"

#define XK_EEXIST 17 /* EEXIST: the UAPI's errno, which vmlinux.h lacks */
/* enum xflow_record_flag (xflow/record.h, which is host C). */
#define XK_REC_START 1
#define XK_REC_TRANSIT 2
#define XK_REC_CROSS_DOMAIN 8
#define XK_REC_KEYED 64

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before the object is loaded. */
const volatile __u16 xk_domain_id = 0;
/* Records in each stream's ring: a power of two (the loader's). */
const volatile __u32 xk_ring_recs = 1;
/* Bits of a CPU's number in a flow id (XK_FLOW_ID): the possible CPUs'. */
const volatile __u32 xk_cpu_bits = 0;

/* The site table, set by the loader before the object is loaded.  In
 * .rodata, which libbpf freezes: the verifier then reads every operation's
 * kind, operands and key parts as constants, hard-wires the branches they
 * decide and drops the code no path reaches, so each slot's program keeps
 * only its own operations' code (a privileged loader's: the agent is root).
 * Volatile so that clang does not fold its zeros in.  Every pointer into
 * it below is volatile too: a load through a plain one would let clang
 * assume the initial zeros. */
const volatile struct xk_site xk_plan[XK_SLOTS] = {};

/* Per slot, which of it runs (XK_ON_*): written by the loader while the
 * programs are attached, so outside the frozen table.  One aligned word,
 * read once a run: a run sees an update whole or not at all. */
__u32 xk_on[XK_SLOTS] __attribute__((aligned(64))) = {};

/* 1 while the agent waits with nothing to read (set by the agent before
 * its wait, hook_kernel.c's kn_run): the first record to find it so takes
 * it back to 0 and wakes the agent.  A line of its own: the agent writes
 * it, and every run reads it. */
__u32 xk_agent_waits __attribute__((aligned(64))) = 0;

/* Preallocated (the default for a hash): an update from a tracing program
 * never allocates, and a full map fails the update, which is counted. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, struct xk_key);
	__type(value, __u64);
} xk_ids SEC(".maps");

/* The streams' rings, XK_STREAMS_OF(possible CPUs) * xk_ring_recs
 * records (the loader sizes it), read in place by the agent. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xk_rec);
} xk_ring SEC(".maps");

/* Each CPU's streams (kabi.h, "Numbering"), indexed by CPU; mapped by the
 * agent, which reads next and writes tail. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xk_cpu);
} xk_streams SEC(".maps");

/* Wake-ups only, no records: the agent drains every few milliseconds
 * while records flow, and is woken by an 8-byte message here (its epoll
 * fd is what the agent waits on) when a stream's ring is a quarter full,
 * or by the first record that comes while it waits idle. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} xk_wake SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XK_SLOTS);
	__type(key, __u32);
	__type(value, struct xk_count);
} xk_counts SEC(".maps");

enum { KIND_ENTRY = 0, KIND_EXIT = 1, KIND_TP = 2 };

/* Whether the CPU makes a CPU's stores visible to others in program
 * order, and keeps its loads before its later stores (x86's TSO), so that
 * plain stores claim a stream and publish a record as the agent reads
 * them (kabi.h, "Numbering"). */
#ifdef __TARGET_ARCH_x86
#define XK_STORES_IN_ORDER 1
#else
#define XK_STORES_IN_ORDER 0
#endif

/* Keeps the compiler from moving memory accesses across it; on x86 the
 * CPU then keeps the stores' order too. */
#define XK_COMPILER_BARRIER() asm volatile("" ::: "memory")

/* One run of a slot's program: its counters, and the stream its records
 * are numbered in, claimed at its first record (state 1), or none free
 * (state 2); and its program's kind, a constant in each program. */
struct xk_run {
	struct xk_count *c;
	struct xk_cpu *q;
	__u32 cpu;
	__u32 state;
	__u32 level;
	int kind;
};

/* Level @l was claimed (its busy set to l + 1).  The level kept is read
 * back from that word, which no other run writes while this one holds it:
 * to the verifier a number from memory, not the constant of one of the
 * claim's four branches, so that it walks the rest of the run once, not
 * once per level (a pass program of net_tp.xml verified in 1242
 * instructions, 2069 with the constant). */
static __always_inline void xk_claimed(struct xk_run *x, int l)
{
	x->state = 1;
	x->level = (*(volatile __u32 *)&x->q->lv[l].busy - 1) & (XK_SEQ_LEVELS - 1);
}

static __always_inline void xk_claim(struct xk_run *x)
{
	x->state = 2;
	x->cpu = bpf_get_smp_processor_id();
	x->q = bpf_map_lookup_elem(&xk_streams, &x->cpu);
	if (!x->q)
		return;
	if (x->kind == KIND_TP && XK_STORES_IN_ORDER) {
		/* A raw tracepoint's program runs with preemption off (its
		 * tracepoint's caller turns it off), so another run on this
		 * CPU can only be an interrupt's (softirq, irq, NMI), which
		 * ends before this one goes on: one that comes between the
		 * load and the store finds the level free, takes it and frees
		 * it again.  A plain test-and-set is enough on this CPU, and
		 * saves the two locked instructions of a compare-and-swap and
		 * an exchange (about 20 ns of a run of 200, measured). */
#pragma unroll
		for (int l = 0; l < XK_SEQ_LEVELS; l++) {
			if (x->q->lv[l].busy == 0) {
				x->q->lv[l].busy = l + 1;
				xk_claimed(x, l);
				return;
			}
		}
		return;
	}
	/* An fentry or fexit program may be preempted (it runs with only
	 * migration off): another task's run could take the level between a
	 * load and a store.  Full barriers both, so that elsewhere than x86
	 * the stream's stores stay between the claim and the release. */
#pragma unroll
	for (int l = 0; l < XK_SEQ_LEVELS; l++) {
		if (__sync_val_compare_and_swap(&x->q->lv[l].busy, 0, l + 1) == 0) {
			xk_claimed(x, l);
			return;
		}
	}
}

static __always_inline void xk_release(struct xk_run *x)
{
	if (x->state != 1 || !x->q)
		return;
	__u32 *busy = &x->q->lv[x->level & (XK_SEQ_LEVELS - 1)].busy;
	if (x->kind == KIND_TP && XK_STORES_IN_ORDER) {
		XK_COMPILER_BARRIER();
		*(volatile __u32 *)busy = 0;
	} else {
		__sync_lock_test_and_set(busy, 0);
	}
}

/* Number @n of level @lv is final: its record (if any) is in its slot.
 * The agent reads next, then the slots below it: on x86 a plain store
 * after the record's is seen after them; elsewhere an exchange, a full
 * barrier in every JIT. */
static __always_inline void xk_publish(struct xk_level *lv, __u32 n)
{
	if (XK_STORES_IN_ORDER) {
		XK_COMPILER_BARRIER();
		*(volatile __u32 *)&lv->next = n + 1;
	} else {
		__sync_lock_test_and_set(&lv->next, n + 1);
	}
}

/* A record counted lost before it was written takes its stream's next
 * number, and no slot. */
static __always_inline void xk_lost(struct xk_run *x)
{
	if (x->state == 0)
		xk_claim(x);
	if (x->state != 1 || !x->q)
		return;
	struct xk_level *lv = &x->q->lv[x->level & (XK_SEQ_LEVELS - 1)];
	xk_publish(lv, lv->next);
}

/* An operand: argument @which of the traced function, or its return value.
 * @kind is a constant in every caller, so a helper a program type may not
 * call (bpf_get_func_ret in fentry) is never in its code. */
static __always_inline int xk_get(void *ctx, const int kind, __u8 which, __u64 *v)
{
	if (which == XK_ARG_RET) {
		if (kind != KIND_EXIT)
			return -1;
		return bpf_get_func_ret(ctx, v);
	}
	if (kind == KIND_TP) {
		/* A raw tracepoint's arguments are the u64 array at ctx; the
		 * kernel checks at attach time that what the program reads is
		 * within the tracepoint's arguments, so only the first (an
		 * skb, a bio, a request in the tracepoints flows name) is read. */
		if (which != 0)
			return -1;
		*v = ((__u64 *)ctx)[0];
		return 0;
	}
	return bpf_get_func_arg(ctx, which, v);
}

static __always_inline void xk_emit2(struct xk_run *x, __u32 site, const volatile struct xk_op *op,
				     __u64 id, __u16 flags, __u64 d0, __u64 d1, __u64 d2, __u8 ndata)
{
	struct xk_count *c = x->c;
	if (x->state == 0)
		xk_claim(x);
	/* q again: the verifier does not carry the claim's test of it
	 * through the state. */
	if (x->state != 1 || !x->q) {
		/* No stream to number it in nor ring to put it in. */
		if (c)
			c->drops++;
		return;
	}
	__u32 l = x->level & (XK_SEQ_LEVELS - 1);
	struct xk_level *lv = &x->q->lv[l];
	__u32 n = lv->next, room = lv->room;
	if ((__s32)(n - room) >= 0) {
		/* The agent's tail is read only here, once a ring's worth of
		 * numbers since the last read, or at each record while the
		 * ring is full: its line is the agent's to write.  The slot
		 * is written after this load in program order, and a store
		 * is not made before an earlier load on x86, nor past the
		 * branch that depends on it elsewhere. */
		room = *(volatile __u32 *)&x->q->tail[l] + xk_ring_recs;
		lv->room = room;
		if ((__s32)(n - room) >= 0) {
			if (c)
				c->drops++;
			xk_publish(lv, n);
			return;
		}
	}
	__u32 slot = (x->cpu * XK_SEQ_LEVELS + l) * xk_ring_recs + (n & (xk_ring_recs - 1));
	struct xk_rec *r = bpf_map_lookup_elem(&xk_ring, &slot);
	if (!r) {
		if (c)
			c->drops++;
		xk_publish(lv, n);
		return;
	}
	r->timestamp = bpf_ktime_get_ns();
	r->flow_id = id;
	r->site_id = site;
	r->flow_kind = op->flow;
	r->domain_id = xk_domain_id;
	r->flags = flags | XK_REC_SEQ_COUNTS_LOST;
	r->version = XK_RECORD_VERSION;
	r->ndata = ndata;
	r->thread_id = XK_STREAM(x->cpu, l);
	r->thread_seq = n;
	r->cpu_plus1 = x->cpu + 1;
	r->data[0] = d0;
	r->data[1] = d1;
	r->data[2] = d2;
#pragma unroll
	for (int i = 3; i < 6; i++)
		r->data[i] = 0;
	xk_publish(lv, n);
	/* The agent drains every BUSY_SLICE_MS while records flow
	 * (guestrt/agent/agent_priv.h); a wake-up per record (an irq_work and
	 * an epoll wake-up; in a PV guest the irq_work's self-IPI is a
	 * hypercall) would cost several times the rest of a run.  It is woken
	 * early once a ring's worth of numbers, when a quarter of the ring
	 * has filled since the tail was last read; and by the first record
	 * that finds it waiting idle (xk_agent_waits), which would otherwise
	 * wait out its idle slice: a sparse flow's records reach the monitor
	 * at once, with one wake-up for a burst on every stream (in the Xen
	 * lab under TCG, dom0's came up to 10 ms late, 65-139 of 5,000 past
	 * the monitor's reorder window; and a wake-up per stream after each
	 * quiet spell, tried before this, took dom0's cost a run from 2 to 5
	 * times bpftrace's).  A plain load first: the exchange, a locked
	 * instruction, only when the agent waits.  That load may pass the
	 * publication's store on x86, and the agent then miss the record
	 * when it looks before it waits: the record waits out the slice, as
	 * it would without the flag (the two meet within a store buffer's
	 * drain, nanoseconds). */
	if (room - n == xk_ring_recs - xk_ring_recs / 4 ||
	    (*(volatile __u32 *)&xk_agent_waits && __sync_lock_test_and_set(&xk_agent_waits, 0))) {
		__u64 m = n;
		bpf_ringbuf_output(&xk_wake, &m, sizeof(m), BPF_RB_FORCE_WAKEUP);
	}
}

static __always_inline void xk_emit(struct xk_run *x, __u32 site, const volatile struct xk_op *op, __u64 id)
{
	xk_emit2(x, site, op, id, op->rec_flags, 0, 0, 0, 0);
}

/* @size bytes at @at, zero-extended, with the fault-safe helper: a bad
 * pointer gives -1, and the caller writes no record. */
static __always_inline int xk_read(__u64 at, __u8 size, __u64 *v)
{
	const void *p = (const void *)at;
	*v = 0;
	switch (size) {
	case 1: {
		__u8 x;
		if (bpf_probe_read_kernel(&x, 1, p))
			return -1;
		*v = x;
		return 0;
	}
	case 2: {
		__u16 x;
		if (bpf_probe_read_kernel(&x, 2, p))
			return -1;
		*v = x;
		return 0;
	}
	case 4: {
		__u32 x;
		if (bpf_probe_read_kernel(&x, 4, p))
			return -1;
		*v = x;
		return 0;
	}
	case 8:
		return bpf_probe_read_kernel(v, 8, p) ? -1 : 0;
	default:
		return -1;
	}
}

/* An operand's member chain (guestrt/hook/kernel/kabi.h, struct xk_path) from the
 * argument's value in *@v, with @idx the index of its array element (0
 * without one).  Inlined: the verifier walks only the operands its
 * slot's operations have (xk_plan is constant to it), so a copy per
 * operand costs it little, and a run saves a call per operand.  0; 1 if
 * a pointer on the way is NULL (no object here, not a fault); -1 on a
 * fault. */
static __always_inline int xk_chain(const volatile struct xk_path *p, __u64 *v, __u64 idx)
{
	/* The register holds the argument's C type; above it, bits the ABI
	 * leaves undefined.  Bounded before any address is made of it: a
	 * guest's index never takes a read outside the array. */
	idx &= p->imask;
	if (idx >= p->nelems)
		return -1;
	for (int i = 0; i < XK_MAX_DEREF; i++) {
		if (i >= p->n)
			break;
		if (!*v)
			return 1;
		*v += p->add[i] + idx * p->stride[i];
		if (xk_read(*v + p->off[i], p->size[i], v))
			return -1;
	}
	if (*v)
		*v += p->tadd + idx * p->tstride;
	return 0;
}

/* The value of an element's index: argument @which, whatever it is (the
 * chain masks it to 0 when there is no index), without a branch. */
static __always_inline __u64 xk_index(void *ctx, const int kind, __u8 which)
{
	__u64 v = 0;
	if (kind == KIND_TP)
		/* Only arg0 (see xk_get), which every operand reads anyway. */
		v = ((__u64 *)ctx)[0];
	else
		/* XK_ARG_NONE is no argument: v stays 0. */
		bpf_get_func_arg(ctx, which, &v);
	return v;
}

static __always_inline int xk_path_get(void *ctx, const int kind, const volatile struct xk_path *p, __u64 *v)
{
	*v = 0;
	if (xk_get(ctx, kind, p->arg, v))
		return 1;
	/* A bare argument, the common operand (a tracepoint's skb): the
	 * chain's index mask, bound and loop would be run for nothing (3 ns
	 * of a run of 135, measured, within the noise).  Both fields are
	 * constants to the verifier, which keeps one of the two paths. */
	if (p->n == 0 && p->iarg == XK_ARG_NONE)
		return 0;
	return xk_chain(p, v, xk_index(ctx, kind, p->iarg));
}

/* The key of a keyed handoff: the request's members, each masked to its
 * bits and shifted to its place (xflow(5): the first <key> highest). */
static __always_inline int xk_key(__u64 req, const volatile struct xk_op *op, __u64 *key)
{
	*key = 0;
	for (int i = 0; i < XK_MAX_KEYS; i++) {
		__u64 x;
		if (i >= op->nparts)
			break;
		const volatile struct xk_keypart *kp = &op->part[i];
		if (xk_read(req + kp->off, kp->size, &x))
			return -1;
		if (kp->bits && kp->bits < 64)
			x &= (1ULL << kp->bits) - 1;
		*key |= x << (kp->shift & 63);
	}
	return 0;
}

/* A map update's result, read in 32 bits.  Before Linux 6.4 the map
 * operations returned int, and the verifier calls them directly in place
 * of the helper: an error reached the program zero-extended, -EEXIST as
 * 0xffffffef, which a 64-bit compare with -17 misses (seen on 6.1 in the
 * Xen lab's dom0: every start on a live object was taken for a full id
 * table, and lost a record's number). */
static __always_inline int xk_update(void *map, const void *key, const void *value, __u64 flags)
{
	return (int)bpf_map_update_elem(map, key, value, flags);
}

/* A new id for the object of @ka, registered; 0 when the object has one
 * already (a live object keeps its id: xflow(5), A START ON A LIVE
 * OBJECT), when the table is full (counted), or when the run has no
 * stream (its record could not be written either: counted).  The id is
 * the run's stream's (XK_FLOW_ID): no atomic add on a shared line, and an
 * id taken for a live object is simply not used.  The update's own check
 * (BPF_NOEXIST) is the test for a live object: no lookup before it. */
static __always_inline __u64 xk_new_id(struct xk_run *x, struct xk_key *ka)
{
	if (x->state == 0)
		xk_claim(x);
	if (x->state != 1 || !x->q) {
		if (x->c)
			x->c->drops++;
		return 0;
	}
	__u32 l = x->level & (XK_SEQ_LEVELS - 1);
	struct xk_level *lv = &x->q->lv[l];
	__u64 id = XK_FLOW_ID(lv->ids++, x->cpu, l, xk_cpu_bits);
	int rc = xk_update(&xk_ids, ka, &id, BPF_NOEXIST);
	if (rc == -XK_EEXIST)
		return 0;
	if (rc) {
		if (x->c)
			x->c->full++;
		xk_lost(x);
		return 0;
	}
	return id;
}

/* The records of xflow/bytecode.h's HANDOFF. */
#define HAND_FLAGS (XK_REC_TRANSIT | XK_REC_CROSS_DOMAIN | XK_REC_KEYED)

static __always_inline void xk_fault(struct xk_run *x)
{
	if (x->c)
		x->c->faults++;
	xk_lost(x);
}

/* A handoff's key, from the request @op->to reaches: 0, or 1 when there
 * is nothing to record (no request; a fault, counted). */
static __always_inline int xk_request_key(void *ctx, const int kind, struct xk_run *x,
					  const volatile struct xk_op *op, __u64 *key)
{
	__u64 req;
	int r = xk_path_get(ctx, kind, &op->to, &req);
	if (r == 0 && req && xk_key(req, op, key))
		r = -1;
	if (r < 0)
		xk_fault(x);
	return r || !req;
}

static __always_inline void xk_do(void *ctx, const int kind, struct xk_run *x, __u32 site,
				  const volatile struct xk_op *op)
{
	__u64 a = 0, b = 0, id;
	int r = xk_path_get(ctx, kind, &op->from, &a);
	if (r < 0)
		xk_fault(x);
	if (r || !a)
		return;
	struct xk_key ka = { .addr = a, .flow = op->flow };
	if (op->kind == XK_OP_START) {
		/* A live object keeps its id, and then writes no record. */
		id = xk_new_id(x, &ka);
		if (id)
			xk_emit(x, site, op, id);
		return;
	}
	__u64 *idp = bpf_map_lookup_elem(&xk_ids, &ka);
	switch (op->kind) {
	case XK_OP_HAND_OUT: {
		__u64 key;
		if (!idp)
			return;
		id = *idp;
		if (xk_request_key(ctx, kind, x, op, &key))
			return;
		if (op->move)
			bpf_map_delete_elem(&xk_ids, &ka);
		xk_emit2(x, site, op, id, HAND_FLAGS, key, 0, 0, 2);
		return;
	}
	case XK_OP_HAND_IN: {
		__u64 key, dom = 0;
		/* An object with a live id keeps it, as at a start. */
		if (idp)
			return;
		if (xk_request_key(ctx, kind, x, op, &key))
			return;
		/* The sender's domain id, + 1 so that 0 says "not known":
		 * a fault there still records the handoff, unattributed. */
		if (op->peer.arg != XK_ARG_NONE) {
			int pr = xk_path_get(ctx, kind, &op->peer, &dom);
			if (pr < 0)
				xk_fault(x);
			dom = pr == 0 ? dom + 1 : 0;
		}
		id = xk_new_id(x, &ka);
		if (!id)
			return;
		/* ndata as the interpreter writes it: 3 when the receiver
		 * names its sender (HANDOFF side 2), else 2. */
		xk_emit2(x, site, op, id, HAND_FLAGS | XK_REC_START, key, 1, dom,
			 op->peer.arg != XK_ARG_NONE ? 3 : 2);
		return;
	}
	case XK_OP_PASS:
		if (idp)
			xk_emit(x, site, op, *idp);
		return;
	case XK_OP_END:
		if (!idp)
			return;
		id = *idp;
		bpf_map_delete_elem(&xk_ids, &ka);
		xk_emit(x, site, op, id);
		return;
	case XK_OP_MOVE:
	case XK_OP_COPY:
		if (!idp)
			return;
		id = *idp;
		r = xk_path_get(ctx, kind, &op->to, &b);
		if (r < 0)
			xk_fault(x);
		if (r || !b)
			return;
		if (b != a) {
			struct xk_key kb = { .addr = b, .flow = op->flow };
			if (xk_update(&xk_ids, &kb, &id, BPF_ANY)) {
				if (x->c)
					x->c->full++;
				xk_lost(x);
				return;
			}
			if (op->kind == XK_OP_MOVE)
				bpf_map_delete_elem(&xk_ids, &ka);
		}
		xk_emit(x, site, op, id);
		return;
	default:
		return;
	}
}

static __always_inline int xk_hit(void *ctx, const __u32 slot, const int kind)
{
	const volatile struct xk_site *s = &xk_plan[slot];
	__u32 on = xk_on[slot];
	if (!(on & XK_ON_SLOT))
		return 0;
	__u32 k = slot;
	struct xk_count *c = bpf_map_lookup_elem(&xk_counts, &k);
	if (c)
		c->hits++;
	struct xk_run x = { .c = c, .kind = kind };
	for (int i = 0; i < XK_MAX_OPS; i++) {
		if ((__u32)i >= s->nops)
			break;
		/* Read in place, not copied: an operation is larger than the
		 * stack can hold four times, and a copy would hide from the
		 * verifier that its fields are constants. */
		if (on & (1u << i))
			xk_do(ctx, kind, &x, s->plan_site, &s->ops[i]);
	}
	xk_release(&x);
	return 0;
}

/* The slots.  Their attach targets are set by the loader (fentry, fexit)
 * or given when attaching (raw tracepoints); slots a plan does not use are
 * not loaded. */
#define ENTRY_SLOT(n)                                                     \
	SEC("fentry") int xk_entry_##n(void *ctx)                         \
	{                                                                 \
		return xk_hit(ctx, n, KIND_ENTRY);                        \
	}
#define EXIT_SLOT(n)                                                      \
	SEC("fexit") int xk_exit_##n(void *ctx)                           \
	{                                                                 \
		return xk_hit(ctx, XK_NSLOTS + (n), KIND_EXIT);             \
	}
#define TP_SLOT(n)                                                        \
	SEC("raw_tp") int xk_tp_##n(void *ctx)                            \
	{                                                                 \
		return xk_hit(ctx, 2 * XK_NSLOTS + (n), KIND_TP);           \
	}
ENTRY_SLOT(0) ENTRY_SLOT(1) ENTRY_SLOT(2) ENTRY_SLOT(3) ENTRY_SLOT(4) ENTRY_SLOT(5)
ENTRY_SLOT(6) ENTRY_SLOT(7) ENTRY_SLOT(8) ENTRY_SLOT(9) ENTRY_SLOT(10) ENTRY_SLOT(11)
ENTRY_SLOT(12) ENTRY_SLOT(13) ENTRY_SLOT(14) ENTRY_SLOT(15) ENTRY_SLOT(16) ENTRY_SLOT(17)
ENTRY_SLOT(18) ENTRY_SLOT(19) ENTRY_SLOT(20) ENTRY_SLOT(21) ENTRY_SLOT(22) ENTRY_SLOT(23)
EXIT_SLOT(0) EXIT_SLOT(1) EXIT_SLOT(2) EXIT_SLOT(3) EXIT_SLOT(4) EXIT_SLOT(5)
EXIT_SLOT(6) EXIT_SLOT(7) EXIT_SLOT(8) EXIT_SLOT(9) EXIT_SLOT(10) EXIT_SLOT(11)
EXIT_SLOT(12) EXIT_SLOT(13) EXIT_SLOT(14) EXIT_SLOT(15) EXIT_SLOT(16) EXIT_SLOT(17)
EXIT_SLOT(18) EXIT_SLOT(19) EXIT_SLOT(20) EXIT_SLOT(21) EXIT_SLOT(22) EXIT_SLOT(23)
TP_SLOT(0) TP_SLOT(1) TP_SLOT(2) TP_SLOT(3) TP_SLOT(4) TP_SLOT(5)
TP_SLOT(6) TP_SLOT(7)
