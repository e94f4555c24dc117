/*
 * The kernel backend (xflow_hook_kernel_ops): a plan's domain woven into the
 * running Linux kernel with eBPF.  The one target is the kernel itself
 * (attach pid 0); prog_load lowers the plan to the slot table of
 * guestrt/hook/kernel/klower.h, points each used slot's program at its function (fentry
 * for an entry, fexit for a return) and loads the object embedded in this
 * binary (guestrt/hook/kernel/bpf/xflow.bpf.c, a bpftool skeleton); site_add attaches a
 * slot's link, site_remove destroys it.  Records come through a ring per
 * CPU and level of nesting (kabi.h, "Numbering"), mapped here and read in
 * place by drain(), already in struct xflow_record's layout.
 *
 * Everything loaded is held by file descriptors of this process and nothing
 * is pinned: detach destroys the links and the object, and if the process
 * dies in any way (even SIGKILL) the kernel drops them with its fds.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "guestrt/hook/hook_priv.h"
#include "guestrt/hook/hook.h"
#include "guestrt/hook/kernel/kabi.h"
#include "guestrt/hook/kernel/klower.h"
#include "guestrt/hook/kernel/kn_tail.h"
#include "xflow/clock.h"
#include "xflow/plan.h"
#include "xflow/record.h"
#include "xflow_kern.skel.h"

/* The rings' records are struct xflow_record as record.h lays it
 * out; the BPF side fills every field, so a record is copied, not built. */
_Static_assert(sizeof(struct xk_rec) == XFLOW_RECORD_SIZE, "xk_rec is a record");
_Static_assert(offsetof(struct xk_rec, flow_id) == offsetof(struct xflow_record, flow_id), "flow_id");
_Static_assert(offsetof(struct xk_rec, site_id) == offsetof(struct xflow_record, site_id), "site_id");
_Static_assert(offsetof(struct xk_rec, flags) == offsetof(struct xflow_record, flags), "flags");
_Static_assert(offsetof(struct xk_rec, thread_id) == offsetof(struct xflow_record, thread_id), "thread_id");
_Static_assert(offsetof(struct xk_rec, cpu_plus1) == offsetof(struct xflow_record, cpu_plus1), "cpu_plus1");
_Static_assert(offsetof(struct xk_rec, data) == offsetof(struct xflow_record, data), "data");
_Static_assert(XK_RECORD_VERSION == XFLOW_RECORD_VERSION, "the BPF program writes this version");
_Static_assert(XK_REC_SEQ_COUNTS_LOST == XFLOW_REC_SEQ_COUNTS_LOST, "the BPF program's numbering flag");
_Static_assert(XK_FLOW_ID(~0ull, 3, 3, 2) == XFLOW_FLOWID_MAX, "the program's flow ids fit the record's");
/* The agent writes the tail on a line of its own: the program's runs
 * write the levels at every record. */
_Static_assert(offsetof(struct xk_cpu, tail) % 64 == 0 && sizeof(struct xk_cpu) % 64 == 0, "xk_cpu's lines");

struct kslot {
	struct bpf_link *link;
	uint8_t placed;          /* bit per when: placements added */
	uint8_t on;              /* bit per when: placements enabled */
	uint32_t insns;          /* instructions the verifier processed */
};

struct kengine {
	struct xflow_hook h;     /* first: the engine's public part */
	struct xflow_hook_target tgt;
	bool have_tgt;
	struct xflow_kern *skel;
	/* The program's streams (xk_streams, one struct xk_cpu per possible
	 * CPU: the agent reads next and writes tail) and their rings
	 * (xk_ring, read only), mapped; and the wake-up ring buffer, whose
	 * epoll fd run() waits on. */
	struct xk_cpu *streams;
	size_t streams_len;
	const struct xk_rec *ring;
	size_t ring_len;
	uint32_t ring_recs;
	uint32_t ncpu;
	struct ring_buffer *wake;
	struct xk_lowered low;
	bool lowered;
	struct kslot slots[XK_SLOTS];
	uint32_t nadvice;
	/* drain() */
	xflow_hook_record_fn fn;
	void *fn_ctx;
	uint64_t moved, bad;
	/* The last drain took no record: the agent's next wait is idle, and
	 * the first record to come wakes it (xk_agent_waits). */
	bool idle;
	/* Loss notes (kn_tail.h): the streams of the loaded program. */
	struct kn_tail tail;
	uint64_t tail_at;        /* when the notes were last looked for */
	uint16_t domain_id;
	/* Counters of programs unloaded, kept for stats(). */
	uint64_t gone_drops;
	uint8_t *adv_off;        /* per advice: switched off */
	char fn_why[200];        /* why function slots were not loaded, or "" */
};

