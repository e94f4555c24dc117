/*
 * Flow-id table benchmark laid out like seed 001's Table 1, at 1K and 1M
 * live keys, with glib's GHashTable and uthash measured in the same run.
 *
 * Method (the paper's: 2,000 calls a repetition): with N keys live, one
 * repetition registers 2,000 new keys at consecutive addresses, looks them
 * up, and removes them.  A second table repeats the lookups with 2,000 keys
 * drawn at random from all live ones, so that at 1M every lookup misses the
 * cache: the worst case, not the paper's.  ns per call: the median of 101
 * repetitions in one run, and of RUNS such runs, interleaved so that a
 * noisy moment of the shared host does not land on one column.  "changeID"
 * registers ids 1, 2, 3...; "sameID" one id for every key.  Both take fresh
 * addresses every repetition, as a slab does that never hands an object
 * out twice.  "reused" takes the same 2,000 addresses every repetition (with
 * changing ids), as a per-CPU freelist does that recycles the objects just
 * freed: the paper does not say which of the two it measured.  The baselines
 * key one table per flow kind by pointer, the way a user of those libraries
 * would; ours keys (kind, pointer).
 *
 * At 1M keys every table is far bigger than the caches, and registering a
 * key at a fresh address costs a cache miss whatever the table.  The run
 * measures that floor on the spot: independent read-modify-writes of one
 * 16-byte slot at random places in a buffer as big as our table.
 *
 * The targets at 1M live keys on fresh addresses (decided in issue 19, in
 * place of a fixed 10 ns for register, which no table can meet where every
 * register misses the cache): register within 2x the memory floor of the
 * same run, and lookups at least 3x as fast as GHashTable's.  Each is
 * printed met or MISSED, with the recycled-address figure beside it.
 */
#include <stdbool.h>
#include <sys/mman.h>
#include <glib.h>
#include <stdio.h>
#include <string.h>
#include <uthash.h>

#include "tests/bench/bench_util.h"
#include "xflow/flowid.h"

#define CALLS 2000
#define REPS 101
#define RUNS 5
/* The targets at 1M live keys (see the top of the file). */
#define TARGET_LIVE 1000000
#define TARGET_REGISTER_FLOORS 2.0
#define TARGET_GET_VS_GHASH 3.0

enum op { OP_REGISTER, OP_GET, OP_REMOVE, OP_NEW, OP_GET_EMPTY, OP_GET_RANDOM, NOPS };
/* How a repetition picks its keys and ids (see the top of the file). */
enum mode { CHANGE_ID, SAME_ID, REUSED, NMODES };


static uint64_t key_of(uint64_t i)
{
	/* Objects 256 bytes apart, like sk_buffs from a slab. */
	return UINT64_C(0x7f0000000000) + i * 256;
}

/* --- ours --------------------------------------------------------------- */
static struct xflow_flowtab ft;
static void ours_setup(size_t live) { xflow_flowtab_init(&ft, live + CALLS); }
static void ours_teardown(void) { xflow_flowtab_fini(&ft); }
static void ours_reg(uint64_t p, uint64_t id) { xflow_flowtab_register(&ft, 1, p, id); }
static uint64_t ours_get(uint64_t p) { return xflow_flowtab_get(&ft, 1, p); }
static void ours_rm(uint64_t p) { xflow_flowtab_remove(&ft, 1, p); }
static uint64_t ours_new(void) { return xflow_flowtab_new_id(&ft); }

/* --- GHashTable ---------------------------------------------------------- */
static GHashTable *gh;
static uint64_t gh_last;
static void gh_setup(size_t live) { (void)live; gh = g_hash_table_new(g_direct_hash, g_direct_equal); gh_last = 0; }
static void gh_teardown(void) { g_hash_table_destroy(gh); }
static void gh_reg(uint64_t p, uint64_t id) { g_hash_table_insert(gh, (gpointer)p, (gpointer)id); }
static uint64_t gh_get(uint64_t p) { return (uint64_t)g_hash_table_lookup(gh, (gpointer)p); }
static void gh_rm(uint64_t p) { g_hash_table_remove(gh, (gpointer)p); }
static uint64_t gh_new(void) { return ++gh_last; }

