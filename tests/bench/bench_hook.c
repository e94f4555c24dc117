/*
 * Cost of one hit through the ptrace hook engine, against the floor of the
 * mechanism measured in the same run: a hand-written tracer that puts int3 on
 * a one-byte nop and, at each stop, reads the registers, sets rip past the
 * nop and continues (waitpid, GETREGS, SETREGS, CONT; no single-step).
 *
 * The target is a forked copy of this program calling a tiny function N
 * times and timing the calls itself; the engine runs a counting handler.
 * Sites: the nop (emulated by the engine, the floor's exact case) and a
 * `push rbp` (run out of line in the scratch page).  Pinned: tracer and
 * target on CPU 0, so a stop and a continue are two context switches on one
 * CPU; unpinned: the scheduler's choice, with cross-CPU wake-ups.  Then the
 * engine's throughput with 1, 2 and 4 target threads.
 *
 *   bench_hook [HITS]      (default 100000; medians of RUNS runs)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guestrt/hook/hook.h"
#include "guestrt/interp/interp.h"
#include "xflow/clock.h"
#include "xflow/flowlang.h"
#include "xflow/ring.h"
#include "xflow/shm.h"
#include "tests/bench/bench_util.h"

#define RUNS 5

void bench_nop_fn(void);
void bench_push_fn(void);
__asm__(".text\n"
	".globl bench_nop_fn\n.type bench_nop_fn,@function\n"
	"bench_nop_fn:\n\tnop\n\tret\n.size bench_nop_fn, .-bench_nop_fn\n"
	".globl bench_push_fn\n.type bench_push_fn,@function\n"
	"bench_push_fn:\n\tpush %rbp\n\tpop %rbp\n\tret\n.size bench_push_fn, .-bench_push_fn\n");

struct job {
	void (*fn)(void);
	long n;
};

static void *calls(void *arg)
{
	struct job *j = arg;
	for (long i = 0; i < j->n; i++)
		j->fn();
	return NULL;
}

/* The target: wait for a byte, make n calls over nthreads threads, report
 * the elapsed ns. */
static pid_t start_target(void (*fn)(void), long n, int nthreads, int *go, int *res)
{
	int g[2], r[2];
	if (pipe(g) || pipe(r))
		exit(1);
	pid_t pid = fork();
	if (pid == 0) {
		char c;
		pthread_t th[8];
		struct job j = {fn, n / nthreads};
		close(g[1]);
		close(r[0]);
		if (read(g[0], &c, 1) != 1)
			_exit(1);
		uint64_t t0 = bench_now_ns();
		for (int i = 0; i < nthreads; i++)
			pthread_create(&th[i], NULL, calls, &j);
		for (int i = 0; i < nthreads; i++)
			pthread_join(th[i], NULL);
		uint64_t dt = bench_now_ns() - t0;
		if (write(r[1], &dt, sizeof(dt)) != sizeof(dt))
			_exit(1);
		_exit(0);
	}
	close(g[0]);
	close(r[1]);
	*go = g[1];
	*res = r[0];
	return pid;
}

static double finish(int go, int res, long n)
{
	uint64_t dt = 0;
	if (read(res, &dt, sizeof(dt)) != sizeof(dt))
		dt = 0;
	close(go);
	close(res);
	return (double)dt / (double)n;
}

static void count(const struct xflow_hook_hit *hit, void *data)
{
	(void)hit;
	(*(uint64_t *)data)++;
}

/*
 * The agent's work at a hit, without the plan: run compiled advice (Figure
 * 2's shape: $pc$, a timestamp and a value into one record) through the
 * shared interpreter and push the record into a ring in shared memory.
 */
struct agent_work {
	uint64_t hits;
	const struct xflow_bc_prog *prog;
	struct xflow_flowtab flows;
	struct xflow_ring_producer ring;
	struct xflow_clock clock;
	uint64_t records, dropped;
};

static const struct xflow_mem_ops no_mem; /* the advice reads no memory */

static uint64_t work_clock(void *ctx)
{
	return xflow_clock_ticks(&((struct agent_work *)ctx)->clock);
}

static int work_sink(void *ctx, struct xflow_record *r)
{
	return xflow_ring_push_record(&((struct agent_work *)ctx)->ring, r);
}