static struct kengine *ke_of(struct xflow_hook *h)
{
	return (struct kengine *)h;
}

static struct bpf_program *slot_prog(struct kengine *ke, uint32_t slot)
{
	char name[32];
	xk_slot_prog_name(slot, name, sizeof(name));
	return bpf_object__find_program_by_name(ke->skel->obj, name);
}

/* libbpf's own messages go to standard error only with -v (warnings are
 * kept: a refused program's verifier log is what says why). */
__attribute__((format(printf, 2, 0))) static int libbpf_print(enum libbpf_print_level level, const char *fmt,
								va_list ap)
{
	if (level == LIBBPF_DEBUG)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static uint64_t program_drops(struct kengine *ke);
static void streams_read(struct kengine *ke, size_t max);

static void unload(struct kengine *ke)
{
	for (uint32_t s = 0; s < XK_SLOTS; s++) {
		if (ke->slots[s].link)
			bpf_link__destroy(ke->slots[s].link);
		ke->slots[s] = (struct kslot){ 0 };
	}
	if (ke->ring && ke->streams) {
		/* What is still in the rings belongs to the monitor: passed
		 * on when a drain is under way, else lost and counted
		 * (stream_rec). */
		streams_read(ke, 0);
	}
	if (ke->ring)
		munmap((void *)ke->ring, ke->ring_len);
	if (ke->streams)
		munmap(ke->streams, ke->streams_len);
	ke->ring = NULL;
	ke->streams = NULL;
	if (ke->wake) {
		ring_buffer__free(ke->wake);
		ke->wake = NULL;
	}
	if (ke->skel) {
		/* The programs' counts go with their maps: their losses stay
		 * in stats(). */
		ke->gone_drops += program_drops(ke);
		xflow_kern__destroy(ke->skel);
		ke->skel = NULL;
	}
	kn_tail_fini(&ke->tail);
	if (ke->lowered)
		xk_lowered_fini(&ke->low);
	ke->lowered = false;
	free(ke->adv_off);
	ke->adv_off = NULL;
}

static int kn_new(const struct xflow_hook_config *cfg, struct xflow_hook **out)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
		return -ENOTSUP;
	struct kengine *ke = calloc(1, sizeof(*ke));
	if (!ke)
		return -ENOMEM;
	ke->h.cfg = *cfg;
	int rc = xflow_hook_wake_init(&ke->h);
	if (rc) {
		free(ke);
		return rc;
	}
	libbpf_set_print(libbpf_print);
	*out = &ke->h;
	return 0;
}

static void kn_free(struct xflow_hook *h)
{
	struct kengine *ke = ke_of(h);
	unload(ke);
	xflow_hook_wake_fini(h);
	free(ke->adv_off);
	free(ke);
}

static int kn_attach(struct xflow_hook *h, pid_t pid, struct xflow_hook_target **out)
{
	struct kengine *ke = ke_of(h);
	if (pid != 0)
		return xflow_hook_fail(h, -EINVAL, "the kernel backend traces the kernel, not process %d", (int)pid);
	if (ke->have_tgt)
		return xflow_hook_fail(h, -EBUSY, "the kernel is attached already");
	ke->tgt = (struct xflow_hook_target){ .hook = h, .pid = 0 };
	ke->have_tgt = true;
	*out = &ke->tgt;
	return 0;
}

static int kn_detach(struct xflow_hook_target *t)
{
	struct kengine *ke = ke_of(t->hook);
	unload(ke);
	if (ke->have_tgt && ke->h.cfg.on_event) {
		struct xflow_hook_event ev = { .kind = XFLOW_HOOK_EV_DETACHED, .target = t, .pid = 0 };
		ke->h.cfg.on_event(&ev, ke->h.cfg.event_data);
	}
	ke->have_tgt = false;
	return 0;
}

/* Number @n of stream @s, its slot @slot read: passed on when it is the
 * record numbered @n (else the program lost that number, and the slot
 * holds an older record or nothing). */
static void stream_rec(struct kengine *ke, uint32_t s, uint32_t n, const struct xk_rec *slot)
{
	unsigned char raw[XFLOW_RECORD_SIZE];
	struct xk_rec head;
	struct xflow_record r;
	const char *why;
	/* One copy out of the shared page: what is checked is what is
	 * decoded.  The slot does not change while n is at or past the
	 * tail this agent published (the program writes n + ring_recs
	 * only after the tail has passed n). */
	memcpy(raw, slot, sizeof(raw));
	memcpy(&head, raw, sizeof(head));
	if (head.version != XK_RECORD_VERSION || head.thread_seq != n ||
	    head.thread_id != XK_STREAM(s / XK_SEQ_LEVELS, s % XK_SEQ_LEVELS))
		return;
	/* The rings are the kernel's, written by our program alone; the
	 * record is still decoded as any record is before it is passed on. */
	if (xflow_record_decode(raw, sizeof(raw), &r, &why) != 0) {
		ke->bad++;
		return;
	}
	/* Numbered by the program, per CPU stream (kabi.h): one the agent
	 * cannot pass on leaves its gap as one the program lost does. */
	if (!ke->fn) {
		ke->gone_drops++; /* emptied at unload with no drain to take it */
		return;
	}
	ke->moved++;
	if (ke->fn(ke->fn_ctx, &r) == 0)
		kn_tail_kept(&ke->tail, &r);
}

