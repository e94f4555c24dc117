/*
 * Patches: where a site's bytes are replaced, and by what.
 *
 * A jump (e9 rel32) takes 5 bytes, more than most instructions.  It may
 * cover the instructions after the site only where nothing can land
 * between its first and last byte or come back there:
 *
 *   - no branch of the binary lands inside (code_map.c: direct branches
 *     and jump tables; a function with an indirect jump it cannot follow,
 *     or a binary with exception landing pads, gets single-instruction
 *     jumps only);
 *   - no covered instruction but the last is a call (its return address
 *     would be inside);
 *   - the covered bytes stay in the site's function, or past an
 *     unconditional jump or ret in its padding up to the next function;
 *   - no thread is stopped inside, and no thread's stack holds an address
 *     inside (a return address, or the rip a signal frame will resume).
 *
 * Where a jump cannot go, the site's instruction gets an int3 instead and
 * the trapped thread is sent to the same trampoline (by the agent while it
 * runs, by the runtime's handler once it is gone); the site says why.  A
 * new jump whose bytes reach a jump patch placed earlier takes it in (one
 * trampoline serves both).  Everything here runs with the target's
 * threads stopped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <unistd.h>

#include "guestrt/hook/inproc/inproc_priv.h"
#include "guestrt/x86/x86_asm.h"

#define JMP_LEN 5
/* Tries, 1 ms apart, for the threads to leave the bytes a jump would cover. */
#define BUSY_TRIES 20

static struct ip_engine *eng(struct ip_target *t)
{
	return IP_ENGINE(t->pt.e);
}

static int patch_index(struct ip_target *t, uint64_t addr)
{
	int lo = 0, hi = t->npatches;
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (t->patches[mid]->addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

struct ip_patch *ip_patch_at(struct ip_target *t, uint64_t addr)
{
	int i = patch_index(t, addr + 1) - 1;
	if (i >= 0 && addr - t->patches[i]->addr < t->patches[i]->len)
		return t->patches[i];
	return NULL;
}

void ip_shadow(struct ip_target *t, uint64_t addr, void *buf, size_t len)
{
	uint8_t *b = buf;
	for (int i = 0; i < t->npatches; i++) {
		const struct ip_patch *p = t->patches[i];
		if (!p->installed)
			continue;
		for (unsigned k = 0; k < p->len; k++)
			if (p->addr + k - addr < len)
				b[p->addr + k - addr] = p->orig[k];
	}
}

/* The original bytes at addr (under our patches). */
static int read_orig(struct ip_target *t, uint64_t addr, uint8_t *buf, size_t len, size_t *got)
{
	struct xflow_map m;
	int rc = xflow_maps_find(t->pt.pub.pid, addr, &m);
	if (rc < 0)
		return rc == -ENOENT ? -EFAULT : rc;
	if (m.perms[2] != 'x')
		return -EACCES;
	*got = m.end - addr < len ? (size_t)(m.end - addr) : len;
	memset(buf, 0, len);
	rc = xflow_tmem_peek(&t->pt.mem, addr, buf, *got);
	if (rc == 0)
		ip_shadow(t, addr, buf, *got);
	return rc;
}

static int decode_at(struct ip_target *t, uint64_t addr, struct xflow_insn *in, char *why, size_t whylen)
{
	uint8_t code[16];
	size_t n;
	int rc = read_orig(t, addr, code, sizeof(code), &n);
	if (rc == -EFAULT)
		snprintf(why, whylen, "0x%" PRIx64 ": not mapped in pid %d", addr, (int)t->pt.pub.pid);
	else if (rc == -EACCES)
		snprintf(why, whylen, "0x%" PRIx64 ": not in an executable mapping of pid %d", addr, (int)t->pt.pub.pid);
	else if (rc < 0)
		snprintf(why, whylen, "0x%" PRIx64 ": cannot read the instruction: %s", addr, strerror(-rc));
	if (rc < 0)
		return rc;
	return xflow_insn_decode(code, n, addr, in, why, whylen);
}

/* ---- hooks and trampolines ------------------------------------------------ */

/* The psites of live, enabled placements at (addr, when). */
static uint32_t sites_at(struct ip_target *t, uint64_t addr, unsigned when, uint32_t *out, uint32_t max)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < t->nsites && n < max; i++) {
		const struct ip_site *s = &t->sites[i];
		if (s->live && s->enabled && s->addr == addr && s->when == when) {
			/* One call per plan site, whatever placements repeat it. */
			bool dup = false;
			for (uint32_t k = 0; k < n; k++)
				dup |= out[k] == s->psite;
			if (!dup)
				out[n++] = s->psite;
		}
	}
	return n;
}

