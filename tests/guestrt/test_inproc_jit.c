/*
 * Advice compiled to machine code (guestrt/hook/inproc/inproc_jit.c) against the
 * interpreter (guestrt/interp/interp.c), run on the real runtime image inside this
 * process (rtlocal.h): every opcode, on hand-written programs and on a few
 * thousand random ones the verifier accepts, must give the same records,
 * the same memory writes, the same flow-id table and the same counted
 * faults; and a hook must leave every register and flag as it found them.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>
#include <unistd.h>
#include <x86intrin.h>

#include "guestrt/interp/interp.h"
#include "tests/guestrt/handplan.h"
#include "tests/guestrt/rtlocal.h"

/* The fields the programs use: struct obj { u64 a; i32 b; u8 c; bits d:5 at 100; i16 e; }. */
static const char unit_xml[] =
	"<flows><xflow name=\"f\"><start><pointcut>access(obj.a) AND within_function(x)</pointcut></start>"
	"<quit><pointcut>access(obj.a) AND within_function(y)</pointcut></quit></xflow>"
	"<xflow name=\"g\"><start><pointcut>access(obj.a) AND within_function(z)</pointcut></start></xflow>"
	"<advice><pointcut>access(obj.a) AND target(o)</pointcut><before>"
	"STORE_DATA4(o->a, o->b, o->c, o->d); STORE_DATA1(o->e);</before></advice></flows>";

#define NFIELDS 5
#define BUF 4096
static uint64_t buf[BUF / 8] __attribute__((aligned(64)));
static uint64_t buf_init[BUF / 8];

/* Set by a test: obj.c is then an element of an array of 4 elements of
 * 16 bytes at 32 (for ELEM), the others as below. */
static int elem_layout;

static void layouts(struct handplan *hp)
{
	handplan_layout(hp, 0, 0, 8);
	handplan_layout(hp, 1, 8, 4);
	hp->layouts[1].flags = XFLOW_LAYOUT_SIGNED;
	handplan_layout(hp, 2, 12, 1);
	handplan_layout(hp, 3, 12, 4); /* a bitfield: bits 100..104 */
	hp->layouts[3].bit_offset = 100;
	hp->layouts[3].bit_size = 5;
	handplan_layout(hp, 4, 16, 2);
	hp->layouts[4].flags = XFLOW_LAYOUT_SIGNED;
	if (elem_layout) {
		handplan_layout(hp, 2, 32, 16);
		hp->layouts[2].nelems = 4;
		hp->layouts[2].stride = 16;
	}
}

/* ---- the reference: the interpreter on the same memory ---------------------- */

struct ref {
	struct xflow_flowtab flows;
	struct xflow_record rec[256];
	unsigned n;
	uint64_t next_id;
	uint64_t scratch[XFLOW_BC_MAX_INPUTS];
};

