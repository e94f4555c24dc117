/*
 * guestrt/hook/kernel/klower.h — a weave plan's domain lowered to the kernel backend's
 * slot table (guestrt/hook/kernel/kabi.h).  Pure computation on the plan, with no libbpf,
 * so that it is unit-tested on any machine.
 *
 * The kernel backend does not run advice bytecode: it runs the four flow
 * operations an xflow expands into (start, quit, move, copy), which it
 * recognises in each bound program by following the bytecode's stack
 * abstractly: which input's pointer is the key of each FLOW_GET, FLOW_REG
 * and FLOW_DEL, and whether the id registered is new or another key's.
 * Whatever else a program does — read or write a struct member, store data
 * records, hand an id across domains, split — is refused with a sentence
 * naming the advice's file:line and what it does, before anything loads.
 *
 * Operands: an input's fetch recipe must be a register, as the weaver
 * writes it for a kernel domain: the x86-64 argument registers rdi, rsi,
 * rdx, rcx, r8, r9 (DWARF 5, 4, 1, 2, 8, 9) are the function's arguments
 * 0..5, rax at a return site is the return value.
 */
#ifndef XFLOW_GUESTRT_HOOK_KERNEL_KLOWER_H
#define XFLOW_GUESTRT_HOOK_KERNEL_KLOWER_H

#include <stddef.h>
#include <stdint.h>

#include "guestrt/hook/kernel/kabi.h"

struct xflow_plan;
struct xflow_plan_domain;

enum xk_slot_kind { XK_SLOT_ENTRY = 0, XK_SLOT_EXIT = 1, XK_SLOT_TP = 2 };

struct xk_slot_info {
	uint8_t kind;            /* enum xk_slot_kind */
	uint8_t used;
	const char *target;      /* function name, or "category:name" */
	struct xk_site site;     /* what xk_plan[slot] holds */
};

struct xk_lowered {
	struct xk_slot_info slots[XK_SLOTS];  /* indexed like xk_plan */
	uint32_t nused;
	int32_t *slot_of_site;   /* per plan site: its slot, or -1 (no binding) */
	uint32_t nsites;
};

/* Lower @dom of @plan.  0, or -EINVAL / -E2BIG / -ENOMEM with @why naming
 * the site or advice and what the kernel backend cannot do there.  On
 * success free with xk_lowered_fini. */
int xk_lower(const struct xflow_plan *plan, const struct xflow_plan_domain *dom, struct xk_lowered *out,
	     char *why, size_t whylen);
void xk_lowered_fini(struct xk_lowered *l);

/* The slot's BPF program name in the object ("xk_entry_3"). */
void xk_slot_prog_name(uint32_t slot, char *buf, size_t len);

#endif