/* --- uthash (entries preallocated, so malloc is not what we time) ------- */
struct ut_entry {
	uint64_t ptr, id;
	UT_hash_handle hh;
};
static struct ut_entry *ut_head, *ut_pool, **ut_free;
static size_t ut_nfree, ut_last;
static void ut_setup(size_t live)
{
	size_t n = live + CALLS;
	ut_head = NULL;
	ut_pool = calloc(n, sizeof(*ut_pool));
	ut_free = malloc(n * sizeof(*ut_free));
	for (size_t i = 0; i < n; i++)
		ut_free[i] = &ut_pool[n - 1 - i];
	ut_nfree = n;
	ut_last = 0;
}
static void ut_teardown(void)
{
	HASH_CLEAR(hh, ut_head);
	free(ut_pool);
	free(ut_free);
}
static void ut_reg(uint64_t p, uint64_t id)
{
	struct ut_entry *e;
	HASH_FIND(hh, ut_head, &p, sizeof(p), e);
	if (!e) {
		e = ut_free[--ut_nfree];
		e->ptr = p;
		HASH_ADD(hh, ut_head, ptr, sizeof(e->ptr), e);
	}
	e->id = id;
}
static uint64_t ut_get(uint64_t p)
{
	struct ut_entry *e;
	HASH_FIND(hh, ut_head, &p, sizeof(p), e);
	return e ? e->id : 0;
}
static void ut_rm(uint64_t p)
{
	struct ut_entry *e;
	HASH_FIND(hh, ut_head, &p, sizeof(p), e);
	if (e) {
		HASH_DEL(ut_head, e);
		ut_free[ut_nfree++] = e;
	}
}
static uint64_t ut_new(void) { return ++ut_last; }

#define NIMPL 3

/* The bytes our table takes for @live keys and a repetition's new ones. */
static size_t table_bytes(size_t live)
{
	struct xflow_flowtab t;
	if (xflow_flowtab_init(&t, live + CALLS))
		return 0;
	size_t b = xflow_flowtab_bytes(&t);
	xflow_flowtab_fini(&t);
	return b;
}

/* results[impl][mode][op] in ns per call, and each run's */
static double results[NIMPL][NMODES][NOPS];
static double run_results[RUNS][NIMPL][NMODES][NOPS];

static uint64_t rng = 88172645463325252ull;
static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/*
 * One timing function per implementation, so every call is direct and can
 * be inlined, as it is in a hook; a call through a pointer would add the
 * same nanosecond or two to each column and hide the differences.
 */