/* Fault-safe on this process's own memory, as the runtime's accesses are. */
static int ref_read(void *ctx, uint64_t addr, void *out, size_t len)
{
	struct ref *r = ctx;
	uint64_t off = addr - XFLOW_INTERP_SCRATCH_BASE;
	if (addr >= XFLOW_INTERP_SCRATCH_BASE && off < sizeof(r->scratch)) {
		if (off + len > sizeof(r->scratch))
			return -EFAULT;
		memcpy(out, (char *)r->scratch + off, len);
		return 0;
	}
	struct iovec l = { out, len }, rm = { (void *)(uintptr_t)addr, len };
	return process_vm_readv(getpid(), &l, 1, &rm, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static int ref_write(void *ctx, uint64_t addr, const void *in, size_t len)
{
	struct ref *r = ctx;
	uint64_t off = addr - XFLOW_INTERP_SCRATCH_BASE;
	if (addr >= XFLOW_INTERP_SCRATCH_BASE && off < sizeof(r->scratch)) {
		if (off + len > sizeof(r->scratch))
			return -EFAULT;
		memcpy((char *)r->scratch + off, in, len);
		return 0;
	}
	struct iovec l = { (void *)in, len }, rm = { (void *)(uintptr_t)addr, len };
	return process_vm_writev(getpid(), &l, 1, &rm, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

static uint64_t ref_clock(void *ctx)
{
	(void)ctx;
	return 0;
}

static uint64_t ref_new_id(void *ctx)
{
	struct ref *r = ctx;
	r->next_id = xflow_flowid_after(r->next_id);
	return r->next_id;
}

static int ref_sink(void *ctx, struct xflow_record *rec)
{
	struct ref *r = ctx;
	if (r->n == 256)
		return -ENOBUFS;
	r->rec[r->n++] = *rec;
	return 0;
}

/* ---- one program, both ways ------------------------------------------------ */

static struct xflow_bc_input prog_inputs[2] = {
	{ .kind = XFLOW_IN_TARGET, .type = XFLOW_BC_PTR },
	{ .kind = XFLOW_IN_LOCAL_VAR, .type = XFLOW_BC_PTR, .local = "v" },
};

struct world {
	struct handplan hp;
	struct rtlocal rt;
	struct ref ref;
	uint32_t site;
};

static void world_init(struct world *w, unsigned ninputs_local)
{
	cr_assert_eq(handplan_init(&w->hp, unit_xml, "/proc/self/exe"), 0);
	w->hp.bin.flags = 0;
	layouts(&w->hp);
	w->site = handplan_site(&w->hp, 0x401000, 5);
	/* Every advice at the one site with two inputs: rdi (the object), and
	 * rsi as a local_var() without an address (a scratch cell). */
	struct xflow_plan_fetch f[2] = { { .kind = XFLOW_FETCH_REG, .reg = 5 }, { .kind = XFLOW_FETCH_REG, .reg = 4 } };
	(void)ninputs_local;
	for (uint32_t a = 0; a < w->hp.plan.nadvice; a++) {
		w->hp.adv[a].prog.inputs = prog_inputs;
		w->hp.adv[a].prog.ninputs = 2;
		handplan_bind(&w->hp, w->site, a, XFLOW_WHEN_BEFORE, f, 2);
	}
	cr_assert_eq(xflow_flowtab_init(&w->ref.flows, 1024), 0);
}


/* What world_init() made (the runtime, when a test loaded one, is its
 * own to let go). */
static void world_fini(struct world *w)
{
	xflow_flowtab_fini(&w->ref.flows);
	handplan_fini(&w->hp);
	free(w);
}

static void set_prog(struct world *w, uint32_t a, struct xflow_bc_prog *p)
{
	p->version = XFLOW_BC_VERSION;
	p->nfields = NFIELDS;
	p->nflows = 2;
	p->inputs = prog_inputs;
	p->ninputs = 2;
	w->hp.adv[a].prog = *p;
}

static void fill_buf(void)
{
	/* Values that read back as pointers land in buf or at unmapped low
	 * addresses: every access either side makes is one this process can
	 * answer the same way. */
	for (unsigned i = 0; i < BUF / 8; i++)
		buf_init[i] = i % 3 ? (uint64_t)(uintptr_t)buf + (i * 24) % 512 : i * 7;
}

/* Run advice @a compiled (once per call of this) and interpreted; compare. */
static void compare_one(struct world *w, uint32_t a, const char *what)
{
	struct xflow_hook_prog prog;
	cr_assert_eq(handplan_prog(&w->hp, 0, 3, &prog), 0);
	struct rtlocal *rt = &w->rt;
	cr_assert_eq(rtlocal_init(rt, &prog, 1, 1024), 0);
	for (uint32_t i = 0; i < w->hp.plan.nadvice; i++)
		rtlocal_enable(rt, i, i == a);
	uint64_t code = rtlocal_jit(rt, 0x401000, XFLOW_WHEN_BEFORE, &w->site, 1);
	cr_assert_neq(code, 0, "%s: not compiled", what);

	uint64_t in[17] = { 0 }, out[17];
	in[5] = (uint64_t)(uintptr_t)buf;  /* rdi: the object */
	in[4] = (uint64_t)(uintptr_t)buf + 64; /* rsi: the local's value */
	in[16] = 0x202;
	memcpy(buf, buf_init, sizeof(buf));
	rtlocal_call(code, in, out);
	uint64_t jit_mem[BUF / 8];
	memcpy(jit_mem, buf, sizeof(buf));
	struct xflow_record jr[256];
	long nj = rtlocal_records(rt, jr, 256);
	uint64_t cnt[3];
	rtlocal_counts(rt, a, cnt);

	struct ref *r = &w->ref;
	xflow_flowtab_clear(&r->flows);
	r->n = 0;
	r->next_id = 0;
	memcpy(buf, buf_init, sizeof(buf));
	uint64_t inputs[2] = { in[5], XFLOW_INTERP_SCRATCH_BASE + 8 };
	r->scratch[1] = in[4];
	struct xflow_mem_ops mem = { .read = ref_read, .write = ref_write };
	struct xflow_record tmpl;
	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.site_id = w->site;
	tmpl.domain_id = 3;
	tmpl.thread_id = (uint32_t)gettid();
	struct xflow_interp_env env = {
		.prog = &w->hp.adv[a].prog, .inputs = inputs, .fields = w->hp.frt, .flows = &r->flows, .mem = &mem,
		.mem_ctx = r, .pc = 0x401000, .clock = ref_clock, .new_id = ref_new_id, .new_id_ctx = r,
		.sink = ref_sink, .sink_ctx = r, .tmpl = &tmpl,
		.marker_flags = w->hp.adv[a].origin != XFLOW_ADVICE_USER ? w->hp.adv[a].rec_flags : 0,
	};
	struct xflow_interp_result res;
	xflow_interp_run(&env, &res);

	cr_assert_eq(nj, (long)r->n, "%s: %ld records compiled, %u interpreted", what, nj, r->n);
	for (long i = 0; i < nj; i++) {
		struct xflow_record x = jr[i], y = r->rec[i];
		cr_assert_eq(x.thread_seq, (uint32_t)i, "%s: record %ld: thread_seq %u", what, i, x.thread_seq);
		x.timestamp = y.timestamp = 0;
		x.thread_seq = y.thread_seq = 0;
		/* The compiled record names the CPU the hit ran on (RDTSCP's,
		 * where there is one); the reference interpreter's names none. */
		cr_assert(x.cpu_plus1 <= (uint32_t)get_nprocs_conf(), "%s: record %ld: cpu_plus1 %u of %d CPUs", what,
			  i, x.cpu_plus1, get_nprocs_conf());
		x.cpu_plus1 = y.cpu_plus1 = 0;
		/* A lane numbers every record it is given, lost ones too. */
		cr_assert(x.flags & XFLOW_REC_SEQ_COUNTS_LOST, "%s: record %ld not flagged SEQ_COUNTS_LOST", what, i);
		x.flags &= (uint16_t)~XFLOW_REC_SEQ_COUNTS_LOST;
		cr_assert(memcmp(&x, &y, sizeof(x)) == 0,
			  "%s: record %ld differs: id %llx/%llx kind %u/%u flags %x/%x n %u/%u d0 %llx/%llx d1 %llx/%llx",
			  what, i, (unsigned long long)x.flow_id, (unsigned long long)y.flow_id, x.flow_kind, y.flow_kind,
			  x.flags, y.flags, x.ndata, y.ndata, (unsigned long long)x.data[0], (unsigned long long)y.data[0],
			  (unsigned long long)x.data[1], (unsigned long long)y.data[1]);
	}
	cr_assert(memcmp(jit_mem, buf, sizeof(buf)) == 0, "%s: memory written differs", what);
	cr_assert_eq(cnt[0], 1, "%s: %llu hits counted", what, (unsigned long long)cnt[0]);
	cr_assert_eq(cnt[1], res.rc ? 1u : 0u, "%s: faults %llu, interpreter rc %d", what,
		     (unsigned long long)cnt[1], res.rc);
	/* The flow-id tables hold the same keys and ids. */
	struct xflow_rt_proc *p = rt->t.proc.map;
	struct xflow_flowtab jt = p->flows;
	jt.slots = (void *)((char *)p + p->off_slots);
	cr_assert_eq(jt.live, r->flows.live, "%s: %zu live keys compiled, %zu interpreted", what, jt.live,
		     r->flows.live);
	for (uint64_t s = 0; s <= r->flows.mask; s++) {
		const struct xflow_flowtab_slot *q = &r->flows.slots[s];
		if (q->ptr)
			cr_assert_eq(xflow_flowtab_get(&jt, (uint16_t)(q->val >> XFLOW_FLOWID_BITS), q->ptr),
				     q->val & XFLOW_FLOWID_MAX, "%s: key %llx", what, (unsigned long long)q->ptr);
	}
	/* Every register and flag as they were (the red zone is the caller's). */
	for (int i = 0; i < 17; i++)
		if (i != 7)
			cr_assert_eq(out[i], in[i], "%s: register %d changed: %llx -> %llx", what, i,
				     (unsigned long long)in[i], (unsigned long long)out[i]);
	rtlocal_fini(rt);
}

/* ---- programs -------------------------------------------------------------- */

#define I(o, A, B, K) ((struct xflow_bc_insn){ .op = XFLOW_OP_##o, .a = (A), .b = (B), .k = (K) })

static void run_prog(const struct xflow_bc_insn *insns, uint32_t n, const uint64_t *consts, uint32_t nconsts,
		     const uint8_t *locals, uint32_t nlocals, enum xflow_advice_origin origin, unsigned marker,
		     const char *what)
{
	struct world *w = calloc(1, sizeof(*w));
	world_init(w, 1);
	struct xflow_bc_prog p = { .ninsns = n, .insns = insns, .nconsts = nconsts, .consts = consts,
				   .nlocals = nlocals, .local_types = locals };
	set_prog(w, 0, &p);
	w->hp.adv[0].origin = origin;
	w->hp.adv[0].rec_flags = marker;
	const char *why;
	uint32_t at;
	cr_assert_eq(xflow_bc_verify(&w->hp.adv[0].prog, &why, &at), 0, "%s: %s at %u", what, why, at);
	fill_buf();
	compare_one(w, 0, what);
	world_fini(w);
}

/* A full lane drops the record but uses its number: the gap tells the
 * monitor a record of this thread was lost there (xflow/record.h). */
Test(inproc_jit, a_full_lane_skips_the_lost_records_numbers)
{
	const struct xflow_bc_insn prog[] = { I(PUSHI, 0, 0, 7), I(STORE, 1, 0, 0), I(RET, 0, 0, 0) };
	struct world *w = calloc(1, sizeof(*w));
	world_init(w, 1);
	struct xflow_bc_prog p = { .ninsns = 3, .insns = prog };
	set_prog(w, 0, &p);
	const char *why;
	uint32_t at;
	cr_assert_eq(xflow_bc_verify(&w->hp.adv[0].prog, &why, &at), 0, "%s at %u", why, at);
	struct xflow_hook_prog hprog;
	cr_assert_eq(handplan_prog(&w->hp, 0, 3, &hprog), 0);
	struct rtlocal *rt = &w->rt;
	cr_assert_eq(rtlocal_init(rt, &hprog, 1, 2), 0, "a lane of two records");
	for (uint32_t i = 0; i < w->hp.plan.nadvice; i++)
		rtlocal_enable(rt, i, i == 0);
	uint64_t code = rtlocal_jit(rt, 0x401000, XFLOW_WHEN_BEFORE, &w->site, 1);
	cr_assert_neq(code, 0);
	uint64_t in[17] = { 0 }, out[17];
	in[5] = (uint64_t)(uintptr_t)buf;
	in[16] = 0x202;
	for (int i = 0; i < 5; i++)
		rtlocal_call(code, in, out);
	struct xflow_record r[4];
	cr_assert_eq(rtlocal_records(rt, r, 4), 2, "the lane holds two");
	cr_assert_eq(r[0].thread_seq, 0);
	cr_assert_eq(r[1].thread_seq, 1);
	rtlocal_call(code, in, out);
	cr_assert_eq(rtlocal_records(rt, r, 4), 1);
	cr_assert_eq(r[0].thread_seq, 5, "the three lost are numbers 2 to 4, not %u", r[0].thread_seq);
	cr_assert(r[0].flags & XFLOW_REC_SEQ_COUNTS_LOST);
	uint64_t cnt[3];
	rtlocal_counts(rt, 0, cnt);
	cr_assert_eq(cnt[2], 3, "%llu drops counted", (unsigned long long)cnt[2]);
	rtlocal_fini(rt);
	world_fini(w);
}

/*
 * The hit's start: inline in the compiled code when the thread is told
 * apart by %fs:0 and its lane is where the hash puts it, idle; else the
 * runtime's rt_jit_begin.  The two are told apart here by a CPU way
 * changed after compiling (which the agent never does): the inline start
 * has the compiler's (a fixed CPU), the runtime reads the region's (none).
 * A thread's first hit claims its lane, by the runtime.  A busy lane (a hit running, as in a signal handler) is skipped either
 * way, counted as nested, and the hit leaves it busy.
 */
static void start_both_ways(uint32_t fs_mode, uint32_t want_cpu_plus1)
{
	const struct xflow_bc_insn prog[] = { I(PUSHI, 0, 0, 7), I(STORE, 1, 0, 0), I(RET, 0, 0, 0) };
	struct world *w = calloc(1, sizeof(*w));
	world_init(w, 1);
	struct xflow_bc_prog p = { .ninsns = 3, .insns = prog };
	set_prog(w, 0, &p);
	struct xflow_hook_prog hprog;
	cr_assert_eq(handplan_prog(&w->hp, 0, 3, &hprog), 0);
	hprog.fixed_cpu_plus1 = 42;
	struct rtlocal *rt = &w->rt;
	cr_assert_eq(rtlocal_init(rt, &hprog, 4, 64), 0);
	struct xflow_rt_config *cfg = (void *)(rt->image + rt->head->off_config);
	cfg->fs_mode = fs_mode;
	for (uint32_t i = 0; i < w->hp.plan.nadvice; i++)
		rtlocal_enable(rt, i, i == 0);
	uint64_t code = rtlocal_jit(rt, 0x401000, XFLOW_WHEN_BEFORE, &w->site, 1);
	cr_assert_neq(code, 0);
	((struct xflow_rt_ctl *)rt->ctl)->cpu_how = XFLOW_RT_CPU_NONE;
	uint64_t in[17] = { 0 }, out[17];
	in[5] = (uint64_t)(uintptr_t)buf;
	in[16] = 0x202;
	for (int i = 0; i < 3; i++)
		rtlocal_call(code, in, out);
	struct xflow_record r[8];
	cr_assert_eq(rtlocal_records(rt, r, 8), 3);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(r[i].thread_seq, (uint32_t)i);
		cr_assert_eq(r[i].data[0], 7);
		uint32_t want = i == 0 ? 0 : want_cpu_plus1;
		cr_assert_eq(r[i].cpu_plus1, want, "record %d: cpu_plus1 %u, not %u", i, r[i].cpu_plus1, want);
		cr_assert(i == 0 || r[i].timestamp >= r[i - 1].timestamp);
	}
	struct xflow_rt_lane *l = NULL;
	for (uint32_t i = 0; i < rt->t.nlanes; i++)
		if (atomic_load(&rt->t.lanes[i].rt->owner) != 0)
			l = rt->t.lanes[i].rt;
	cr_assert_not_null(l, "no lane was claimed");
	l->busy = 1;
	rtlocal_call(code, in, out);
	cr_assert_eq(rtlocal_records(rt, r, 8), 0, "a busy lane got a record");
	cr_assert_eq(l->nested, 1);
	cr_assert_eq(l->busy, 1, "the skipped hit let go of a lane it did not take");
	l->busy = 0;
	rtlocal_call(code, in, out);
	cr_assert_eq(rtlocal_records(rt, r, 8), 1);
	cr_assert_eq(r[0].thread_seq, 3);
	cr_assert_eq(l->busy, 0);
	uint64_t cnt[3];
	rtlocal_counts(rt, 0, cnt);
	cr_assert_eq(cnt[0], 4, "%llu hits counted", (unsigned long long)cnt[0]);
	rtlocal_fini(rt);
	world_fini(w);
}

Test(inproc_jit, the_start_inline_by_fs0)
{
	start_both_ways(XFLOW_RT_FS_TCB, 42);
}

Test(inproc_jit, the_start_by_the_runtime_otherwise)
{
	if (!(getauxval(AT_HWCAP2) & (1 << 1)))
		cr_skip_test("no rdfsbase here");
	start_both_ways(XFLOW_RT_FS_RDFSBASE, 0);
}

Test(inproc_jit, arithmetic_and_division_edges)
{
	static const uint64_t k[] = { 0x8000000000000000ull, 0xffffffffffffffffull, 0x123456789abcdefull };
	const struct xflow_bc_insn prog[] = {
		/* INT64_MIN / -1, INT64_MIN % -1, 7 / 0, 7 % 0, unsigned forms */
		I(PUSHK, 0, 0, 0), I(PUSHI, 0, 0, -1), I(DIV, 0, 0, 0),
		I(PUSHK, 0, 0, 0), I(PUSHI, 0, 0, -1), I(MOD, 0, 0, 0),
		I(PUSHI, 0, 0, 7), I(PUSHI, 0, 0, 0), I(DIV, 0, 0, 0),
		I(PUSHI, 0, 0, 7), I(PUSHI, 0, 0, 0), I(MOD, 0, 0, 0),
		I(PUSHK, 0, 1, 0), I(PUSHI, 0, 0, 3), I(DIVU, 0, 0, 0),
		I(PUSHK, 0, 1, 0), I(PUSHI, 0, 0, 10), I(MODU, 0, 0, 0),
		I(STORE, 6, 0, 0),
		I(PUSHI, 0, 0, -17), I(PUSHI, 0, 0, 5), I(DIV, 0, 0, 0),
		I(PUSHI, 0, 0, -17), I(PUSHI, 0, 0, 5), I(MOD, 0, 0, 0),
		I(PUSHK, 0, 2, 0), I(PUSHI, 0, 0, 68), I(SHL, 0, 0, 0),
		I(PUSHK, 0, 1, 0), I(PUSHI, 0, 0, 63), I(SHR, 0, 0, 0),
		I(PUSHK, 0, 0, 0), I(PUSHI, 0, 0, 4), I(SAR, 0, 0, 0),
		I(PUSHI, 0, 0, 12345), I(NEG, 0, 0, 0), I(NOT, 0, 0, 0),
		I(STORE, 6, 0, 0),
		I(PUSHI, 0, 0, 3), I(PUSHI, 0, 0, -2), I(MUL, 0, 0, 0),
		I(PUSHI, 0, 0, 0x0f0f), I(PUSHI, 0, 0, 0x00ff), I(AND, 0, 0, 0),
		I(PUSHI, 0, 0, 0x0f0f), I(PUSHI, 0, 0, 0x00ff), I(OR, 0, 0, 0),
		I(PUSHI, 0, 0, 0x0f0f), I(PUSHI, 0, 0, 0x00ff), I(XOR, 0, 0, 0),
		I(PUSHI, 0, 0, 9), I(PUSHI, 0, 0, 4), I(SUB, 0, 0, 0),
		I(PUSHI, 0, 0, 0), I(LNOT, 0, 0, 0),
		I(STORE, 6, 0, 0),
		I(RET, 0, 0, 0),
	};
	run_prog(prog, sizeof(prog) / sizeof(prog[0]), k, 3, NULL, 0, XFLOW_ADVICE_USER, 0, "arithmetic");
}

Test(inproc_jit, comparisons)
{
	static const uint64_t k[] = { 0xffffffffffffffffull };
	const struct xflow_bc_insn prog[] = {
		I(PUSHI, 0, 0, -1), I(PUSHI, 0, 0, 1), I(LT, 0, 0, 0),
		I(PUSHK, 0, 0, 0), I(PUSHI, 0, 0, 1), I(LTU, 0, 0, 0),
		I(PUSHI, 0, 0, 5), I(PUSHI, 0, 0, 5), I(LE, 0, 0, 0),
		I(PUSHI, 0, 0, 5), I(PUSHI, 0, 0, 5), I(GT, 0, 0, 0),
		I(PUSHI, 0, 0, -5), I(PUSHI, 0, 0, 5), I(GE, 0, 0, 0),
		I(PUSHK, 0, 0, 0), I(PUSHI, 0, 0, 5), I(GEU, 0, 0, 0),
		I(STORE, 6, 0, 0),
		I(PUSHI, 0, 0, 3), I(PUSHI, 0, 0, 3), I(EQ, 0, 0, 0),
		I(PUSHI, 0, 0, 3), I(PUSHI, 0, 0, 4), I(NE, 0, 0, 0),
		I(PUSHI, 0, 0, 3), I(PUSHI, 0, 0, 4), I(LEU, 0, 0, 0),
		I(PUSHI, 0, 0, 3), I(PUSHI, 0, 0, 4), I(GTU, 0, 0, 0),
		I(STORE, 4, 0, 0),
		I(RET, 0, 0, 0),
	};
	run_prog(prog, sizeof(prog) / sizeof(prog[0]), k, 1, NULL, 0, XFLOW_ADVICE_USER, 0, "comparisons");
}

Test(inproc_jit, fields_bitfields_and_writes)
{
	const struct xflow_bc_insn prog[] = {
		I(LDIN, 0, 0, 0), I(LDF, 0, 0, 0), I(LDIN, 0, 0, 0), I(LDF, 0, 1, 0), I(LDIN, 0, 0, 0), I(LDF, 0, 2, 0),
		I(LDIN, 0, 0, 0), I(LDF, 0, 3, 0), I(LDIN, 0, 0, 0), I(LDF, 0, 4, 0), I(STORE, 5, 0, 0),
		/* o->b = -3; o->d = 0x3f (cut to 5 bits); o->e = 0x8001; o->c = 0x1ff */
		I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, -3), I(STF, 0, 1, 0),
		I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, 0x3f), I(STF, 0, 3, 0),
		I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, 0x8001), I(STF, 0, 4, 0),
		I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, 0x1ff), I(STF, 0, 2, 0),
		I(LDIN, 0, 0, 0), I(LDF, 0, 1, 0), I(LDIN, 0, 0, 0), I(LDF, 0, 3, 0), I(LDIN, 0, 0, 0), I(LDF, 0, 4, 0),
		I(LDIN, 0, 0, 0), I(LDF, 0, 2, 0), I(STORE, 4, 0, 0),
		/* the local_var() input: a scratch cell, read and written */
		I(LDIN, 0, 1, 0), I(LDM, 8, 0, 0), I(LDIN, 0, 1, 0), I(PUSHI, 0, 0, 77), I(STF, 0, 0, 0),
		I(LDIN, 0, 1, 0), I(LDM, 8, 0, 0), I(STORE, 2, 0, 0),
		/* signed loads through a pointer */
		I(LDIN, 0, 0, 0), I(LDM, 1, XFLOW_LDM_SIGNED, 0), I(LDIN, 0, 0, 0), I(LDM, 4, XFLOW_LDM_SIGNED, 0),
		I(LDIN, 0, 0, 0), I(LDM, 8, XFLOW_LDM_PTR, 0), I(LDM, 2, 0, 0), I(STORE, 3, 0, 0),
		I(RET, 0, 0, 0),
	};
	fill_buf();
	buf_init[1] = 0xfedcba9876543210ull; /* b = 0x76543210, c = 0x98, d = bits 4..8 of byte 12 */
	buf_init[2] = 0x8765;
	run_prog(prog, sizeof(prog) / sizeof(prog[0]), NULL, 0, NULL, 0, XFLOW_ADVICE_USER, 0, "fields");
}