/* What a hook at (addr, when) with plan sites @ps calls, written into zone
 * @z: its advice compiled to machine code, or (when the engine interprets,
 * or the compiler refuses a program) a descriptor for the runtime's
 * interpreter.  *where its address, *jit which. */
static int hook_write(struct ip_target *t, struct ip_zone *z, uint64_t addr, unsigned when, const uint32_t *ps,
		      uint32_t n, uint64_t *where, uint8_t *jit)
{
	enum { MAX = 64 << 10 };
	struct ip_engine *e = eng(t);
	uint8_t *buf = malloc(MAX);
	int len = -EINVAL;
	if (!buf)
		return -ENOMEM;
	uint64_t at = z->base + ((z->used + 15) & ~15u);
	*jit = 0;
	if (!e->interpret && t->ctl) {
		struct ip_jit_env env = { .ctl = t->ctl->r.map, .ctl_addr = t->ctl->r.addr, .image = t->image,
					  .fs_mode = t->fs_mode,
					  .head = &e->head };
		len = ip_jit_hook(&env, addr, when, ps, n, at, buf, MAX);
		*jit = len > 0;
	}
	if (len == -ENOMEM) {
		free(buf);
		return len;
	}
	if (len <= 0)
		len = ip_hook_desc(addr, when, ps, n, buf, MAX);
	int rc = len < 0 ? len : at + (uint64_t)len > z->base + IP_ZONE_SIZE ? -ENOSPC : ip_poke(t, at, buf, (size_t)len);
	free(buf);
	if (rc < 0)
		return rc;
	z->used = (uint32_t)(at + (uint64_t)len - z->base);
	*where = at;
	return 0;
}

/* Write p's trampoline for the placements that are live now into a zone;
 * p->entry is its entry then.  0, -ERANGE (out of reach from any zone we
 * could get) or another error. */
static int tramp_write(struct ip_target *t, struct ip_patch *p, bool *any)
{
	enum { MAXSITES = 64 };
	uint32_t ps[2 * IP_PATCH_MAX_INSNS][MAXSITES], nps[2 * IP_PATCH_MAX_INSNS];
	*any = false;
	for (int k = 0; k < p->ninsns; k++) {
		for (unsigned w = 0; w < 2; w++) {
			nps[k * 2 + w] = sites_at(t, p->insn[k].addr, w, ps[k * 2 + w], MAXSITES);
			*any |= nps[k * 2 + w] > 0;
		}
	}
	if (!*any)
		return 0;
	uint8_t code[2048];
	struct ip_zone *z;
	/* Room for the hooks' code is checked as it is written. */
	int rc = ip_zone_for(t, p->addr, sizeof(code) + 4096, &z);
	if (rc < 0)
		return rc;
	struct ip_hooks h;
	memset(&h, 0, sizeof(h));
	for (int i = 0; i < 2 * p->ninsns; i++) {
		if (!nps[i])
			continue;
		uint64_t *where = i & 1 ? &h.after[i / 2] : &h.before[i / 2];
		uint8_t *jit = i & 1 ? &h.jit_after[i / 2] : &h.jit_before[i / 2];
		rc = hook_write(t, z, p->insn[i / 2].addr, (unsigned)(i & 1), ps[i], nps[i], where, jit);
		if (rc < 0)
			return rc;
	}
	uint64_t at = z->base + ((z->used + 15) & ~15u);
	int n = ip_tramp_build(p, &h, at, z->stub, code, sizeof(code), &p->entry);
	if (n < 0)
		return n;
	if (at + (uint64_t)n > z->base + IP_ZONE_SIZE)
		return -ENOSPC;
	rc = ip_poke(t, at, code, (size_t)n);
	if (rc < 0)
		return rc;
	z->used = (uint32_t)(at + (uint64_t)n - z->base);
	return 0;
}

/* The patch's own bytes: e9 rel32 (and int3 over the rest), or an int3. */
static int patch_bytes(struct ip_patch *p, uint8_t *b)
{
	unsigned ours = p->guard && p->guard < p->len ? p->guard : p->len;
	memset(b, 0xcc, ours);
	memcpy(b + ours, p->orig + ours, p->len - ours);
	if (p->kind == IP_TRAP)
		return 0;
	return x86_jmp_rel32(b, p->addr, p->entry);
}

