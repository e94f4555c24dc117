/*
 * The in-process hook backend (xflow_hook_inproc_ops): each site a jump to
 * a trampoline in the target that runs the advice there, with the runtime
 * of guestrt/hook/inproc/rt/ mapped in, records written straight into per-thread lanes
 * in shared memory; no trap and no system call per hit.  Sites a jump
 * cannot take get an int3 whose thread this process sends to the same
 * trampoline (the Kerninst strategy).  The ptrace layer underneath holds
 * the targets for what only a tracer can do.
 *
 * If this process dies, even by SIGKILL, the targets go on: jump sites keep
 * working (lanes fill up and count their drops), the runtime's own signal
 * handler serves int3 sites and faults of its accesses, and a child forked
 * then gets no data region and its hits do nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guestrt/hook/inproc/inproc_priv.h"
#include "guestrt/interp/interp.h"
#include "xflow/clock.h"
#include "xflow/plan.h"

#define ENGINE(h) IP_ENGINE(xflow_container_of(h, struct pt_engine, pub))
#define TARGET(x) IP_TARGET(xflow_container_of(x, struct pt_target, pub))

/* Tries, a few ms apart, for every thread to leave the runtime before a
 * program is replaced or the runtime taken out. */
#define QUIET_TRIES 200

extern const uint8_t xflow_rt_blob[], xflow_rt_blob_end[];

#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif

/* ---- binaries' code maps ------------------------------------------------------- */

struct xflow_code_map *ip_code_map(struct ip_engine *e, struct ip_target *t, uint64_t addr, uint64_t *bias,
				   char *why, size_t whylen)
{
	char path[4200], link[96];
	struct xflow_map m;
	if (xflow_maps_find(t->pt.pub.pid, addr, &m) < 0)
		return NULL;
	/* The file mapped there, as the kernel names it; opened through
	 * map_files, the same file even if its path was replaced since. */
	snprintf(link, sizeof(link), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)t->pt.pub.pid, m.start, m.end);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0) {
		snprintf(why, whylen, "its code is not mapped from a file");
		return NULL;
	}
	path[n] = 0;
	struct xflow_code_map *cm = NULL;
	int i;
	for (i = 0; i < e->nmaps && strcmp(e->maps[i].path, path) != 0; i++)
		;
	if (i < e->nmaps) {
		cm = e->maps[i].map;
	} else if (pt_grow((void **)&e->maps, &e->capmaps, e->nmaps + 1, sizeof(*e->maps)) == 0) {
		char err[256];
		char *dup = strdup(path);
		if (!dup)
			return NULL;
		if (xflow_code_map_open(link, &cm, err, sizeof(err)) < 0)
			cm = NULL; /* remembered as unreadable */
		e->maps[e->nmaps].path = dup;
		e->maps[e->nmaps].map = cm;
		e->nmaps++;
	}
	uint64_t vaddr;
	if (!cm || xflow_maps_vaddr_of(link, m.offset + (addr - m.start), &vaddr) < 0) {
		snprintf(why, whylen, "%s has no symbol table to tell where branches land", path);
		return NULL;
	}
	*bias = addr - vaddr;
	return cm;
}

/* ---- the ptrace layer's extension ------------------------------------------------ */

/* The int3 site among whose bytes addr is (every byte is an int3: see
 * struct xflow_rt_trap). */
static struct ip_patch *trap_at(struct ip_target *mm, uint64_t addr)
{
	struct ip_patch *p = ip_patch_at(mm, addr);
	return p && p->kind == IP_TRAP && p->installed ? p : NULL;
}

/* A copy of the parent's trampolines and patches for a forked child: its
 * memory is a copy of the parent's. */
static int copy_state(struct ip_target *c, const struct ip_target *p)
{
	c->image = p->image;
	c->fs_mode = p->fs_mode;
	c->traps = p->traps;
	if (pt_grow((void **)&c->zones, &c->capzones, p->nzones + 1, sizeof(*c->zones)) < 0 ||
	    pt_grow((void **)&c->patches, &c->cappatches, p->npatches + 1, sizeof(*c->patches)) < 0 ||
	    pt_grow((void **)&c->sites, (int *)&c->capsites, (int)p->nsites + 1, sizeof(*c->sites)) < 0)
		return -ENOMEM;
	memcpy(c->zones, p->zones, (size_t)p->nzones * sizeof(*c->zones));
	c->nzones = p->nzones;
	memcpy(c->sites, p->sites, p->nsites * sizeof(*c->sites));
	c->nsites = p->nsites;
	for (int i = 0; i < p->npatches; i++) {
		c->patches[i] = malloc(sizeof(**c->patches));
		if (!c->patches[i])
			return -ENOMEM;
		*c->patches[i] = *p->patches[i];
		c->npatches = i + 1;
	}
	if (p->ctl) {
		c->ctl = p->ctl;
		c->ctl->refs++;
	}
	return 0;
}

