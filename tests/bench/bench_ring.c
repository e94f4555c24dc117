/*
 * Ring throughput between two processes (records/s), producer and consumer
 * pinned to different CPUs, with notification checks every 1, 64 and 4096
 * records, slots written with ordinary stores or streamed (non-temporal
 * stores, published a batch at a time), at 32-byte slots and at the
 * project's record size, against baselines measured in the same run:
 *
 *   bare memcpy into shm   one process copies the records into the shared
 *                          region, nobody reads them: the lines never leave
 *                          its cache, so this is the ceiling of a copy with
 *                          ordinary stores, which no two-process transfer
 *                          with them reaches;
 *   bare two-process loop  the same copy in, a plain index store, and a
 *                          consumer that spins on the index until a batch
 *                          is there (as the ring's consumer waits) and
 *                          copies out: the transfer with no protocol at all
 *                          (no validation, drop accounting or notification).
 *                          The ring's percentage of it is its protocol cost;
 *   ... streamed           the same with non-temporal stores and the index
 *                          stored every 64 records behind a store fence:
 *                          the baseline of the streamed ring.
 *
 * The producer never lets the ring overflow (it waits for room), so the
 * figure is the rate at which records are delivered, not dropped.
 *
 * The two vCPUs of the machine this was written on move between host
 * cores: the same run was measured from 6.5 to 73 million 88-byte records
 * per second.  So every mode runs once per round, and the percentages are
 * the median of each round's own ratio to that round's baseline.
 * BENCH_ROUNDS=1 in the environment prints every round on stderr.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/bench/bench_util.h"
#include "xflow/clock.h"
#include "xflow/ring.h"
#include "xflow/shm.h"

#define NSLOTS (1u << 12)
#define RUNS 5

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu % (int)sysconf(_SC_NPROCESSORS_ONLN), &set);
	sched_setaffinity(0, sizeof(set), &set);
}

/* Producer loop specialised by slot size so the copy is inlined. */
#define PRODUCE(SIZE)                                                                      \
	static void produce_##SIZE(struct xflow_ring_producer *p, uint64_t n)             \
	{                                                                                  \
		unsigned char slot[SIZE] __attribute__((aligned(8)));                      \
		memset(slot, 0x5a, sizeof(slot));                                          \
		uint64_t nslots = (uint64_t)p->mask + 1;                                   \
		for (uint64_t i = 0; i < n; i++) {                                         \
			memcpy(slot, &i, sizeof(i));                                       \
			while (p->prod - p->cons_cache >= nslots &&                        \
			       xflow_ring_free_slots(p) == 0)                              \
				__builtin_ia32_pause();                                    \
			xflow_ring_push_n(p, slot, SIZE);                                  \
		}                                                                          \
		xflow_ring_flush(p);                                                       \
	}                                                                                  \
	static void bare_##SIZE(unsigned char *slots, uint64_t n)                          \
	{                                                                                  \
		unsigned char slot[SIZE] __attribute__((aligned(8)));                      \
		memset(slot, 0x5a, sizeof(slot));                                          \
		for (uint64_t i = 0; i < n; i++) {                                         \
			memcpy(slot, &i, sizeof(i));                                       \
			memcpy(slots + (i & (NSLOTS - 1)) * SIZE, slot, SIZE);             \
			__asm__ __volatile__("" ::: "memory");                             \
		}                                                                          \
	}
PRODUCE(32)
PRODUCE(88)

/* The two-process baseline's shared state: one index, then the slots. */
struct bare_shared {
	_Atomic uint64_t prod __attribute__((aligned(64)));
	_Atomic uint64_t cons __attribute__((aligned(64)));
	unsigned char slots[] __attribute__((aligned(64)));
};

/* Streamed, the bare loop publishes once per BARE2_STREAM_BATCH records,
 * behind a store fence, as the streaming ring does with a batch of 64. */
#define BARE2_STREAM_BATCH 64