static int patch_write(struct ip_target *t, struct ip_patch *p)
{
	uint8_t b[sizeof(p->orig)];
	int rc = patch_bytes(p, b);
	if (rc == 0)
		rc = ip_poke(t, p->addr, b, p->len);
	if (rc == 0)
		p->installed = true;
	return rc;
}

/* Threads stopped at the int3 of p, their trap not served yet, go back to
 * the instruction, whose bytes are about to be the original ones again
 * (a late trap would otherwise find no patch and reach the program). */
static void unpend(struct ip_target *t, const struct ip_patch *p)
{
	for (int i = 0; i < t->pt.nthreads; i++) {
		struct pt_thread *th = t->pt.threads[i];
		struct user_regs_struct r;
		if (th->state != PT_STOPPED || !th->pending_hit || ptrace(PTRACE_GETREGS, th->tid, 0, &r) < 0 ||
		    r.rip - 1 - p->addr >= p->len)
			continue;
		r.rip = p->addr;
		if (ptrace(PTRACE_SETREGS, th->tid, 0, &r) == 0)
			th->pending_hit = false;
	}
}

static int patch_unwrite(struct ip_target *t, struct ip_patch *p, bool check)
{
	if (!p->installed)
		return 0;
	if (p->kind == IP_TRAP && check)
		unpend(t, p);
	uint8_t cur[sizeof(p->orig)], ours[sizeof(p->orig)];
	int rc = 0;
	/* Put back only our own bytes: anything else there is the target's
	 * code, rewritten by the target itself (or unmapped: -EFAULT). */
	if (check) {
		rc = xflow_tmem_peek(&t->pt.mem, p->addr, cur, p->len);
		if (rc == 0 && patch_bytes(p, ours) == 0 && memcmp(cur, ours, p->len) != 0)
			rc = -ESTALE;
	}
	if (rc == 0)
		rc = ip_poke(t, p->addr, p->orig, p->len);
	p->installed = false;
	return rc == -ESTALE || rc == -EFAULT ? 0 : rc;
}

static void patch_drop(struct ip_target *t, struct ip_patch *p)
{
	for (int i = 0; i < t->npatches; i++) {
		if (t->patches[i] == p) {
			memmove(&t->patches[i], &t->patches[i + 1], (size_t)(t->npatches - i - 1) * sizeof(*t->patches));
			t->npatches--;
			break;
		}
	}
	free(p);
}

static int patch_insert(struct ip_target *t, struct ip_patch *p)
{
	int rc = pt_grow((void **)&t->patches, &t->cappatches, t->npatches + 1, sizeof(*t->patches));
	if (rc < 0)
		return rc;
	int at = patch_index(t, p->addr);
	memmove(&t->patches[at + 1], &t->patches[at], (size_t)(t->npatches - at) * sizeof(*t->patches));
	t->patches[at] = p;
	t->npatches++;
	return 0;
}

/* ---- the trap table (for the runtime's handler) ---------------------------- */

int ip_traps_write(struct ip_target *t)
{
	uint32_t n = 0;
	/* Every trap patch listed, its int3 written or about to be: the entry
	 * goes in before the int3 and out after it. */
	for (int i = 0; i < t->npatches; i++)
		n += t->patches[i]->kind == IP_TRAP;
	uint64_t at = 0;
	if (n) {
		size_t size = sizeof(struct xflow_rt_traps) + n * sizeof(struct xflow_rt_trap);
		struct xflow_rt_traps *tab = calloc(1, size);
		if (!tab)
			return -ENOMEM;
		for (int i = 0; i < t->npatches; i++) {
			const struct ip_patch *p = t->patches[i];
			if (p->kind == IP_TRAP)
				tab->v[tab->n++] = (struct xflow_rt_trap){ .addr = p->addr, .resume = p->entry, .len = p->len };
		}
		struct ip_zone *z;
		int rc = ip_zone_for(t, t->patches[0]->addr, (uint32_t)size + 16, &z);
		if (rc == 0) {
			at = z->base + ((z->used + 15) & ~15u);
			rc = ip_poke(t, at, tab, size);
			if (rc == 0)
				z->used = (uint32_t)(at + size - z->base);
		}
		free(tab);
		if (rc < 0)
			return rc;
	}
	t->traps = at;
	return ip_config_set(t, offsetof(struct xflow_rt_config, traps), &at, sizeof(at));
}