static void ext_fork(struct pt_target *parent, struct pt_target *child, bool vfork)
{
	struct ip_target *p = IP_TARGET(parent), *c = IP_TARGET(child);
	if (vfork || !p->image)
		return; /* a vfork child lives in its parent's memory */
	if (copy_state(c, p) < 0) {
		xflow_hook_fail(&parent->e->pub, -ENOMEM, "pid %d: no memory to follow its child %d",
				(int)parent->pub.pid, (int)child->pub.pid);
		return;
	}
	/* Its data region (not inherited: MADV_DONTFORK) is made at the next
	 * turn of the loop, once its thread has stopped; it stays stopped
	 * until then, so no hit of it is lost. */
	if (p->ctl && parent->e->pub.cfg.fork_policy == XFLOW_HOOK_FORK_INHERIT && child->nthreads) {
		c->need_setup = true;
		child->threads[0]->held = true;
	}
}

static void target_reset(struct ip_target *t)
{
	for (int i = 0; i < t->npatches; i++)
		free(t->patches[i]);
	free(t->patches);
	free(t->zones);
	free(t->sites);
	t->patches = NULL;
	t->zones = NULL;
	t->sites = NULL;
	t->npatches = t->cappatches = t->nzones = t->capzones = 0;
	t->nsites = t->capsites = 0;
	t->image = 0;
	t->traps = 0;
	t->need_setup = false;
	ip_release(t);
}

static void ext_exec(struct pt_target *pt)
{
	/* The image went with the old memory: keep only its records. */
	target_reset(IP_TARGET(pt));
}

static void ext_target_free(struct pt_target *pt)
{
	target_reset(IP_TARGET(pt));
}

static void ext_thread_exit(struct pt_thread *th)
{
	struct ip_target *t = ip_mm(IP_TARGET(th->t));
	struct xflow_rt_proc *p = t->proc.map;
	if (!p)
		return;
	/* A new thread with the same fs base (the C library reuses the
	 * block of a thread that exited) asks its own tid at its next hit.
	 * The exited thread's numbers end at its lane's seq: it is stopped
	 * or gone, so seq holds its last hit's (the kernel's stop orders
	 * its stores before our read), and what it lost after its last
	 * record kept is noted once the lane has given the rest. */
	for (uint32_t i = 0; i < t->nlanes; i++) {
		struct xflow_rt_lane *l = t->lanes[i].rt;
		if (atomic_load_explicit(&l->owner, memory_order_relaxed) > XFLOW_RT_LANE_GONE &&
		    atomic_load_explicit(&l->tid, memory_order_relaxed) == (uint32_t)th->tid) {
			atomic_store_explicit(&l->stale, 1, memory_order_relaxed);
			ip_tail_exit(&t->lanes[i].tail, (uint32_t)th->tid,
				     atomic_load_explicit((_Atomic uint32_t *)&l->seq, memory_order_acquire));
		}
	}
}

static bool ext_trap(struct pt_thread *th, struct xflow_hook_regs *r)
{
	struct ip_patch *p = trap_at(ip_mm(IP_TARGET(th->t)), r->rip - 1);
	if (!p)
		return false;
	/* The trampoline runs the advice and the instruction the int3
	 * replaced, then comes back after it. */
	r->rip = p->entry;
	pt_thread_cont(th, r, 0);
	return true;
}

static bool ext_signal(struct pt_thread *th, int sig)
{
	struct ip_target *t = ip_mm(IP_TARGET(th->t));
	const struct xflow_rt_head *h = &IP_ENGINE(th->t->e)->head;
	struct user_regs_struct r;
	if ((sig != SIGSEGV && sig != SIGBUS) || !t->image || ptrace(PTRACE_GETREGS, th->tid, 0, &r) < 0)
		return false;
	if (r.rip < t->image + h->off_safe_begin || r.rip >= t->image + h->off_safe_end)
		return false;
	/* A fault-safe access faulted: it returns -EFAULT, the advice ends
	 * and counts a fault, the program never sees it. */
	r.rip = t->image + h->off_safe_fault;
	return ptrace(PTRACE_SETREGS, th->tid, 0, &r) == 0;
}

