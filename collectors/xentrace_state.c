/*
 * The xentrace decoder and its summary.
 *
 * The accounting follows xenalyze (xen/tools/xentrace/xenalyze.c, as of Xen
 * 4.17), so that the summary agrees with `xenalyze --summary` line for line:
 * vcpus start in an INIT state and come out of it only when seen to run; a
 * runstate interval is counted when it closes, only if its start TSC is
 * known and earlier; each runstate change re-derives the domain's state
 * (blocked, partial run, full run, partial contention, concurrency hazard,
 * full contention, lost); when a vcpu lands on a new pcpu, the time since
 * its previous landing is credited to the new pcpu's affinity line (as
 * xenalyze does); lost records set the vcpus they may hide to LOST; at the
 * end each pcpu's current vcpu is set to LOST at the pcpu's last TSC.
 *
 * Where xenalyze would exit (an impossible transition, a record too short),
 * this decoder skips the record and counts it.  Not reproduced: xenalyze's
 * TSC skew correction (it shifts a cpu's later TSCs when two cpus disagree
 * about a vcpu; such a record is skipped and counted here), its HVM handler,
 * shadow and interrupt-to-halt breakdowns.
 *
 * Percentiles come from the project's histogram (relative error 1/128)
 * over every value, in bounded memory: what xflowtop's views use.  With
 * xentrace_state_keep_samples(), each summary also keeps xenalyze's own
 * sample set and the summary's braces are xenalyze's statistics over it,
 * byte for byte: {5%|50%|95%} are plain order statistics on the affinity
 * and exit lines, and "self-weighted" ones on the runstate lines, each
 * sample weighing its own value (where the time goes, not how often).
 *
 * Memory is bounded: at most XENTRACE_MAX_DOMAINS domains, 256 vcpus per
 * domain, XENTRACE_MAX_VCPUS_TOTAL vcpus and XENTRACE_HIST_BUDGET histograms;
 * past those, records are counted as skipped (percentiles as dropped).
 * Kept samples are bounded as xenalyze bounds them: XENTRACE_SAMPLE_MAX
 * values per summary.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/xentrace.h"
#include "xflow/histogram.h"

enum { RUNNABLE_INVALID, RUNNABLE_WAKE, RUNNABLE_PREEMPT, RUNNABLE_OTHER, RUNNABLE_MAX };
enum { DT_NONE, DT_HVM, DT_PV };
enum { TL_GEN, TL_SCHED, TL_DOM0OP, TL_HVM, TL_MEM, TL_PV, TL_SHADOW, TL_HW, TL_MAX };
enum { HVM_VOL_VMENTRY, HVM_VOL_VMEXIT, HVM_VOL_HANDLER, HVM_VOL_MAX };

#define PV_MAX XENTRACE_PV_EVENT_MAX
#define PV_TRAP_MAX 20
#define MEM_MAX 19
#define VMX_EXIT_REASON_MAX XENTRACE_VMX_EXIT_NAMES /* xenalyze's HVM_VMX_EXIT_REASON_MAX */
#define UNKNOWN_SLOTS 1024     /* distinct unknown event ids kept */
#define LIFETIME_SLOTS 1024
#define IRQ_SLOTS 256           /* distinct interrupt lines followed */
#define EV_GUEST_MASK 0x0800f000u

/*
 * xenalyze's sample set of one summary, as its update_cycles() keeps it:
 * every non-zero value while there is room, the room doubling from 1024
 * to XENTRACE_SAMPLE_MAX; past that, the value seen as number k lands in
 * slot k % size on the laps that xenalyze's rule picks.  The order matters:
 * its self-weighted percentile depends on it.
 */
struct samples {
	int64_t *v;
	uint32_t size;  /* slots allocated */
	uint64_t seen;  /* non-zero values offered */
};

/* Cycles of one kind, with a histogram of them when the budget allows,
 * and xenalyze's samples when kept. */
struct csum {
	uint64_t count, cycles;
	struct xflow_hist *h;
	struct samples *sm;
};

/* xenalyze's event summary: every event counted, cycles only when non-zero. */
struct esum {
	uint64_t count, ccount, cycles;
	struct xflow_hist *h;
	struct samples *sm;
};

struct xentrace_vcpu {
	struct xentrace_domain *d;
	unsigned vid;
	bool activated;
	int pcpu; /* where it last ran (xenalyze's v->p), -1: nowhere yet */
	int state, runnable_state;
	uint64_t rs_tsc;
	struct {
		int wrong, actual;
	} last_oldstate;
	uint64_t pcpu_tsc;
	uint64_t migrations;
	struct csum runstates[XENTRACE_RS_MAX];
	struct csum runnable[RUNNABLE_MAX];
	struct csum aff_all;
	struct csum *aff_pcpu; /* [XENTRACE_MAX_CPUS], on first use */
	int dtype;
	/* PV */
	bool pv_summary;
	uint32_t pv_count[PV_MAX];
	uint32_t hypercalls[XENTRACE_HYPERCALL_MAX];
	uint32_t traps[PV_TRAP_MAX];
	/* HVM */
	bool hvm_init, vmexit_valid, hvm_summary;
	unsigned exit_reason;
	uint64_t exit_tsc;
	struct esum exits[XENTRACE_VMX_EXIT_MAX];
};

struct xentrace_domain {
	unsigned did;
	int max_vid;
	int runstate;
	uint64_t rs_tsc;
	struct csum runstates[XENTRACE_DRS_MAX];
	uint64_t guest_records;
	uint32_t memops_done[MEM_MAX], memops_for[MEM_MAX];
	struct xentrace_vcpu *vcpu[XENTRACE_MAX_VCPUS];
};

struct pcpu {
	bool active, summary, have_first;
	struct xentrace_vcpu *current;
	uint64_t first_tsc, last_tsc;
	struct {
		bool active, domain_valid, seen_valid_schedule;
		unsigned did, vid;
		uint64_t tsc;
	} lost;
	uint64_t volume[TL_MAX], sched_verbose, hvm_volume[HVM_VOL_MAX];
};

struct lifetime {
	uint32_t domid; /* UINT32_MAX: free */
	uint64_t created, destroyed;
};

struct xentrace_state {
	uint64_t cpu_hz;
	uint64_t first_tsc, last_tsc, total_cycles;
	int max_active_pcpu, lost_cpus;
	unsigned ndoms, nvcpus, nhists;
	uint64_t hist_dropped, skipped, guest_records, records;
	uint64_t unknown_total, unknown_overflow;
	uint64_t lost_events, lost_records, migrations;
	struct xentrace_domain *doms[XENTRACE_MAX_DOMAINS]; /* sorted by id */
	struct xentrace_domain default_dom;                 /* placeholder "running" at start */
	struct pcpu pcpu[XENTRACE_MAX_CPUS];
	struct {
		uint32_t event;
		uint64_t count;
	} unknown[UNKNOWN_SLOTS];
	struct lifetime life[LIFETIME_SLOTS];
	struct {
		uint32_t irq; /* UINT32_MAX: free */
		uint64_t count, cycles;
	} irq[IRQ_SLOTS];
	uint64_t irq_dropped, hw_records;
	unsigned nnotes;
	uint64_t notes_dropped;
	struct xentrace_diag notes[XENTRACE_MAX_DIAGS];
	bool finished;
	bool keep_samples;
	uint64_t samples_dropped; /* values no sample set could take (no memory) */
};

static const char *const runstate_name[XENTRACE_RS_MAX] = {
	"running", "runnable", "blocked", "offline", "lost", "queued", "init",
};
static const char *const runnable_name[RUNNABLE_MAX] = { "invalid", "wake", "preempt", "other" };
static const char *const domain_runstate_name[XENTRACE_DRS_MAX] = {
	"blocked", "partial run", "full run", "partial contention", "concurrency_hazard",
	"full_contention", "lost",
};
static const char *const toplevel_name[TL_MAX] = { "gen", "sched", "dom0op", "hvm", "mem", "pv",
						   "shadow", "hw" };
