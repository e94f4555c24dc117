/*
 * The runtime in a target: mapping it in with system calls the target
 * makes on one of its stopped threads (ooline.c: the agent points the
 * thread at the call and takes it back at its exit), its memfd
 * regions, text zones and signal handlers, and taking all of it out again.
 *
 * No LD_PRELOAD, no restart, no file of the target's touched.  Every call
 * here is made with the target's threads stopped.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <unistd.h>

#include "guestrt/hook/inproc/inproc_priv.h"
#include "guestrt/hook/ptrace/ooline.h"

#ifndef MADV_WIPEONFORK
#define MADV_WIPEONFORK 18
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1u
#endif

static struct ip_engine *eng(struct ip_target *t)
{
	return IP_ENGINE(t->pt.e);
}

static int fail(struct ip_target *t, int err, const char *what)
{
	return xflow_hook_fail(&t->pt.e->pub, err, "pid %d: %s: %s", (int)t->pt.pub.pid, what,
			       xflow_hook_strerror(err));
}

int ip_syscall(struct ip_target *t, long nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
	       uint64_t a5, int64_t *ret)
{
	uint64_t args[6] = { a0, a1, a2, a3, a4, a5 };
	/* The runtime's call area once it is there; before, borrowed bytes. */
	uint64_t area = t->image ? t->image + eng(t)->head.off_syscall : 0;
	int rc = xflow_ooline_syscall(&t->pt, nr, args, area, ret);
	if (rc == 0 && *ret < 0 && *ret > -4096)
		rc = (int)*ret;
	return rc;
}

int ip_poke(struct ip_target *t, uint64_t addr, const void *buf, size_t len)
{
	int rc = xflow_tmem_poke(&t->pt.mem, addr, buf, len);
	xflow_hook_step(&t->pt.e->pub, t->pt.pub.pid, "poke");
	return rc;
}

int ip_config_set(struct ip_target *t, size_t off, const void *v, size_t len)
{
	return ip_poke(t, t->image + eng(t)->head.off_config + off, v, len);
}

static uint64_t globals(struct ip_target *t)
{
	return t->image + eng(t)->head.off_globals;
}

/* ---- memfd regions ---------------------------------------------------- */

static void region_unmap_here(struct ip_region *r)
{
	if (r->map)
		munmap(r->map, r->size);
	r->map = NULL;
}

/* A memfd of size bytes, mapped shared in the target and here. */
static int region_new(struct ip_target *t, size_t size, bool dontfork, struct ip_region *out)
{
	struct ip_engine *e = eng(t);
	int64_t fd = -1, addr = 0, r;
	int rc;
	memset(out, 0, sizeof(*out));
	size = (size + 4095) & ~(size_t)4095;
	rc = ip_syscall(t, SYS_memfd_create, t->image + e->head.off_name, MFD_CLOEXEC, 0, 0, 0, 0, &fd);
	if (rc < 0)
		return fail(t, rc, "memfd_create in the target");
	rc = ip_syscall(t, SYS_ftruncate, (uint64_t)fd, size, 0, 0, 0, 0, &r);
	if (rc == 0)
		rc = ip_syscall(t, SYS_mmap, 0, size, PROT_READ | PROT_WRITE, MAP_SHARED, (uint64_t)fd, 0, &addr);
	if (rc < 0) {
		rc = fail(t, rc, "mapping a shared region in the target");
		goto out;
	}
	if (dontfork && (rc = ip_syscall(t, SYS_madvise, (uint64_t)addr, size, MADV_DONTFORK, 0, 0, 0, &r)) < 0) {
		rc = fail(t, rc, "madvise(MADV_DONTFORK) in the target");
		goto out;
	}
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)t->pt.pub.pid, (int)fd);
	int mine = open(path, O_RDWR | O_CLOEXEC);
	if (mine < 0) {
		rc = fail(t, -errno, "opening its region through /proc");
		goto out;
	}
	void *m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, mine, 0);
	rc = m == MAP_FAILED ? -errno : 0;
	close(mine);
	if (rc < 0) {
		rc = fail(t, rc, "mapping its region here");
		goto out;
	}
	*out = (struct ip_region){ .addr = (uint64_t)addr, .map = m, .size = size };