Test(inproc_jit, faults_end_the_advice)
{
	const struct xflow_bc_insn prog[] = {
		I(PUSHI, 0, 0, 1), I(STORE, 1, 0, 0),
		/* a read at 8: nothing is mapped there */
		I(PUSHI, 0, 0, 8), I(TOPTR, 0, 0, 0), I(LDM, 8, 0, 0), I(STORE, 1, 0, 0),
		I(PUSHI, 0, 0, 2), I(STORE, 1, 0, 0), I(RET, 0, 0, 0),
	};
	run_prog(prog, sizeof(prog) / sizeof(prog[0]), NULL, 0, NULL, 0, XFLOW_ADVICE_USER, 0, "fault");
	const struct xflow_bc_insn write[] = {
		/* a write into read-only memory: this test's own code */
		I(PUSHK, 0, 0, 0), I(TOPTR, 0, 0, 0), I(PUSHI, 0, 0, 0), I(STF, 0, 0, 0), I(PUSHI, 0, 0, 3),
		I(STORE, 1, 0, 0), I(RET, 0, 0, 0),
	};
	uint64_t k[] = { (uint64_t)(uintptr_t)&rtlocal_call };
	run_prog(write, sizeof(write) / sizeof(write[0]), k, 1, NULL, 0, XFLOW_ADVICE_USER, 0, "write fault");
}