/* Stream @s's ring from the tail: up to its next, or until @max records
 * (0: no limit) were passed on, and the tail moved there.  Returns how
 * many were passed on.  Those left stay in the ring for a later drain,
 * as a lane's do: the caller's own ring had no room for them, and pushed
 * there they would only have been lost. */
static uint32_t stream_read(struct kengine *ke, uint32_t s, uint32_t max)
{
	struct xk_cpu *q = &ke->streams[s / XK_SEQ_LEVELS];
	uint32_t l = s % XK_SEQ_LEVELS;
	/* Acquire: pairs with the program's publication (xk_publish), so
	 * that the slots below next are read after their records' stores. */
	uint32_t next = __atomic_load_n(&q->lv[l].next, __ATOMIC_ACQUIRE);
	uint32_t tail = q->tail[l]; /* this agent's alone to write */
	/* Numbers a ring's length or more past the tail found the ring full
	 * and took no slot: no need to look. */
	uint32_t end = next - tail > ke->ring_recs ? tail + ke->ring_recs : next;
	const struct xk_rec *ring = ke->ring + (size_t)s * ke->ring_recs;
	uint64_t before = ke->moved;
	uint32_t n = tail;
	while (n != end && (!max || ke->moved - before < max)) {
		stream_rec(ke, s, n, &ring[n & (ke->ring_recs - 1)]);
		n++;
	}
	/* Read to the end: past the numbers that took no slot too. */
	if (n == end)
		n = next;
	/* Release: the slots were read (copied) before the program may
	 * write them again, once it reads this tail. */
	__atomic_store_n(&q->tail[l], n, __ATOMIC_RELEASE);
	kn_tail_seen(&ke->tail, s, n);
	return (uint32_t)(ke->moved - before);
}

/* How many numbers of stream @s the agent has not read, at most a ring's
 * worth (beyond that the program found its ring full: no slot to read). */
static uint32_t stream_unread(const struct kengine *ke, uint32_t s)
{
	const struct xk_cpu *q = &ke->streams[s / XK_SEQ_LEVELS];
	uint32_t l = s % XK_SEQ_LEVELS;
	uint32_t n = __atomic_load_n(&q->lv[l].next, __ATOMIC_ACQUIRE) - q->tail[l];
	return n < ke->ring_recs ? n : ke->ring_recs;
}

/* Whether stream @s has a number the agent has not read. */
static bool stream_pending(const struct kengine *ke, uint32_t s)
{
	return stream_unread(ke, s) != 0;
}

/* Whether any stream has a number the agent has not read. */
static bool streams_pending(const struct kengine *ke)
{
	for (uint32_t s = 0; s < XK_STREAMS_OF(ke->ncpu); s++)
		if (stream_pending(ke, s))
			return true;
	return false;
}

/* Every stream's ring, or with @max (0: no limit) that many records at
 * most, shared between the streams in proportion to what each holds, then
 * what is left in turn.  Each stream's records are in time order and have
 * waited since the same last drain, so like shares cover like spans of
 * time: the streams go on together, and the monitor, which merges them
 * behind a window, gets them nearly in order.  Equal counts would let a
 * quiet CPU's records run ahead of a busy one's by as long as the backlog
 * lasts (0.3 s behind a stopped monitor, kernel_gaps.sh). */
static void streams_read(struct kengine *ke, size_t max)
{
	uint32_t n = XK_STREAMS_OF(ke->ncpu);
	if (!max) {
		for (uint32_t s = 0; s < n; s++)
			stream_read(ke, s, 0);
		return;
	}
	uint64_t unread = 0;
	for (uint32_t s = 0; s < n; s++)
		unread += stream_unread(ke, s);
	size_t left = max < UINT32_MAX ? max : UINT32_MAX;
	if (unread > left) {
		const uint64_t budget = left;
		for (uint32_t s = 0; s < n && left; s++) {
			uint64_t share = (uint64_t)stream_unread(ke, s) * budget / unread;
			if (share)
				left -= stream_read(ke, s, (uint32_t)(share < left ? share : left));
		}
	}
	/* What the shares' rounding left, or everything when it all fits
	 * (records published meanwhile still count against @max). */
	for (uint32_t s = 0; s < n && left; s++)
		if (stream_pending(ke, s))
			left -= stream_read(ke, s, (uint32_t)left);
}