#define DEFINE_RUN(P)                                                                  \
static void run_##P(size_t live, enum mode mode, double out[NOPS]) \
{ \
	static double samples[NOPS][REPS]; \
	static uint64_t probe[CALLS]; \
 \
	/* Empty-table lookups and new ids first, on an empty table. */ \
	P##_setup(live); \
	for (int r = 0; r < REPS; r++) { \
		uint64_t t0 = bench_now_ns(), acc = 0; \
		for (int i = 0; i < CALLS; i++) \
			acc += P##_get(key_of((uint64_t)i)); \
		uint64_t t1 = bench_now_ns(); \
		for (int i = 0; i < CALLS; i++) \
			acc += P##_new(); \
		uint64_t t2 = bench_now_ns(); \
		BENCH_KEEP(acc); \
		samples[OP_GET_EMPTY][r] = (double)(t1 - t0) / CALLS; \
		samples[OP_NEW][r] = (double)(t2 - t1) / CALLS; \
	} \
	for (size_t i = 0; i < live; i++) \
		P##_reg(key_of(i), i + 1); \
 \
	uint64_t next_key = live; \
	for (int r = 0; r < REPS; r++) { \
		uint64_t base = next_key; \
		/* Random lookups hit any live key: old or just added. */ \
		for (int i = 0; i < CALLS; i++) { \
			uint64_t k = xorshift() % (live + CALLS); \
			probe[i] = k < live ? key_of(k) : key_of(base + (k - live)); \
		} \
		uint64_t t0 = bench_now_ns(); \
		for (uint64_t i = 0; i < CALLS; i++) \
			P##_reg(key_of(base + i), mode == SAME_ID ? 7 : base + i + 1); \
		uint64_t t1 = bench_now_ns(), acc = 0; \
		for (uint64_t i = 0; i < CALLS; i++) \
			acc += P##_get(key_of(base + i)); \
		uint64_t t2 = bench_now_ns(); \
		for (int i = 0; i < CALLS; i++) \
			acc += P##_get(probe[i]); \
		uint64_t t2r = bench_now_ns(); \
		for (uint64_t i = 0; i < CALLS; i++) \
			P##_rm(key_of(base + i)); \
		uint64_t t3 = bench_now_ns(); \
		BENCH_KEEP(acc); \
		samples[OP_REGISTER][r] = (double)(t1 - t0) / CALLS; \
		samples[OP_GET][r] = (double)(t2 - t1) / CALLS; \
		samples[OP_GET_RANDOM][r] = (double)(t2r - t2) / CALLS; \
		samples[OP_REMOVE][r] = (double)(t3 - t2r) / CALLS; \
		if (mode != REUSED) \
			next_key += CALLS; \
	} \
	P##_teardown(); \
	for (int op = 0; op < NOPS; op++) \
		out[op] = bench_median(samples[op], REPS); \
}
DEFINE_RUN(ours)
DEFINE_RUN(gh)
DEFINE_RUN(ut)

/* The memory floor: ns per independent read-modify-write of a 16-byte slot
 * at a random place in @bytes of huge-page-backed memory, median of REPS
 * rounds of CALLS. */
static double memory_floor(size_t bytes)
{
	struct slot {
		uint64_t a, b;
	};
	static double samples[REPS];
	size_t n = bytes / sizeof(struct slot);
	struct slot *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 0;
	madvise(m, bytes, MADV_HUGEPAGE);
	memset(m, 1, bytes);
	for (int r = 0; r < REPS; r++) {
		uint64_t t0 = bench_now_ns();
		for (int i = 0; i < CALLS; i++) {
			struct slot *s = &m[xorshift() % n];
			s->a += 1;
			s->b = s->a;
		}
		samples[r] = (double)(bench_now_ns() - t0) / CALLS;
	}
	munmap(m, bytes);
	return bench_median(samples, REPS);
}

static void print_table(size_t live, double floor_ns)
{
	static const char *rows[] = {
		"get_new_flowid", "get_flowid (empty)",
		"(changeID) register_flowid", "(changeID) get_flowid", "(changeID) remove_flowid",
		"(sameID) register_flowid", "(sameID) get_flowid", "(sameID) remove_flowid",
		"get_flowid, random live key",
		"(reused) register_flowid", "(reused) get_flowid", "(reused) remove_flowid",
	};
	static const int row_op[] = { OP_NEW, OP_GET_EMPTY, OP_REGISTER, OP_GET, OP_REMOVE,
				      OP_REGISTER, OP_GET, OP_REMOVE, OP_GET_RANDOM,
				      OP_REGISTER, OP_GET, OP_REMOVE };
	static const enum mode row_mode[] = { CHANGE_ID, CHANGE_ID, CHANGE_ID, CHANGE_ID,
					      CHANGE_ID, SAME_ID,   SAME_ID,   SAME_ID,
					      CHANGE_ID, REUSED,    REUSED,    REUSED };

	printf("\nflow-id table, %zu live keys: ns per call (median of %d runs of %d x %d calls)\n",
	       live, RUNS, REPS, CALLS);
	printf("%-30s %8s %11s %8s %14s\n", "function", "xflow", "GHashTable", "uthash",
	       "GHash/xflow");
	for (size_t r = 0; r < sizeof(row_op) / sizeof(row_op[0]); r++) {
		double x = results[0][row_mode[r]][row_op[r]];
		double g = results[1][row_mode[r]][row_op[r]];
		double u = results[2][row_mode[r]][row_op[r]];
		if (row_op[r] == OP_NEW) /* the libraries have no id generator */
			printf("%-30s %8.1f %11s %8s %14s\n", rows[r], x, "-", "-", "-");
		else
			printf("%-30s %8.1f %11.1f %8.1f %13.1fx\n", rows[r], x, g, u, g / x);
	}
	printf("%-30s %8.1f   (random read-modify-write of a slot in %zu KiB)\n", "memory floor",
	       floor_ns, table_bytes(live) >> 10);
	printf("%-30s %8.1fx\n", "register / memory floor",
	       results[0][CHANGE_ID][OP_REGISTER] / floor_ns);
}