Test(inproc_jit, array_elements_and_their_bound)
{
	elem_layout = 1;
	/* &o->c[i] for i = 0 and 3, each element's first member read (obj.a
	 * at offset 0); then i = 4, the count: a fault, no further record. */
	const struct xflow_bc_insn prog[] = {
		I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, 0), I(ELEM, 0, 2, 0), I(LDF, 0, 0, 0),
		I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, 3), I(ELEM, 0, 2, 0), I(LDF, 0, 0, 0),
		I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, 3), I(ELEM, 0, 2, 0), I(STORE, 3, 0, 0),
		I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, 4), I(ELEM, 0, 2, 0), I(LDF, 0, 0, 0), I(STORE, 1, 0, 0),
		I(RET, 0, 0, 0),
	};
	run_prog(prog, sizeof(prog) / sizeof(prog[0]), NULL, 0, NULL, 0, XFLOW_ADVICE_USER, 0, "elements");
	/* An index that is negative as a signed value is a huge unsigned one. */
	const struct xflow_bc_insn neg[] = {
		I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, -1), I(ELEM, 0, 2, 0), I(LDF, 0, 0, 0), I(STORE, 1, 0, 0),
		I(RET, 0, 0, 0),
	};
	run_prog(neg, sizeof(neg) / sizeof(neg[0]), NULL, 0, NULL, 0, XFLOW_ADVICE_USER, 0, "negative index");
	/* A member that is not an array element in this domain faults. */
	const struct xflow_bc_insn none[] = {
		I(PUSHI, 0, 0, 5), I(STORE, 1, 0, 0),
		I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, 0), I(ELEM, 0, 1, 0), I(LDF, 0, 0, 0), I(STORE, 1, 0, 0),
		I(RET, 0, 0, 0),
	};
	run_prog(none, sizeof(none) / sizeof(none[0]), NULL, 0, NULL, 0, XFLOW_ADVICE_USER, 0, "not an array");
	elem_layout = 0;
}

Test(inproc_jit, flows_markers_handoff_split)
{
	static const uint8_t locals[] = { XFLOW_BC_INT, XFLOW_BC_PTR };
	const struct xflow_bc_insn prog[] = {
		/* id = new; register(f, o, id); get; move to o+8 (copy and del) */
		I(FLOW_NEW, 0, 0, 0), I(STL, 0, 0, 0),
		I(LDIN, 0, 0, 0), I(LDL, 0, 0, 0), I(FLOW_REG, 0, 0, 0),
		I(LDIN, 0, 0, 0), I(FLOW_GET, 0, 0, 0), I(STORE, 1, 0, 0),
		I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, 8), I(ADD, 0, 0, 0), I(STL, 1, 0, 0),
		I(LDL, 1, 0, 0), I(LDIN, 0, 0, 0), I(FLOW_GET, 0, 0, 0), I(FLOW_REG, 0, 0, 0),
		I(LDIN, 0, 0, 0), I(FLOW_DEL, 0, 0, 0),
		I(LDIN, 0, 0, 0), I(FLOW_GET, 0, 0, 0), I(LDL, 1, 0, 0), I(FLOW_GET, 0, 1, 0), I(STORE, 2, 0, 0),
		I(PUSHI, 0, 0, 0x55), I(LDL, 0, 0, 0), I(HANDOFF, 1, 1, 0),
		I(PUSHI, 0, 0, 0x66), I(LDL, 0, 0, 0), I(HANDOFF, 0, 0, 0),
		/* the receiving side that knows its sender: data[2] = 4 + 1 */
		I(PUSHI, 0, 0, 0x67), I(LDL, 0, 0, 0), I(PUSHI, 0, 0, 4), I(HANDOFF, 2, 1, 0),
		I(FLOW_NEW, 0, 0, 0), I(LDL, 0, 0, 0), I(SPLIT, 0, 1, 0),
		/* a register of id 0 is ignored; of an id over 48 bits, cut */
		I(LDIN, 0, 0, 0), I(PUSHI, 0, 0, 0), I(FLOW_REG, 0, 1, 0),
		I(LDL, 1, 0, 0), I(PUSHI, 0, 0, -1), I(FLOW_REG, 0, 1, 0),
		I(LDL, 1, 0, 0), I(FLOW_GET, 0, 1, 0), I(STORE, 1, XFLOW_REC_TRANSIT, 0),
		I(RET, 0, 0, 0),
	};
	run_prog(prog, sizeof(prog) / sizeof(prog[0]), NULL, 0, locals, 2, XFLOW_ADVICE_TRANSIT, XFLOW_REC_TRANSIT,
		 "flows");
}