#define BARE2(SIZE)                                                                        \
	static void bare2_produce_##SIZE(struct bare_shared *b, uint64_t n, int stream)   \
	{                                                                                  \
		unsigned char slot[SIZE] __attribute__((aligned(8)));                      \
		memset(slot, 0x5a, sizeof(slot));                                          \
		uint64_t cons = 0;                                                         \
		for (uint64_t i = 0; i < n; i++) {                                         \
			memcpy(slot, &i, sizeof(i));                                       \
			while (i - cons >= NSLOTS)                                         \
				cons = atomic_load_explicit(&b->cons, memory_order_acquire); \
			unsigned char *dst = b->slots + (i & (NSLOTS - 1)) * SIZE;         \
			if (!stream) {                                                     \
				memcpy(dst, slot, SIZE);                                   \
				atomic_store_explicit(&b->prod, i + 1, memory_order_release); \
				continue;                                                  \
			}                                                                  \
			/* The ring's own streaming copy: only the protocol differs. */ \
			xflow_ring__stream_copy(dst, slot, SIZE);                          \
			if ((i + 1) % BARE2_STREAM_BATCH == 0 || i + 1 == n) {             \
				__builtin_ia32_sfence();                                   \
				atomic_store_explicit(&b->prod, i + 1, memory_order_release); \
			}                                                                  \
		}                                                                          \
	}
BARE2(32)
BARE2(88)

static double bare2_rate(uint32_t slot_size, int stream, uint64_t n)
{
	struct xflow_shm shm;
	size_t size = sizeof(struct bare_shared) + (size_t)slot_size * NSLOTS;
	if (xflow_shm_create("bench-bare2", size, &shm))
		return 0;
	struct bare_shared *b = shm.base;
	pid_t pid = fork();
	if (pid == 0) {
		pin(0);
		if (slot_size == 32)
			bare2_produce_32(b, n, stream);
		else
			bare2_produce_88(b, n, stream);
		_exit(0);
	}
	pin(1);
	static unsigned char buf[512 * 128];
	uint64_t cons = 0, t0 = bench_now_ns();
	while (cons < n) {
		uint64_t prod = atomic_load_explicit(&b->prod, memory_order_acquire);
		uint64_t k = prod - cons;
		/* Wait for a batch, as xflow_ring_wait() does, unless the
		 * producer is finishing. */
		if (k < 256 && n - cons > 256) {
			for (int p = 0; p < 16; p++)
				__builtin_ia32_pause();
			continue;
		}
		if (k > sizeof(buf) / slot_size)
			k = sizeof(buf) / slot_size;
		/* The same two-copies-at-most shape as the ring's consumer. */
		uint64_t first = cons & (NSLOTS - 1), run = k < NSLOTS - first ? k : NSLOTS - first;
		memcpy(buf, b->slots + first * slot_size, run * slot_size);
		if (k > run)
			memcpy(buf + run * slot_size, b->slots, (k - run) * slot_size);
		cons += k;
		atomic_store_explicit(&b->cons, cons, memory_order_release);
		if (k == 0)
			__builtin_ia32_pause();
	}
	uint64_t t1 = bench_now_ns();
	waitpid(pid, NULL, 0);
	xflow_shm_release(&shm);
	return (double)n * 1e9 / (double)(t1 - t0);
}