out:
	if (rc < 0 && addr > 0)
		ip_syscall(t, SYS_munmap, (uint64_t)addr, size, 0, 0, 0, 0, &r);
	/* The mappings keep the memory; the program's descriptor table must
	 * not keep anything of ours. */
	ip_syscall(t, SYS_close, (uint64_t)fd, 0, 0, 0, 0, 0, &r);
	return rc;
}

int ip_ctl_new(struct ip_target *t, size_t size, struct ip_ctl **out)
{
	struct ip_ctl *c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	int rc = region_new(t, size, false, &c->r);
	if (rc < 0) {
		free(c);
		return rc;
	}
	c->refs = 1;
	*out = c;
	return 0;
}

/* Drop t's reference to c; the last one unmaps our view (the target's
 * mapping goes with the target's retired list or its exit). */
void ip_ctl_put(struct ip_target *t, struct ip_ctl *c)
{
	(void)t;
	if (!c || --c->refs > 0)
		return;
	region_unmap_here(&c->r);
	free(c);
}

int ip_proc_new(struct ip_target *t)
{
	struct ip_engine *e = eng(t);
	uint64_t ring_off, lane_size, off_slots, off_lanes;
	uint32_t bits;
	size_t size = ip_proc_size(e->lanes, e->lane_slots, e->flowtab_capacity, &ring_off, &lane_size, &off_slots,
				   &off_lanes, &bits);
	int rc = region_new(t, size, true, &t->proc);
	if (rc < 0)
		return rc;
	rc = ip_proc_format(t, e->lanes, e->lane_slots, e->flowtab_capacity);
	if (rc == 0)
		rc = xflow_tmem_write(&t->pt.mem, globals(t) + offsetof(struct xflow_rt_globals, proc), &t->proc.addr, 8);
	if (rc < 0)
		return fail(t, rc, "setting up its data region");
	return 0;
}

/* ---- text zones ---------------------------------------------------------- */

static bool reaches(uint64_t from, uint64_t to, uint64_t size)
{
	uint64_t d1 = from > to ? from - to : to - from;
	uint64_t d2 = from > to + size ? from - to - size : to + size - from;
	return d1 < IP_ZONE_REACH && d2 < IP_ZONE_REACH;
}

int ip_zone_for(struct ip_target *t, uint64_t near, uint32_t size, struct ip_zone **out)
{
	struct ip_engine *e = eng(t);
	for (int i = 0; i < t->nzones; i++) {
		struct ip_zone *z = &t->zones[i];
		if (z->used + size <= IP_ZONE_SIZE && reaches(near, z->base, IP_ZONE_SIZE)) {
			*out = z;
			return 0;
		}
	}
	if (size + e->head.zone_stub_size + 64 > IP_ZONE_SIZE)
		return -E2BIG;
	int rc = pt_grow((void **)&t->zones, &t->capzones, t->nzones + 1, sizeof(*t->zones));
	if (rc < 0)
		return rc;
	uint64_t hint;
	if (xflow_maps_gap_near(t->pt.pub.pid, near, IP_ZONE_SIZE, IP_ZONE_REACH, &hint) < 0)
		return xflow_hook_fail(&e->pt.pub, -ENOSPC, "0x%" PRIx64 ": no free address space within 2 GiB for a trampoline",
				       near);
	int64_t addr;
	rc = ip_syscall(t, SYS_mmap, hint, IP_ZONE_SIZE, PROT_READ | PROT_EXEC,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, (uint64_t)-1, 0, &addr);
	if (rc < 0)
		return fail(t, rc, "mapping a trampoline zone in the target");
	uint8_t *stub = malloc(e->head.zone_stub_size);
	if (!stub)
		rc = -ENOMEM;
	if (stub) {
		uint64_t hit = t->image + e->head.off_hit;
		memcpy(stub, e->blob + e->head.off_zone_stub, e->head.zone_stub_size);
		memcpy(stub + e->head.zone_stub_size - 8, &hit, 8);
		rc = ip_poke(t, (uint64_t)addr, stub, e->head.zone_stub_size);
		free(stub);
	}
	if (rc < 0) {
		int64_t r;
		ip_syscall(t, SYS_munmap, (uint64_t)addr, IP_ZONE_SIZE, 0, 0, 0, 0, &r);
		return fail(t, rc, "writing a trampoline zone");
	}
	struct ip_zone *z = &t->zones[t->nzones++];
	*z = (struct ip_zone){ .base = (uint64_t)addr, .stub = (uint64_t)addr,
			       .used = (e->head.zone_stub_size + 63) & ~63u };
	*out = z;
	return 0;
}