static void ext_tick(struct pt_engine *pe)
{
	for (int i = 0; i < pe->ntargets; i++) {
		struct ip_target *t = IP_TARGET(pe->targets[i]);
		if (!t->need_setup || t->pt.dead || t->pt.detached || t->pt.nthreads == 0 ||
		    t->pt.threads[0]->state != PT_STOPPED)
			continue;
		t->need_setup = false;
		if (ip_proc_new(t) < 0) {
			/* Without a data region its hits do nothing: it runs on,
			 * traced but silent, and says so. */
			char msg[256];
			snprintf(msg, sizeof(msg), "%s", xflow_hook_last_error(&pe->pub));
			xflow_hook_fail(&pe->pub, -EIO, "forked child %d records nothing: %s", (int)t->pt.pub.pid, msg);
		}
		t->pt.threads[0]->held = false;
		pt_queue_resume(pe, t->pt.threads[0]);
	}
}

/* The runtime's memory in t, for waiting until no thread is inside. */
static int rt_ranges(struct ip_target *t, uint64_t *a, uint64_t *l, int max)
{
	const struct xflow_rt_head *h = &IP_ENGINE(t->pt.e)->head;
	int n = 0;
	if (t->image && n < max)
		a[n] = t->image, l[n++] = h->code_size;
	for (int i = 0; i < t->nzones && n < max; i++)
		a[n] = t->zones[i].base, l[n++] = IP_ZONE_SIZE;
	return n;
}

/* Wait, the world running meanwhile, until no thread is in the runtime or
 * a trampoline, nor will return there.  World stopped on entry and exit. */
static int quiesce(struct ip_target *t, char *why, size_t whylen)
{
	uint64_t a[65], l[65];
	int n = rt_ranges(t, a, l, 65);
	for (int i = 0; i < QUIET_TRIES; i++) {
		if (!ip_busy(t, a, l, n, why, whylen))
			return 0;
		pt_resume_world(&t->pt);
		usleep(i < 10 ? 1000 : 5000);
		if (pt_stop_world(&t->pt) < 0)
			return -ESRCH;
	}
	return -EBUSY;
}

static int ext_detach(struct pt_target *pt)
{
	struct ip_target *t = IP_TARGET(pt);
	char why[200];
	if (!t->image)
		return 0;
	ip_patches_restore(t, false);
	t->nsites = 0;
	int rc = quiesce(t, why, sizeof(why));
	if (rc == -EBUSY) {
		/* Harmless to leave (no byte of the program leads there any
		 * more), fatal to take away from under a thread, which may
		 * still end a hit in its lane. */
		struct ip_engine *e = IP_ENGINE(pt->e);
		void *proc = t->proc.map;
		xflow_hook_fail(&pt->e->pub, 0, "pid %d: the runtime stays mapped: %s", (int)pt->pub.pid, why);
		ip_release(t);
		if (proc && e->ngone > 0 && e->gone[e->ngone - 1].proc.map == proc)
			e->gone[e->ngone - 1].running = true;
		return 0;
	}
	return ip_eject(t);
}

static uint64_t ext_fix_rip(struct pt_target *mm, struct pt_thread *th, uint64_t rip, bool *ours)
{
	struct ip_patch *p;
	if ((th->pending_hit || th->held) && (p = trap_at(IP_TARGET(mm), rip - 1))) {
		*ours = true;
		return p->addr; /* the original instruction runs on its own */
	}
	return 0;
}

static void ext_emergency(struct pt_target *pt)
{
	ip_patches_restore(IP_TARGET(pt), true);
}

static void ext_shadow(struct pt_target *mm, uint64_t addr, void *buf, size_t len)
{
	ip_shadow(IP_TARGET(mm), addr, buf, len);
}

static const struct pt_ext ip_ext = {
	.target_size = sizeof(struct ip_target),
	.fork = ext_fork,
	.exec = ext_exec,
	.thread_exit = ext_thread_exit,
	.trap = ext_trap,
	.signal = ext_signal,
	.tick = ext_tick,
	.detach = ext_detach,
	.fix_rip = ext_fix_rip,
	.emergency = ext_emergency,
	.shadow = ext_shadow,
	.target_free = ext_target_free,
};

/* ---- the backend's operations ------------------------------------------------------ */

static int ip_new(const struct xflow_hook_config *cfg, struct xflow_hook **out)
{
	const struct xflow_rt_head *h = (const void *)xflow_rt_blob;
	size_t size = (size_t)(xflow_rt_blob_end - xflow_rt_blob);
	if (size < sizeof(*h) || h->magic != XFLOW_RT_MAGIC || h->version != XFLOW_RT_VERSION || h->code_size < size ||
	    h->off_hit >= size || h->off_zone_stub + h->zone_stub_size > size || h->zone_stub_size < 16 ||
	    XFLOW_RT_CALL_AREA < PT_CALL_LEN || h->off_syscall + XFLOW_RT_CALL_AREA > h->code_size)
		return -ENOEXEC; /* a broken build: the image does not match this agent */
	struct pt_engine *pe;
	int rc = pt_engine_new(cfg, sizeof(struct ip_engine), &ip_ext, &pe);
	if (rc < 0)
		return rc;
	struct ip_engine *e = IP_ENGINE(pe);
	e->head = *h;
	e->blob = xflow_rt_blob;
	e->blob_size = size;
	/* Threads are told apart by their fs base: rdfsbase where the kernel
	 * lets user space use it, else the TCB's self pointer at %fs:0. */
	e->fs_mode = getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE ? XFLOW_RT_FS_RDFSBASE : XFLOW_RT_FS_TCB;
	e->lanes = 128;
	e->lane_slots = 4096;
	e->flowtab_capacity = 1u << 18;
	*out = &pe->pub;
	return 0;
}

