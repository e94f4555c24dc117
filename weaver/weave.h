/*
 * weaver/weave.h — the weaver as other folders use it: compile these flow
 * files, and plan them against each domain's binaries.  The one header of
 * weaver/ that collectors/ and tui/ include (the unit itself is
 * xflow/flowlang.h; the plan, xflow/plan.h).
 */
#ifndef XFLOW_WEAVER_WEAVE_H
#define XFLOW_WEAVER_WEAVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "xflow/flowlang.h"
#include "xflow/plan.h"

/* ---- compiling (weave.c) --------------------------------------------------- */

enum xflow_weave_flag {
	/* Add every file whatever happens to one, and compile: the result is
	 * the compile's, and the diagnostics name every error (xflowtop's
	 * start-up check).  Without it the first file that cannot be added
	 * stops, and its error is the result (a collector's open). */
	XFLOW_WEAVE_EVERY_FILE = 1u << 0,
};

/* A new unit of the flow files @paths[0..@n), compiled.  0, or a
 * negative errno; *out is set whenever the unit could be made (NULL
 * otherwise), so that its diagnostics can be read even on failure.  Free
 * it with xflow_unit_free. */
int xflow_weave_compile(const char *const *paths, size_t n, unsigned flags, struct xflow_unit **out);

/* The fewest header bits any cross-domain transit of flow @flow carries
 * its id in (an xin's field size), or 0 when none does. */
unsigned xflow_weave_carried_bits(const struct xflow_unit *u, int flow);

/* ---- kernels ------------------------------------------------------------------ */

/* A kernel is planned from its BTF: "kernel:" (this machine's) or
 * "kernel:PATH", each "+MODULE" after it adding a module. */
#define JP_KBTF_PREFIX "kernel:"
#define JP_KBTF_DEFAULT "/sys/kernel/btf/vmlinux"

/* Is @binary a kernel ("kernel:" or "kernel:PATH")? */
bool jp_kbtf_is_kernel(const char *binary);

/* ---- planning (plan_build.c) ------------------------------------------------ */

/* A domain: its name as pointcuts write it (within_function(f@NAME)) and
 * the binaries of the software it runs. */
struct jp_domain_spec {
	const char *name;
	const char *const *binaries;
	size_t nbinaries;
};

/* One diagnostic of the resolve pass, as jp_plan_opts.on_diag gets it:
 * @sev "error", "warning" or "note" (not a fault: where call() did not put
 * a site, and why); @advice the index of the advice it is about
 * (xflow_unit_advice), or -1; @where "file:line:col" (or "xflowc"); @msg
 * the message.  Valid during the call only. */
struct jp_plan_diag {
	const char *sev;
	long advice;
	const char *where;
	const char *msg;
};

struct jp_plan_opts {
	const char *debug_root;  /* NULL: /usr/lib/debug */
	bool strict;             /* a pointcut matching nothing, or a site whose
	                          * inputs cannot be fetched, is an error */
	FILE *diag;              /* where diagnostics go, gcc-style; NULL:
	                          * stderr, or nowhere with on_diag */
	/* Called for each diagnostic too, when not NULL (a monitor shows
	 * warnings by the aspect they concern). */
	void (*on_diag)(void *ctx, const struct jp_plan_diag *d);
	void *diag_ctx;
	unsigned errors, warnings;   /* out: how many were printed */
};

/*
 * The resolve pass: each advice of the compiled unit @u (xflow_unit_compile
 * returned 0) against each domain's binaries → a weave plan.  *out is set
 * even when errors were reported (so a caller can still dump what was
 * resolved); free it with xflow_plan_free, before @u, whose programs and
 * names it shares.  Returns 0, -EINVAL if any error was reported, or
 * -ENOMEM.
 *
 * xflowc plan is then: xflow_unit_new, _add_file for each FILE,
 * _compile, _print_diags; jp_plan_build; xflow_plan_dump to stdout;
 * xflow_plan_write_file for -o; xflow_plan_free; xflow_unit_free.
 */
int jp_plan_build(struct xflow_unit *u, const struct jp_domain_spec *doms, size_t ndoms,
		  struct jp_plan_opts *opts, struct xflow_plan **out);

#endif