static void agent_like(const struct xflow_hook_hit *hit, void *data)
{
	struct agent_work *w = data;
	struct xflow_record tmpl;
	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.site_id = hit->site;
	tmpl.thread_id = (uint32_t)hit->tid;
	struct xflow_interp_env env = {
		.prog = w->prog, .flows = &w->flows, .mem = &no_mem, .pc = hit->addr,
		.clock = work_clock, .clock_ctx = w, .sink = work_sink, .sink_ctx = w, .tmpl = &tmpl,
	};
	struct xflow_interp_result r;
	xflow_interp_run(&env, &r);
	w->hits++;
	w->records += r.records;
	w->dropped += r.dropped;
}

static struct agent_work *work;

static void agent_work_init(void)
{
	static const char *xml = "<advice><pointcut>call(bench_push_fn)</pointcut><before>"
				 "long long tsc; DO_RDTSC(tsc); STORE_DATA3($pc$, tsc, 7);"
				 "</before></advice>";
	struct xflow_unit *u;
	struct xflow_unit_opts o = { .no_include = true };
	struct xflow_advice_info ai;
	work = calloc(1, sizeof(*work));
	if (!work || xflow_unit_new(&u, &o) || xflow_unit_add_buffer(u, "bench.xml", xml, strlen(xml)) ||
	    xflow_unit_compile(u) || xflow_unit_advice(u, 0, &ai)) {
		fprintf(stderr, "bench_hook: the advice does not compile\n");
		exit(1);
	}
	const char *why;
	uint32_t at;
	if (xflow_bc_verify((struct xflow_bc_prog *)ai.prog, &why, &at)) {
		fprintf(stderr, "bench_hook: %s\n", why);
		exit(1);
	}
	work->prog = ai.prog; /* the unit stays for the program's life */
	xflow_clock_init(&work->clock, 0);
	xflow_flowtab_init(&work->flows, 1024);
	uint32_t nslots = 1u << 16;
	size_t size = xflow_ring_region_size(XFLOW_RECORD_SIZE, nslots);
	struct xflow_shm shm;
	if (xflow_shm_create("bench-hook", size, &shm) ||
	    xflow_ring_format(shm.base, size, XFLOW_RECORD_SIZE, nslots, work->clock.kind) ||
	    xflow_ring_producer_init(&work->ring, shm.base, size, NULL, 64)) {
		fprintf(stderr, "bench_hook: no ring\n");
		exit(1);
	}
}

/* ns per hit through the engine, with @handler (count or agent_like). */
static double run_engine_with(void (*fn)(void), long n, int nthreads, xflow_hook_handler_fn handler,
			      uint64_t *hitp, void *data)
{
	struct xflow_hook *h;
	struct xflow_hook_target *t;
	struct xflow_hook_config cfg = {0};
	int go, res;
	pid_t pid = start_target(fn, n, nthreads, &go, &res);
	*hitp = 0;

	if (xflow_hook_new(&xflow_hook_ptrace_ops, &cfg, &h) < 0 || xflow_hook_attach(h, pid, &t) < 0 ||
	    xflow_hook_site_add(t, (uint64_t)(uintptr_t)fn, XFLOW_HOOK_BEFORE, handler, data, NULL) < 0) {
		fprintf(stderr, "engine: %s\n", h ? xflow_hook_last_error(h) : "no engine");
		exit(1);
	}
	if (write(go, "g", 1) != 1)
		exit(1);
	while (xflow_hook_run(h, -1) > 0)
		;
	xflow_hook_free(h);
	double ns = finish(go, res, n);
	if (*hitp != (uint64_t)(n / nthreads * nthreads)) {
		fprintf(stderr, "engine: %llu hits, want %ld\n", (unsigned long long)*hitp, n);
		exit(1);
	}
	return ns;
}

static double run_engine(void (*fn)(void), long n, int nthreads)
{
	uint64_t hits;
	return run_engine_with(fn, n, nthreads, count, &hits, &hits);
}

static double run_agent_like(long n)
{
	return run_engine_with(bench_push_fn, n, 1, agent_like, &work->hits, work);
}

/* ns per hit with the minimal tracer (one thread).  regs: 0 stop and
 * continue only (rip is already past the one-byte nop), 1 also read the
 * registers (what any handler needs), 2 also write rip back (the floor as
 * the issue states it). */