/* The wake-up ring buffer's messages say nothing but "drain now". */
static int on_wake(void *ctx, void *data, size_t len)
{
	(void)ctx, (void)data, (void)len;
	return 0;
}

/* Records in each stream's ring: a power of two, as many as a budget of
 * 32 MiB for all of them allows, from 256 to 8192 (1024 up to 64 possible
 * CPUs: 10 ms of a stream at 100k records/s, the agent's slice when idle;
 * with more CPUs each has less of the load); at most @lane_slots when it
 * is given (a stream is the kernel's lane: --lane-slots). */
static uint32_t ring_recs_for(uint32_t ncpu, uint32_t lane_slots)
{
	size_t per = (32u << 20) / ((size_t)XK_STREAMS_OF(ncpu) * sizeof(struct xk_rec));
	uint32_t n = 256;
	while (n < 8192 && 2 * (size_t)n <= per)
		n *= 2;
	while (lane_slots && n > lane_slots && n > 2)
		n /= 2;
	return n;
}

/* Map the program's streams and rings (after the load). */
static int rings_map(struct kengine *ke)
{
	ke->streams_len = (size_t)ke->ncpu * sizeof(struct xk_cpu);
	void *p = mmap(NULL, ke->streams_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       bpf_map__fd(ke->skel->maps.xk_streams), 0);
	if (p == MAP_FAILED)
		return -errno;
	ke->streams = p;
	ke->ring_len = (size_t)XK_STREAMS_OF(ke->ncpu) * ke->ring_recs * sizeof(struct xk_rec);
	p = mmap(NULL, ke->ring_len, PROT_READ, MAP_SHARED, bpf_map__fd(ke->skel->maps.xk_ring), 0);
	if (p == MAP_FAILED)
		return -errno;
	ke->ring = p;
	return 0;
}

/* Open the embedded object and load the used slots (with @functions, the
 * fentry and fexit ones too).  0, or a negative errno with h's error. */
static int object_load(struct kengine *ke, const struct xflow_hook_prog *prog, bool functions)
{
	struct xflow_hook *h = &ke->h;
	int rc;
	if (!(ke->skel = xflow_kern__open())) {
		rc = -errno;
		return xflow_hook_fail(h, rc, "cannot open the embedded BPF object: %s", strerror(-rc));
	}
	ke->skel->rodata->xk_domain_id = prog->domain_id;
	ke->skel->rodata->xk_ring_recs = ke->ring_recs;
	uint32_t cpu_bits = 0;
	while ((1u << cpu_bits) < ke->ncpu)
		cpu_bits++;
	ke->skel->rodata->xk_cpu_bits = cpu_bits;
	bpf_map__set_max_entries(ke->skel->maps.xk_streams, ke->ncpu);
	bpf_map__set_max_entries(ke->skel->maps.xk_ring, XK_STREAMS_OF(ke->ncpu) * ke->ring_recs);
	/* Each used slot's operations, frozen with the object: the verifier
	 * specialises every program to its own (guestrt/hook/kernel/kabi.h).  Switching
	 * them on and off is xk_on's, in slot_sync. */
	for (uint32_t s = 0; s < XK_SLOTS; s++)
		if (ke->low.slots[s].used)
			ke->skel->rodata->xk_plan[s] = ke->low.slots[s].site;
	uint32_t cap = prog->flowtab_capacity ? prog->flowtab_capacity : 65536;
	bpf_map__set_max_entries(ke->skel->maps.xk_ids, cap);
	for (uint32_t s = 0; s < XK_SLOTS; s++) {
		struct bpf_program *p = slot_prog(ke, s);
		const struct xk_slot_info *si = &ke->low.slots[s];
		if (!p)
			continue;
		bool load = si->used && (functions || si->kind == XK_SLOT_TP);
		bpf_program__set_autoload(p, load);
		if (!load || si->kind == XK_SLOT_TP)
			continue;
		if ((rc = bpf_program__set_attach_target(p, 0, si->target)))
			return xflow_hook_fail(h, rc, "%s: not a function the kernel's BTF knows: %s", si->target,
					       strerror(-rc));
	}
	/* The verifier gives up with EAGAIN when a signal is pending, and
	 * the engine's wake-up timer sends one every few milliseconds: hold
	 * every signal for the load (one that comes is taken after it). */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = xflow_kern__load(ke->skel);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc)
		return xflow_hook_fail(h, rc, "the kernel refused the BPF programs: %s", strerror(-rc));
	return 0;
}