Test(inproc_jit, branches_and_locals)
{
	static const uint8_t locals[] = { XFLOW_BC_INT, XFLOW_BC_INT };
	const struct xflow_bc_insn prog[] = {
		I(PUSHI, 0, 0, 5), I(STL, 0, 0, 0),
		/* if (l0 > 3) l1 = 10 else l1 = 20 */
		I(LDL, 0, 0, 0), I(PUSHI, 0, 0, 3), I(GT, 0, 0, 0), I(JZ, 0, 0, 3),
		I(PUSHI, 0, 0, 10), I(STL, 1, 0, 0), I(JMP, 0, 0, 2),
		I(PUSHI, 0, 0, 20), I(STL, 1, 0, 0),
		I(LDL, 1, 0, 0), I(DUP, 0, 0, 0), I(STORE, 2, 0, 0),
		/* a jump with a value kept across it */
		I(PUSHI, 0, 0, 7), I(PUSHI, 0, 0, 0), I(JNZ, 0, 0, 1), I(NOP, 0, 0, 0), I(PC, 0, 0, 0),
		I(STORE, 2, 0, 0),
		I(PUSHI, 0, 0, 1), I(JNZ, 0, 0, 2), I(PUSHI, 0, 0, 9), I(STORE, 1, 0, 0), I(RET, 0, 0, 0),
	};
	run_prog(prog, sizeof(prog) / sizeof(prog[0]), NULL, 0, locals, 2, XFLOW_ADVICE_USER, 0, "branches");
}

/* ---- random programs ------------------------------------------------------------ */

struct gen {
	uint64_t s;
	struct xflow_bc_insn v[256];
	uint32_t n;
	uint8_t ty[XFLOW_BC_MAX_STACK]; /* 1 INT, 2 PTR */
	int d;
};

static uint32_t rnd(struct gen *g, uint32_t n)
{
	g->s ^= g->s << 13, g->s ^= g->s >> 7, g->s ^= g->s << 17;
	return (uint32_t)(g->s % n);
}

static void emit(struct gen *g, struct xflow_bc_insn in, int pop, int push, uint8_t ty)
{
	if (g->n < 250)
		g->v[g->n++] = in;
	g->d -= pop;
	if (push)
		g->ty[g->d++] = ty;
}

static const uint8_t g_locals[] = { XFLOW_BC_INT, XFLOW_BC_INT, XFLOW_BC_PTR };
static const uint64_t g_consts[] = { 0x8000000000000000ull, 0xffffffffffffffffull, 0x7fffffffffffffffull, 3, 64 };

/* One step keeping depth and types valid; blocks of if/else with a net
 * effect of zero.  Pointers are the object, buf + a small offset, loaded
 * pointers (which point into buf or nowhere) or the fault address 8. */
static void gen_block(struct gen *g, int budget, int nest)
{
	for (int i = 0; i < budget && g->n < 200; i++) {
		int top = g->d ? g->ty[g->d - 1] : 0, second = g->d > 1 ? g->ty[g->d - 2] : 0;
		switch (rnd(g, 18)) {
		case 0: if (g->d < 20) emit(g, I(PUSHI, 0, 0, (int32_t)rnd(g, 200) - 100), 0, 1, 1); break;
		case 1: if (g->d < 20) emit(g, I(PUSHK, 0, (uint16_t)rnd(g, 5), 0), 0, 1, 1); break;
		case 2: if (g->d < 20) emit(g, I(LDIN, 0, 0, 0), 0, 1, 2); break;
		case 3: if (g->d < 20) { unsigned l = rnd(g, 3); emit(g, I(LDL, (uint8_t)l, 0, 0), 0, 1, g_locals[l]); } break;
		case 4: if (top) { unsigned l = top == 2 ? 2 : rnd(g, 2); emit(g, I(STL, (uint8_t)l, 0, 0), 1, 0, 0); } break;
		case 5: if (top == 2) emit(g, I(LDF, 0, (uint16_t)rnd(g, NFIELDS), 0), 1, 1, 1); break;
		case 6: if (top == 2) { unsigned sz = 1u << rnd(g, 4); unsigned p = sz == 8 && rnd(g, 2);
				emit(g, I(LDM, (uint8_t)sz, (uint16_t)(p ? XFLOW_LDM_PTR : rnd(g, 2)), 0), 1, 1, p ? 2 : 1); }
			break;
		case 7: if (top == 1 && second == 1) {
				static const uint8_t ops[] = { XFLOW_OP_ADD, XFLOW_OP_SUB, XFLOW_OP_MUL, XFLOW_OP_DIV,
					XFLOW_OP_DIVU, XFLOW_OP_MOD, XFLOW_OP_MODU, XFLOW_OP_AND, XFLOW_OP_OR, XFLOW_OP_XOR,
					XFLOW_OP_SHL, XFLOW_OP_SHR, XFLOW_OP_SAR, XFLOW_OP_EQ, XFLOW_OP_NE, XFLOW_OP_LT,
					XFLOW_OP_LE, XFLOW_OP_GT, XFLOW_OP_GE, XFLOW_OP_LTU, XFLOW_OP_LEU, XFLOW_OP_GTU,
					XFLOW_OP_GEU };
				emit(g, (struct xflow_bc_insn){ .op = ops[rnd(g, sizeof(ops))] }, 2, 1, 1);
			}
			break;
		case 8: if (top == 1) { static const uint8_t u[] = { XFLOW_OP_NEG, XFLOW_OP_NOT, XFLOW_OP_LNOT };
				emit(g, (struct xflow_bc_insn){ .op = u[rnd(g, 3)] }, 1, 1, 1); }
			break;
		case 9: if (top == 2 && g->d < 20) { /* pointer + small offset */
				emit(g, I(PUSHI, 0, 0, (int32_t)rnd(g, 8) * 8), 0, 1, 1);
				emit(g, I(ADD, 0, 0, 0), 2, 1, 2);
			}
			break;
		case 10: if (top) emit(g, I(TOINT, 0, 0, 0), 1, 1, 1); break;
		case 11: if (g->d < 20) { emit(g, I(PUSHI, 0, 0, 8), 0, 1, 1); emit(g, I(TOPTR, 0, 0, 0), 1, 1, 2); } break;
		case 12: if (g->d >= 1) { unsigned k = 1 + rnd(g, g->d < 6 ? (unsigned)g->d : 6);
				emit(g, I(STORE, (uint8_t)k, (uint16_t)rnd(g, 4), 0), (int)k, 0, 0); }
			break;
		case 13: if (top == 2) { unsigned f = rnd(g, 2); emit(g, I(FLOW_GET, 0, (uint16_t)f, 0), 1, 1, 1); } break;
		case 14: if (top == 1 && second == 2) emit(g, I(FLOW_REG, 0, (uint16_t)rnd(g, 2), 0), 2, 0, 0);
			else if (top == 2) emit(g, I(FLOW_DEL, 0, (uint16_t)rnd(g, 2), 0), 1, 0, 0);
			else if (g->d < 20) emit(g, I(FLOW_NEW, 0, 0, 0), 0, 1, 1);
			break;
		case 15: if (top == 1 && second == 1) emit(g, rnd(g, 2) ? I(HANDOFF, (uint8_t)rnd(g, 2), (uint16_t)rnd(g, 2), 0)
								      : I(SPLIT, 0, (uint16_t)rnd(g, 2), 0), 2, 0, 0);
			break;
		case 16: /* o->field = int, on the object only */
			if (g->d < 19) {
				emit(g, I(LDIN, 0, 0, 0), 0, 1, 2);
				emit(g, I(PUSHI, 0, 0, (int32_t)rnd(g, 1000) - 500), 0, 1, 1);
				emit(g, I(STF, 0, (uint16_t)rnd(g, NFIELDS), 0), 2, 0, 0);
			}
			break;
		case 17: if (top == 1 && nest < 3) { /* if (x) { ... } else { ... } */
				emit(g, I(JZ, 0, 0, 0), 1, 0, 0);
				uint32_t jz = g->n - 1;
				int d0 = g->d;
				gen_block(g, (int)rnd(g, 6), nest + 1);
				while (g->d > d0)
					emit(g, I(DROP, 0, 0, 0), 1, 0, 0);
				if (g->d < d0)
					break; /* the block consumed values of ours: give up this one */
				emit(g, I(JMP, 0, 0, 0), 0, 0, 0);
				uint32_t jmp = g->n - 1;
				g->v[jz].k = (int32_t)(g->n - jz - 1);
				gen_block(g, (int)rnd(g, 6), nest + 1);
				while (g->d > d0)
					emit(g, I(DROP, 0, 0, 0), 1, 0, 0);
				/* A jump goes at least one instruction forward. */
				emit(g, I(NOP, 0, 0, 0), 0, 0, 0);
				emit(g, I(NOP, 0, 0, 0), 0, 0, 0);
				g->v[jmp].k = (int32_t)(g->n - 1 - jmp - 1);
			}
			break;
		}
	}
}