static const char *const hvm_vol_name[HVM_VOL_MAX] = { "vmentry", "vmexit", "handler" };
static const char *const pv_name[PV_MAX] = {
	[1] = "hypercall", [3] = "trap", [4] = "page_fault", [5] = "forced_invalid_op",
	[6] = "emulate privop", [7] = "emulate 4g", [8] = "math state restore", [9] = "paging fixup",
	[10] = "gdt/ldt mapping fault", [11] = "ptwr", [12] = "ptwr(pae)", [13] = "hypercall",
	[14] = "hypercall (subcall)",
};
/* Hypercall numbers of xen/xen.h, with xenalyze's names. */
static const char *const hypercall_name[XENTRACE_HYPERCALL_MAX] = {
	"set_trap_table", "mmu_update", "set_gdt", "stack_switch", "set_callbacks", "fpu_taskswitch",
	"sched_op(compat)", "platform_op", "set_debugreg", "get_debugreg", "update_descriptor", NULL,
	"memory_op", "multicall", "update_va_mapping", "set_timer_op", "evtchn_op(compat)",
	"xen_version", "console_io", "physdev_op(compat)", "grant_table_op", "vm_assist",
	"update_va_mapping_otherdomain", "iret", "vcpu_op", "set_segment_base", "mmuext_op", "acm_op",
	"nmi_op", "sched_op", "callback_op", "xenoprof_op", "evtchn_op", "physdev_op", "hvm_op",
	"sysctl", "domctl", "kexec_op",
};
/* Intel SDM basic exit reasons. */
static const char *const vmx_exit_name[VMX_EXIT_REASON_MAX] = {
	"EXCEPTION_NMI", "EXTERNAL_INTERRUPT", "TRIPLE_FAULT", "INIT", "SIPI", "IO_SMI", "OTHER_SMI",
	"PENDING_INTERRUPT", "PENDING_VIRT_NMI", "TASK_SWITCH", "CPUID", "GETSEC", "HLT", "INVD",
	"INVLPG", "RDPMC", "RDTSC", "RSM", "VMCALL", "VMCLEAR", "VMLAUNCH", "VMPTRLD", "VMPTRST",
	"VMREAD", "VMRESUME", "VMWRITE", "VMOFF", "VMON", "CR_ACCESS", "DR_ACCESS", "IO_INSTRUCTION",
	"MSR_READ", "MSR_WRITE", "INVALID_GUEST_STATE", "MSR_LOADING", NULL, "MWAIT_INSTRUCTION",
	"MONITOR_TRAP_FLAG", NULL, "MONITOR_INSTRUCTION", "PAUSE_INSTRUCTION", "MACHINE_CHECK", NULL,
	"TPR_BELOW_THRESHOLD", "APIC_ACCESS", NULL, "ACCESS_GDTR_OR_IDTR", "ACCESS_LDTR_OR_TR",
	"EPT_VIOLATION", "EPT_MISCONFIG", "INVEPT", "RDTSCP", "VMX_PREEMPTION_TIMER_EXPIRED", "INVVPID",
	"WBINVD", "XSETBV",
};
static const char *const mem_name[MEM_MAX] = {
	[1] = "grant-map", [2] = "grant-unmap", [3] = "grant-transfer", [4] = "set-p2m",
	[5] = "decrease-reservation", [16] = "pod-populate", [17] = "pod-zero-reclaim",
	[18] = "pod-superpage-splinter",
};

__attribute__((format(printf, 4, 5)))
static void note(struct xentrace_state *s, const struct xentrace_record *rec, uint64_t *counter,
		 const char *fmt, ...)
{
	if (counter)
		(*counter)++;
	if (s->nnotes >= XENTRACE_MAX_DIAGS) {
		s->notes_dropped++;
		return;
	}
	struct xentrace_diag *d = &s->notes[s->nnotes++];
	d->kind = XENTRACE_DIAG_DECODE;
	d->cpu = rec ? rec->cpu : -1;
	d->offset = rec ? rec->offset : 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->what, sizeof(d->what), fmt, ap);
	va_end(ap);
}

/* --- summaries ----------------------------------------------------------- */

static struct xflow_hist *hist_get(struct xentrace_state *s, struct xflow_hist **h)
{
	if (!*h) {
		if (s->nhists >= XENTRACE_HIST_BUDGET || !(*h = malloc(sizeof(**h)))) {
			s->hist_dropped++;
			return NULL;
		}
		xflow_hist_init(*h);
		s->nhists++;
	}
	return *h;
}

#define SAMPLE_FIRST 1024u

/* xenalyze's update_cycles(), the sample set's part. */
static void samples_add(struct xentrace_state *s, struct samples **smp, uint64_t v)
{
	if (!*smp && !(*smp = calloc(1, sizeof(**smp)))) {
		s->samples_dropped++;
		return;
	}
	struct samples *sm = *smp;
	if (sm->seen >= sm->size && sm->size < XENTRACE_SAMPLE_MAX) {
		uint32_t n = sm->size ? sm->size * 2 : SAMPLE_FIRST;
		if (n > XENTRACE_SAMPLE_MAX)
			n = XENTRACE_SAMPLE_MAX;
		int64_t *nv = realloc(sm->v, (size_t)n * sizeof(*nv));
		if (nv) {
			sm->v = nv;
			sm->size = n;
		}
	}
	if (sm->seen < sm->size) {
		sm->v[sm->seen] = (int64_t)v;
	} else if (sm->size) {
		int64_t lap = (int64_t)(sm->seen / sm->size) + 1, slot = (int64_t)(sm->seen % sm->size);
		if ((slot - lap / 3) % lap == 0)
			sm->v[slot] = (int64_t)v;
	} else {
		s->samples_dropped++;
	}
	sm->seen++;
}

static void samples_free(struct samples *sm)
{
	if (sm)
		free(sm->v);
	free(sm);
}

/* xenalyze's update_cycles(): a zero interval is not counted. */
static void csum_add(struct xentrace_state *s, struct csum *c, uint64_t v)
{
	if (v == 0)
		return;
	c->count++;
	c->cycles += v;
	struct xflow_hist *h = hist_get(s, &c->h);
	if (h)
		xflow_hist_record(h, v);
	if (s->keep_samples)
		samples_add(s, &c->sm, v);
}

/* xenalyze's update_summary(): every event counts, cycles when non-zero. */
static void esum_add(struct xentrace_state *s, struct esum *e, uint64_t v)
{
	if (v) {
		e->ccount++;
		e->cycles += v;
		struct xflow_hist *h = hist_get(s, &e->h);
		if (h)
			xflow_hist_record(h, v);
		if (s->keep_samples)
			samples_add(s, &e->sm, v);
	}
	e->count++;
}

/* --- domains and vcpus ----------------------------------------------------- */

static struct xentrace_domain *domain_find(struct xentrace_state *s, unsigned did)
{
	if (did == XENTRACE_DEFAULT_DOMAIN)
		return &s->default_dom;
	unsigned lo = 0, hi = s->ndoms;
	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;
		if (s->doms[mid]->did < did)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < s->ndoms && s->doms[lo]->did == did)
		return s->doms[lo];
	if (s->ndoms >= XENTRACE_MAX_DOMAINS)
		return NULL;
	struct xentrace_domain *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->did = did;
	memmove(&s->doms[lo + 1], &s->doms[lo], (s->ndoms - lo) * sizeof(s->doms[0]));
	s->doms[lo] = d;
	s->ndoms++;
	return d;
}

static struct xentrace_vcpu *vcpu_create(struct xentrace_state *s, struct xentrace_domain *d, unsigned vid)
{
	if (s->nvcpus >= XENTRACE_MAX_VCPUS_TOTAL)
		return NULL;
	struct xentrace_vcpu *v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->d = d;
	v->vid = vid;
	v->pcpu = -1;
	v->state = XENTRACE_RS_INIT;
	v->last_oldstate.wrong = XENTRACE_RS_INIT;
	d->vcpu[vid] = v;
	if ((int)vid > d->max_vid)
		d->max_vid = (int)vid;
	s->nvcpus++;
	return v;
}

/* NULL when an id is out of range or a limit is reached (the caller counts). */
static struct xentrace_vcpu *vcpu_find(struct xentrace_state *s, unsigned did, unsigned vid)
{
	if (vid >= XENTRACE_MAX_VCPUS)
		return NULL;
	struct xentrace_domain *d = domain_find(s, did);
	if (!d)
		return NULL;
	return d->vcpu[vid] ? d->vcpu[vid] : vcpu_create(s, d, vid);
}