/* met/MISSED against the targets; returns how many were missed. */
static int print_targets(size_t live, double floor_ns)
{
	printf("\ntargets at %zu live keys, fresh addresses (recycled addresses beside, for reference):\n", live);
	int missed = 0;
	static const struct {
		const char *what;
		enum mode mode;
	} regs[] = { { "register_flowid (changeID)", CHANGE_ID }, { "register_flowid (sameID)", SAME_ID } };
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		double x = results[0][regs[i].mode][OP_REGISTER], bound = TARGET_REGISTER_FLOORS * floor_ns;
		bool ok = x <= bound;
		missed += !ok;
		printf("  %-32s %6.1f ns <= %.0f x memory floor %.1f = %.1f ns: %-6s (recycled: %.1f ns)\n",
		       regs[i].what, x, TARGET_REGISTER_FLOORS, floor_ns, bound, ok ? "met" : "MISSED",
		       results[0][REUSED][OP_REGISTER]);
	}
	static const struct {
		const char *what;
		int op;
	} gets[] = { { "get_flowid", OP_GET }, { "get_flowid, random live key", OP_GET_RANDOM } };
	for (size_t i = 0; i < sizeof(gets) / sizeof(gets[0]); i++) {
		double x = results[0][CHANGE_ID][gets[i].op], g = results[1][CHANGE_ID][gets[i].op];
		bool ok = g >= TARGET_GET_VS_GHASH * x;
		missed += !ok;
		printf("  %-32s %6.1f ns, GHashTable %.1f ns: %.1fx >= %.0fx: %-6s (recycled: %.1f ns, GHashTable %.1f ns)\n",
		       gets[i].what, x, g, g / x, TARGET_GET_VS_GHASH, ok ? "met" : "MISSED",
		       results[0][REUSED][gets[i].op], results[1][REUSED][gets[i].op]);
	}
	return missed;
}

int main(int argc, char **argv)
{
	size_t sizes[] = { 1000, 1000000 };
	(void)argc;
	(void)argv;
	printf("The paper's Table 1 (2.2 GHz Athlon 64): new 3, get(empty) 9, "
	       "register 33, get 15, remove 32 ns.\n");
	bench_warm_up(2000);
	for (size_t s = 0; s < 2; s++) {
		static double cell[RUNS];
		double floor_ns;
		for (int run = 0; run < RUNS; run++) {
			for (enum mode m = 0; m < NMODES; m++) {
				run_ours(sizes[s], m, run_results[run][0][m]);
				run_gh(sizes[s], m, run_results[run][1][m]);
				run_ut(sizes[s], m, run_results[run][2][m]);
			}
		}
		for (int impl = 0; impl < NIMPL; impl++)
			for (int m = 0; m < NMODES; m++)
				for (int op = 0; op < NOPS; op++) {
					for (int run = 0; run < RUNS; run++)
						cell[run] = run_results[run][impl][m][op];
					results[impl][m][op] = bench_median(cell, RUNS);
				}
		floor_ns = memory_floor(table_bytes(sizes[s]));
		print_table(sizes[s], floor_ns);
		if (sizes[s] == TARGET_LIVE)
			print_targets(sizes[s], floor_ns);
	}
	return 0;
}