/* Why fentry/fexit could not be had, and what else there is. */
static void refusal_note(struct kengine *ke, int rc)
{
	bool kprobes = false;
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[256];
	while (f && !kprobes && fgets(line, sizeof(line), f))
		kprobes = strstr(line, " register_kprobe\n") != NULL;
	if (f)
		fclose(f);
	snprintf(ke->fn_why, sizeof(ke->fn_why),
		 "this kernel refused fentry/fexit programs (%s)%s", strerror(-rc),
		 kprobes ? "; kprobes exist, but this backend does not use them yet"
			 : ", and it has no kprobes (CONFIG_KPROBES) to fall back on: only tracepoints can be woven");
}

static int kn_prog_load(struct xflow_hook_target *t, const struct xflow_hook_prog *prog)
{
	struct kengine *ke = ke_of(t->hook);
	struct xflow_hook *h = t->hook;
	char why[512];
	int rc;
	unload(ke);
	ke->fn_why[0] = 0;
	if ((rc = xk_lower(prog->plan, prog->dom, &ke->low, why, sizeof(why))))
		return xflow_hook_fail(h, rc, "%s", why);
	ke->lowered = true;
	ke->nadvice = prog->plan->nadvice;
	if (!(ke->adv_off = calloc(ke->nadvice + 1, 1))) {
		unload(ke);
		return -ENOMEM;
	}
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0) {
		unload(ke);
		return xflow_hook_fail(h, ncpu ? ncpu : -EINVAL, "cannot count the possible CPUs");
	}
	ke->ncpu = (uint32_t)ncpu;
	ke->ring_recs = ring_recs_for(ke->ncpu, prog->lane_slots);
	bool functions = false, tps = false;
	for (uint32_t s = 0; s < XK_SLOTS; s++) {
		functions |= ke->low.slots[s].used && ke->low.slots[s].kind != XK_SLOT_TP;
		tps |= ke->low.slots[s].used && ke->low.slots[s].kind == XK_SLOT_TP;
	}
	rc = object_load(ke, prog, true);
	if (rc && functions && (rc == -EPERM || rc == -ENOTSUP || rc == -524 /* ENOTSUPP */ || rc == -EINVAL)) {
		/* Some kernels (no BPF trampolines, or a policy) refuse
		 * fentry/fexit: the tracepoints can still be had, and each
		 * function site says why it is not (site_add). */
		refusal_note(ke, rc);
		xflow_kern__destroy(ke->skel);
		ke->skel = NULL;
		rc = tps ? object_load(ke, prog, false) : 0;
	}
	if (rc) {
		char msg[sizeof(h->errbuf)];
		snprintf(msg, sizeof(msg), "%s", h->errbuf);
		unload(ke);
		return xflow_hook_fail(h, rc, "%s", msg);
	}
	if (!ke->skel) /* only function sites, all refused: site_add says why */
		return 0;
	/* The verifier's cost per program, from the kernel's own count. */
	for (uint32_t s = 0; s < XK_SLOTS; s++) {
		struct bpf_program *p = ke->low.slots[s].used ? slot_prog(ke, s) : NULL;
		if (!p || bpf_program__fd(p) < 0)
			continue;
		struct bpf_prog_info info;
		uint32_t len = sizeof(info);
		memset(&info, 0, sizeof(info));
		if (bpf_obj_get_info_by_fd(bpf_program__fd(p), &info, &len) == 0)
			ke->slots[s].insns = info.verified_insns;
	}
	if ((rc = rings_map(ke))) {
		unload(ke);
		return xflow_hook_fail(h, rc, "cannot map the BPF program's rings: %s", strerror(-rc));
	}
	ke->wake = ring_buffer__new(bpf_map__fd(ke->skel->maps.xk_wake), on_wake, ke, NULL);
	if (!ke->wake) {
		rc = -errno;
		unload(ke);
		return xflow_hook_fail(h, rc, "cannot read the BPF ring buffer: %s", strerror(-rc));
	}
	/* The new program's streams number from 0 (its map is new). */
	if (kn_tail_init(&ke->tail, ke->ncpu) != 0) {
		unload(ke);
		return xflow_hook_fail(h, -ENOMEM, "cannot follow the CPU streams' numbers");
	}
	ke->domain_id = prog->domain_id;
	return 0;
}

/* Tell slot @s's program what runs, as its placements' and its advice's
 * switches say: a switched-off advice's operation is skipped, a slot with
 * no placement on returns at once.  The operations themselves are frozen
 * in the object (object_load). */