static int domain_runstate(const struct xentrace_domain *d)
{
	if (d->did == XENTRACE_DEFAULT_DOMAIN)
		return 0;
	int n[XENTRACE_RS_MAX] = { 0 }, vcpus = 0;
	for (int i = 0; i <= d->max_vid; i++) {
		if (d->vcpu[i] && d->vcpu[i]->state != XENTRACE_RS_INIT) {
			vcpus++;
			n[d->vcpu[i]->state]++;
		}
	}
	bool stopped = n[XENTRACE_RS_BLOCKED] || n[XENTRACE_RS_OFFLINE];
	if (n[XENTRACE_RS_LOST] == vcpus)
		return XENTRACE_DRS_LOST;
	if (n[XENTRACE_RS_RUNNING]) {
		if (n[XENTRACE_RS_RUNNABLE])
			return XENTRACE_DRS_CONCURRENCY_HAZARD;
		return stopped ? XENTRACE_DRS_PARTIAL_RUN : XENTRACE_DRS_FULL_RUN;
	}
	if (n[XENTRACE_RS_RUNNABLE])
		return stopped ? XENTRACE_DRS_PARTIAL_CONTENTION : XENTRACE_DRS_FULL_CONTENTION;
	/* Only lost and queued vcpus: xenalyze would stop here; call it lost. */
	return stopped ? XENTRACE_DRS_BLOCKED : XENTRACE_DRS_LOST;
}

static void runstate_update(struct xentrace_state *s, struct xentrace_vcpu *v, int new_state, uint64_t tsc)
{
	struct xentrace_domain *d = v->d;
	if (v->rs_tsc > 0 && v->rs_tsc < tsc) {
		csum_add(s, &v->runstates[v->state], tsc - v->rs_tsc);
		if (v->state == XENTRACE_RS_RUNNABLE)
			csum_add(s, &v->runnable[v->runnable_state], tsc - v->rs_tsc);
	}
	if (new_state == XENTRACE_RS_RUNNABLE) {
		if (v->state == XENTRACE_RS_RUNNING)
			v->runnable_state = RUNNABLE_PREEMPT;
		else if (v->state == XENTRACE_RS_BLOCKED || v->state == XENTRACE_RS_OFFLINE)
			v->runnable_state = RUNNABLE_WAKE;
		else
			v->runnable_state = RUNNABLE_OTHER;
	} else {
		v->runnable_state = RUNNABLE_INVALID;
	}
	v->state = new_state;
	v->rs_tsc = tsc;
	if (d->rs_tsc > 0 && d->rs_tsc < tsc)
		csum_add(s, &d->runstates[d->runstate], tsc - d->rs_tsc);
	d->runstate = domain_runstate(d);
	d->rs_tsc = tsc;
}

static void hvm_close_vmexit(struct xentrace_state *s, struct xentrace_vcpu *v, uint64_t tsc)
{
	if (v->exit_tsc) {
		uint64_t arc = v->exit_tsc > tsc ? 0 : tsc - v->exit_tsc;
		if (v->exit_tsc <= tsc) {
			esum_add(s, &v->exits[v->exit_reason], arc);
			v->hvm_summary = true;
		}
	}
	v->exit_tsc = 0;
	v->vmexit_valid = false;
}

static void lose_vcpu(struct xentrace_state *s, struct xentrace_vcpu *v, uint64_t tsc)
{
	if (v->dtype == DT_HVM)
		v->vmexit_valid = false;
	runstate_update(s, v, XENTRACE_RS_LOST, tsc);
}

static void vcpu_prev_update(struct xentrace_state *s, struct pcpu *p, int pid, struct xentrace_vcpu *prev,
			     uint64_t tsc, int new_state)
{
	/* Inconsistent bookkeeping: drop the interval rather than guess it. */
	if (prev->pcpu != pid || p->current != prev || prev->state != XENTRACE_RS_RUNNING)
		prev->rs_tsc = 0;
	p->current = NULL;
	runstate_update(s, prev, new_state, tsc);
}

static void vcpu_next_update(struct xentrace_state *s, struct pcpu *p, int pid, struct xentrace_vcpu *next,
			     uint64_t tsc)
{
	if (p->current) {
		/* xenalyze stops here when it has seen a valid schedule; a lost
		 * record can explain it, anything else is counted as a skip. */
		if (p->lost.seen_valid_schedule)
			note(s, NULL, &s->skipped, "cpu %d: d%uv%u scheduled while d%uv%u still current", pid,
			     next->d->did, next->vid, p->current->d->did, p->current->vid);
		runstate_update(s, p->current, XENTRACE_RS_LOST, tsc);
		p->current = NULL;
	}
	/* A vcpu followed across pcpus: any landing elsewhere than where it
	 * last ran is a migration (xenalyze's affinity lines skip the first). */
	if (next->pcpu >= 0 && next->pcpu != pid && next->d->did != XENTRACE_DEFAULT_DOMAIN) {
		next->migrations++;
		s->migrations++;
	}
	if (next->activated) {
		if (next->state == XENTRACE_RS_RUNNING && next->d->did != XENTRACE_DEFAULT_DOMAIN)
			next->rs_tsc = 0;
		if (next->pcpu != pid) {
			if (next->pcpu_tsc) {
				uint64_t c = tsc > next->pcpu_tsc ? tsc - next->pcpu_tsc : next->pcpu_tsc - tsc;
				csum_add(s, &next->aff_all, c);
				if (!next->aff_pcpu)
					next->aff_pcpu = calloc(XENTRACE_MAX_CPUS, sizeof(*next->aff_pcpu));
				if (next->aff_pcpu)
					csum_add(s, &next->aff_pcpu[pid], c);
			}
			next->pcpu_tsc = tsc;
		}
	} else {
		next->activated = true;
		next->pcpu_tsc = tsc;
	}
	runstate_update(s, next, XENTRACE_RS_RUNNING, tsc);
	next->pcpu = pid;
	p->current = next;
	p->lost.seen_valid_schedule = true;
}

/* A vcpu still in INIT: xenalyze's start-of-day rules. */
static void vcpu_start(struct xentrace_state *s, const struct xentrace_record *rec, struct pcpu *p, int pid,
		       struct xentrace_vcpu *v, int old_state, int new_state)
{
	if (old_state == XENTRACE_RS_RUNNING) {
		if (!p->current || p->current->d->did != XENTRACE_DEFAULT_DOMAIN) {
			note(s, rec, &s->skipped, "d%uv%u starts running on cpu %d, which already runs a vcpu",
			     v->d->did, v->vid, pid);
			return;
		}
		runstate_update(s, p->current, XENTRACE_RS_QUEUED, p->first_tsc);
		p->current = NULL;
	}
	/* Not out of INIT until seen running somewhere: TSC skew at start of
	 * day is hard to reason about. */
	if (new_state != XENTRACE_RS_RUNNING)
		return;
	uint64_t tsc = old_state == XENTRACE_RS_RUNNING ? p->first_tsc : rec->tsc;
	runstate_update(s, v, XENTRACE_RS_RUNNING, tsc);
	p->current = v;
	v->pcpu = pid;
}