/* ---- choosing the bytes ---------------------------------------------------- */

struct plan {
	struct ip_patch p;
	struct ip_patch *absorbs; /* a jump patch taken in, or NULL */
	char why[160];            /* why a jump cannot go here */
};

/* The first address inside (from, to) where a branch lands, or 0: a jump
 * over those bytes would be cut in two. */
static uint64_t target_inside(const struct xflow_code_map *cm, uint64_t bias, uint64_t from, uint64_t to)
{
	for (uint64_t a = from + 1; a < to; a++)
		if (xflow_code_map_is_target(cm, a - bias))
			return a;
	return 0;
}

/* Cover bytes from s->addr for a jump; false (with pl->why) when a jump
 * cannot go there.  pl->p.insn[0] is decoded either way. */
static bool plan_jump(struct ip_target *t, uint64_t addr, struct plan *pl, char *err, size_t errlen, int *rc)
{
	struct ip_patch *p = &pl->p;
	struct xflow_code_func f;
	uint64_t bias = 0;
	char why[160] = "";
	*rc = 0;
	p->addr = addr;
	p->kind = IP_JUMP;
	*rc = decode_at(t, addr, &p->insn[0], err, errlen);
	if (*rc < 0)
		return false;
	p->ninsns = 1;
	p->len = p->insn[0].len;

	struct xflow_code_map *cm = ip_code_map(eng(t), t, addr, &bias, why, sizeof(why));
	bool know = cm && xflow_code_map_func(cm, addr - bias, &f) == 0;
	if (p->len >= JMP_LEN)
		goto covered;
	if (!cm) {
		snprintf(pl->why, sizeof(pl->why), "'%.40s' is shorter than a jump and %.80s", p->insn[0].text,
			 why[0] ? why : "its binary has no symbols to tell where branches land");
		return false;
	}
	if (!know) {
		snprintf(pl->why, sizeof(pl->why), "'%.40s' is shorter than a jump and no function symbol covers it",
			 p->insn[0].text);
		return false;
	}
	if (f.opaque || xflow_code_map_landing_pads(cm)) {
		snprintf(pl->why, sizeof(pl->why), "'%.40s' is shorter than a jump and %.80s", p->insn[0].text,
			 f.opaque ? "its function has an indirect jump whose destinations are unknown"
				  : "its binary has exception landing pads");
		return false;
	}
	while (p->len < JMP_LEN) {
		const struct xflow_insn *prev = &p->insn[p->ninsns - 1];
		uint64_t at = addr + p->len;
		if (prev->kind == XFLOW_INSN_EMU_CALL || prev->kind == XFLOW_INSN_EMU_CALLR || prev->call_mem) {
			snprintf(pl->why, sizeof(pl->why), "the call '%.80s' would return inside the jump", prev->text);
			return false;
		}
		struct ip_patch *next = ip_patch_at(t, at);
		if (next && next->addr == at && next->kind == IP_JUMP && p->ninsns + next->ninsns <= IP_PATCH_MAX_INSNS &&
		    p->len + next->len <= sizeof(p->orig)) {
			/* A jump patch right behind: one trampoline for both. */
			memcpy(&p->insn[p->ninsns], next->insn, next->ninsns * sizeof(next->insn[0]));
			p->ninsns += next->ninsns;
			p->len += next->len;
			pl->absorbs = next;
			break;
		}
		if (next) {
			snprintf(pl->why, sizeof(pl->why), "a breakpoint site at 0x%" PRIx64 " is inside the jump's bytes",
				 next->addr);
			return false;
		}
		if (prev->uncond || prev->kind == XFLOW_INSN_EMU_JMP) {
			/* Never reached by falling through: the rest of the jump
			 * may cover what follows, if no branch lands there and it
			 * stays before the next function. */
			if (addr + JMP_LEN > f.next + bias) {
				snprintf(pl->why, sizeof(pl->why), "the jump would reach into the next function");
				return false;
			}
			p->len = JMP_LEN;
			break;
		}
		if (at >= f.end + bias) {
			snprintf(pl->why, sizeof(pl->why), "the jump would run past the end of its function");
			return false;
		}
		if (p->ninsns == IP_PATCH_MAX_INSNS)
			return false;
		char derr[200];
		if (decode_at(t, at, &p->insn[p->ninsns], derr, sizeof(derr)) < 0) {
			snprintf(pl->why, sizeof(pl->why), "the next instruction cannot move: %.120s", derr);
			return false;
		}
		p->len += p->insn[p->ninsns].len;
		p->ninsns++;
	}
	uint64_t lands = target_inside(cm, bias, addr, addr + p->len);
	if (lands) {
		snprintf(pl->why, sizeof(pl->why), "a branch lands at 0x%" PRIx64 ", inside the jump's bytes", lands);
		return false;
	}
covered:
	return p->len <= sizeof(p->orig);
}

