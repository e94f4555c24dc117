/*
 * The xflowc command: exit codes, help, check and dump output, inputs that
 * are not regular files.
 */
#include <sys/stat.h>
#include <unistd.h>

#include "wtest.h"
#include "xflow/plan.h"

struct run {
	int rc;
	char *out, *err;
};

static struct run run(int argc, const char **argv)
{
	struct run r;
	size_t lo, le;
	FILE *o = open_memstream(&r.out, &lo), *e = open_memstream(&r.err, &le);
	r.rc = xflowc_run(argc, (char **)argv, o, e);
	fclose(o);
	fclose(e);
	return r;
}

static void done(struct run *r)
{
	free(r->out);
	free(r->err);
}

#define RUN(...) run(sizeof((const char *[]){ __VA_ARGS__ }) / sizeof(const char *), (const char *[]){ __VA_ARGS__ })

Test(xflowc, usage_and_help)
{
	struct run r = RUN("xflowc");
	cr_expect_eq(r.rc, 2);
	cr_expect(strstr(r.err, "usage: xflowc check"));
	done(&r);
	r = RUN("xflowc", "--help");
	cr_expect_eq(r.rc, 0);
	cr_expect(strstr(r.out, "usage: xflowc check"));
	/* Issue 19 item 7c: plan's own options are listed too. */
	static const char *const plan_opts[] = { "--domain NAME=BIN", "-o FILE", "--strict", "--debug-root DIR",
						 "-q, --quiet" };
	for (size_t i = 0; i < sizeof(plan_opts) / sizeof(plan_opts[0]); i++)
		cr_expect(strstr(r.out, plan_opts[i]), "xflowc --help does not list %s", plan_opts[i]);
	done(&r);
	r = RUN("xflowc", "frob", "x.xml");
	cr_expect_eq(r.rc, 2);
	cr_expect(strstr(r.err, "unknown command 'frob'"));
	done(&r);
	r = RUN("xflowc", "check");
	cr_expect_eq(r.rc, 2);
	cr_expect(strstr(r.err, "no input files"));
	done(&r);
	r = RUN("xflowc", "check", "-Wbogus", "flows/netflow.xml");
	cr_expect_eq(r.rc, 2);
	cr_expect(strstr(r.err, "unknown warning option '-Wbogus'"));
	done(&r);
	r = RUN("xflowc", "check", "--max-errors=0", "flows/netflow.xml");
	cr_expect_eq(r.rc, 2);
	done(&r);
	r = RUN("xflowc", "check", "--bytecode", "flows/netflow.xml");
	cr_expect_eq(r.rc, 2, "--bytecode is for dump");
	done(&r);
	r = RUN("xflowc", "--version");
	cr_expect_eq(r.rc, 0);
	cr_expect(strstr(r.out, "bytecode v1"));
	done(&r);
}

Test(xflowc, check_exit_codes)
{
	struct run r = RUN("xflowc", "check", "flows/netflow.xml");
	cr_expect_eq(r.rc, 0, "%s", r.err);
	cr_expect_str_eq(r.out, "");
	cr_expect_str_eq(r.err, "");
	done(&r);
	r = RUN("xflowc", "check", "flows/bad/fig4-as-printed.xml");
	cr_expect_eq(r.rc, 1);
	cr_expect(strstr(r.err, "flows/bad/fig4-as-printed.xml:9:3: error: closing tag </xen_move>"), "%s", r.err);
	done(&r);
	r = RUN("xflowc", "check", "-Wall", "flows/netflow.xml");
	cr_expect_eq(r.rc, 0);
	cr_expect(strstr(r.err, "warning: only 12 of a flow id's 48 bits fit in the field [-Wflowid-truncation]"),
		  "%s", r.err);
	done(&r);
	r = RUN("xflowc", "check", "-Wall", "-Werror", "flows/netflow.xml");
	cr_expect_eq(r.rc, 1);
	done(&r);
	r = RUN("xflowc", "check", "-Wall", "-Wno-flowid-truncation", "-Werror", "flows/netflow.xml");
	cr_expect_eq(r.rc, 0, "%s", r.err);
	done(&r);
}