static void sched_runstate(struct xentrace_state *s, const struct xentrace_record *rec, struct pcpu *p)
{
	int pid = rec->cpu;
	unsigned lo = rec->event & 0xf;
	int old_state, new_state;
	bool cont = false;
	if (lo == 1) {
		new_state = (rec->event >> 4) & 0xf;
		old_state = (rec->event >> 8) & 0xf;
	} else if (lo == 2) {
		cont = true;
		new_state = old_state = XENTRACE_RS_RUNNING;
	} else {
		s->unknown_total++;
		return;
	}
	if (rec->nextra < 1 || new_state > XENTRACE_RS_OFFLINE || old_state > XENTRACE_RS_OFFLINE) {
		note(s, rec, &s->skipped, "runstate record 0x%x: states out of range or %u extra words", rec->event, rec->nextra);
		return;
	}
	unsigned vid = rec->extra[0] & 0xffff, did = rec->extra[0] >> 16;
	struct xentrace_vcpu *v = vcpu_find(s, did, vid);
	if (!v) {
		note(s, rec, &s->skipped, "d%uv%u: vcpu out of range or too many vcpus", did, vid);
		return;
	}
	struct {
		int wrong, actual;
	} last = { v->last_oldstate.wrong, v->last_oldstate.actual };
	v->last_oldstate.wrong = XENTRACE_RS_INIT;

	if (v->state == XENTRACE_RS_INIT) {
		vcpu_start(s, rec, p, pid, v, old_state, new_state);
		return;
	}
	if (new_state == XENTRACE_RS_RUNNABLE && v->dtype == DT_HVM && v->vmexit_valid)
		hvm_close_vmexit(s, v, rec->tsc);

	if (v->state != old_state) {
		if (v->state == XENTRACE_RS_LOST) {
			if (new_state != XENTRACE_RS_RUNNING)
				return;
		} else if (last.wrong == new_state && last.actual == old_state) {
			/* xenalyze corrects a cpu's TSC skew here; we do not. */
			note(s, rec, &s->skipped, "d%uv%u: TSC skew between cpus suspected", did, vid);
			return;
		} else {
			v->last_oldstate.wrong = old_state;
			v->last_oldstate.actual = v->state;
			if (v->state == XENTRACE_RS_RUNNING)
				return;
		}
	}

	if (cont) {
		if (v->state == XENTRACE_RS_LOST) {
			if (p->current)
				vcpu_prev_update(s, p, pid, p->current, rec->tsc, XENTRACE_RS_LOST);
			vcpu_next_update(s, p, pid, v, rec->tsc);
		} else if (v->state != XENTRACE_RS_RUNNING || v->pcpu != pid) {
			note(s, rec, &s->skipped, "d%uv%u continues running on cpu %d but is %s on cpu %d", did,
			     vid, pid, runstate_name[v->state], v->pcpu);
			return;
		}
		runstate_update(s, v, XENTRACE_RS_RUNNING, rec->tsc);
	} else if (old_state == XENTRACE_RS_RUNNING || v->state == XENTRACE_RS_RUNNING) {
		if (old_state == XENTRACE_RS_RUNNING) {
			if (v->state != XENTRACE_RS_RUNNING && v->state != XENTRACE_RS_LOST) {
				note(s, rec, &s->skipped, "d%uv%u leaves running but is %s", did, vid,
				     runstate_name[v->state]);
				return;
			}
			vcpu_prev_update(s, p, pid, v, rec->tsc, new_state);
		} else if (v->pcpu >= 0) {
			vcpu_prev_update(s, &s->pcpu[v->pcpu], v->pcpu, v, rec->tsc, new_state);
		}
		if (s->lost_cpus && v->d->did != XENTRACE_IDLE_DOMAIN)
			lose_vcpu(s, v, rec->tsc);
	} else if (new_state == XENTRACE_RS_RUNNING) {
		vcpu_next_update(s, p, pid, v, rec->tsc);
	} else {
		runstate_update(s, v, new_state, rec->tsc);
	}
}

static struct lifetime *lifetime(struct xentrace_state *s, uint32_t domid)
{
	unsigned i = (domid * 2654435761u) % LIFETIME_SLOTS;
	for (unsigned n = 0; n < LIFETIME_SLOTS; n++, i = (i + 1) % LIFETIME_SLOTS) {
		if (s->life[i].domid == domid)
			return &s->life[i];
		if (s->life[i].domid == UINT32_MAX) {
			s->life[i].domid = domid;
			return &s->life[i];
		}
	}
	return NULL;
}

static void irq_handled(struct xentrace_state *s, uint32_t irq, uint32_t cycles)
{
	unsigned i = (irq * 2654435761u) % IRQ_SLOTS;
	for (unsigned n = 0; n < IRQ_SLOTS; n++, i = (i + 1) % IRQ_SLOTS) {
		if (s->irq[i].irq == irq || s->irq[i].irq == UINT32_MAX) {
			s->irq[i].irq = irq;
			s->irq[i].count++;
			s->irq[i].cycles += cycles;
			return;
		}
	}
	s->irq_dropped++;
}

static void count_unknown(struct xentrace_state *s, uint32_t event)
{
	s->unknown_total++;
	unsigned i = (event * 2654435761u) % UNKNOWN_SLOTS;
	for (unsigned n = 0; n < UNKNOWN_SLOTS; n++, i = (i + 1) % UNKNOWN_SLOTS) {
		if (s->unknown[i].count && s->unknown[i].event == event) {
			s->unknown[i].count++;
			return;
		}
		if (!s->unknown[i].count) {
			s->unknown[i].event = event;
			s->unknown[i].count = 1;
			return;
		}
	}
	s->unknown_overflow++;
}

static void sched_process(struct xentrace_state *s, const struct xentrace_record *rec, struct pcpu *p)
{
	unsigned sub = (rec->event >> 12) & 0xf;
	if (sub == 1) {
		sched_runstate(s, rec, p);
	} else if (sub == 8) {
		unsigned minor = rec->event & 0xfff;
		if ((minor == 1 || minor == 2) && rec->nextra >= 1) { /* TRC_SCHED_DOM_ADD / _REM */
			struct lifetime *l = lifetime(s, rec->extra[0]);
			if (l && minor == 1 && !l->created)
				l->created = rec->tsc;
			if (l && minor == 2)
				l->destroyed = rec->tsc;
		} else if (minor == 0 || minor > 17) {
			count_unknown(s, rec->event);
		}
	} else if (sub == 2 || sub == 0xf) {
		/* Scheduler-specific records: nothing to account. */
	} else {
		p->sched_verbose += xentrace_record_size(rec);
		count_unknown(s, rec->event);
	}
}

static void pv_process(struct xentrace_state *s, const struct xentrace_record *rec, struct xentrace_vcpu *v)
{
	unsigned minor = rec->event & 0xff;
	bool x64 = rec->event & 0x100;
	if (minor >= PV_MAX || !pv_name[minor]) {
		count_unknown(s, rec->event);
		return;
	}
	v->dtype = DT_PV;
	v->pv_summary = true;
	v->pv_count[minor == 12 ? 11 : minor]++;
	unsigned op;
	switch (minor) {
	case 1: /* hypercall: eip (32 or 64 bits), eax */
		if (rec->nextra < (x64 ? 3 : 2)) {
			note(s, rec, &s->skipped, "PV hypercall record with %u extra words", rec->nextra);
			return;
		}
		op = rec->extra[x64 ? 2 : 1];
		if (op < XENTRACE_HYPERCALL_MAX)
			v->hypercalls[op]++;
		break;
	case 3: /* trap: eip, trapnr:15 use_error_code:1 error_code:16 */
		if (rec->nextra < (x64 ? 3 : 2)) {
			note(s, rec, &s->skipped, "PV trap record with %u extra words", rec->nextra);
			return;
		}
		op = rec->extra[x64 ? 2 : 1] & 0x7fff;
		if (op < PV_TRAP_MAX)
			v->traps[op]++;
		break;
	case 13: /* hypercall v2 and multicall subcalls: op and argument mask */
	case 14:
		if (rec->nextra < 1) {
			note(s, rec, &s->skipped, "PV hypercall record with no extra word");
			return;
		}
		op = rec->extra[0] & ~0xfff00000u;
		if (op < XENTRACE_HYPERCALL_MAX)
			v->hypercalls[op]++;
		break;
	}
}

static void hvm_process(struct xentrace_state *s, const struct xentrace_record *rec, struct pcpu *p,
			struct xentrace_vcpu *v)
{
	unsigned sub = (rec->event >> 12) & 0xf;
	unsigned sz = xentrace_record_size(rec);
	v->dtype = DT_HVM;
	if (sub == 2) {
		p->hvm_volume[HVM_VOL_HANDLER] += sz;
		return;
	}
	switch (rec->event) {
	case 0x81002:   /* TRC_HVM_VMEXIT: reason, eip */
	case 0x81102: { /* TRC_HVM_VMEXIT64: reason, rip (64) */
		p->hvm_volume[HVM_VOL_VMEXIT] += sz;
		unsigned want = rec->event == 0x81102 ? 3 : 2;
		if (rec->nextra != want) {
			note(s, rec, &s->skipped, "vmexit with %u extra words, expected %u", rec->nextra, want);
			return;
		}
		v->hvm_init = true;
		v->vmexit_valid = true;
		if (rec->extra[0] > VMX_EXIT_REASON_MAX) {
			note(s, rec, &s->skipped, "vmexit reason %u out of range", rec->extra[0]);
			v->vmexit_valid = false;
			return;
		}
		v->exit_reason = rec->extra[0];
		v->exit_tsc = rec->tsc;
		break;
	}
	case 0x81001: /* TRC_HVM_VMENTRY */
		p->hvm_volume[HVM_VOL_VMENTRY] += sz;
		if (v->hvm_init && v->vmexit_valid)
			hvm_close_vmexit(s, v, rec->tsc);
		break;
	default:
		count_unknown(s, rec->event);
	}
}

