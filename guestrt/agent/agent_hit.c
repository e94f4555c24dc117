/*
 * The agent's hit path (guestrt/agent/agent_priv.h): a hit's inputs fetched, its
 * advice run, its records written.  No allocation, no lock.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <libxenvchan.h>

#include "guestrt/agent/agent.h"
#include "guestrt/hook/hook.h"
#include "guestrt/interp/interp.h"
#include "guestrt/hook/kernel/kernel_name.h"
#include "xflow/xen_time.h"
#include "xflow/clock.h"
#include "xflow/control.h"
#include "xflow/flowid.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"
#include "xflow/ring.h"
#include "xflow/shm.h"
#include "xflow/xen.h"
#include "guestrt/agent/agent_xen.h"
#include "guestrt/agent/agent_priv.h"

/* ---- the hit path: no allocation, no lock ----------------------------------- */

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct agent *a = ctx;
	if (len == 0 || len > 8)
		return -EFAULT; /* the interpreter moves 1..8 bytes; 0 = unresolved field */
	if (addr >= XFLOW_INTERP_SCRATCH_BASE && addr - XFLOW_INTERP_SCRATCH_BASE < sizeof(a->scratch)) {
		uint64_t off = addr - XFLOW_INTERP_SCRATCH_BASE;
		if (off + len > sizeof(a->scratch))
			return -EFAULT;
		memcpy(buf, (char *)a->scratch + off, len);
		return 0;
	}
	return xflow_hook_mem_read(a->cur, addr, buf, len);
}

static int mem_write(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	struct agent *a = ctx;
	if (len == 0 || len > 8)
		return -EFAULT;
	if (addr >= XFLOW_INTERP_SCRATCH_BASE && addr - XFLOW_INTERP_SCRATCH_BASE < sizeof(a->scratch)) {
		uint64_t off = addr - XFLOW_INTERP_SCRATCH_BASE;
		if (off + len > sizeof(a->scratch))
			return -EFAULT;
		memcpy((char *)a->scratch + off, buf, len);
		return 0;
	}
	return xflow_hook_mem_write(a->cur, addr, buf, len);
}

static const struct xflow_mem_ops agent_mem_ops = { .read = mem_read, .write = mem_write };

static uint64_t hit_clock(void *ctx)
{
	/* Every record of a hit carries the hit's time: when the program got
	 * there, not when the advice got round to storing. */
	return ((struct agent *)ctx)->hit_ticks;
}

static uint64_t agent_new_id(void *ctx)
{
	struct agent *a = ctx;
	a->next_id = xflow_flowid_after(a->next_id);
	return a->next_id;
}

/* Each record takes its thread's next number before it is pushed
 * (agent_tseq.c). */
static int ring_sink(void *ctx, struct xflow_record *r)
{
	return agent_tseq_push(ctx, r);
}

/* struct xflow_hook_regs offsets by DWARF x86-64 register number. */
static const uint8_t dwarf_reg[17] = {
	offsetof(struct xflow_hook_regs, rax) / 8, offsetof(struct xflow_hook_regs, rdx) / 8,
	offsetof(struct xflow_hook_regs, rcx) / 8, offsetof(struct xflow_hook_regs, rbx) / 8,
	offsetof(struct xflow_hook_regs, rsi) / 8, offsetof(struct xflow_hook_regs, rdi) / 8,
	offsetof(struct xflow_hook_regs, rbp) / 8, offsetof(struct xflow_hook_regs, rsp) / 8,
	offsetof(struct xflow_hook_regs, r8) / 8,  offsetof(struct xflow_hook_regs, r9) / 8,
	offsetof(struct xflow_hook_regs, r10) / 8, offsetof(struct xflow_hook_regs, r11) / 8,
	offsetof(struct xflow_hook_regs, r12) / 8, offsetof(struct xflow_hook_regs, r13) / 8,
	offsetof(struct xflow_hook_regs, r14) / 8, offsetof(struct xflow_hook_regs, r15) / 8,
	offsetof(struct xflow_hook_regs, rip) / 8,
};

static int reg_value(const struct xflow_hook_hit *hit, unsigned reg, uint64_t *v)
{
	if (reg > 16)
		return -EINVAL;
	if (reg == 16) {
		/* DWARF locations are computed at the site's address. */
		*v = hit->addr;
		return 0;
	}
	*v = ((const uint64_t *)hit->regs)[dwarf_reg[reg]];
	return 0;
}

/* Input @i of a binding: the struct pointer of target(), or the address of
 * a local_var() (a scratch cell when the variable has none). */
