/*
 * `xflowc plan`: resolve flow files against each domain's binaries and
 * print the weave plan; -o writes the binary plan (xflow/plan.h) too.
 *
 *   xflowc plan --domain NAME=BINARY[,BINARY...] ... [options] FILE...
 *
 * The front end's xflowc calls xflowc_plan_main when its first argument is
 * "plan"; everything here is the library's (xflow_unit_*, jp_plan_build,
 * xflow_plan_*), so this file is only options and order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "weaver/jp/joinpoint.h"
#include "xflow/flowlang.h"
#include "xflow/plan.h"

/* The options only plan takes; xflowc --help lists them too. */
const char xflowc_plan_options[] =
	"  --domain NAME=BIN[,BIN...]  a domain and its binaries (repeatable);\n"
	"                     NAME is what pointcuts write after '@'\n"
	"  -o FILE            also write the binary plan to FILE (atomically), which\n"
	"                     xflow-agent --plan traces with, no monitor needed\n"
	"  --strict           a pointcut that matches nothing, or a site left out,\n"
	"                     is an error\n"
	"  --debug-root DIR   where separate debug files are looked for by build\n"
	"                     id and debuglink (default /usr/lib/debug)\n"
	"  -q, --quiet        print nothing but diagnostics\n";

static void plan_usage(FILE *f)
{
	fputs("usage: xflowc plan --domain NAME=BINARY[,BINARY...] ... [options] FILE...\n"
	      "\n"
	      "Resolve the pointcuts of the flow FILEs against each domain's binaries\n"
	      "(their ELF symbols, DWARF and machine code) and print the weave plan:\n"
	      "per domain, every site (address, file:line, function, instruction,\n"
	      "member) with the advice that runs there and how each input is fetched.\n"
	      "A pointcut that matches nothing in any domain is a warning, and so is a\n"
	      "site left out because an input cannot be fetched there (a variable\n"
	      "optimized out) or an access whose base could not be typed.\n"
	      "\n"
	      "options:\n",
	      f);
	fputs(xflowc_plan_options, f);
	fputs("  --bytecode         list each advice's bytecode too\n"
	      "  --no-include, --max-errors=N, -W...  as for xflowc check\n"
	      "  -h, --help         show this help\n"
	      "\n"
	      "Exit status: 0 clean, 1 errors (or warnings with -Werror), 2 usage.\n",
	      f);
}

struct dom_arg {
	char *name;
	char **bins;
	size_t nbins;
};