/* Back-extension limits: how far before a site a jump may start, and how
 * much of a function is decoded to find where its instructions begin. */
#define BACK_MAX_BYTES 24u
#define BACK_MAX_SCAN 65536u

/* When the bytes after a short site cannot be taken (a branch lands there,
 * the function ends), the jump may start before it: at the jump patch that
 * ends right at the site (extended by the site's instruction), or at an
 * earlier instruction that no patch covers.  The trampoline runs those
 * instructions first, then the site's advice and instruction, and returns
 * right after it.  Where the function's instructions begin is found by
 * decoding it from its start.  True with pl->p (and pl->absorbs) set;
 * false leaves pl untouched. */
static bool plan_jump_back(struct ip_target *t, uint64_t addr, struct plan *pl)
{
	struct xflow_code_func f;
	uint64_t bias = 0;
	char why[160], err[200];
	struct xflow_code_map *cm = ip_code_map(eng(t), t, addr, &bias, why, sizeof(why));
	if (!cm || xflow_code_map_func(cm, addr - bias, &f) != 0 || f.opaque || xflow_code_map_landing_pads(cm))
		return false;
	const struct xflow_insn *site = &pl->p.insn[0];
	uint64_t end = addr + site->len;
	/* The site's own bytes are never a landing place. */
	if (xflow_code_map_is_target(cm, addr - bias) || target_inside(cm, bias, addr, end))
		return false;
	struct ip_patch np;
	struct ip_patch *prev = ip_patch_at(t, addr - 1);
	if (prev) {
		if (prev->kind != IP_JUMP || prev->addr + prev->len != addr || prev->ninsns == IP_PATCH_MAX_INSNS ||
		    prev->len + site->len > sizeof(prev->orig))
			return false;
		const struct xflow_insn *last = &prev->insn[prev->ninsns - 1];
		if (last->uncond || last->kind == XFLOW_INSN_EMU_JMP)
			return false;
		np = *prev;
		np.insn[np.ninsns++] = *site;
		/* A thread inside prev's trampoline (the world stopped it
		 * there) jumps back to the site: its bytes stay the program's,
		 * and that one pass runs the instruction without advice. */
		if (!np.guard)
			np.guard = np.len;
		np.len = (uint8_t)(np.len + site->len);
		np.installed = false;
		pl->p = np;
		pl->absorbs = prev;
		return true;
	}
	uint64_t start = f.start + bias;
	if (addr <= start || addr - start > BACK_MAX_SCAN)
		return false;
	size_t span = (size_t)(addr - start) + 16, got;
	uint8_t *code = malloc(span);
	if (!code)
		return false;
	bool ok = read_orig(t, start, code, span, &got) == 0 && got > addr - start;
	/* The last instructions before the site, as a ring. */
	struct xflow_insn back[IP_PATCH_MAX_INSNS];
	unsigned nback = 0;
	uint64_t at = start;
	while (ok && at < addr) {
		struct xflow_insn *in = &back[nback % IP_PATCH_MAX_INSNS];
		if (xflow_insn_decode(code + (at - start), got - (size_t)(at - start), at, in, err, sizeof(err)) < 0)
			ok = false;
		else
			at += in->len, nback++;
	}
	free(code);
	if (!ok || at != addr)
		return false;
	/* The nearest start that makes room for a jump. */
	unsigned have = nback < IP_PATCH_MAX_INSNS - 1 ? nback : IP_PATCH_MAX_INSNS - 1;
	for (unsigned k = 1; k <= have; k++) {
		const struct xflow_insn *first = &back[(nback - k) % IP_PATCH_MAX_INSNS];
		uint64_t from = first->addr;
		if (addr - from > BACK_MAX_BYTES || end - from > sizeof(np.orig))
			return false;
		/* Each instruction taken must fall through to the next, and
		 * none may be a call: its return would land inside the jump
		 * (the nearer ones were checked at smaller k). */
		if (first->uncond || first->kind == XFLOW_INSN_EMU_JMP || first->kind == XFLOW_INSN_EMU_CALL ||
		    first->kind == XFLOW_INSN_EMU_CALLR || first->call_mem)
			return false;
		if (ip_patch_at(t, from))
			return false;
		if (end - from < JMP_LEN)
			continue;
		if (target_inside(cm, bias, from, end))
			return false;
		memset(&np, 0, sizeof(np));
		np.addr = from;
		np.kind = IP_JUMP;
		for (unsigned j = k; j >= 1; j--)
			np.insn[np.ninsns++] = back[(nback - j) % IP_PATCH_MAX_INSNS];
		np.insn[np.ninsns++] = *site;
		np.len = (uint8_t)(end - from);
		pl->p = np;
		pl->absorbs = NULL;
		return true;
	}
	return false;
}