Test(xflowc, several_files_are_one_unit)
{
	/* Figure 8 alone declares netflow; Figure 5 too: defined twice. */
	struct run r = RUN("xflowc", "check", "tests/weaver/figures/fig3.xml", "tests/weaver/figures/fig5.xml");
	cr_expect_eq(r.rc, 1);
	cr_expect(strstr(r.err, "xflow 'netflow' is defined twice"), "%s", r.err);
	done(&r);
}

Test(xflowc, dump_is_a_flow_file_that_checks)
{
	struct run r = RUN("xflowc", "dump", "flows/netflow.xml");
	cr_assert_eq(r.rc, 0, "%s", r.err);
	cr_expect(strstr(r.out, "<!-- #0 start of xflow netflow"));
	cr_expect(strstr(r.out, "after stores to netif_tx_request.flags"));
	cr_expect(strstr(r.out, "int id = get_flowid(netflow, skb);\nif (id != 0) {"));
	/* The dump of the user advice, re-read with the flow: same programs. */
	char path[] = "/tmp/xflowc-dump-XXXXXX";
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	FILE *f = fdopen(fd, "w");
	/* Replace the dump's root so the flow is declared next to the advice. */
	fputs(r.out, f);
	fclose(f);
	struct xflow_unit *u;
	xflow_unit_new(&u, NULL);
	const char decl[] = "<xflow name='netflow'/>";
	xflow_unit_add_buffer(u, "decl.xml", decl, strlen(decl));
	xflow_unit_add_file(u, path);
	int rc = xflow_unit_compile(u);
	char *d = wt_diags(u);
	cr_expect_eq(rc, 0, "the dump does not check:\n%s", d);
	free(d);
	struct xflow_unit *orig = wt_compile_file("flows/netflow.xml");
	cr_assert_eq(xflow_unit_advice_count(u), xflow_unit_advice_count(orig));
	for (size_t i = 0; i < xflow_unit_advice_count(u); i++) {
		char why[128];
		cr_expect(wt_prog_equiv(orig, wt_prog(orig, i), u, wt_prog(u, i), why, sizeof(why)),
			  "advice %zu: %s", i, why);
	}
	xflow_unit_free(orig);
	xflow_unit_free(u);
	unlink(path);
	done(&r);
	r = RUN("xflowc", "dump", "--bytecode", "tests/weaver/figures/fig8.xml");
	cr_expect_eq(r.rc, 0);
	cr_expect(strstr(r.out, "FLOW_GET  flow 0 (netflow)"), "%s", r.out);
	cr_expect(strstr(r.out, "STORE     3 flags 0"), "%s", r.out);
	done(&r);
}

/* Inputs that are not regular files are refused at once, never waited on:
 * a FIFO given to check (a writer may never come), included, or as a
 * plan; a directory. */
Test(xflowc, fifo_inputs_are_refused_without_blocking, .timeout = 20)
{
	char dir[] = "/tmp/xflowc-fifo-XXXXXX";
	cr_assert(mkdtemp(dir));
	char fifo[64], inc[64], xml[200];
	snprintf(fifo, sizeof(fifo), "%s/f.xml", dir);
	snprintf(inc, sizeof(inc), "%s/inc.xml", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	FILE *f = fopen(inc, "w");
	fputs("<flows>\n<include file=\"f.xml\"/>\n</flows>\n", f);
	fclose(f);
	struct run r = RUN("xflowc", "check", fifo);
	cr_expect_eq(r.rc, 1);
	snprintf(xml, sizeof(xml), "xflowc: error: cannot read '%s': not a regular file (a FIFO)\n", fifo);
	cr_expect(strstr(r.err, xml), "%s", r.err);
	done(&r);
	r = RUN("xflowc", "check", inc);
	cr_expect_eq(r.rc, 1);
	snprintf(xml, sizeof(xml), "%s:2:16: error: cannot read '%s': not a regular file (a FIFO)\n", inc, fifo);
	cr_expect(strstr(r.err, xml), "%s", r.err);
	done(&r);
	r = RUN("xflowc", "check", dir);
	cr_expect_eq(r.rc, 1);
	cr_expect(strstr(r.err, "not a regular file (a directory)"), "%s", r.err);
	done(&r);
	struct xflow_plan *p;
	char why[256];
	cr_expect_eq(xflow_plan_read_file(fifo, &p, why, sizeof(why)), -EINVAL);
	cr_expect(strstr(why, "not a regular file (a FIFO)"), "%s", why);
	unlink(inc);
	unlink(fifo);
	rmdir(dir);
}