static void lost_records(struct xentrace_state *s, const struct xentrace_record *rec, struct pcpu *p, int pid)
{
	if (rec->nextra != 4) {
		note(s, rec, &s->skipped, "lost-records record with %u extra words", rec->nextra);
		return;
	}
	uint64_t first = rec->extra[2] | (uint64_t)rec->extra[3] << 32;
	s->lost_events++;
	s->lost_records += rec->extra[0];
	if (p->current) {
		if (p->current->dtype == DT_HVM)
			p->current->vmexit_valid = false;
		vcpu_prev_update(s, p, pid, p->current, first, XENTRACE_RS_LOST);
	}
	if (!p->lost.active)
		s->lost_cpus++;
	p->lost.active = true;
	p->lost.tsc = first;
	/* Any vcpu not running may have run on the lost cpu meanwhile. */
	for (unsigned i = 0; i < s->ndoms; i++) {
		struct xentrace_domain *d = s->doms[i];
		for (int j = 0; j <= d->max_vid; j++)
			if (d->vcpu[j] && d->vcpu[j]->state != XENTRACE_RS_RUNNING)
				lose_vcpu(s, d->vcpu[j], first);
	}
	p->lost.domain_valid = true;
	p->lost.did = rec->extra[1] & 0xffff;
	p->lost.vid = rec->extra[1] >> 16;
}

static void lost_records_end(struct xentrace_state *s, const struct xentrace_record *rec, struct pcpu *p, int pid)
{
	if (rec->nextra != 4)
		return;
	if (!p->lost.active) {
		note(s, rec, &s->skipped, "end of lost records on cpu %d, which lost none", pid);
		return;
	}
	if (rec->tsc <= p->lost.tsc)
		return;
	if (p->lost.domain_valid) {
		if (p->current) {
			note(s, rec, &s->skipped, "after lost records, cpu %d already runs d%uv%u", pid,
			     p->current->d->did, p->current->vid);
			return;
		}
		struct xentrace_vcpu *v = vcpu_find(s, p->lost.did, p->lost.vid);
		if (v) {
			vcpu_next_update(s, p, pid, v, rec->tsc);
			p->lost.seen_valid_schedule = false;
		}
		p->lost.domain_valid = false;
	}
	p->lost.active = false;
	if (s->lost_cpus > 0)
		s->lost_cpus--;
}

static void deactivate_pcpu(struct xentrace_state *s, struct pcpu *p, int pid)
{
	if (p->current)
		lose_vcpu(s, p->current, p->last_tsc);
	p->active = false;
	if (pid == s->max_active_pcpu) {
		int m = -1;
		for (int i = 0; i <= s->max_active_pcpu; i++)
			if (s->pcpu[i].active)
				m = i;
		s->max_active_pcpu = m;
	}
}

static void activate_pcpu(struct xentrace_state *s, struct pcpu *p, int pid)
{
	/* A placeholder vcpu "runs" on each pcpu until its first schedule. */
	struct xentrace_vcpu *v = s->default_dom.vcpu[pid];
	if (!v)
		v = vcpu_create(s, &s->default_dom, (unsigned)pid);
	if (v) {
		v->activated = true;
		v->pcpu = pid;
		v->state = XENTRACE_RS_RUNNING;
	}
	p->current = v;
	p->active = true;
	p->lost.seen_valid_schedule = true;
	if (pid > s->max_active_pcpu)
		s->max_active_pcpu = pid;
}

static int toplevel_of(uint32_t event)
{
	unsigned main = (event >> 16) & 0xfff, n = 0;
	int tl = -1;
	for (int i = 0; i < TL_MAX; i++)
		if (main & (1u << i)) {
			tl = i;
			n++;
		}
	return n == 1 ? tl : -1;
}

void xentrace_state_feed(struct xentrace_state *s, const struct xentrace_record *rec)
{
	int pid = rec->cpu;
	if (pid >= XENTRACE_MAX_CPUS)
		return;
	struct pcpu *p = &s->pcpu[pid];
	if (!p->active)
		activate_pcpu(s, p, pid);
	bool lost_end = rec->flags & XENTRACE_REC_LOST_END;
	if (!lost_end)
		s->records++;
	if (rec->has_tsc && !lost_end) {
		if (!p->have_first) {
			p->first_tsc = rec->tsc;
			p->have_first = true;
		}
		p->last_tsc = rec->tsc;
	}
	p->summary = true;
	/* The trace's time span, on the merge's clock. */
	if (rec->tsc && rec->tsc >= s->first_tsc) {
		if (s->first_tsc == 0)
			s->first_tsc = rec->order_tsc;
		s->last_tsc = rec->order_tsc;
		s->total_cycles = s->last_tsc - s->first_tsc;
	}

	int tl = toplevel_of(rec->event);
	if (tl < 0) {
		if ((rec->event & EV_GUEST_MASK) == EV_GUEST_MASK) {
			s->guest_records++;
			if (p->current)
				p->current->d->guest_records++;
		} else {
			count_unknown(s, rec->event);
		}
		goto out;
	}
	/* PV, HVM and shadow records belong to the vcpu running here. */
	struct xentrace_vcpu *cur = p->current;
	if (tl == TL_PV || tl == TL_HVM || tl == TL_SHADOW) {
		int want = tl == TL_PV ? DT_PV : DT_HVM;
		if (!cur || cur->d->did == XENTRACE_IDLE_DOMAIN || (cur->dtype != DT_NONE && cur->dtype != want)) {
			s->skipped++;
			goto volume;
		}
	}
	switch (tl) {
	case TL_GEN:
		if (rec->event == XENTRACE_EV_LOST_RECORDS) {
			if (lost_end)
				lost_records_end(s, rec, p, pid);
			else
				lost_records(s, rec, p, pid);
		} else if (rec->event != XENTRACE_EV_WRAP_BUFFER) {
			count_unknown(s, rec->event);
		}
		break;
	case TL_SCHED:
		sched_process(s, rec, p);
		break;
	case TL_PV:
		pv_process(s, rec, cur);
		break;
	case TL_HVM:
		hvm_process(s, rec, p, cur);
		break;
	case TL_SHADOW:
		cur->dtype = DT_HVM;
		break;
	case TL_MEM: {
		unsigned minor = rec->event & 0xfff;
		bool named = minor < MEM_MAX && mem_name[minor];
		if (!named && minor < MEM_MAX && p->current && rec->nextra >= 1) {
			p->current->d->memops_done[minor]++;
			struct xentrace_domain *d = domain_find(s, rec->extra[0]);
			if (d)
				d->memops_for[minor]++;
		} else if (!named) {
			count_unknown(s, rec->event);
		}
		break;
	}
	case TL_DOM0OP:
		if ((rec->event == 0x41001 || rec->event == 0x41002) && rec->nextra >= 1) {
			struct lifetime *l = lifetime(s, rec->extra[0]);
			if (l && rec->event == 0x41001)
				l->created = rec->tsc;
			if (l && rec->event == 0x41002)
				l->destroyed = rec->tsc;
		} else {
			count_unknown(s, rec->event);
		}
		break;
	case TL_HW:
		s->hw_records++;
		/* TRC_HW_IRQ_HANDLED {irq, start tsc, end tsc} (low words). */
		if (rec->event == 0x802008 && rec->nextra >= 3)
			irq_handled(s, rec->extra[0], rec->extra[2] - rec->extra[1]);
		break;
	}
volume:
	p->volume[tl] += xentrace_record_size(rec);
out:
	if (rec->flags & XENTRACE_REC_CPU_LAST)
		deactivate_pcpu(s, p, pid);
}

void xentrace_state_finish(struct xentrace_state *s)
{
	if (s->finished)
		return;
	s->finished = true;
	for (int i = 0; i < XENTRACE_MAX_CPUS; i++)
		if (s->pcpu[i].active)
			deactivate_pcpu(s, &s->pcpu[i], i);
	/* The stint on the last pcpu counts in the affinity lines. */
	for (unsigned i = 0; i < s->ndoms; i++) {
		struct xentrace_domain *d = s->doms[i];
		for (int j = 0; j <= d->max_vid; j++) {
			struct xentrace_vcpu *v = d->vcpu[j];
			if (!v || !v->pcpu_tsc || v->pcpu < 0)
				continue;
			uint64_t c = s->last_tsc > v->pcpu_tsc ? s->last_tsc - v->pcpu_tsc : v->pcpu_tsc - s->last_tsc;
			csum_add(s, &v->aff_all, c);
			if (!v->aff_pcpu)
				v->aff_pcpu = calloc(XENTRACE_MAX_CPUS, sizeof(*v->aff_pcpu));
			if (v->aff_pcpu)
				csum_add(s, &v->aff_pcpu[v->pcpu], c);
		}
	}
}