/* ---- the image and its signal handlers ----------------------------------- */

static const int rt_signals[XFLOW_RT_NSIGS] = { SIGTRAP, SIGSEGV, SIGBUS };

static int handlers_install(struct ip_target *t)
{
	struct ip_engine *e = eng(t);
	uint64_t args = globals(t) + offsetof(struct xflow_rt_globals, args);
	struct xflow_rt_ksigaction ours = {
		.handler = t->image + e->head.off_on_signal,
		/* SA_ONSTACK: a program that handles stack overflows on an
		 * alternate stack gets its handler called there still. */
		.flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART | 0x04000000 /* SA_RESTORER */,
		.restorer = t->image + e->head.off_restorer,
	};
	uint32_t installed = 0;
	for (int i = 0; i < XFLOW_RT_NSIGS; i++) {
		struct xflow_rt_ksigaction old;
		int64_t r;
		int rc = xflow_tmem_write(&t->pt.mem, args, &ours, sizeof(ours));
		if (rc == 0)
			rc = ip_syscall(t, SYS_rt_sigaction, (uint64_t)rt_signals[i], args, args + sizeof(ours), 8, 0, 0,
					&r);
		if (rc == 0)
			rc = xflow_tmem_read(&t->pt.mem, args + sizeof(ours), &old, sizeof(old));
		if (rc == 0)
			rc = ip_config_set(t, offsetof(struct xflow_rt_config, old) + i * sizeof(old), &old, sizeof(old));
		if (rc < 0)
			return fail(t, rc, "installing the runtime's signal handlers");
		installed |= 1u << i;
		if (ip_config_set(t, offsetof(struct xflow_rt_config, installed), &installed, sizeof(installed)) < 0)
			return fail(t, -EIO, "recording the runtime's signal handlers");
	}
	return 0;
}

/* Put back each handler ours replaced, where ours is still installed (a
 * program that installed its own since keeps it). */
static int handlers_restore(struct ip_target *t)
{
	struct ip_engine *e = eng(t);
	uint64_t args = globals(t) + offsetof(struct xflow_rt_globals, args);
	struct xflow_rt_config cfg;
	int rc = xflow_tmem_peek(&t->pt.mem, t->image + e->head.off_config, &cfg, sizeof(cfg));
	if (rc < 0)
		return rc;
	for (int i = 0; i < XFLOW_RT_NSIGS; i++) {
		if (!(cfg.installed & (1u << i)))
			continue;
		struct xflow_rt_ksigaction cur;
		int64_t r;
		rc = ip_syscall(t, SYS_rt_sigaction, (uint64_t)rt_signals[i], 0, args, 8, 0, 0, &r);
		if (rc == 0)
			rc = xflow_tmem_read(&t->pt.mem, args, &cur, sizeof(cur));
		if (rc < 0)
			return rc;
		if (cur.handler != t->image + e->head.off_on_signal)
			continue;
		rc = xflow_tmem_write(&t->pt.mem, args, &cfg.old[i], sizeof(cfg.old[i]));
		if (rc == 0)
			rc = ip_syscall(t, SYS_rt_sigaction, (uint64_t)rt_signals[i], args, 0, 8, 0, 0, &r);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Whether the target's seccomp filters allow every system call the
 * runtime's injection, regions and zones will make it run (with what a
 * filter could test of their arguments; what is not known yet is 0): all
 * or nothing is injected.  0, or why not in the engine's error. */
static int calls_allowed(struct ip_target *t)
{
	const struct xflow_rt_head *h = &eng(t)->head;
	const uint64_t none = (uint64_t)-1;
	const struct {
		long nr;
		uint64_t a[6];
	} calls[] = {
		{ SYS_mmap, { 0, (uint64_t)h->code_size + h->data_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			      none, 0 } },
		{ SYS_mprotect, { 0, h->code_size, PROT_READ | PROT_EXEC } },
		{ SYS_madvise, { 0, h->data_size, MADV_WIPEONFORK } },
		{ SYS_rt_sigaction, { SIGTRAP, 0, 0, 8 } },
		{ SYS_rt_sigaction, { SIGSEGV, 0, 0, 8 } },
		{ SYS_rt_sigaction, { SIGBUS, 0, 0, 8 } },
		{ SYS_memfd_create, { 0, MFD_CLOEXEC } },
		{ SYS_ftruncate, { 0, 0 } },
		{ SYS_mmap, { 0, 0, PROT_READ | PROT_WRITE, MAP_SHARED, 0, 0 } },
		{ SYS_madvise, { 0, 0, MADV_DONTFORK } },
		{ SYS_close, { 0 } },
		{ SYS_mmap, { 0, IP_ZONE_SIZE, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			      none, 0 } },
		{ SYS_munmap, { 0, 0 } },
	};
	/* The ptrace backend's one call: a scratch page. */
	const uint64_t scratch[6] = { 0, PT_SCRATCH_SIZE, PROT_READ | PROT_EXEC,
				      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, none, 0 };
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		int rc = xflow_ooline_may_call(&t->pt, calls[i].nr, calls[i].a);
		if (rc == 0)
			continue;
		struct xflow_hook *hk = &t->pt.e->pub;
		char why[sizeof(hk->errbuf)];
		snprintf(why, sizeof(why), "%s", hk->errbuf);
		bool pt_ok = xflow_ooline_may_call(&t->pt, SYS_mmap, scratch) == 0;
		return xflow_hook_fail(hk, rc, "%.200s: the runtime is not mapped in%s", why,
				       pt_ok ? " (the ptrace backend's calls are allowed)" : "");
	}
	return 0;
}