/* Records per second delivered from a child producer to this consumer. */
static double ring_rate(uint32_t slot_size, uint32_t batch, int stream, uint64_t n,
			uint64_t *notifies)
{
	struct xflow_shm shm;
	size_t size = xflow_ring_region_size(slot_size, NSLOTS);
	struct xflow_eventfd_notifier en;
	if (xflow_shm_create("bench", size, &shm) || xflow_eventfd_notifier_init(&en, -1))
		return 0;
	xflow_ring_format(shm.base, size, slot_size, NSLOTS, XFLOW_CLOCK_TSC);
	int pipefd[2];
	if (pipe(pipefd))
		return 0;

	pid_t pid = fork();
	if (pid == 0) {
		pin(0);
		struct xflow_ring_producer p;
		xflow_ring_producer_init(&p, shm.base, size, &en.base, batch);
		if (stream && xflow_ring_producer_stream(&p))
			_exit(1);
		char go;
		if (read(pipefd[0], &go, 1) != 1)
			_exit(1);
		if (slot_size == 32)
			produce_32(&p, n);
		else
			produce_88(&p, n);
		if (write(pipefd[1], &p.notifies, sizeof(p.notifies)) < 0)
			_exit(1);
		_exit(0);
	}
	pin(1);
	struct xflow_ring_consumer c;
	xflow_ring_consumer_init(&c, shm.base, size, slot_size, &en.base);
	static unsigned char buf[512 * 128];
	uint32_t max = (uint32_t)(sizeof(buf) / slot_size);
	uint64_t got = 0;
	uint64_t t0 = bench_now_ns();
	if (write(pipefd[1], "g", 1) != 1)
		return 0;
	while (got < n) {
		long k = xflow_ring_pop(&c, buf, max);
		if (k < 0)
			break;
		got += (uint64_t)k;
		/* A collector's loop: drain, and wait when the pop came back
		 * short, so the producer runs ahead by a batch.  Not after the
		 * last record: the producer has finished and will not notify,
		 * so that wait would time out inside the timed span. */
		if ((uint32_t)k < max && got < n)
			xflow_ring_wait(&c, 100);
	}
	uint64_t t1 = bench_now_ns();
	waitpid(pid, NULL, 0);
	*notifies = 0;
	if (read(pipefd[0], notifies, sizeof(*notifies)) < 0)
		*notifies = 0;
	close(pipefd[0]);
	close(pipefd[1]);
	en.base.ops->close(&en.base);
	xflow_shm_release(&shm);
	return got == n ? (double)n * 1e9 / (double)(t1 - t0) : 0;
}

static double bare_rate(uint32_t slot_size, uint64_t n)
{
	struct xflow_shm shm;
	size_t size = (size_t)slot_size * NSLOTS;
	if (xflow_shm_create("bench-bare", size, &shm))
		return 0;
	pin(0);
	uint64_t t0 = bench_now_ns();
	if (slot_size == 32)
		bare_32(shm.base, n);
	else
		bare_88(shm.base, n);
	uint64_t t1 = bench_now_ns();
	xflow_shm_release(&shm);
	return (double)n * 1e9 / (double)(t1 - t0);
}

/*
 * The hook's side of one record: fill it (pc, rdtsc, id, three data
 * values), push it.  The consumer's index is advanced by this thread
 * between batches, so the ring never fills and only the producer's path
 * is timed.  DESIGN.md budgets 13.5 ns for this, 11.6 of them rdtsc.
 */
static void producer_path_cost(int stream)
{
	const uint32_t nslots = 1u << 12;
	size_t size = xflow_ring_region_size(XFLOW_RECORD_SIZE, nslots);
	struct xflow_shm shm;
	if (xflow_shm_create("bench-path", size, &shm))
		return;
	xflow_ring_format(shm.base, size, XFLOW_RECORD_SIZE, nslots, XFLOW_CLOCK_TSC);
	struct xflow_ring_producer p;
	xflow_ring_producer_init(&p, shm.base, size, NULL, 1u << 30);
	if (stream)
		xflow_ring_producer_stream(&p);
	struct xflow_ring_hdr *h = shm.base;
	double v[RUNS], rd[RUNS];
	const int n = 1 << 22;
	for (int r = 0; r < RUNS; r++) {
		struct xflow_record rec;
		memset(&rec, 0, sizeof(rec));
		rec.version = XFLOW_RECORD_VERSION;
		rec.ndata = 3;
		uint64_t t0 = bench_now_ns(), acc = 0;
		for (int i = 0; i < n; i++)
			acc += xflow_tsc_read();
		uint64_t t1 = bench_now_ns();
		for (int i = 0; i < n; i++) {
			rec.timestamp = xflow_tsc_read();
			rec.flow_id = (uint64_t)i & 0xffff;
			rec.site_id = (uint32_t)i & 63;
			rec.data[0] = 0x401000 + (uint64_t)(i & 63);
			rec.data[1] = rec.timestamp;
			rec.data[2] = rec.flow_id;
			xflow_ring_push_record(&p, &rec);
			if ((i & (nslots / 2 - 1)) == 0)
				atomic_store_explicit(&h->cons, p.prod, memory_order_release);
		}
		uint64_t t2 = bench_now_ns();
		BENCH_KEEP(acc);
		rd[r] = (double)(t1 - t0) / n;
		v[r] = (double)(t2 - t1) / n;
	}
	printf("%shook side of one record (fill, rdtsc, push%s): %.1f ns, of which rdtsc %.1f ns"
	       " (median of %d x %d; DESIGN budget 13.5 / 11.6)\n", stream ? "" : "\n",
	       stream ? ", streamed" : "", bench_median(v, RUNS), bench_median(rd, RUNS), RUNS, n);
	xflow_shm_release(&shm);
}