int xentrace_state_run(struct xentrace_state *s, struct xentrace_reader *r)
{
	const struct xentrace_record *rec;
	int rc;
	while ((rc = xentrace_reader_next(r, &rec)) == 1)
		xentrace_state_feed(s, rec);
	xentrace_state_finish(s);
	return rc;
}

void xentrace_state_keep_samples(struct xentrace_state *s)
{
	s->keep_samples = true;
}

int xentrace_state_new(struct xentrace_state **out, uint64_t cpu_hz)
{
	*out = NULL;
	if (cpu_hz == 0)
		return -EINVAL;
	struct xentrace_state *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->cpu_hz = cpu_hz;
	s->max_active_pcpu = -1;
	s->default_dom.did = XENTRACE_DEFAULT_DOMAIN;
	for (unsigned i = 0; i < LIFETIME_SLOTS; i++)
		s->life[i].domid = UINT32_MAX;
	for (unsigned i = 0; i < IRQ_SLOTS; i++)
		s->irq[i].irq = UINT32_MAX;
	*out = s;
	return 0;
}

static void csum_fini(struct csum *c)
{
	free(c->h);
	samples_free(c->sm);
}

static void vcpu_free(struct xentrace_vcpu *v)
{
	if (!v)
		return;
	for (int i = 0; i < XENTRACE_RS_MAX; i++)
		csum_fini(&v->runstates[i]);
	for (int i = 0; i < RUNNABLE_MAX; i++)
		csum_fini(&v->runnable[i]);
	csum_fini(&v->aff_all);
	if (v->aff_pcpu)
		for (int i = 0; i < XENTRACE_MAX_CPUS; i++)
			csum_fini(&v->aff_pcpu[i]);
	free(v->aff_pcpu);
	for (int i = 0; i < XENTRACE_VMX_EXIT_MAX; i++) {
		free(v->exits[i].h);
		samples_free(v->exits[i].sm);
	}
	free(v);
}

static void domain_fini(struct xentrace_domain *d)
{
	for (int i = 0; i < XENTRACE_DRS_MAX; i++)
		csum_fini(&d->runstates[i]);
	for (int i = 0; i < XENTRACE_MAX_VCPUS; i++)
		vcpu_free(d->vcpu[i]);
}

void xentrace_state_free(struct xentrace_state *s)
{
	if (!s)
		return;
	for (unsigned i = 0; i < s->ndoms; i++) {
		domain_fini(s->doms[i]);
		free(s->doms[i]);
	}
	domain_fini(&s->default_dom);
	free(s);
}

/* --- percentiles ----------------------------------------------------------- */

/* The value of a bucket: its midpoint, inside the recorded min and max. */
static uint64_t bucket_value(const struct xflow_hist *h, const struct xflow_hist_bucket *b)
{
	uint64_t mid = b->low + (b->high - b->low) / 2;
	return mid < h->min ? h->min : mid > h->max ? h->max : mid;
}

/* xenalyze's percentile(): the sample of 0-based rank count*pct/100. */
static uint64_t pct_plain(const struct xflow_hist *h, uint64_t count, int pct)
{
	if (!h || !h->count)
		return 0;
	uint64_t k = count * (uint64_t)pct / 100; /* 0-based */
	return xflow_hist_quantile(h, ((double)k + 0.5) / (double)h->count);
}

/* xenalyze's self_weighted_percentile(): the value below which pct% of the
 * total (not of the count) lies — where the time goes. */
static uint64_t pct_weighted(const struct xflow_hist *h, int pct)
{
	if (!h || !h->count)
		return 0;
	struct xflow_hist_bucket b;
	unsigned it = 0;
	double total = 0;
	while (xflow_hist_next(h, &it, &b))
		total += (double)b.count * (double)bucket_value(h, &b);
	double target = total * pct / 100.0, seen = 0;
	it = 0;
	while (xflow_hist_next(h, &it, &b)) {
		seen += (double)b.count * (double)bucket_value(h, &b);
		if (seen > target)
			return bucket_value(h, &b);
	}
	return h->max;
}

/* --- xenalyze's statistics over its samples -------------------------------- */