/*
 * How the runtime tells this target's threads apart.  rdfsbase reads a
 * thread's fs base itself, but cost 3.3 ns a hit here; a load of %fs:0,
 * 0.35 ns, gives the same number wherever the thread follows the x86-64
 * TLS ABI (the TCB's first word points to itself, as glibc and musl set
 * every thread's).  The load when every thread of the target, all stopped
 * now, has it; a later thread with no TLS gets no lane (rt_safe_fs0), one
 * with TLS of its own making could share a lane with another.
 */
static uint32_t fs_mode_of(struct ip_target *t, uint32_t can)
{
	if (can != XFLOW_RT_FS_RDFSBASE)
		return can;
	int seen = 0;
	for (int i = 0; i < t->pt.nthreads; i++) {
		struct pt_thread *th = t->pt.threads[i];
		struct user_regs_struct r;
		uint64_t self = 0;
		if (th->state != PT_STOPPED || ptrace(PTRACE_GETREGS, th->tid, 0, &r) < 0)
			return can;
		if (r.fs_base == 0 || xflow_tmem_read(&t->pt.mem, r.fs_base, &self, sizeof(self)) < 0 ||
		    self != r.fs_base)
			return can;
		seen++;
	}
	return seen ? XFLOW_RT_FS_TCB : can;
}

int ip_inject(struct ip_target *t)
{
	struct ip_engine *e = eng(t);
	const struct xflow_rt_head *h = &e->head;
	int64_t img = 0, r;
	int rc = calls_allowed(t);
	if (rc < 0)
		return rc;

	rc = ip_syscall(t, SYS_mmap, 0, (uint64_t)h->code_size + h->data_size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0, &img);
	if (rc < 0)
		return fail(t, rc, "mapping the runtime in the target (mmap)");
	rc = ip_poke(t, (uint64_t)img, e->blob, e->blob_size);
	if (rc == 0)
		rc = ip_syscall(t, SYS_mprotect, (uint64_t)img, h->code_size, PROT_READ | PROT_EXEC, 0, 0, 0, &r);
	if (rc == 0)
		rc = ip_syscall(t, SYS_madvise, (uint64_t)img + h->code_size, h->data_size, MADV_WIPEONFORK, 0, 0, 0, &r);
	if (rc < 0) {
		ip_syscall(t, SYS_munmap, (uint64_t)img, (uint64_t)h->code_size + h->data_size, 0, 0, 0, 0, &r);
		return fail(t, rc, "setting up the runtime's pages");
	}
	t->image = (uint64_t)img;
	uint32_t fs_mode = fs_mode_of(t, e->fs_mode);
	rc = ip_config_set(t, offsetof(struct xflow_rt_config, fs_mode), &fs_mode, sizeof(fs_mode));
	if (rc == 0) {
		t->fs_mode = fs_mode;
		rc = handlers_install(t);
	}
	if (rc < 0)
		ip_eject(t);
	return rc;
}

/* ---- quiescence -------------------------------------------------------- */

