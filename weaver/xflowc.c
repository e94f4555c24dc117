/*
 * The `xflowc` command: check and dump flow files.  Exit status: 0 clean,
 * 1 errors in the files (or warnings under -Werror), 2 usage errors.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "weaver/jp/joinpoint.h"
#include "xflow/flowlang.h"

static const char usage[] =
	"usage: xflowc check [options] FILE...\n"
	"       xflowc plan --domain NAME=BINARY[,BINARY...] ... [options] FILE...\n"
	"       xflowc dump [--bytecode] [options] FILE...\n"
	"\n"
	"Check flow definitions (XenLASY advice and xflow files, see xflow(5)),\n"
	"or print them expanded into plain advice in weave order.\n"
	"All FILEs form one unit: a flow defined in one is visible in the others.\n"
	"\n"
	"options:\n"
	"  --bytecode         dump, plan: also list each advice's compiled bytecode\n"
	"  --max-errors=N     stop after N errors (default 20)\n"
	"  --no-include       refuse <include> elements\n"
	"  -Wall              enable every warning\n"
	"  -Werror            treat warnings as errors\n"
	"  -WNAME, -Wno-NAME  enable or disable one warning: unused-binding,\n"
	"                     flowid-truncation, empty-flow\n"
	"  -h, --help         show this help\n"
	"  --version          show the version\n"
	"\n"
	"plan options:\n";

static const char usage_end[] =
	"\n"
	"Exit status: 0 clean, 1 errors (or warnings with -Werror), 2 usage.\n"
	"See xflowc(1) and, for the language, xflow(5).\n";

static void print_usage(FILE *f)
{
	fputs(usage, f);
	fputs(xflowc_plan_options, f);
	fputs(usage_end, f);
}

int xflowc_run(int argc, char **argv, FILE *out, FILE *err)
{
	if (argc < 2) {
		print_usage(err);
		return 2;
	}
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		print_usage(out);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		fprintf(out, "xflowc (xflowtop) bytecode v%d\n", XFLOW_BC_VERSION);
		return 0;
	}
	/* plan resolves against binaries: the join-point engine's command
	 * (weaver/plan_cmd.c), which prints to stdout and stderr itself. */
	if (!strcmp(cmd, "plan"))
		return xflowc_plan_main(argc, argv);
	bool dump = !strcmp(cmd, "dump");
	if (!dump && strcmp(cmd, "check")) {
		fprintf(err, "xflowc: unknown command '%s'\n", cmd);
		print_usage(err);
		return 2;
	}
	struct xflow_unit_opts opts = { 0 };
	bool bytecode = false;
	const char *wopts[64];
	size_t nw = 0, nfiles = 0;
	char **files = calloc((size_t)argc, sizeof(*files));
	if (!files)
		return 2;
	int rc = 2;
	bool dashdash = false;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		if (dashdash || a[0] != '-' || !a[1]) {
			files[nfiles++] = argv[i];
		} else if (!strcmp(a, "--")) {
			dashdash = true;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			print_usage(out);
			rc = 0;
			goto done;
		} else if (!strcmp(a, "--bytecode") && dump) {
			bytecode = true;
		} else if (!strcmp(a, "--no-include")) {
			opts.no_include = true;
		} else if (!strncmp(a, "--max-errors=", 13)) {
			char *end;
			long v = strtol(a + 13, &end, 10);
			if (*end || v < 1 || v > 100000) {
				fprintf(err, "xflowc: bad --max-errors value '%s'\n", a + 13);
				goto done;
			}
			opts.max_errors = (unsigned)v;
		} else if (!strncmp(a, "-W", 2) && a[2] && nw < 64) {
			wopts[nw++] = a + 2;
		} else {
			fprintf(err, "xflowc: unknown option '%s'\n", a);
			print_usage(err);
			goto done;
		}
	}
	if (nfiles == 0) {
		fprintf(err, "xflowc: no input files\n");
		print_usage(err);
		goto done;
	}
	struct xflow_unit *u;
	if (xflow_unit_new(&u, &opts) < 0) {
		fprintf(err, "xflowc: out of memory\n");
		goto done;
	}
	for (size_t i = 0; i < nw; i++) {
		if (xflow_unit_set_warning(u, wopts[i]) < 0) {
			fprintf(err, "xflowc: unknown warning option '-W%s'\n", wopts[i]);
			xflow_unit_free(u);
			goto done;
		}
	}
	for (size_t i = 0; i < nfiles; i++)
		xflow_unit_add_file(u, files[i]);
	xflow_unit_compile(u);
	xflow_unit_print_diags(u, err);
	rc = xflow_unit_errors(u) ? 1 : 0;
	if (dump && rc == 0)
		xflow_unit_dump(u, out, bytecode);
	xflow_unit_free(u);
done:
	free(files);
	return rc;
}