/* Wait (briefly, the world running meanwhile) for every thread to be out
 * of (addr, addr + len): not stopped there, no return into it. */
static bool bytes_free(struct ip_target *t, uint64_t addr, unsigned len, char *why, size_t whylen)
{
	uint64_t a = addr + 1, l = len - 1;
	if (l == 0)
		return true;
	for (int i = 0; i < BUSY_TRIES; i++) {
		if (!ip_busy(t, &a, &l, 1, why, whylen))
			return true;
		pt_resume_world(&t->pt);
		usleep(1000);
		if (pt_stop_world(&t->pt) < 0)
			return false;
	}
	return false;
}

/* The trap variant of a site that a jump cannot take: the instruction
 * alone, an int3 on it. */
static void plan_trap(struct plan *pl)
{
	pl->p.kind = IP_TRAP;
	pl->p.ninsns = 1;
	pl->p.len = pl->p.insn[0].len;
	pl->absorbs = NULL;
}

/* Every placement p serves says how, and for a trap why. */
static void site_mech(struct ip_target *t, const struct ip_patch *p)
{
	for (uint32_t i = 0; i < t->nsites; i++) {
		struct ip_site *s = &t->sites[i];
		if (!s->live || s->addr - p->addr >= p->len)
			continue;
		s->mech = p->kind == IP_JUMP ? XFLOW_HOOK_MECH_JUMP : XFLOW_HOOK_MECH_TRAP_INTARGET;
		memcpy(s->why, p->why, sizeof(s->why));
	}
}

int ip_patch_rebuild(struct ip_target *t, struct ip_patch *p)
{
	bool any;
	uint64_t old = p->entry;
	int rc = tramp_write(t, p, &any);
	if (rc < 0)
		return rc;
	if (!any) {
		/* No placement left here: the original bytes come back. */
		bool trap = p->kind == IP_TRAP;
		rc = patch_unwrite(t, p, true);
		patch_drop(t, p);
		return trap && rc == 0 ? ip_traps_write(t) : rc;
	}
	if (p->kind == IP_TRAP)
		return ip_traps_write(t);
	/* The jump's displacement alone changes (threads are stopped, none is
	 * inside the patch: it had to be so to be written). */
	(void)old;
	return patch_write(t, p);
}