static int fetch(struct agent *a, const struct xflow_hook_hit *hit, const struct target *t,
		 const struct xflow_plan_site *s, const struct xflow_plan_fetch *f, uint8_t in_kind,
		 unsigned i, uint64_t *out)
{
	uint64_t r = 0, x = 0;
	switch (f->kind) {
	case XFLOW_FETCH_REG:
		if (reg_value(hit, f->reg, &r))
			return -EINVAL;
		break;
	case XFLOW_FETCH_MEM:
		if (reg_value(hit, f->reg, &r))
			return -EINVAL;
		*out = r + (uint64_t)f->off;
		return 0;
	case XFLOW_FETCH_STATIC:
		*out = (t && t->base ? t->base[s->binary] : 0) + (uint64_t)f->off;
		return 0;
	case XFLOW_FETCH_VALUE:
		if (reg_value(hit, f->reg, &r))
			return -EINVAL;
		if (f->scale && reg_value(hit, f->index, &x) == 0)
			r += x * f->scale;
		r += (uint64_t)f->off;
		break;
	default:
		return -EINVAL;
	}
	if (in_kind == XFLOW_IN_LOCAL_VAR) {
		a->scratch[i] = r;
		*out = XFLOW_INTERP_SCRATCH_BASE + 8u * i;
	} else {
		*out = r;
	}
	return 0;
}

/* The CPU + 1 stopped thread @tid last ran on, the one it hit the site
 * on (field 39 of /proc/TID/stat), or 0.  A few microseconds: the ptrace
 * backend's stop and resume cost several times more. */
static uint32_t thread_cpu_plus1(pid_t tid)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The name may hold spaces and parentheses: count after the last ')'. */
	char *p = strrchr(buf, ')');
	for (unsigned field = 2; p && field < 39; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		return 0;
	char *end;
	unsigned long cpu = strtoul(p + 1, &end, 10);
	return end != p + 1 && cpu <= XFLOW_RECORD_MAX_CPU ? (uint32_t)cpu + 1 : 0;
}

void agent_on_hit(const struct xflow_hook_hit *hit, void *data)
{
	struct site_ctx *c = data;
	struct agent *a = c->a;
	if (!a->dom)
		return;
	a->hit_ticks = xflow_clock_ticks(&a->clock);
	a->cur = hit->target;
	const struct target *t = hit->target->user_data;
	if (!t || !t->flows)
		return;
	const struct xflow_plan_site *s = &a->dom->sites[c->psite];
	struct xflow_record tmpl;
	memset(&tmpl, 0, sizeof(tmpl));
	tmpl.site_id = c->psite;
	tmpl.domain_id = a->o.domain_id;
	tmpl.thread_id = (uint32_t)hit->tid;
	tmpl.cpu_plus1 = a->o.vcpu_plus1 ? a->o.vcpu_plus1 : thread_cpu_plus1(hit->tid);
	uint32_t first = a->site_first[c->psite], end = first + a->site_nb[c->psite];
	/* Bindings are in weave order: xflow-derived advice first, so the
	 * recording advice after it sees the flow ids it set. */
	for (uint32_t bi = first; bi < end; bi++) {
		const struct xflow_plan_binding *b = &a->dom->bindings[bi];
		if (b->when != c->when)
			continue;
		struct advice_rt *ar = &a->adv[b->advice];
		if (!ar->enabled)
			continue;
		const struct xflow_plan_advice *pa = &a->plan->advice[b->advice];
		uint64_t inputs[XFLOW_BC_MAX_INPUTS];
		int bad = 0;
		for (unsigned i = 0; i < b->ninputs && !bad; i++)
			bad = fetch(a, hit, t, s, &a->dom->fetches[b->first_fetch + i], pa->prog.inputs[i].kind, i,
				    &inputs[i]);
		ar->hits++;
		if (bad) {
			ar->faults++;
			a->faults_total++;
			continue;
		}
		struct xflow_interp_env env = {
			.prog = &pa->prog, .inputs = inputs, .fields = a->fields, .flows = t->flows,
			.mem = &agent_mem_ops, .mem_ctx = a, .pc = hit->addr,
			.clock = hit_clock, .clock_ctx = a, .new_id = agent_new_id, .new_id_ctx = a,
			.sink = ring_sink, .sink_ctx = a,
			.tmpl = &tmpl,
			.marker_flags = pa->origin != XFLOW_ADVICE_USER ? pa->rec_flags : 0,
		};
		struct xflow_interp_result res;
		xflow_interp_run(&env, &res);
		ar->drops += res.dropped;
		if (res.rc) {
			ar->faults++;
			a->faults_total++;
		}
	}
	a->cur = NULL;
}