/* The ring's modes: notification checks every `batch` records, slots written
 * with ordinary stores and published one by one, or streamed and published
 * a batch at a time.  Each is compared with the bare loop of its kind. */
static const struct mode {
	uint32_t batch;
	int stream;
} modes[] = { { 1, 0 }, { 64, 0 }, { 4096, 0 }, { 64, 1 }, { 4096, 1 } };
#define NMODES (sizeof(modes) / sizeof(modes[0]))

int main(void)
{
	static const uint32_t sizes[] = { 32, XFLOW_RECORD_SIZE };
	const uint64_t n = 20 * 1000 * 1000;

	printf("\nring between two processes: records/s, median of %d rounds of %lu records,"
	       " %u slots;\n\"vs bare\" is the median of each round's ratio to the bare"
	       " two-process loop\nwith the same stores (cached, or streamed and published"
	       " every %d)\n", RUNS, (unsigned long)n, NSLOTS, BARE2_STREAM_BATCH);
	printf("%-6s %-34s %14s %9s %10s\n", "slot", "mode", "records/s", "vs bare", "notifies");
	/* BENCH_ROUNDS=1 prints every round, to see how noisy the host is. */
	const int each_round = getenv("BENCH_ROUNDS") != NULL;

	bench_warm_up(2000);
	for (size_t s = 0; s < 2; s++) {
		/* Every mode once a round, rounds repeated: a noisy moment of
		 * the shared host then slows one round of every mode, not
		 * every run of one, and each round's ring-to-baseline ratio
		 * compares runs made seconds apart. */
		double bare1[RUNS], bare[2][RUNS], ring[NMODES][RUNS], ratio[NMODES][RUNS];
		double ratio1[RUNS], ratio_st[RUNS];
		uint64_t nt[NMODES][RUNS];
		for (int r = 0; r < RUNS; r++) {
			bare1[r] = bare_rate(sizes[s], n);
			for (int st = 0; st < 2; st++)
				bare[st][r] = bare2_rate(sizes[s], st, n);
			ratio1[r] = bare1[r] / bare[0][r];
			ratio_st[r] = bare[1][r] / bare[0][r];
			for (size_t m = 0; m < NMODES; m++) {
				ring[m][r] = ring_rate(sizes[s], modes[m].batch, modes[m].stream, n,
						       &nt[m][r]);
				ratio[m][r] = ring[m][r] / bare[modes[m].stream][r];
				if (each_round)
					fprintf(stderr, "round %d: %u-byte slots, bare %.3e / %.3e "
						"(cached / streamed), ring / %u%s %.3e records/s\n", r,
						sizes[s], bare[0][r], bare[1][r], modes[m].batch,
						modes[m].stream ? " streamed" : "", ring[m][r]);
			}
		}
		printf("%-6u %-34s %14.3e %8.0f%% %10s\n", sizes[s], "bare memcpy into shm",
		       bench_median(bare1, RUNS), 100.0 * bench_median(ratio1, RUNS), "-");
		printf("%-6u %-34s %14.3e %8.0f%% %10s\n", sizes[s], "bare two-process loop",
		       bench_median(bare[0], RUNS), 100.0, "-");
		printf("%-6u %-34s %14.3e %8.0f%% %10s\n", sizes[s], "bare two-process loop, streamed",
		       bench_median(bare[1], RUNS), 100.0 * bench_median(ratio_st, RUNS), "-");
		for (size_t m = 0; m < NMODES; m++) {
			char name[48];
			snprintf(name, sizeof(name), "ring, notify check / %u%s", modes[m].batch,
				 modes[m].stream ? ", streamed" : "");
			printf("%-6u %-34s %14.3e %8.0f%% %10lu\n", sizes[s], name,
			       bench_median(ring[m], RUNS), 100.0 * bench_median(ratio[m], RUNS),
			       (unsigned long)nt[m][RUNS / 2]);
		}
	}
	producer_path_cost(0);
	producer_path_cost(1);
	return 0;
}