static int i64_cmp(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* A copy of the samples xenalyze's print functions look at: the first
 * min(seen, size), in the order they sit.  NULL when there are none. */
static int64_t *samples_copy(const struct samples *sm, size_t *n)
{
	*n = sm ? (size_t)(sm->seen < sm->size ? sm->seen : sm->size) : 0;
	int64_t *v = *n ? malloc(*n * sizeof(*v)) : NULL;
	if (v)
		memcpy(v, sm->v, *n * sizeof(*v));
	else
		*n = 0;
	return v;
}

/* xenalyze's percentile(): the sample of rank n * pct / 100 (0-based) in
 * sorted order; an order statistic, whatever the order of the samples. */
static void plain_percentiles(const struct samples *sm, int64_t p[3])
{
	size_t n;
	int64_t *v = samples_copy(sm, &n);
	static const int pct[3] = { 5, 50, 95 };
	if (n)
		qsort(v, n, sizeof(*v), i64_cmp);
	for (int k = 0; k < 3; k++)
		p[k] = n ? v[n * (size_t)pct[k] / 100] : 0;
	free(v);
}

/*
 * xenalyze's self_weighted_percentile(): a selection in which each sample
 * weighs its own value, narrowing [lo, hi] by partitions around the middle
 * sample with running weights before each cursor.  The right cursor's
 * weight starts as the weight before it, and as the cursor moves left it
 * takes off the sample it leaves rather than the one it reaches, so the
 * answer is not a function of the values alone: it depends on their order.
 * Hence the same statistic needs this same walk over the same samples in
 * the same order, and the caller asks for 50, 5 and 95 in that order over
 * one array, each call leaving it as xenalyze's does.  Where neither bound
 * would move (xenalyze would loop for ever), it stops.
 */
static int64_t self_weighted(int64_t *v, ptrdiff_t n, int pct)
{
	int64_t total = 0;
	for (ptrdiff_t i = 0; i < n; i++)
		total += v[i];
	const int64_t want = total * pct / 100;
	ptrdiff_t lo = 0, hi = n - 1;
	int64_t lo_w = 0, hi_w = total - v[hi];
	while (lo < hi) {
		const int64_t pivot = v[(lo + hi) >> 1];
		ptrdiff_t i = lo, j = hi;
		int64_t iw = lo_w, jw = hi_w;
		do {
			for (; v[i] < pivot; i++)
				iw += v[i];
			for (; pivot < v[j]; j--)
				jw -= v[j];
			if (i <= j) {
				int64_t t = v[i];
				v[i] = v[j];
				v[j] = t;
				iw += v[i++];
				jw -= v[j--];
			}
		} while (i <= j);
		bool moved = false;
		if (jw < want) {
			lo = i;
			lo_w = iw;
			moved = true;
		}
		if (want < iw) {
			hi = j;
			hi_w = jw;
			moved = true;
		}
		if (!moved)
			break;
	}
	return v[lo];
}

static void weighted_percentiles(const struct samples *sm, int64_t p[3])
{
	size_t n;
	int64_t *v = samples_copy(sm, &n);
	/* xenalyze's order of calls: 50, then 5, then 95. */
	p[1] = n ? self_weighted(v, (ptrdiff_t)n, 50) : 0;
	p[0] = n ? self_weighted(v, (ptrdiff_t)n, 5) : 0;
	p[2] = n ? self_weighted(v, (ptrdiff_t)n, 95) : 0;
	free(v);
}

/* --- the summary ------------------------------------------------------------ */

/* {5%|50%|95%} of a summary: xenalyze's own over its samples when they are
 * kept, else the histogram's estimate of the same statistic. */
static void brace_values(const struct xentrace_state *s, const struct xflow_hist *h, const struct samples *sm,
			 uint64_t count, bool weighted, long long out[3])
{
	int64_t p[3];
	if (s->keep_samples && weighted) {
		weighted_percentiles(sm, p);
	} else if (s->keep_samples) {
		plain_percentiles(sm, p);
	} else {
		static const int pct[3] = { 5, 50, 95 };
		for (int k = 0; k < 3; k++)
			p[k] = (int64_t)(weighted ? pct_weighted(h, pct[k]) : pct_plain(h, count, pct[k]));
	}
	for (int k = 0; k < 3; k++)
		out[k] = (long long)p[k];
}

static void print_cycle_summary(const struct xentrace_state *s, FILE *out, const struct csum *c,
				const char *label)
{
	if (!c->count)
		return;
	long long p[3];
	brace_values(s, c->h, c->sm, c->count, true, p);
	fprintf(out, "%s: %7d %5.2lfs %6lld {%6lld|%6lld|%6lld}\n", label, (int)c->count,
		(double)c->cycles / (double)s->cpu_hz, (long long)(c->cycles / c->count), p[0], p[1], p[2]);
}

static void print_cpu_affinity(const struct xentrace_state *s, FILE *out, const struct csum *c, const char *label)
{
	if (!c->count)
		return;
	long long p[3];
	brace_values(s, c->h, c->sm, c->count, false, p);
	fprintf(out, "%s: %7d %6lld {%6lld|%6lld|%6lld}\n", label, (int)c->count,
		(long long)(c->cycles / c->count), p[0], p[1], p[2]);
}

static void print_esum(const struct xentrace_state *s, FILE *out, const struct esum *e, const char *label)
{
	if (!e->count)
		return;
	double pct = s->total_cycles ? (double)(e->cycles * 100) / (double)s->total_cycles : 0;
	long long p[3];
	brace_values(s, e->h, e->sm, e->ccount, false, p);
	fprintf(out, "%s %7d %5.2lfs %5.2lf%% %5lld cyc {%5lld|%5lld|%5lld}\n", label, (int)e->count,
		(double)e->cycles / (double)s->cpu_hz, pct, (long long)(e->ccount ? e->cycles / e->ccount : 0),
		p[0], p[1], p[2]);
}

static void print_vcpu(const struct xentrace_state *s, FILE *out, const struct xentrace_vcpu *v)
{
	char label[48];
	fprintf(out, "-- v%u --\n", v->vid);
	fprintf(out, " Runstates:\n");
	for (int i = 0; i < XENTRACE_RS_MAX; i++) {
		snprintf(label, sizeof(label), "  %8s", runstate_name[i]);
		print_cycle_summary(s, out, &v->runstates[i], label);
		if (i == XENTRACE_RS_RUNNABLE)
			for (int j = 1; j < RUNNABLE_MAX; j++) {
				snprintf(label, sizeof(label), "    %8s", runnable_name[j]);
				print_cycle_summary(s, out, &v->runnable[j], label);
			}
	}
	print_cpu_affinity(s, out, &v->aff_all, " cpu affinity");
	if (v->aff_pcpu)
		for (int i = 0; i < XENTRACE_MAX_CPUS; i++) {
			snprintf(label, sizeof(label), "   [%d]", i);
			print_cpu_affinity(s, out, &v->aff_pcpu[i], label);
		}
	if (v->dtype == DT_HVM && v->hvm_summary) {
		fprintf(out, "Exit reasons:\n");
		for (int i = 0; i < VMX_EXIT_REASON_MAX; i++) {
			if (vmx_exit_name[i])
				snprintf(label, sizeof(label), " %-20s ", vmx_exit_name[i]);
			else
				snprintf(label, sizeof(label), " %20d ", i);
			print_esum(s, out, &v->exits[i], label);
		}
		fprintf(out, "Guest interrupt counts:\n");
	} else if (v->dtype == DT_PV && v->pv_summary) {
		fprintf(out, "PV events:\n");
		for (int i = 0; i < PV_MAX; i++) {
			unsigned n = v->pv_count[i] + (i == 13 ? v->pv_count[14] : 0);
			if (!n)
				continue;
			fprintf(out, "  %s  %u\n", pv_name[i], n);
			if (i == 1 || i == 13) {
				for (int j = 0; j < XENTRACE_HYPERCALL_MAX; j++)
					if (v->hypercalls[j])
						fprintf(out, "    %-29s[%2d]: %6u\n",
							j < (int)(sizeof(hypercall_name) / sizeof(hypercall_name[0])) &&
									hypercall_name[j]
								? hypercall_name[j]
								: "(null)",
							j, v->hypercalls[j]);
			} else if (i == 3) {
				for (int j = 0; j < PV_TRAP_MAX; j++)
					if (v->traps[j])
						fprintf(out, "    [%d] %u\n", j, v->traps[j]);
			}
		}
	}
}

void xentrace_state_print_summary(const struct xentrace_state *s, FILE *out)
{
	double hz = (double)s->cpu_hz;
	char suffix = ' ';
	float shown = (float)hz;
	if (s->cpu_hz > 1000000000ull) {
		shown = (float)(hz / 1e9);
		suffix = 'G';
	} else if (s->cpu_hz > 1000000ull) {
		shown = (float)(hz / 1e6);
		suffix = 'M';
	} else if (s->cpu_hz > 1000ull) {
		shown = (float)(hz / 1e3);
		suffix = 'k';
	}
	fprintf(out, "Total time: %.2lf seconds (using cpu speed %1.2lf %cHz)\n", (double)s->total_cycles / hz,
		(double)shown, suffix);
	fprintf(out, "--- Log volume summary ---\n");
	for (int i = 0; i < XENTRACE_MAX_CPUS; i++) {
		const struct pcpu *p = &s->pcpu[i];
		if (!p->summary)
			continue;
		fprintf(out, " - cpu %d -\n", i);
		for (int j = 0; j < TL_MAX; j++) {
			if (!p->volume[j])
				continue;
			fprintf(out, " %-6s: %10lld\n", toplevel_name[j], (long long)p->volume[j]);
			if (j == TL_SCHED && p->sched_verbose)
				fprintf(out, " +-verbose: %10lld\n", (long long)p->sched_verbose);
			if (j == TL_HVM)
				for (int k = 0; k < HVM_VOL_MAX; k++)
					if (p->hvm_volume[k])
						fprintf(out, " +-%-7s: %10lld\n", hvm_vol_name[k],
							(long long)p->hvm_volume[k]);
		}
	}
	for (unsigned i = 0; i < s->ndoms; i++) {
		const struct xentrace_domain *d = s->doms[i];
		char label[48];
		fprintf(out, "|-- Domain %u --|\n", d->did);
		fprintf(out, " Runstates:\n");
		for (int j = 0; j < XENTRACE_DRS_MAX; j++) {
			snprintf(label, sizeof(label), "  %8s", domain_runstate_name[j]);
			print_cycle_summary(s, out, &d->runstates[j], label);
		}
		fprintf(out, " Grant table ops:\n  Done by:\n");
		for (int j = 0; j < MEM_MAX; j++)
			if (d->memops_done[j])
				fprintf(out, "   %-14s: %u\n", mem_name[j] ? mem_name[j] : "(null)", d->memops_done[j]);
		fprintf(out, "  Done for:\n");
		for (int j = 0; j < MEM_MAX; j++)
			if (d->memops_for[j])
				fprintf(out, "   %-14s: %u\n", mem_name[j] ? mem_name[j] : "(null)", d->memops_for[j]);
		fprintf(out, " Populate-on-demand:\n  Populated:\n  Reclaim order:\n  Reclaim contexts:\n");
		for (int j = 0; j < XENTRACE_MAX_VCPUS; j++)
			if (d->vcpu[j])
				print_vcpu(s, out, d->vcpu[j]);
		fprintf(out, "Emulate eip list\n");
	}
}

void xentrace_state_print_extras(const struct xentrace_state *s, FILE *out)
{
	fprintf(out, "--- xflow-xentrace extras ---\n");
	fprintf(out, "records %" PRIu64 ", skipped %" PRIu64 ", unknown %" PRIu64 ", guest %" PRIu64
		     ", lost-record markers %" PRIu64 " (%" PRIu64 " records lost), migrations %" PRIu64 "\n",
		s->records, s->skipped, s->unknown_total, s->guest_records, s->lost_events, s->lost_records,
		s->migrations);
	if (s->hist_dropped)
		fprintf(out, "percentiles dropped for %" PRIu64 " values (histogram budget)\n", s->hist_dropped);
	if (s->samples_dropped)
		fprintf(out, "xenalyze's samples dropped for %" PRIu64 " values (no memory): its percentiles "
			     "are not exact\n", s->samples_dropped);
	for (unsigned i = 0; i < UNKNOWN_SLOTS; i++)
		if (s->unknown[i].count)
			fprintf(out, "unknown event 0x%07x: %" PRIu64 "\n", s->unknown[i].event, s->unknown[i].count);
	for (unsigned i = 0; i < IRQ_SLOTS; i++)
		if (s->irq[i].irq != UINT32_MAX)
			fprintf(out, "irq %u: handled %" PRIu64 " times, %" PRIu64 " cycles on average\n", s->irq[i].irq,
				s->irq[i].count, s->irq[i].cycles / s->irq[i].count);
	if (s->irq_dropped)
		fprintf(out, "irq: %" PRIu64 " records for lines past the first %u\n", s->irq_dropped, IRQ_SLOTS);
	for (unsigned i = 0; i < LIFETIME_SLOTS; i++) {
		const struct lifetime *l = &s->life[i];
		if (l->domid == UINT32_MAX)
			continue;
		fprintf(out, "domain %u:", l->domid);
		if (l->created)
			fprintf(out, " created at %.9fs", (double)(l->created - s->first_tsc) / (double)s->cpu_hz);
		if (l->destroyed)
			fprintf(out, " destroyed at %.9fs", (double)(l->destroyed - s->first_tsc) / (double)s->cpu_hz);
		fprintf(out, "\n");
	}
	for (unsigned i = 0; i < s->ndoms; i++) {
		const struct xentrace_domain *d = s->doms[i];
		if (d->guest_records)
			fprintf(out, "d%u: %" PRIu64 " guest records\n", d->did, d->guest_records);
		for (int j = 0; j < XENTRACE_MAX_VCPUS; j++) {
			const struct xentrace_vcpu *v = d->vcpu[j];
			if (!v)
				continue;
			fprintf(out, "d%uv%d: running %.1f%% runnable %.1f%% blocked %.1f%% offline %.1f%%",
				d->did, j, 100 * xentrace_vcpu_runstate_share(s, v, XENTRACE_RS_RUNNING),
				100 * xentrace_vcpu_runstate_share(s, v, XENTRACE_RS_RUNNABLE),
				100 * xentrace_vcpu_runstate_share(s, v, XENTRACE_RS_BLOCKED),
				100 * xentrace_vcpu_runstate_share(s, v, XENTRACE_RS_OFFLINE));
			if (v->runnable[RUNNABLE_WAKE].count)
				fprintf(out, "; wake-to-run p50 %" PRIu64 " ns p99 %" PRIu64 " ns max %" PRIu64 " ns",
					xentrace_vcpu_wake_latency_ns(s, v, 0.5), xentrace_vcpu_wake_latency_ns(s, v, 0.99),
					xentrace_vcpu_wake_latency_ns(s, v, 1.0));
			fprintf(out, "; %" PRIu64 " migrations\n", v->migrations);
		}
	}
	for (unsigned i = 0; i < s->nnotes; i++)
		fprintf(out, "note: offset %" PRIu64 " cpu %d: %s\n", s->notes[i].offset, s->notes[i].cpu,
			s->notes[i].what);
	if (s->notes_dropped)
		fprintf(out, "note: %" PRIu64 " more\n", s->notes_dropped);
}

/* --- accessors --------------------------------------------------------------- */

uint64_t xentrace_state_total_cycles(const struct xentrace_state *s) { return s->total_cycles; }
uint64_t xentrace_state_cpu_hz(const struct xentrace_state *s) { return s->cpu_hz; }
uint64_t xentrace_state_skipped(const struct xentrace_state *s) { return s->skipped; }
uint64_t xentrace_state_unknown_total(const struct xentrace_state *s) { return s->unknown_total; }

struct xentrace_cycles xentrace_state_irq(const struct xentrace_state *s, unsigned irq)
{
	struct xentrace_cycles c = { 0, 0 };
	for (unsigned i = 0; i < IRQ_SLOTS; i++)
		if (s->irq[i].irq == irq) {
			c.count = s->irq[i].count;
			c.cycles = s->irq[i].cycles;
		}
	return c;
}

uint64_t xentrace_state_unknown_count(const struct xentrace_state *s, uint32_t event)
{
	for (unsigned i = 0; i < UNKNOWN_SLOTS; i++)
		if (s->unknown[i].count && s->unknown[i].event == event)
			return s->unknown[i].count;
	return 0;
}

const struct xentrace_domain *xentrace_state_domain_next(const struct xentrace_state *s,
							 const struct xentrace_domain *prev)
{
	if (!prev)
		return s->ndoms ? s->doms[0] : NULL;
	for (unsigned i = 0; i + 1 < s->ndoms; i++)
		if (s->doms[i] == prev)
			return s->doms[i + 1];
	return NULL;
}

const struct xentrace_domain *xentrace_state_domain_find(const struct xentrace_state *s, unsigned domid)
{
	for (unsigned i = 0; i < s->ndoms; i++)
		if (s->doms[i]->did == domid)
			return s->doms[i];
	return NULL;
}

unsigned xentrace_domain_id(const struct xentrace_domain *d) { return d->did; }
uint64_t xentrace_domain_guest_records(const struct xentrace_domain *d) { return d->guest_records; }

struct xentrace_cycles xentrace_domain_runstate(const struct xentrace_domain *d, enum xentrace_domain_runstate rs)
{
	struct xentrace_cycles c = { 0, 0 };
	if ((unsigned)rs < XENTRACE_DRS_MAX) {
		c.count = d->runstates[rs].count;
		c.cycles = d->runstates[rs].cycles;
	}
	return c;
}

const struct xentrace_vcpu *xentrace_domain_vcpu(const struct xentrace_domain *d, unsigned vid)
{
	return vid < XENTRACE_MAX_VCPUS ? d->vcpu[vid] : NULL;
}

bool xentrace_state_domain_lifetime(const struct xentrace_state *s, unsigned domid, uint64_t *created,
				    uint64_t *destroyed)
{
	for (unsigned i = 0; i < LIFETIME_SLOTS; i++)
		if (s->life[i].domid == domid) {
			*created = s->life[i].created;
			*destroyed = s->life[i].destroyed;
			return true;
		}
	return false;
}

struct xentrace_cycles xentrace_vcpu_runstate(const struct xentrace_vcpu *v, enum xentrace_runstate rs)
{
	struct xentrace_cycles c = { 0, 0 };
	if ((unsigned)rs < XENTRACE_RS_MAX) {
		c.count = v->runstates[rs].count;
		c.cycles = v->runstates[rs].cycles;
	}
	return c;
}

double xentrace_vcpu_runstate_share(const struct xentrace_state *s, const struct xentrace_vcpu *v,
				   enum xentrace_runstate rs)
{
	if (!s->total_cycles || (unsigned)rs >= XENTRACE_RS_MAX)
		return 0;
	return (double)v->runstates[rs].cycles / (double)s->total_cycles;
}

struct xentrace_cycles xentrace_vcpu_wake(const struct xentrace_vcpu *v)
{
	struct xentrace_cycles c = { v->runnable[RUNNABLE_WAKE].count, v->runnable[RUNNABLE_WAKE].cycles };
	return c;
}

const struct xflow_hist *xentrace_vcpu_wake_hist(const struct xentrace_vcpu *v)
{
	const struct xflow_hist *h = v->runnable[RUNNABLE_WAKE].h;
	return h && h->count ? h : NULL;
}

uint64_t xentrace_vcpu_wake_latency_ns(const struct xentrace_state *s, const struct xentrace_vcpu *v, double q)
{
	const struct xflow_hist *h = v->runnable[RUNNABLE_WAKE].h;
	if (!h || !h->count)
		return 0;
	return (uint64_t)((double)xflow_hist_quantile(h, q) * 1e9 / (double)s->cpu_hz + 0.5);
}

uint64_t xentrace_vcpu_migrations(const struct xentrace_vcpu *v) { return v->migrations; }
int xentrace_vcpu_pcpu(const struct xentrace_vcpu *v) { return v->pcpu; }

uint64_t xentrace_vcpu_hypercalls(const struct xentrace_vcpu *v, unsigned op)
{
	return op < XENTRACE_HYPERCALL_MAX ? v->hypercalls[op] : 0;
}

struct xentrace_cycles xentrace_vcpu_exit_reason(const struct xentrace_vcpu *v, unsigned reason)
{
	struct xentrace_cycles c = { 0, 0 };
	if (reason < XENTRACE_VMX_EXIT_MAX) {
		c.count = v->exits[reason].count;
		c.cycles = v->exits[reason].cycles;
	}
	return c;
}

const char *xentrace_pv_event_name(unsigned kind)
{
	return kind < PV_MAX ? pv_name[kind] : NULL;
}

const char *xentrace_hypercall_name(unsigned nr)
{
	return nr < XENTRACE_HYPERCALL_MAX ? hypercall_name[nr] : NULL;
}

const char *xentrace_vmx_exit_name(unsigned reason)
{
	return reason < VMX_EXIT_REASON_MAX ? vmx_exit_name[reason] : NULL;
}