Test(inproc_jit, random_programs_agree)
{
	struct world *w = calloc(1, sizeof(*w));
	world_init(w, 1);
	struct gen g = { .s = 0x9e3779b97f4a7c15ull };
	unsigned ran = 0, tried = 0;
	for (unsigned iter = 0; iter < 600; iter++) {
		g.n = 0;
		g.d = 0;
		gen_block(&g, 40, 0);
		while (g.d > 0)
			emit(&g, I(DROP, 0, 0, 0), 1, 0, 0);
		emit(&g, I(RET, 0, 0, 0), 0, 0, 0);
		tried++;
		struct xflow_bc_prog p = { .ninsns = g.n, .insns = g.v, .nconsts = 5, .consts = g_consts, .nlocals = 3,
					   .local_types = g_locals };
		set_prog(w, 0, &p);
		/* User advice, a transit, a start: each marker rule. */
		static const enum xflow_advice_origin origin[] = { XFLOW_ADVICE_USER, XFLOW_ADVICE_TRANSIT,
								    XFLOW_ADVICE_START };
		static const unsigned marker[] = { 0, XFLOW_REC_TRANSIT, XFLOW_REC_START };
		w->hp.adv[0].origin = origin[iter % 3];
		w->hp.adv[0].rec_flags = marker[iter % 3];
		const char *why;
		uint32_t at;
		if (xflow_bc_verify(&w->hp.adv[0].prog, &why, &at)) {
			if (tried - ran < 5)
				cr_log_info("random %u not verified: %s at %u", iter, why, at);
			continue; /* a block that gave up half way */
		}
		fill_buf();
		char what[32];
		snprintf(what, sizeof(what), "random %u", iter);
		compare_one(w, 0, what);
		ran++;
	}
	cr_log_info("%u of %u random programs verified and agreed", ran, tried);
	cr_assert(ran > tried / 2, "only %u of %u random programs verified", ran, tried);
	world_fini(w);
}

Test(inproc_jit, registers_and_flags_kept)
{
	struct world *w = calloc(1, sizeof(*w));
	world_init(w, 1);
	fill_buf();
	struct xflow_hook_prog prog;
	cr_assert_eq(handplan_prog(&w->hp, 0, 3, &prog), 0);
	cr_assert_eq(rtlocal_init(&w->rt, &prog, 1, 1024), 0);
	uint64_t code = rtlocal_jit(&w->rt, 0x401000, XFLOW_WHEN_BEFORE, &w->site, 1);
	cr_assert_neq(code, 0);
	/* Every arithmetic flag, then DF, then AC: each must come back (IF
	 * and bit 1 are always set in user mode). */
	static const uint64_t flags[] = { 0x202, 0xad7, 0xad7 | 0x400, 0x202 | 0x40000, 0x2d7, 0x203, 0xa02, 0x246 };
	for (unsigned f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
		uint64_t in[17], out[17];
		for (int i = 0; i < 16; i++)
			in[i] = 0x1111111111111111ull * (uint64_t)(i + 1);
		in[5] = (uint64_t)(uintptr_t)buf;
		in[16] = flags[f];
		memcpy(buf, buf_init, sizeof(buf));
		rtlocal_call(code, in, out);
		for (int i = 0; i < 17; i++)
			if (i != 7)
				cr_assert_eq(out[i], in[i], "flags %llx: register %d: %llx -> %llx",
					     (unsigned long long)flags[f], i, (unsigned long long)in[i],
					     (unsigned long long)out[i]);
	}
	struct xflow_record r[64];
	cr_assert_gt(rtlocal_records(&w->rt, r, 64), 0, "the hooks wrote nothing");
	/* DO_RDTSC gives the hit's time, the record's timestamp. */
	rtlocal_fini(&w->rt);
	world_fini(w);
}

/* ---- lookups without the lock ---------------------------------------------- */

/*
 * Advice that only looks an id up runs without the flow-id table's lock
 * (rt_jit_flow_peek), reading between two reads of the lock's count.
 * Three threads look up their own keys, which never leave the table, while
 * a fourth, under the lock as the runtime takes it, moves them again and
 * again: each key has a twin with the same home slot, and one change
 * removes the twin (the key shifts back into its home) and the key, then
 * puts the twin and the key back (the key one slot on).  A lookup that read
 * across such a change would miss, and the advice records a miss.  (With
 * the second read of the count taken out, each of three runs saw misses.)
 */
#define PEEK_READERS 3
#define PEEK_CALLS 200000

struct peek {
	struct xflow_flowtab *t;  /* the runtime's table, as this process sees it */
	_Atomic uint32_t *lock;
	uint64_t code;
	uint64_t key[PEEK_READERS], twin[PEEK_READERS];
	atomic_int readers_left;
	atomic_ulong changes;
};

struct peek_arg {
	struct peek *pk;
	unsigned r;
};

static void *peek_read(void *arg)
{
	struct peek_arg *a = arg;
	uint64_t in[17] = { 0 }, out[17];
	in[5] = a->pk->key[a->r];
	in[16] = 0x202;
	for (int i = 0; i < PEEK_CALLS; i++)
		rtlocal_call(a->pk->code, in, out);
	atomic_fetch_sub(&a->pk->readers_left, 1);
	return NULL;
}

static void *peek_write(void *arg)
{
	struct peek *pk = arg;
	while (atomic_load(&pk->readers_left) > 0) {
		for (unsigned r = 0; r < PEEK_READERS; r++) {
			/* The runtime's lock: odd while held (xflow/inproc.h). */
			uint32_t s;
			do
				s = atomic_load(pk->lock) & ~1u;
			while (!atomic_compare_exchange_weak(pk->lock, &s, s + 1));
			xflow_flowtab_remove(pk->t, 0, pk->twin[r]);
			xflow_flowtab_remove(pk->t, 0, pk->key[r]);
			xflow_flowtab_register(pk->t, 0, pk->twin[r], 900 + r);
			xflow_flowtab_register(pk->t, 0, pk->key[r], 100 + r);
			atomic_store_explicit(pk->lock, s + 2, memory_order_release);
		}
		atomic_fetch_add(&pk->changes, 1);
	}
	return NULL;
}

/* A hook whose programs call nothing of the runtime's on their common
 * path saves only what its code writes; rdi and r8-r10 stay in place,
 * are read there by its fetches, and are kept around the runtime's calls
 * on its rare paths: a thread's first hit (the lane claimed) and a full
 * lane (the consumer's index read again, then a drop). */
Test(inproc_jit, a_lean_hook_keeps_every_register)
{
	const struct xflow_bc_insn prog[] = { I(LDIN, 0, 0, 0), I(PC, 0, 0, 0), I(RDTSC, 0, 0, 0), I(STORE, 3, 0, 0),
					      I(RET, 0, 0, 0) };
	struct world *w = calloc(1, sizeof(*w));
	/* world_init's site has every advice: this one has only the lean one. */
	cr_assert_eq(handplan_init(&w->hp, unit_xml, "/proc/self/exe"), 0);
	w->hp.bin.flags = 0;
	layouts(&w->hp);
	w->site = handplan_site(&w->hp, 0x401000, 5);
	struct xflow_plan_fetch fe[2] = { { .kind = XFLOW_FETCH_REG, .reg = 5 }, { .kind = XFLOW_FETCH_REG, .reg = 4 } };
	handplan_bind(&w->hp, w->site, 0, XFLOW_WHEN_BEFORE, fe, 2);
	cr_assert_eq(xflow_flowtab_init(&w->ref.flows, 1024), 0);
	struct xflow_bc_prog p = { .ninsns = 5, .insns = prog };
	set_prog(w, 0, &p);
	const char *why;
	uint32_t at;
	cr_assert_eq(xflow_bc_verify(&w->hp.adv[0].prog, &why, &at), 0, "%s at %u", why, at);
	struct xflow_hook_prog hprog;
	cr_assert_eq(handplan_prog(&w->hp, 0, 3, &hprog), 0);
	cr_assert_eq(rtlocal_init(&w->rt, &hprog, 1, 2), 0, "a lane of two records");
	for (uint32_t i = 0; i < w->hp.plan.nadvice; i++)
		rtlocal_enable(&w->rt, i, i == 0);
	uint64_t code = rtlocal_jit(&w->rt, 0x401000, XFLOW_WHEN_BEFORE, &w->site, 1);
	cr_assert_neq(code, 0);
	static const uint64_t flags[] = { 0x202, 0xad7, 0xad7 | 0x400, 0x202 | 0x40000, 0x2d7, 0x246 };
	for (unsigned f = 0; f < sizeof(flags) / sizeof(flags[0]); f++) {
		uint64_t in[17], out[17];
		for (int i = 0; i < 16; i++)
			in[i] = 0x1111111111111111ull * (uint64_t)(i + 1) + f;
		in[16] = flags[f];
		rtlocal_call(code, in, out);
		for (int i = 0; i < 17; i++)
			if (i != 7)
				cr_assert_eq(out[i], in[i], "call %u: register %d: %llx -> %llx", f, i,
					     (unsigned long long)in[i], (unsigned long long)out[i]);
	}
	struct xflow_record r[8];
	cr_assert_eq(rtlocal_records(&w->rt, r, 8), 2, "the lane holds two");
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(r[i].data[0], 0x6666666666666666ull + (uint64_t)i, "record %d: rdi %llx", i,
			     (unsigned long long)r[i].data[0]);
		cr_assert_eq(r[i].data[1], 0x401000);
		cr_assert_eq(r[i].data[2], r[i].timestamp);
	}
	uint64_t cnt[3];
	rtlocal_counts(&w->rt, 0, cnt);
	cr_assert_eq(cnt[0], 6);
	cr_assert_eq(cnt[2], 4, "%llu drops", (unsigned long long)cnt[2]);
	rtlocal_fini(&w->rt);
	world_fini(w);
}