static void ip_free(struct xflow_hook *h)
{
	struct ip_engine *e = ENGINE(h);
	pt_engine_fini(&e->pt);
	for (int i = 0; i < e->nmaps; i++) {
		free(e->maps[i].path);
		xflow_code_map_free(e->maps[i].map);
	}
	free(e->maps);
	for (int i = 0; i < e->ngone; i++)
		ip_gone_free(&e->gone[i]);
	free(e->gone);
	free(e->acc);
	free(e);
}

/* Take the runtime in (world stopped), or let the target go again. */
static int inject_or_let_go(struct ip_target *t)
{
	struct pt_engine *e = t->pt.e;
	int rc = ip_inject(t);
	if (rc < 0) {
		char why[256];
		snprintf(why, sizeof(why), "%s", xflow_hook_last_error(&e->pub));
		t->pt.silent = true;
		pid_t pid = t->pt.pub.pid;
		if (pt_detach_target(&t->pt, true) == -ESRCH) {
			/* Whatever failed, it failed because the target died. */
			int st = t->pt.exit_status;
			snprintf(why, sizeof(why), "pid %d died while the runtime was being mapped in (%s %d)", (int)pid,
				 WIFSIGNALED(st) ? "killed by signal" : "exit status",
				 WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
			rc = -ESRCH;
		}
		/* t is freed here. */
		pt_flush(e);
		return xflow_hook_fail(&e->pub, rc, "%s", why);
	}
	return 0;
}

static int ip_attach(struct xflow_hook *h, pid_t pid, struct xflow_hook_target **out)
{
	int rc = pt_attach(h, pid, out);
	if (rc < 0)
		return rc;
	struct ip_target *t = TARGET(*out);
	rc = pt_stop_world(&t->pt);
	if (rc == 0)
		rc = inject_or_let_go(t);
	if (rc < 0) {
		*out = NULL;
		return rc;
	}
	pt_resume_world(&t->pt);
	return 0;
}

static int ip_spawn(struct xflow_hook *h, char *const argv[], struct xflow_hook_target **out)
{
	/* Held just after its exec, its one thread stopped. */
	int rc = pt_spawn(h, argv, out);
	if (rc < 0)
		return rc;
	rc = inject_or_let_go(TARGET(*out));
	if (rc < 0)
		*out = NULL;
	return rc;
}

static int site_lookup(struct ip_target *t, uint32_t id, struct ip_site **out)
{
	if (t->pt.dead || t->pt.detached)
		return -ESRCH;
	if (id == 0 || id > t->nsites || !t->sites[id - 1].live)
		return xflow_hook_fail(&t->pt.e->pub, -ENOENT, "site %u: no such site in pid %d", id, (int)t->pt.pub.pid);
	*out = &t->sites[id - 1];
	return 0;
}

static int ip_site_add(struct xflow_hook_target *pub, uint64_t addr, enum xflow_hook_when when,
		       xflow_hook_handler_fn fn, void *data, uint32_t *site)
{
	struct ip_target *t = TARGET(pub), *mm = ip_mm(t);
	struct xflow_hook *h = pub->hook;
	uint32_t psite = (uint32_t)(uintptr_t)data;
	if (t->pt.dead || t->pt.detached)
		return -ESRCH;
	if (fn)
		return xflow_hook_fail(h, -EINVAL, "the in-process backend runs compiled advice, not handlers");
	if (!mm->ctl)
		return xflow_hook_fail(h, -EINVAL, "pid %d: no program loaded", (int)pub->pid);
	if (psite >= mm->ctl->nsites)
		return xflow_hook_fail(h, -EINVAL, "plan site %u: the program has %u", psite, mm->ctl->nsites);
	int rc = pt_grow((void **)&mm->sites, (int *)&mm->capsites, (int)mm->nsites + 1, sizeof(*mm->sites));
	if (rc < 0)
		return rc;
	struct ip_site *s = &mm->sites[mm->nsites];
	*s = (struct ip_site){ .addr = addr, .psite = psite, .when = (uint8_t)when, .live = true, .enabled = true };
	rc = pt_stop_world(&t->pt);
	if (rc == 0) {
		mm->nsites++;
		rc = ip_site_place(mm, s);
		if (rc < 0)
			s->live = false;
	}
	if (!t->pt.dead)
		pt_resume_world(&t->pt);
	if (rc == 0 && site)
		*site = mm->nsites;
	return rc;
}

static int site_change(struct xflow_hook_target *pub, uint32_t id, bool on, bool remove)
{
	struct ip_target *t = TARGET(pub), *mm = ip_mm(t);
	struct ip_site *s;
	int rc = site_lookup(mm, id, &s);
	if (rc < 0)
		return rc;
	if (!remove && s->enabled == on)
		return 0;
	rc = pt_stop_world(&t->pt);
	if (rc == 0) {
		s->enabled = on;
		s->live = !remove;
		rc = ip_patch_unplace(mm, s->addr);
	}
	if (!t->pt.dead)
		pt_resume_world(&t->pt);
	return rc;
}

static int ip_site_remove(struct xflow_hook_target *pub, uint32_t id)
{
	return site_change(pub, id, false, true);
}

static int ip_site_enable(struct xflow_hook_target *pub, uint32_t id, bool on)
{
	return site_change(pub, id, on, false);
}

static int ip_site_stats(struct xflow_hook_target *pub, uint32_t id, struct xflow_hook_site_stats *st)
{
	struct ip_target *mm = ip_mm(TARGET(pub));
	struct ip_site *s;
	int rc = site_lookup(mm, id, &s);
	if (rc < 0)
		return rc;
	memset(st, 0, sizeof(*st));
	st->enabled = s->enabled;
	st->addr = s->addr;
	st->when = s->when;
	st->mech = s->mech;
	snprintf(st->why, sizeof(st->why), "%s", s->why);
	return 0;
}

/* ---- in-target advice ------------------------------------------------------------- */

static int ip_prog_load(struct xflow_hook_target *pub, const struct xflow_hook_prog *prog)
{
	struct ip_target *t = TARGET(pub);
	struct ip_engine *e = ENGINE(pub->hook);
	struct xflow_hook *h = pub->hook;
	char why[200];
	if (t->pt.mm_owner)
		return xflow_hook_fail(h, -EBUSY, "pid %d shares its parent's memory until it execs", (int)pub->pid);
	for (uint32_t i = 0; i < t->nsites; i++)
		if (t->sites[i].live)
			return xflow_hook_fail(h, -EBUSY, "pid %d: remove every site before loading a program",
					       (int)pub->pid);
	int rc = pt_stop_world(&t->pt);
	if (rc < 0)
		return rc;
	if (!t->image)
		rc = ip_inject(t);
	/* The old program's tables and the flow-id table change now: no
	 * thread may be in the middle of a hit. */
	if (rc == 0 && (rc = quiesce(t, why, sizeof(why))) < 0)
		rc = xflow_hook_fail(h, rc, "pid %d: %s", (int)pub->pid, rc == -EBUSY ? why : "it went away");
	struct ip_ctl *c = NULL;
	size_t size = ip_ctl_size(prog);
	if (rc == 0)
		rc = ip_ctl_new(t, size, &c);
	if (rc == 0) {
		ip_ctl_fill(c->r.map, c->r.addr, c->r.size, prog);
		c->nadvice = prog->plan->nadvice;
		c->nsites = prog->dom->nsites;
		e->domain_id = prog->domain_id;
		e->lanes = prog->lanes ? prog->lanes : 128;
		e->lane_slots = prog->lane_slots ? prog->lane_slots : 4096;
		e->flowtab_capacity = prog->flowtab_capacity ? prog->flowtab_capacity : 1u << 18;
		e->interpret = prog->interpret;
		if (!t->proc.map)
			rc = ip_proc_new(t);
		else
			ip_proc_reset(t);
	}
	if (rc == 0) {
		/* Nothing runs the old trampolines any more. */
		for (int i = 0; i < t->nzones; i++)
			t->zones[i].used = (e->head.zone_stub_size + 63) & ~63u;
		uint64_t zero = 0;
		rc = ip_config_set(t, offsetof(struct xflow_rt_config, ctl), &c->r.addr, 8);
		if (rc == 0)
			rc = ip_config_set(t, offsetof(struct xflow_rt_config, traps), &zero, 8);
		t->traps = 0;
	}
	if (rc == 0) {
		if (t->ctl) {
			int64_t r;
			ip_syscall(t, SYS_munmap, t->ctl->r.addr, t->ctl->r.size, 0, 0, 0, 0, &r);
			ip_ctl_put(t, t->ctl);
		}
		t->ctl = c;
		t->nsites = 0;
		free(e->acc);
		e->acc = calloc(c->nadvice + 1, sizeof(*e->acc));
		e->nacc = e->acc ? c->nadvice : 0;
		memset(&e->acc_all, 0, sizeof(e->acc_all));
	} else if (c) {
		int64_t r;
		ip_syscall(t, SYS_munmap, c->r.addr, c->r.size, 0, 0, 0, 0, &r);
		ip_ctl_put(t, c);
	}
	if (!t->pt.dead)
		pt_resume_world(&t->pt);
	return rc;
}

static int ip_advice_enable(struct xflow_hook_target *pub, uint32_t advice, bool on)
{
	struct ip_target *t = ip_mm(TARGET(pub));
	if (!t->ctl || advice >= t->ctl->nadvice)
		return xflow_hook_fail(pub->hook, -ENOENT, "advice %u: not in the program of pid %d", advice,
				       (int)pub->pid);
	struct xflow_rt_ctl *c = t->ctl->r.map;
	_Atomic uint8_t *en = (_Atomic uint8_t *)((char *)c + c->off_enabled);
	atomic_store_explicit(&en[advice], on ? 1 : 0, memory_order_relaxed);
	return 0;
}

static struct xflow_rt_lane *lane_of(void *proc, uint32_t i)
{
	struct xflow_rt_proc *p = proc;
	return (void *)((char *)proc + p->off_lanes + (uint64_t)i * p->lane_size);
}

/* Hand the loss note of @ln's thread, whose lost numbers end before @seq,
 * to @fn; true when it was kept. */
static bool note_out(struct ip_engine *e, struct ip_lane *ln, uint32_t seq, xflow_hook_record_fn fn, void *ctx)
{
	struct xflow_record n;
	/* The lanes' clock is the TSC (ip_proc_format): the note's time is
	 * ours now, the end of the gap, on the records' own line. */
	ip_tail_note(&ln->tail, seq, e->domain_id, xflow_tsc_read(), &n);
	if (fn(ctx, &n) != 0)
		return false; /* lost too: tried again at the next drain */
	ip_tail_noted(&ln->tail, &n);
	return true;
}

/* An exited thread's note, once its records are all handed on. */
static void exit_note_out(struct ip_engine *e, struct ip_lane *ln, xflow_hook_record_fn fn, void *ctx)
{
	if (!ln->tail.exited)
		return;
	if (!ip_tail_exit_lost(&ln->tail) || note_out(e, ln, ln->tail.exit_seq, fn, ctx))
		ip_tail_forget(&ln->tail);
}

/* A run of @ln's records, none a loss note, with no exited thread's note
 * due between them: to @runs at once. */
static void run_out(struct ip_lane *ln, const struct xflow_record *r, size_t n, xflow_hook_records_fn runs,
		    void *ctx)
{
	size_t kept = runs(ctx, r, n);
	/* Only the last record kept that its thread numbered moves the
	 * tail (ip_tail_kept): those before it are behind it. */
	while (kept > 0 && !(r[kept - 1].flags & XFLOW_REC_SEQ_COUNTS_LOST))
		kept--;
	if (kept > 0)
		ip_tail_kept(&ln->tail, &r[kept - 1]);
}

/*
 * Records of one process's lanes.  Our own copy of the geometry (in the
 * consumers) bounds everything; the target may have scribbled on the
 * region, which makes a lane corrupt, not us.  @settled: no thread of the
 * process can be inside a hit any more (it is gone, or the runtime was
 * taken out after every thread left it).
 *
 * Loss notes (inproc_tail.h).  Before emptying a lane we read its seq,
 * then its busy flag, both with acquire; the thread's hit sets busy, takes
 * its record's number in seq, publishes the record (the ring's release
 * store of prod) and clears busy, in that order of its stores (plain
 * stores, kept in order by the compiler barriers around busy and by
 * x86's total store order; the compiled hit emits them in that order).
 * So a seq we read that counts a record's number, with busy read as 0
 * after it, means the hit that took the number had ended, its record
 * published before: the ring emptied after that holds every record
 * numbered below seq that was not dropped.  Numbers between the last
 * record kept and seq are then lost ones.  A busy flag set, a ring not
 * emptied, or a lane now another thread's, and we wait for a later look.
 */
static size_t drain_lanes(struct ip_engine *e, struct ip_lane *lanes, uint32_t n, bool settled,
			  xflow_hook_records_fn runs, xflow_hook_record_fn fn, void *ctx, size_t max, uint64_t *bad,
			  uint32_t *from)
{
	struct xflow_record buf[64];
	size_t moved = 0;
	/* With room for few (@max), each lane with records gets an equal
	 * share of it, so that the threads' records leave their lanes about
	 * as far into their time as each other: one lane emptied while the
	 * others wait came to the monitor behind records younger than its
	 * own, which its reorder window had let go (late, with four threads
	 * at 2 M records a second in tests/bench/pipeline.sh). */
	size_t share = SIZE_MAX;
	if (max) {
		size_t busy = 0;
		for (uint32_t i = 0; i < n; i++)
			busy += !xflow_ring_idle(&lanes[i].ring);
		share = busy > 1 ? (max + busy - 1) / busy : max;
	}
	/* From where the last call that @max cut short stopped, so that
	 * each lane gets its turn when the caller has room for few. */
	uint32_t first = from && *from < n ? *from : 0;
	for (uint32_t step = 0; step < n; step++) {
		uint32_t i = first + step < n ? first + step : first + step - n;
		if (max && moved >= max) {
			if (from)
				*from = i;
			break;
		}
		struct ip_lane *ln = &lanes[i];
		/* A lane no thread has written yet (most of them): nothing to
		 * move and no numbers to follow, for one load. */
		if (!ln->tail.known && !settled && xflow_ring_idle(&ln->ring))
			continue;
		struct xflow_rt_lane *l = ln->rt;
		bool was = ln->ring.corrupt != 0, drained = false;
		struct ip_tail_seen seen = { 0 };
		/* Settled, the lane's numbers are final: read even before a
		 * record of it was kept, so that a program that filled its lanes
		 * in one burst and exited before our first look (its records
		 * kept only now) gets its note too. */
		if (ln->tail.known || settled) {
			seen.seq = atomic_load_explicit((_Atomic uint32_t *)&l->seq, memory_order_acquire);
			seen.busy = !settled && atomic_load_explicit((_Atomic uint32_t *)&l->busy, memory_order_acquire);
			seen.tid = atomic_load_explicit(&l->tid, memory_order_relaxed);
		}
		/* At most one ring's worth per lane and call: threads that
		 * write as fast as we read must not keep us here for ever
		 * (the agent has its monitor and the targets' stops to see
		 * to); what is left waits for the next call.  A settled lane has
		 * no writer and no next call (a process gone is let go after
		 * this one): emptied whole, so that its full ring counts as
		 * emptied and its loss note is written. */
		size_t lap = settled ? SIZE_MAX : ln->ring.nslots;
		if (lap > share)
			lap = share;
		for (;;) {
			size_t want = max && max - moved < 64 ? max - moved : 64;
			if (want > lap)
				want = lap;
			if (want == 0)
				break;
			long k = xflow_ring_pop_records(&ln->ring, buf, want);
			uint32_t notes = 0;
			for (long j = 0; j < k; j++) {
				/* The agent names its domain, not the target. */
				buf[j].domain_id = e->domain_id;
				/* A note a target wrote goes only where ours
				 * go (agent's fn): no run carries one. */
				notes |= buf[j].flags & XFLOW_REC_LOSS_NOTE;
			}
			if (runs && k > 0 && !notes && !ln->tail.exited) {
				run_out(ln, buf, (size_t)k, runs, ctx);
			} else {
				for (long j = 0; j < k; j++) {
					/* An exited thread's records end before
					 * the next thread's first: its note goes
					 * between. */
					if (ln->tail.exited && buf[j].thread_id != ln->tail.tid)
						exit_note_out(e, ln, fn, ctx);
					if (fn(ctx, &buf[j]) == 0)
						ip_tail_kept(&ln->tail, &buf[j]);
				}
			}
			if (k > 0) {
				moved += (size_t)k;
				lap -= (size_t)k;
			}
			if (k < (long)want) {
				drained = k >= 0;
				break;
			}
		}
		if (!was && ln->ring.corrupt)
			(*bad)++;
		if (!drained || ln->ring.corrupt)
			continue;
		exit_note_out(e, ln, fn, ctx);
		seen.drained = true;
		if (ip_tail_idle_lost(&ln->tail, &seen))
			note_out(e, ln, seen.seq, fn, ctx);
	}
	return moved;
}

static size_t drain_targets(struct ip_engine *e, xflow_hook_records_fn runs, xflow_hook_record_fn fn, void *ctx,
			    size_t max)
{
	size_t moved = 0;
	for (int i = 0; i < e->pt.ntargets; i++) {
		struct ip_target *t = IP_TARGET(e->pt.targets[i]);
		if (max && moved >= max)
			break;
		if (t->lanes)
			moved += drain_lanes(e, t->lanes, t->nlanes, false, runs, fn, ctx, max ? max - moved : 0,
					     &t->bad, &t->drain_from);
	}
	return moved;
}

/* Add one process's counters. */
static void add_counts(void *proc, struct ip_lane *lanes, uint32_t n, uint32_t nadvice,
		       struct xflow_hook_advice_stats *adv, struct xflow_hook_prog_stats *all)
{
	struct xflow_rt_proc *p = proc;
	for (uint32_t i = 0; i < n; i++) {
		struct xflow_rt_lane *l = lane_of(proc, i);
		const uint64_t *cnt = (const uint64_t *)(l + 1);
		/* Advice past the last counter share it: it is theirs all. */
		for (uint32_t a = 0; a < nadvice && a < XFLOW_RT_NCOUNTERS; a++) {
			adv[a].hits += cnt[XFLOW_RT_CNT_HITS * XFLOW_RT_NCOUNTERS + a];
			adv[a].faults += cnt[XFLOW_RT_CNT_FAULTS * XFLOW_RT_NCOUNTERS + a];
			adv[a].drops += cnt[XFLOW_RT_CNT_DROPS * XFLOW_RT_NCOUNTERS + a];
		}
		all->dropped += xflow_ring_dropped(&lanes[i].ring);
		all->nested += l->nested;
	}
	all->nolane += atomic_load_explicit(&p->nolane, memory_order_relaxed);
	all->lock_waits += atomic_load_explicit(&p->lock_waits, memory_order_relaxed);
}

static void add_stats(struct xflow_hook_advice_stats *adv, const struct xflow_hook_advice_stats *from, uint32_t n,
		      struct xflow_hook_prog_stats *all, const struct xflow_hook_prog_stats *fall)
{
	for (uint32_t i = 0; i < n; i++) {
		adv[i].hits += from[i].hits;
		adv[i].faults += from[i].faults;
		adv[i].drops += from[i].drops;
	}
	all->dropped += fall->dropped;
	all->nolane += fall->nolane;
	all->nested += fall->nested;
	all->lock_waits += fall->lock_waits;
	all->bad += fall->bad;
}

static long ip_drain_runs(struct xflow_hook *h, xflow_hook_records_fn runs, xflow_hook_record_fn fn, void *ctx,
			  size_t max)
{
	struct ip_engine *e = ENGINE(h);
	size_t moved = drain_targets(e, runs, fn, ctx, max);
	/* Processes gone: their last records, then their counters are
	 * folded in and the region let go. */
	while (e->ngone > 0 && (!max || moved < max)) {
		struct ip_gone *g = &e->gone[e->ngone - 1];
		uint64_t bad = 0;
		moved += drain_lanes(e, g->lanes, g->nlanes, !g->running, runs, fn, ctx, max ? max - moved : 0,
				     &bad, NULL);
		e->acc_all.bad += bad;
		if (max && moved >= max)
			break;
		add_counts(g->proc.map, g->lanes, g->nlanes, e->nacc, e->acc, &e->acc_all);
		ip_gone_free(g);
		e->ngone--;
	}
	e->records += moved;
	return (long)moved;
}

static long ip_drain(struct xflow_hook *h, xflow_hook_record_fn fn, void *ctx, size_t max)
{
	return ip_drain_runs(h, NULL, fn, ctx, max);
}

static int ip_stats(struct xflow_hook *h, uint32_t nadvice, struct xflow_hook_advice_stats *adv,
		    struct xflow_hook_prog_stats *all)
{
	struct ip_engine *e = ENGINE(h);
	memset(adv, 0, nadvice * sizeof(*adv));
	memset(all, 0, sizeof(*all));
	for (int i = 0; i < e->pt.ntargets; i++) {
		struct ip_target *t = IP_TARGET(e->pt.targets[i]);
		if (t->lanes)
			add_counts(t->proc.map, t->lanes, t->nlanes, nadvice, adv, all);
		all->bad += t->bad;
	}
	for (int i = 0; i < e->ngone; i++)
		add_counts(e->gone[i].proc.map, e->gone[i].lanes, e->gone[i].nlanes, nadvice, adv, all);
	add_stats(adv, e->acc, nadvice < e->nacc ? nadvice : e->nacc, all, &e->acc_all);
	all->records = e->records;
	return 0;
}

static const struct xflow_hook_intarget_ops ip_intarget = {
	.prog_load = ip_prog_load,
	.advice_enable = ip_advice_enable,
	.drain = ip_drain,
	.drain_runs = ip_drain_runs,
	.stats = ip_stats,
};

const struct xflow_hook_backend_ops xflow_hook_inproc_ops = {
	.name = "inproc",
	.hook_new = ip_new,
	.hook_free = ip_free,
	.attach = ip_attach,
	.spawn = ip_spawn,
	.detach = pt_detach,
	.site_add = ip_site_add,
	.site_remove = ip_site_remove,
	.site_enable = ip_site_enable,
	.site_stats = ip_site_stats,
	.mem_read = pt_mem_read,
	.mem_write = pt_mem_write,
	.run = pt_run,
	.control_fd = pt_control_fd,
	.intarget = &ip_intarget,
};