static int slot_sync(struct kengine *ke, uint32_t s)
{
	const struct xk_site *site = &ke->low.slots[s].site;
	uint32_t on = ke->slots[s].on ? XK_ON_SLOT : 0;
	for (uint32_t k = 0; k < site->nops; k++)
		if (!ke->adv_off || site->ops[k].advice >= ke->nadvice || !ke->adv_off[site->ops[k].advice])
			on |= 1u << k;
	/* Through the mapping of the program's .bss: one aligned word, which
	 * a run reads once.  Relaxed: it publishes nothing else (the
	 * operations it selects were frozen before the programs loaded). */
	__atomic_store_n(&ke->skel->bss->xk_on[s], on, __ATOMIC_RELAXED);
	return 0;
}

static int kn_site_add(struct xflow_hook_target *t, uint64_t addr, enum xflow_hook_when when,
		       xflow_hook_handler_fn fn, void *data, uint32_t *site)
{
	struct kengine *ke = ke_of(t->hook);
	struct xflow_hook *h = t->hook;
	uint32_t ps = (uint32_t)(uintptr_t)data;
	(void)addr;
	if (fn)
		return xflow_hook_fail(h, -ENOTSUP, "the kernel backend runs no handler in the agent");
	if (!ke->lowered || ps >= ke->low.nsites || ke->low.slot_of_site[ps] < 0)
		return xflow_hook_fail(h, -ENOENT, "plan site %u has no flow operation loaded", ps);
	uint32_t s = (uint32_t)ke->low.slot_of_site[ps];
	struct kslot *ks = &ke->slots[s];
	const struct xk_slot_info *si = &ke->low.slots[s];
	if (si->kind != XK_SLOT_TP && ke->fn_why[0])
		return xflow_hook_fail(h, -EPERM, "%s %s: %s", si->kind == XK_SLOT_EXIT ? "fexit" : "fentry",
				       si->target, ke->fn_why);
	if (!ks->link) {
		struct bpf_program *p = slot_prog(ke, s);
		if (si->kind == XK_SLOT_TP) {
			const char *name = strchr(si->target, ':');
			ks->link = bpf_program__attach_raw_tracepoint(p, name ? name + 1 : si->target);
		} else {
			ks->link = bpf_program__attach(p);
		}
		if (!ks->link) {
			int rc = -errno;
			return xflow_hook_fail(h, rc, "cannot attach %s to %s: %s",
					       si->kind == XK_SLOT_TP ? "a raw tracepoint" :
					       si->kind == XK_SLOT_EXIT ? "fexit" : "fentry",
					       si->target, strerror(-rc));
		}
	}
	ks->placed |= (uint8_t)(1u << when);
	ks->on |= (uint8_t)(1u << when);
	*site = s * 2 + (uint32_t)when;
	return slot_sync(ke, s);
}

static int kn_site_remove(struct xflow_hook_target *t, uint32_t site)
{
	struct kengine *ke = ke_of(t->hook);
	uint32_t s = site / 2;
	if (s >= XK_SLOTS || !(ke->slots[s].placed & (1u << (site & 1))))
		return -ENOENT;
	ke->slots[s].placed &= (uint8_t) ~(1u << (site & 1));
	ke->slots[s].on &= (uint8_t) ~(1u << (site & 1));
	if (!ke->slots[s].placed && ke->slots[s].link) {
		bpf_link__destroy(ke->slots[s].link);
		ke->slots[s].link = NULL;
	}
	/* The last site gone (the plan unloaded: the monitor left, and the
	 * agent stays for the next one): nothing is left loaded either,
	 * neither programs nor maps, until the next plan. */
	bool any = false;
	for (uint32_t k = 0; k < XK_SLOTS && !any; k++)
		any = ke->slots[k].placed != 0;
	if (!any) {
		unload(ke);
		return 0;
	}
	return ke->skel ? slot_sync(ke, s) : 0;
}

static int kn_site_enable(struct xflow_hook_target *t, uint32_t site, bool on)
{
	struct kengine *ke = ke_of(t->hook);
	uint32_t s = site / 2;
	if (s >= XK_SLOTS || !(ke->slots[s].placed & (1u << (site & 1))))
		return -ENOENT;
	if (on)
		ke->slots[s].on |= (uint8_t)(1u << (site & 1));
	else
		ke->slots[s].on &= (uint8_t) ~(1u << (site & 1));
	return slot_sync(ke, s);
}