static int parse_domain(const char *arg, struct dom_arg *d, FILE *err)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1]) {
		fprintf(err, "xflowc plan: --domain wants NAME=BINARY[,BINARY...], not '%s'\n", arg);
		return -EINVAL;
	}
	d->name = strndup(arg, (size_t)(eq - arg));
	char *list = strdup(eq + 1);
	if (!d->name || !list) {
		free(list);
		return -ENOMEM;
	}
	size_t n = 1;
	for (const char *p = list; *p; p++)
		n += *p == ',';
	d->bins = calloc(n, sizeof(*d->bins));
	if (!d->bins) {
		free(list);
		return -ENOMEM;
	}
	for (char *save = NULL, *t = strtok_r(list, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (*t && !(d->bins[d->nbins++] = strdup(t))) {
			free(list);
			return -ENOMEM;
		}
	free(list);
	if (d->nbins == 0) {
		fprintf(err, "xflowc plan: domain '%s' has no binary\n", d->name);
		return -EINVAL;
	}
	return 0;
}

int xflowc_plan_run(int argc, char **argv, FILE *out, FILE *err)
{
	/* argv[0] is the program or "plan" itself: skipped either way. */
	int first = argc > 1 && !strcmp(argv[1], "plan") ? 2 : 1;
	struct xflow_unit_opts uopts = { 0 };
	struct jp_plan_opts popts = { .diag = err };
	const char *outfile = NULL, *wopts[64];
	bool bytecode = false, quiet = false, werror = false;
	size_t nw = 0, nfiles = 0, ndoms = 0;
	char **files = calloc((size_t)argc + 1, sizeof(*files));
	struct dom_arg *doms = calloc((size_t)argc + 1, sizeof(*doms));
	struct jp_domain_spec *specs = calloc((size_t)argc + 1, sizeof(*specs));
	struct xflow_unit *u = NULL;
	struct xflow_plan *plan = NULL;
	int rc = 2;
	if (!files || !doms || !specs)
		goto done;
	for (int i = first; i < argc; i++) {
		const char *a = argv[i];
		const char *val = NULL;
		if (a[0] != '-' || !a[1]) {
			files[nfiles++] = argv[i];
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			plan_usage(out);
			rc = 0;
			goto done;
		} else if (!strcmp(a, "--domain") || !strncmp(a, "--domain=", 9)) {
			val = a[8] == '=' ? a + 9 : (i + 1 < argc ? argv[++i] : NULL);
			if (!val) {
				fprintf(err, "xflowc plan: --domain needs NAME=BINARY\n");
				goto done;
			}
			if (parse_domain(val, &doms[ndoms], err) != 0)
				goto done;
			for (size_t k = 0; k < ndoms; k++)
				if (!strcmp(doms[k].name, doms[ndoms].name)) {
					fprintf(err, "xflowc plan: domain '%s' given twice\n", doms[k].name);
					ndoms++;
					goto done;
				}
			ndoms++;
		} else if (!strcmp(a, "-o")) {
			if (i + 1 >= argc) {
				fprintf(err, "xflowc plan: -o needs a file\n");
				goto done;
			}
			outfile = argv[++i];
		} else if (!strcmp(a, "--debug-root")) {
			if (i + 1 >= argc) {
				fprintf(err, "xflowc plan: --debug-root needs a directory\n");
				goto done;
			}
			popts.debug_root = argv[++i];
		} else if (!strcmp(a, "--strict")) {
			popts.strict = true;
		} else if (!strcmp(a, "--bytecode")) {
			bytecode = true;
		} else if (!strcmp(a, "-q") || !strcmp(a, "--quiet")) {
			quiet = true;
		} else if (!strcmp(a, "--no-include")) {
			uopts.no_include = true;
		} else if (!strncmp(a, "--max-errors=", 13)) {
			char *end;
			long v = strtol(a + 13, &end, 10);
			if (*end || v < 1 || v > 100000) {
				fprintf(err, "xflowc plan: bad --max-errors value '%s'\n", a + 13);
				goto done;
			}
			uopts.max_errors = (unsigned)v;
		} else if (!strncmp(a, "-W", 2) && a[2] && nw < 64) {
			wopts[nw++] = a + 2;
			werror |= !strcmp(a + 2, "error");
		} else {
			fprintf(err, "xflowc plan: unknown option '%s'\n", a);
			plan_usage(err);
			goto done;
		}
	}
	if (nfiles == 0 || ndoms == 0) {
		fprintf(err, "xflowc plan: %s\n", nfiles ? "no --domain given" : "no input files");
		plan_usage(err);
		goto done;
	}
	if (xflow_unit_new(&u, &uopts) < 0) {
		fprintf(err, "xflowc plan: out of memory\n");
		goto done;
	}
	for (size_t i = 0; i < nw; i++)
		if (xflow_unit_set_warning(u, wopts[i]) < 0) {
			fprintf(err, "xflowc plan: unknown warning option '-W%s'\n", wopts[i]);
			goto done;
		}
	for (size_t i = 0; i < nfiles; i++)
		xflow_unit_add_file(u, files[i]);
	xflow_unit_compile(u);
	xflow_unit_print_diags(u, err);
	rc = 1;
	if (xflow_unit_errors(u))
		goto done;
	for (size_t i = 0; i < ndoms; i++) {
		specs[i].name = doms[i].name;
		specs[i].binaries = (const char *const *)doms[i].bins;
		specs[i].nbinaries = doms[i].nbins;
	}
	int brc = jp_plan_build(u, specs, ndoms, &popts, &plan);
	if (brc == -ENOMEM) {
		fprintf(err, "xflowc plan: out of memory\n");
		goto done;
	}
	if (plan && !quiet)
		xflow_plan_dump(plan, out, bytecode);
	if (brc != 0 || (werror && popts.warnings))
		goto done;
	if (outfile) {
		char why[512];
		if (xflow_plan_write_file(plan, outfile, why, sizeof(why)) != 0) {
			fprintf(err, "xflowc plan: %s\n", why);
			goto done;
		}
	}
	rc = 0;
done:
	xflow_plan_free(plan);
	xflow_unit_free(u);
	for (size_t i = 0; doms && i < ndoms; i++) {
		for (size_t k = 0; k < doms[i].nbins; k++)
			free(doms[i].bins[k]);
		free(doms[i].bins);
		free(doms[i].name);
	}
	free(doms);
	free(specs);
	free(files);
	return rc;
}

int xflowc_plan_main(int argc, char **argv)
{
	return xflowc_plan_run(argc, argv, stdout, stderr);
}