int ip_site_place(struct ip_target *t, struct ip_site *s)
{
	struct xflow_hook *h = &t->pt.e->pub;
	struct ip_patch *cur = ip_patch_at(t, s->addr);
	if (cur) {
		bool boundary = false;
		for (int k = 0; k < cur->ninsns; k++)
			boundary |= cur->insn[k].addr == s->addr;
		if (!boundary)
			return xflow_hook_fail(h, -EINVAL, "0x%" PRIx64 ": not an instruction boundary (a patch at 0x%" PRIx64
						   " covers it)", s->addr, cur->addr);
		int rc = ip_patch_rebuild(t, cur);
		if (rc == 0)
			site_mech(t, cur);
		return rc < 0 ? xflow_hook_fail(h, rc, "0x%" PRIx64 ": cannot rebuild its trampoline: %s", s->addr,
						xflow_hook_strerror(rc))
			      : 0;
	}

	struct plan *pl = calloc(1, sizeof(*pl));
	if (!pl)
		return -ENOMEM;
	char err[256] = "";
	int rc;
	bool jump = plan_jump(t, s->addr, pl, err, sizeof(err), &rc);
	if (rc < 0) {
		free(pl);
		return xflow_hook_fail(h, rc, "%s", err[0] ? err : xflow_hook_strerror(rc));
	}
	/* The site's own instruction, for a breakpoint if the jump fails. */
	struct ip_patch *alone = malloc(sizeof(*alone));
	if (!alone) {
		free(pl);
		return -ENOMEM;
	}
	*alone = pl->p;
	alone->ninsns = 1;
	alone->len = alone->insn[0].len;
	if (!jump && !pl->absorbs) {
		/* Forward the bytes cannot be taken: perhaps backward.  The
		 * forward reason stays the one given if not. */
		struct ip_patch site = pl->p;
		pl->p = *alone;
		jump = plan_jump_back(t, s->addr, pl);
		if (!jump)
			pl->p = site;
	}
	if (jump && !bytes_free(t, pl->p.addr, pl->p.len, pl->why, sizeof(pl->why)))
		jump = false;
	if (!jump) {
		/* The site alone, wherever a jump would have started. */
		pl->p = *alone;
		plan_trap(pl);
	}

	struct ip_patch *p = malloc(sizeof(*p));
	if (!p) {
		free(alone);
		free(pl);
		return -ENOMEM;
	}
	*p = pl->p;
	bool any = false;
	size_t got;
	/* The bytes to put back, whichever way the site is served. */
	rc = read_orig(t, p->addr, p->orig, p->len, &got);
	if (rc == 0 && got < p->len)
		rc = -EFAULT;
	if (rc == 0)
		rc = tramp_write(t, p, &any);
	if (rc == -ERANGE && p->kind == IP_JUMP) {
		/* An operand out of reach of every zone near enough: a trap's
		 * trampoline moves one instruction only, the site's (the jump
		 * may have started before it), which may fit. */
		snprintf(pl->why, sizeof(pl->why), "an operand would be out of reach of the trampoline");
		pl->absorbs = NULL;
		*p = *alone;
		p->kind = IP_TRAP;
		p->guard = 0;
		rc = read_orig(t, p->addr, p->orig, p->len, &got);
		if (rc == 0 && got < p->len)
			rc = -EFAULT;
		if (rc == 0)
			rc = tramp_write(t, p, &any);
	}
	free(alone);
	bool trap = p->kind == IP_TRAP;
	/* A trap is in the runtime's table before its int3 is in the text:
	 * should we die in between, the runtime's handler serves it. */
	if (rc == 0 && trap && (rc = patch_insert(t, p)) == 0)
		rc = ip_traps_write(t);
	/* Written before the patch taken in is forgotten: until then a
	 * failure leaves that one as it was. */
	if (rc == 0)
		rc = patch_write(t, p);
	if (rc == 0 && pl->absorbs) {
		pl->absorbs->installed = false;
		patch_drop(t, pl->absorbs);
	}
	if (rc == 0 && !trap)
		rc = patch_insert(t, p);
	if (rc < 0) {
		if (p->installed)
			ip_poke(t, p->addr, p->orig, p->len);
		for (int i = 0; i < t->npatches; i++)
			if (t->patches[i] == p)
				patch_drop(t, p), p = NULL;
		free(p);
		if (trap)
			ip_traps_write(t);
		free(pl);
		return xflow_hook_fail(h, rc, "0x%" PRIx64 ": cannot patch it: %s", s->addr, xflow_hook_strerror(rc));
	}
	if (p->kind == IP_TRAP)
		memcpy(p->why, pl->why, sizeof(p->why));
	else
		p->why[0] = 0;
	site_mech(t, p);
	free(pl);
	return 0;
}

/* The placements at addr changed: rebuild the patch serving it. */
int ip_patch_unplace(struct ip_target *t, uint64_t addr)
{
	struct ip_patch *p = ip_patch_at(t, addr);
	return p ? ip_patch_rebuild(t, p) : 0;
}

void ip_patches_restore(struct ip_target *t, bool emergency)
{
	for (int i = 0; i < t->npatches; i++)
		patch_unwrite(t, t->patches[i], true);
	if (!emergency) {
		for (int i = 0; i < t->npatches; i++)
			free(t->patches[i]);
		t->npatches = 0;
	}
}