/* Advice 0 of @w verified and loaded into w->rt with @nlanes lanes, the
 * only one enabled: its uses_flows (1 changes the table, 2 looks up). */
static unsigned advice0_loaded(struct world *w, unsigned nlanes)
{
	const char *why;
	uint32_t at;
	cr_assert_eq(xflow_bc_verify(&w->hp.adv[0].prog, &why, &at), 0, "%s at %u", why, at);
	struct xflow_hook_prog prog;
	cr_assert_eq(handplan_prog(&w->hp, 0, 3, &prog), 0);
	cr_assert_eq(rtlocal_init(&w->rt, &prog, nlanes, 1024), 0);
	const struct xflow_rt_ctl *c = w->rt.ctl;
	const struct xflow_rt_advice *adv = (const void *)((const char *)c + c->off_advice);
	for (uint32_t i = 0; i < w->hp.plan.nadvice; i++)
		rtlocal_enable(&w->rt, i, i == 0);
	return adv[0].uses_flows;
}

Test(inproc_jit, lookups_without_the_lock_under_changes)
{
	struct world *w = calloc(1, sizeof(*w));
	world_init(w, 1);
	/* if (get_flowid(f, o) == 0) STORE_DATA1(0); */
	const struct xflow_bc_insn insns[] = {
		I(LDIN, 0, 0, 0), I(FLOW_GET, 0, 0, 0), I(DUP, 0, 0, 0), I(JNZ, 0, 0, 2),
		I(STORE, 1, 0, 0), I(RET, 0, 0, 0),
		I(DROP, 0, 0, 0), I(RET, 0, 0, 0),
	};
	struct xflow_bc_prog bp = { .ninsns = sizeof(insns) / sizeof(insns[0]), .insns = insns };
	set_prog(w, 0, &bp);
	struct rtlocal *rt = &w->rt;
	cr_assert_eq(advice0_loaded(w, 8), 2, "a lookup alone should run without the lock");

	struct peek pk = { 0 };
	struct xflow_rt_proc *p = rt->t.proc.map;
	struct xflow_flowtab t = p->flows;
	t.slots = (void *)((char *)p + p->off_slots);
	pk.t = &t;
	pk.lock = &p->flow_lock;
	pk.code = rtlocal_jit(rt, 0x401000, XFLOW_WHEN_BEFORE, &w->site, 1);
	cr_assert_neq(pk.code, 0, "not compiled");
	for (unsigned r = 0; r < PEEK_READERS; r++) {
		pk.key[r] = (uint64_t)(uintptr_t)&buf[r * 64];
		/* A twin: another key whose home slot is the same. */
		uint64_t home = xflow_flowtab__hash(&t, 0, pk.key[r]);
		for (uint64_t k = pk.key[r] + 8;; k += 8) {
			if (xflow_flowtab__hash(&t, 0, k) == home) {
				pk.twin[r] = k;
				break;
			}
		}
		cr_assert_eq(xflow_flowtab_register(&t, 0, pk.twin[r], 900 + r), 0);
		cr_assert_eq(xflow_flowtab_register(&t, 0, pk.key[r], 100 + r), 0);
	}
	atomic_store(&pk.readers_left, PEEK_READERS);
	pthread_t wr, rd[PEEK_READERS];
	struct peek_arg args[PEEK_READERS];
	cr_assert_eq(pthread_create(&wr, NULL, peek_write, &pk), 0);
	for (unsigned r = 0; r < PEEK_READERS; r++) {
		args[r] = (struct peek_arg){ .pk = &pk, .r = r };
		cr_assert_eq(pthread_create(&rd[r], NULL, peek_read, &args[r]), 0);
	}
	for (unsigned r = 0; r < PEEK_READERS; r++)
		pthread_join(rd[r], NULL);
	pthread_join(wr, NULL);

	struct xflow_record rec[16];
	long n = rtlocal_records(rt, rec, 16);
	uint64_t cnt[3];
	rtlocal_counts(rt, 0, cnt);
	cr_expect_eq(cnt[0], (uint64_t)PEEK_READERS * PEEK_CALLS, "%llu lookups counted", (unsigned long long)cnt[0]);
	cr_expect_eq(n, 0, "%ld lookups missed a key that was always in the table", n);
	cr_expect_gt(atomic_load(&pk.changes), 10, "the table hardly changed under the readers");
	rtlocal_fini(rt);
	world_fini(w);
}

/* One hit of @code with rdi = @key; the records it wrote appended to @rec. */
static long hit_with(struct rtlocal *rt, uint64_t code, uint64_t key, struct xflow_record *rec, long room)
{
	uint64_t in[17] = { 0 }, out[17];
	in[5] = key;
	in[4] = (uint64_t)(uintptr_t)buf + 64;
	in[16] = 0x202;
	rtlocal_call(code, in, out);
	return rtlocal_records(rt, rec, room);
}

/* Issue 27: advice that changes the flow-id table only sometimes (a start
 * at every touch of a request's first function, a quit at every touch of
 * its last) takes the table's lock only when it changes it: each lock
 * taken is a shared line written, which every other thread's lookups
 * then fetch again.  The lock's count (odd while held, one more at each
 * release) says how often it was taken. */