static bool in_ranges(uint64_t v, const uint64_t *addr, const uint64_t *len, int n)
{
	for (int i = 0; i < n; i++)
		if (v - addr[i] < len[i])
			return true;
	return false;
}

/* The end of the mapping holding addr, from maps, 0 if none. */
static uint64_t mapping_end(pid_t pid, uint64_t addr)
{
	struct xflow_map m;
	return xflow_maps_find(pid, addr, &m) == 0 ? m.end : 0;
}

bool ip_busy(struct ip_target *t, const uint64_t *addr, const uint64_t *len, int n, char *why, size_t whylen)
{
	/* A stack is read from its top of stack to the end of its mapping,
	 * in pieces; at most this much of each. */
	enum { CHUNK = 64 << 10, MAX_STACK = 16 << 20 };
	uint64_t *buf = malloc(CHUNK);
	bool busy = false;
	for (int i = 0; i < t->pt.nthreads && !busy; i++) {
		struct pt_thread *th = t->pt.threads[i];
		struct user_regs_struct r;
		if (th->state != PT_STOPPED || ptrace(PTRACE_GETREGS, th->tid, 0, &r) < 0)
			continue;
		if (in_ranges(r.rip, addr, len, n)) {
			snprintf(why, whylen, "thread %d is running in the runtime (at 0x%llx)", (int)th->tid,
				 (unsigned long long)r.rip);
			busy = true;
			break;
		}
		/* A return address, or a signal frame's saved rip, above its
		 * top of stack: it would come back there. */
		uint64_t sp = r.rsp & ~7ull, end = mapping_end(t->pt.pub.pid, sp);
		if (!buf || !end)
			continue;
		if (end - sp > MAX_STACK)
			end = sp + MAX_STACK;
		for (uint64_t at = sp; at < end && !busy; at += CHUNK) {
			size_t k = end - at < CHUNK ? (size_t)(end - at) : CHUNK;
			if (xflow_tmem_read(&t->pt.mem, at, buf, k) < 0)
				break;
			for (size_t w = 0; w < k / 8; w++) {
				if (in_ranges(buf[w], addr, len, n)) {
					snprintf(why, whylen, "thread %d may return into the runtime (0x%llx on its stack)",
						 (int)th->tid, (unsigned long long)buf[w]);
					busy = true;
					break;
				}
			}
		}
	}
	free(buf);
	return busy;
}

/* ---- taking it out --------------------------------------------------------- */

void ip_release(struct ip_target *t)
{
	struct ip_engine *e = eng(t);
	if (t->proc.map && pt_grow((void **)&e->gone, &e->capgone, e->ngone + 1, sizeof(*e->gone)) == 0) {
		e->gone[e->ngone++] = (struct ip_gone){ .proc = t->proc, .lanes = t->lanes, .nlanes = t->nlanes };
	} else {
		free(t->lanes);
		region_unmap_here(&t->proc);
	}
	memset(&t->proc, 0, sizeof(t->proc));
	t->lanes = NULL;
	t->nlanes = 0;
	if (t->ctl)
		ip_ctl_put(t, t->ctl);
	t->ctl = NULL;
}

void ip_gone_free(struct ip_gone *g)
{
	free(g->lanes);
	region_unmap_here(&g->proc);
}

int ip_eject(struct ip_target *t)
{
	struct ip_engine *e = eng(t);
	int64_t r;
	int rc = 0, r2;
	if (!t->image)
		return 0;
	if ((r2 = handlers_restore(t)) < 0)
		rc = r2;
	for (int i = 0; i < t->nzones; i++)
		ip_syscall(t, SYS_munmap, t->zones[i].base, IP_ZONE_SIZE, 0, 0, 0, 0, &r);
	t->nzones = 0;
	if (t->ctl)
		ip_syscall(t, SYS_munmap, t->ctl->r.addr, t->ctl->r.size, 0, 0, 0, 0, &r);
	if (t->proc.addr)
		ip_syscall(t, SYS_munmap, t->proc.addr, t->proc.size, 0, 0, 0, 0, &r);
	/* The image holds the stub those calls ran through: its own unmap
	 * runs through borrowed bytes. */
	uint64_t img = t->image;
	t->image = 0;
	if ((r2 = ip_syscall(t, SYS_munmap, img, (uint64_t)e->head.code_size + e->head.data_size, 0, 0, 0, 0, &r)) <
		    0 &&
	    rc == 0)
		rc = r2;
	ip_release(t);
	return rc;
}