static int kn_site_stats(struct xflow_hook_target *t, uint32_t site, struct xflow_hook_site_stats *st)
{
	struct kengine *ke = ke_of(t->hook);
	uint32_t s = site / 2;
	if (s >= XK_SLOTS || !(ke->slots[s].placed & (1u << (site & 1))))
		return -ENOENT;
	memset(st, 0, sizeof(*st));
	st->enabled = (ke->slots[s].on >> (site & 1)) & 1;
	st->when = (enum xflow_hook_when)(site & 1);
	st->mech = XFLOW_HOOK_MECH_JUMP; /* a trampoline: no trap */
	const struct xk_slot_info *si = &ke->low.slots[s];
	snprintf(st->why, sizeof(st->why), "%s %s, %u instructions verified",
		 si->kind == XK_SLOT_TP ? "raw tracepoint" : si->kind == XK_SLOT_EXIT ? "fexit" : "fentry",
		 si->target, ke->slots[s].insns);
	return 0;
}

static int kn_mem_read(struct xflow_hook_target *t, uint64_t addr, void *buf, size_t len)
{
	(void)addr, (void)buf, (void)len;
	return xflow_hook_fail(t->hook, -ENOTSUP, "the kernel backend does not read kernel memory for the agent");
}

static int kn_mem_write(struct xflow_hook_target *t, uint64_t addr, const void *buf, size_t len)
{
	(void)addr, (void)buf, (void)len;
	return xflow_hook_fail(t->hook, -EPERM, "a kernel advice never writes kernel memory");
}