Test(inproc_jit, a_start_or_quit_with_nothing_to_change_takes_no_lock)
{
	/* 0: if (get_flowid(f, o) == 0) register_flowid(f, o, new); a start.
	 * 1: remove_flowid(f, o); a quit.
	 * 2: as 1, and a record first: it cannot run without the lock. */
	static const struct xflow_bc_insn start[] = {
		I(LDIN, 0, 0, 0), I(FLOW_GET, 0, 0, 0), I(JNZ, 0, 0, 3),
		I(LDIN, 0, 0, 0), I(FLOW_NEW, 0, 0, 0), I(FLOW_REG, 0, 0, 0), I(RET, 0, 0, 0),
	};
	static const struct xflow_bc_insn quit[] = { I(LDIN, 0, 0, 0), I(FLOW_DEL, 0, 0, 0), I(RET, 0, 0, 0) };
	static const struct xflow_bc_insn quit_rec[] = {
		I(PUSHI, 0, 0, 5), I(STORE, 1, 0, 0), I(LDIN, 0, 0, 0), I(FLOW_DEL, 0, 0, 0), I(RET, 0, 0, 0),
	};
	static const struct {
		const struct xflow_bc_insn *insns;
		uint32_t n;
		enum xflow_advice_origin origin;
		unsigned marker;
	} advice[3] = {
		{ start, sizeof(start) / sizeof(start[0]), XFLOW_ADVICE_START, XFLOW_REC_START },
		{ quit, sizeof(quit) / sizeof(quit[0]), XFLOW_ADVICE_QUIT, XFLOW_REC_QUIT },
		{ quit_rec, sizeof(quit_rec) / sizeof(quit_rec[0]), XFLOW_ADVICE_QUIT, XFLOW_REC_QUIT },
	};
	struct world *w = calloc(1, sizeof(*w));
	world_init(w, 1);
	struct xflow_record rec[16];
	uint64_t key = (uint64_t)(uintptr_t)&buf[8], other = (uint64_t)(uintptr_t)&buf[16];
	for (unsigned a = 0; a < 3; a++) {
		struct xflow_bc_prog bp = { .ninsns = advice[a].n, .insns = advice[a].insns };
		set_prog(w, 0, &bp);
		w->hp.adv[0].origin = advice[a].origin;
		w->hp.adv[0].rec_flags = advice[a].marker;
		struct rtlocal *rt = &w->rt;
		cr_assert_eq(advice0_loaded(w, 1), 1, "advice %u changes the table", a);
		uint64_t code = rtlocal_jit(rt, 0x401000, XFLOW_WHEN_BEFORE, &w->site, 1);
		cr_assert_neq(code, 0, "advice %u not compiled", a);
		struct xflow_rt_proc *p = rt->t.proc.map;
		struct xflow_flowtab t = p->flows;
		t.slots = (void *)((char *)p + p->off_slots);
		cr_assert_eq(xflow_flowtab_register(&t, 0, key, 77), 0);
		p->flows.live = t.live;

		uint32_t lock0 = atomic_load(&p->flow_lock);
		long n1 = hit_with(rt, code, key, rec, 16);   /* the key has a flow */
		uint32_t lock1 = atomic_load(&p->flow_lock);
		long n2 = hit_with(rt, code, other, rec, 16); /* it has none */
		uint32_t lock2 = atomic_load(&p->flow_lock);
		uint64_t got_key = xflow_flowtab_get(&t, 0, key), got_other = xflow_flowtab_get(&t, 0, other);
		switch (a) {
		case 0: /* the start: nothing to do where a flow is, a flow made where none is */
			cr_expect_eq(lock1, lock0, "a start that found its flow took the lock");
			cr_expect_eq(n1, 0, "a start that found its flow wrote %ld records", n1);
			cr_expect_eq(got_key, 77);
			cr_expect_eq(lock2, lock1 + 2, "a start that made a flow took the lock %u times", (lock2 - lock1) / 2);
			cr_expect_neq(got_other, 0, "the start made no flow");
			cr_expect(n2 == 1 && (rec[0].flags & XFLOW_REC_START) && rec[0].flow_id == got_other,
				  "the start wrote %ld records, not its START", n2);
			break;
		case 1: /* the quit: a flow removed where one is, nothing where none is */
			cr_expect_eq(lock1, lock0 + 2, "a quit that removed a flow took the lock %u times", (lock1 - lock0) / 2);
			cr_expect_eq(got_key, 0, "the quit left its flow");
			cr_expect(n1 == 1 && (rec[0].flags & XFLOW_REC_QUIT) && rec[0].flow_id == 77,
				  "the quit wrote %ld records, not its QUIT", n1);
			cr_expect_eq(lock2, lock1, "a quit with nothing to remove took the lock");
			cr_expect_eq(n2, 0, "a quit with nothing to remove wrote %ld records", n2);
			break;
		case 2: /* a record first: locked every time, as before */
			cr_expect_eq(lock1, lock0 + 2);
			cr_expect_eq(lock2, lock1 + 2, "advice that writes a record ran without the lock");
			cr_expect_eq(got_key, 0);
			break;
		}
		rtlocal_fini(rt);
	}
	world_fini(w);
}

/* The lane of the one thread that hit a site of @rt. */
static struct xflow_rt_lane *claimed_lane(struct rtlocal *rt)
{
	for (uint32_t i = 0; i < rt->t.nlanes; i++)
		if (atomic_load(&rt->t.lanes[i].rt->owner) != 0)
			return rt->t.lanes[i].rt;
	cr_assert_fail("no lane was claimed");
	return NULL;
}

/*
 * A hit reads the clock only for a record (issue 27: most hits of a real
 * server write none, and rdtsc was a fifth of their time): one that writes
 * nothing leaves the lane's time unread, and each record carries its own
 * hit's time, not one left by an earlier hit.
 */
Test(inproc_jit, the_clock_is_read_only_for_a_record)
{
	/* a record of 7 when rdi is not 0 */
	const struct xflow_bc_insn prog[] = { I(LDIN, 0, 0, 0), I(JZ, 0, 0, 2), I(PUSHI, 0, 0, 7), I(STORE, 1, 0, 0),
					      I(RET, 0, 0, 0) };
	struct world *w = calloc(1, sizeof(*w));
	world_init(w, 1);
	struct xflow_bc_prog p = { .ninsns = 5, .insns = prog };
	set_prog(w, 0, &p);
	cr_assert_eq(advice0_loaded(w, 4), 0);
	struct rtlocal *rt = &w->rt;
	uint64_t code = rtlocal_jit(rt, 0x401000, XFLOW_WHEN_BEFORE, &w->site, 1);
	cr_assert_neq(code, 0);
	uint64_t in[17] = { 0 }, out[17];
	in[16] = 0x202;
	rtlocal_call(code, in, out); /* the runtime's start claims the lane */
	struct xflow_rt_lane *l = claimed_lane(rt);
	struct xflow_record r[4];
	cr_assert_eq(rtlocal_records(rt, r, 4), 0);
	rtlocal_call(code, in, out);
	cr_assert_eq(l->now, 0, "a hit that wrote nothing read the clock");
	in[5] = (uint64_t)(uintptr_t)buf;
	uint64_t t[3];
	for (int i = 0; i < 2; i++) {
		t[i] = __rdtsc();
		rtlocal_call(code, in, out);
	}
	t[2] = __rdtsc();
	cr_assert_eq(rtlocal_records(rt, r, 4), 2);
	for (int i = 0; i < 2; i++)
		cr_assert(r[i].timestamp >= t[i] && r[i].timestamp <= t[i + 1], "record %d at %llu, not in [%llu, %llu]",
			  i, (unsigned long long)r[i].timestamp, (unsigned long long)t[i],
			  (unsigned long long)t[i + 1]);
	rtlocal_fini(rt);
	world_fini(w);
}

/*
 * A lookup without the lock answers from the key's home slot only when
 * that slot settles it; a slot holding the same address as a flow of
 * another kind settles nothing, and the walk goes on (issue 27's inline
 * lookup).
 */
Test(inproc_jit, a_lookup_tells_the_kinds_of_one_address_apart)
{
	struct world *w = calloc(1, sizeof(*w));
	world_init(w, 1);
	/* STORE_DATA1(get_flowid(g, o)) */
	const struct xflow_bc_insn insns[] = { I(LDIN, 0, 0, 0), I(FLOW_GET, 0, 1, 0), I(STORE, 1, 0, 0),
					       I(RET, 0, 0, 0) };
	struct xflow_bc_prog bp = { .ninsns = 4, .insns = insns };
	set_prog(w, 0, &bp);
	struct rtlocal *rt = &w->rt;
	cr_assert_eq(advice0_loaded(w, 4), 2, "a lookup alone should run without the lock");
	struct xflow_rt_proc *p = rt->t.proc.map;
	struct xflow_flowtab t = p->flows;
	t.slots = (void *)((char *)p + p->off_slots);
	/* An address whose homes as a flow of kind 0 and of kind 1 are one. */
	uint64_t key = 0x10000;
	while (xflow_flowtab__hash(&t, 0, key) != xflow_flowtab__hash(&t, 1, key))
		key += 8;
	uint64_t code = rtlocal_jit(rt, 0x401000, XFLOW_WHEN_BEFORE, &w->site, 1);
	cr_assert_neq(code, 0);
	uint64_t in[17] = { 0 }, out[17];
	in[5] = key;
	in[16] = 0x202;
	struct xflow_record r[4];
	rtlocal_call(code, in, out);
	cr_assert_eq(xflow_flowtab_register(&t, 0, key, 5), 0);
	rtlocal_call(code, in, out);
	cr_assert_eq(xflow_flowtab_register(&t, 1, key, 7), 0);
	rtlocal_call(code, in, out);
	cr_assert_eq(rtlocal_records(rt, r, 4), 3);
	cr_assert_eq(r[0].data[0], 0, "nothing registered, found %llu", (unsigned long long)r[0].data[0]);
	cr_assert_eq(r[1].data[0], 0, "kind 0's flow found as kind 1's: %llu", (unsigned long long)r[1].data[0]);
	cr_assert_eq(r[2].data[0], 7, "kind 1's flow, past kind 0's at home: %llu", (unsigned long long)r[2].data[0]);
	rtlocal_fini(rt);
	world_fini(w);
}