static double run_floor(long n, int regs)
{
	int go, res, st;
	long hits = 0;
	uint64_t addr = (uint64_t)(uintptr_t)bench_nop_fn;
	pid_t pid = start_target(bench_nop_fn, n, 1, &go, &res);
	char path[64];
	unsigned char cc = 0xcc;

	if (ptrace(PTRACE_SEIZE, pid, 0, PTRACE_O_TRACECLONE) < 0) {
		perror("seize");
		exit(1);
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	int mem = open(path, O_RDWR);
	if (mem < 0 || pwrite(mem, &cc, 1, (off_t)addr) != 1) {
		perror("poke");
		exit(1);
	}
	close(mem);
	if (write(go, "g", 1) != 1)
		exit(1);
	for (;;) {
		pid_t w = waitpid(-1, &st, __WALL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (w == pid)
				break;
			continue;
		}
		if (st >> 8 == SIGTRAP) {
			struct user_regs_struct r;
			if (regs >= 1)
				ptrace(PTRACE_GETREGS, w, 0, &r);
			r.rip = addr + 1;
			if (regs >= 2)
				ptrace(PTRACE_SETREGS, w, 0, &r);
			ptrace(PTRACE_CONT, w, 0, 0);
			hits++;
			continue;
		}
		ptrace(PTRACE_CONT, w, 0, (st >> 16) ? 0 : WSTOPSIG(st));
	}
	double ns = finish(go, res, n);
	if (hits != n) {
		fprintf(stderr, "floor: %ld hits, want %ld\n", hits, n);
		exit(1);
	}
	return ns;
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	if (cpu >= 0) {
		CPU_SET(cpu, &set);
	} else {
		for (int i = 0; i < (int)sysconf(_SC_NPROCESSORS_ONLN); i++)
			CPU_SET(i, &set);
	}
	sched_setaffinity(0, sizeof(set), &set);
}

static void compare(const char *how, int cpu, long n)
{
	double eng[RUNS], flo[3][RUNS], ool[RUNS], agt[RUNS], f[3];
	pin(cpu);
	/* Interleaved, so that a noisy moment hits every variant. */
	for (int i = 0; i < RUNS; i++) {
		for (int k = 0; k < 3; k++)
			flo[k][i] = run_floor(n, k);
		eng[i] = run_engine(bench_nop_fn, n, 1);
		ool[i] = run_engine(bench_push_fn, n, 1);
		agt[i] = run_agent_like(n);
	}
	for (int k = 0; k < 3; k++)
		f[k] = bench_median(flo[k], RUNS);
	double e = bench_median(eng, RUNS), o = bench_median(ool, RUNS);
	printf("%s:\n", how);
	printf("  floor: int3 on nop, waitpid+CONT             %8.0f ns/hit\n", f[0]);
	printf("  floor: + GETREGS                             %8.0f ns/hit\n", f[1]);
	printf("  floor: + GETREGS + SETREGS rip (the issue's) %8.0f ns/hit\n", f[2]);
	printf("  engine, nop site (emulated)                  %8.0f ns/hit  %.2fx floor, %.2fx floor+GETREGS\n", e,
	       e / f[2], e / f[1]);
	printf("  engine, push rbp site (out of line)          %8.0f ns/hit  %.2fx floor, %.2fx floor+GETREGS  %s\n",
	       o, o / f[2], o / f[1], o / f[2] <= 1.3 && e / f[2] <= 1.3 ? "(target <= 1.3x: met)" : "(target <= 1.3x: MISSED)");
	double a = bench_median(agt, RUNS);
	printf("  agent's work: advice interpreted, record into a ring %8.0f ns/hit  %.2fx floor  %s\n", a,
	       a / f[2], a / f[2] <= 1.3 ? "(target <= 1.3x: met)" : "(target <= 1.3x: MISSED)");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 100000;
	if (n < 1000)
		n = 1000;
	pid_t probe = fork();
	if (probe == 0) {
		pause();
		_exit(0);
	}
	int ok = ptrace(PTRACE_SEIZE, probe, 0, 0) == 0;
	kill(probe, SIGKILL);
	waitpid(probe, NULL, __WALL);
	if (!ok) {
		printf("bench_hook: skipped, ptrace not permitted here (%s)\n", strerror(errno));
		return 0;
	}
	agent_work_init();
	printf("one hit, %ld hits per run, median of %d runs\n", n, RUNS);
	compare("pinned", 0, n);
	compare("unpinned", -1, n / 4);
	pin(-1);
	printf("engine throughput, unpinned, out-of-line site:\n");
	for (int th = 1; th <= 4; th *= 2) {
		double v[3];
		for (int i = 0; i < 3; i++)
			v[i] = run_engine(bench_push_fn, n / 2, th);
		double ns = bench_median(v, 3);
		printf("  %d target thread%s  %10.0f hits/s  (%.0f ns/hit)\n", th, th > 1 ? "s" : "", 1e9 / ns,
		       ns);
	}
	return 0;
}