static int kn_run(struct xflow_hook *h, int timeout_ms)
{
	struct kengine *ke = ke_of(h);
	struct timespec t0, now;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	xflow_hook_control_poll(h);
	for (;;) {
		if (h->stop_requested) {
			if (ke->have_tgt)
				kn_detach(&ke->tgt);
			return -EINTR;
		}
		if (!ke->have_tgt)
			return 0;
		clock_gettime(CLOCK_MONOTONIC, &now);
		long el = (now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000;
		/* -1: until stopped, in waits of 100 ms; 0: a look only. */
		long left = timeout_ms < 0 ? 100 : timeout_ms - el;
		if (left < 0)
			return 0;
		struct pollfd p = { .fd = ke->wake ? ring_buffer__epoll_fd(ke->wake) : -1, .events = POLLIN };
		/* Idle (the last drain took nothing, nothing is unread): the
		 * program wakes us at its next record.  The flag is set before
		 * the streams are looked at again, with a full barrier between
		 * (a sequentially consistent store), so that a record
		 * published before the program could see the flag is seen
		 * here: then it is drained now.  Not with records already
		 * unread: the agent left them for want of room in its ring,
		 * and a wake-up at each new one would only spin it. */
		bool waits = timeout_ms != 0 && ke->idle && ke->streams && ke->skel && !streams_pending(ke);
		if (waits) {
			__atomic_store_n(&ke->skel->bss->xk_agent_waits, 1, __ATOMIC_SEQ_CST);
			if (streams_pending(ke)) {
				__atomic_store_n(&ke->skel->bss->xk_agent_waits, 0, __ATOMIC_RELAXED);
				return 1;
			}
		}
		/* A signal (the stop signals, the control fd's SIGURG) ends the
		 * wait with EINTR: its handler was installed without SA_RESTART,
		 * and one that comes between the check and the poll kicks the
		 * wake-up timer because in_wait is set first. */
		h->in_wait = 1;
		int n = h->stop_requested ? 0 : poll(&p, 1, (int)left);
		h->in_wait = 0;
		/* Woken or not, the flag is ours again: a record that took it
		 * sent the wake-up that ended the wait. */
		if (waits)
			__atomic_store_n(&ke->skel->bss->xk_agent_waits, 0, __ATOMIC_RELAXED);
		if (n > 0)
			return 1; /* records wait: the caller drains them now */
		if (timeout_ms == 0)
			return 0;
	}
}

static int kn_control_fd(struct xflow_hook *h, int fd)
{
	return xflow_hook_control_fd_watch(h, fd);
}

/* How often the streams are looked at for losses after their last
 * record: a note comes within this of the loss, well inside the model's
 * reorder window, and a stream losing at every drain (every 2 ms while
 * records flow) says so in a note every 10 ms, not five (a record that
 * comes after a gap shows it anyway). */
#define TAIL_EVERY_NS 10000000ull

/* The notes of the streams that lost records after their last one, up to
 * the next each was read to (kn_tail.h).  One the caller does not keep is
 * said again at a later look. */
static void notes_out(struct kengine *ke)
{
	for (uint32_t s = 0; s < XK_STREAMS_OF(ke->tail.ncpu); s++) {
		if (!kn_tail_lost(&ke->tail, s))
			continue;
		struct xflow_record note;
		kn_tail_note(&ke->tail, s, ke->domain_id, xflow_monotonic_ns(), &note);
		if (ke->fn(ke->fn_ctx, &note) == 0)
			kn_tail_noted(&ke->tail, s);
	}
}

static long kn_drain(struct xflow_hook *h, xflow_hook_record_fn fn, void *ctx, size_t max)
{
	struct kengine *ke = ke_of(h);
	if (!ke->ring)
		return 0;
	uint64_t before = ke->moved;
	ke->fn = fn;
	ke->fn_ctx = ctx;
	/* The wake-ups that brought us here are spent. */
	ring_buffer__consume(ke->wake);
	streams_read(ke, max);
	ke->idle = ke->moved == before;
	uint64_t now = xflow_monotonic_ns();
	if (now - ke->tail_at >= TAIL_EVERY_NS) {
		ke->tail_at = now;
		notes_out(ke);
	}
	ke->fn = NULL;
	return (long)(ke->moved - before);
}

/* What the loaded programs counted lost: a stream's ring full, the id map
 * full, a faulting chain (each loses its record). */
static uint64_t program_drops(struct kengine *ke)
{
	int ncpu = libbpf_num_possible_cpus();
	if (!ke->skel || ncpu <= 0)
		return 0;
	struct xk_count *c = calloc((size_t)ncpu, sizeof(*c));
	if (!c)
		return 0;
	uint64_t n = 0;
	int fd = bpf_map__fd(ke->skel->maps.xk_counts);
	for (uint32_t s = 0; s < XK_SLOTS; s++) {
		if (!ke->low.slots[s].used || bpf_map_lookup_elem(fd, &s, c) != 0)
			continue;
		for (int i = 0; i < ncpu; i++)
			n += c[i].drops + c[i].full + c[i].faults;
	}
	free(c);
	return n;
}

static int kn_stats(struct xflow_hook *h, uint32_t nadvice, struct xflow_hook_advice_stats *adv,
		    struct xflow_hook_prog_stats *all)
{
	struct kengine *ke = ke_of(h);
	memset(all, 0, sizeof(*all));
	if (adv)
		memset(adv, 0, nadvice * sizeof(*adv));
	all->records = ke->moved;
	all->bad = ke->bad;
	all->dropped = ke->gone_drops;
	if (!ke->skel)
		return 0;
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	struct xk_count *c = calloc((size_t)ncpu, sizeof(*c));
	if (!c)
		return -ENOMEM;
	int fd = bpf_map__fd(ke->skel->maps.xk_counts);
	for (uint32_t s = 0; s < XK_SLOTS; s++) {
		if (!ke->low.slots[s].used || bpf_map_lookup_elem(fd, &s, c) != 0)
			continue;
		struct xk_count sum = { 0 };
		for (int i = 0; i < ncpu; i++) {
			sum.hits += c[i].hits;
			sum.drops += c[i].drops;
			sum.full += c[i].full;
			sum.faults += c[i].faults;
		}
		/* A faulted member chain loses its record as a full map does. */
		all->dropped += sum.drops + sum.full + sum.faults;
		const struct xk_site *site = &ke->low.slots[s].site;
		for (uint32_t k = 0; k < site->nops && adv; k++) {
			if (site->ops[k].advice >= nadvice)
				continue;
			adv[site->ops[k].advice].hits += sum.hits;
			adv[site->ops[k].advice].drops += sum.drops + sum.full + sum.faults;
		}
	}
	free(c);
	return 0;
}

static int kn_advice_enable(struct xflow_hook_target *t, uint32_t advice, bool on)
{
	struct kengine *ke = ke_of(t->hook);
	if (!ke->skel || advice >= ke->nadvice)
		return -ENOENT;
	ke->adv_off[advice] = !on;
	int rc = 0;
	for (uint32_t s = 0; s < XK_SLOTS && !rc; s++)
		if (ke->low.slots[s].used && ke->slots[s].placed)
			rc = slot_sync(ke, s);
	return rc;
}

static const struct xflow_hook_intarget_ops kn_intarget = {
	.prog_load = kn_prog_load,
	.advice_enable = kn_advice_enable,
	.drain = kn_drain,
	.stats = kn_stats,
};

const struct xflow_hook_backend_ops xflow_hook_kernel_ops = {
	.name = "kernel",
	.hook_new = kn_new,
	.hook_free = kn_free,
	.attach = kn_attach,
	.detach = kn_detach,
	.site_add = kn_site_add,
	.site_remove = kn_site_remove,
	.site_enable = kn_site_enable,
	.site_stats = kn_site_stats,
	.mem_read = kn_mem_read,
	.mem_write = kn_mem_write,
	.run = kn_run,
	.control_fd = kn_control_fd,
	.intarget = &kn_intarget,
};

const char *xflow_hook_kernel_unbuilt(void)
{
	return NULL;
}
