/*
 * Collectors: the built-in table, and plugins built here with the C
 * compiler and loaded with dlopen; one built for another ABI is refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/tui/apptest.h"
#include "tui/registry.h"

static const char plugin_src[] =
	"#include \"xflow/collector.h\"\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"struct xflow_collector { int n; };\n"
	"static int p_open(const char *o, struct xflow_collector **out, char *err, size_t len)\n"
	"{ (void)err; (void)len; if (o && *o) return -22; *out = calloc(1, sizeof(**out)); return *out ? 0 : -12; }\n"
	"static long p_read(struct xflow_collector *c, uint64_t now, xflow_collector_emit_fn emit, void *ctx, size_t max)\n"
	"{ (void)now; if (c->n >= 2 || max < 2) return c->n >= 2 ? -61 : 0;\n"
	"  for (int i = 0; i < 2; i++) { struct xflow_record r; memset(&r, 0, sizeof r);\n"
	"    r.version = XFLOW_RECORD_VERSION; r.flow_id = 7; r.site_id = (uint32_t)i; r.domain_id = 3;\n"
	"    r.flags = i ? XFLOW_REC_QUIT : XFLOW_REC_START; emit(ctx, &r, 1000u + 500u * (unsigned)i); }\n"
	"  c->n = 2; return 2; }\n"
	"static void p_close(struct xflow_collector *c) { free(c); }\n"
	"static const struct xflow_collector_ops ops = { .abi = ABI, .name = NAME, .help = \"test plugin\",\n"
	"  .open = p_open, .read = p_read, .close = p_close };\n"
	"const struct xflow_collector_ops *xflow_collector_plugin(void) { return &ops; }\n";

static char dir[64];

static void build_plugin(const char *file, int abi, const char *name)
{
	char src[128], cmd[1024];
	snprintf(src, sizeof(src), "%s/plugin.c", dir);
	FILE *f = fopen(src, "w");
	cr_assert(f);
	fputs(plugin_src, f);
	fclose(f);
	const char *cc = getenv("CC") ? getenv("CC") : "cc";
	snprintf(cmd, sizeof(cmd), "%s -std=c11 -g -shared -fPIC -Iinclude -DABI=%d -DNAME='\"%s\"' -o %s/%s %s",
		 cc, abi, name, dir, file, src);
	if (system(cmd) != 0)
		cr_skip_test("cannot build a plugin with '%s'", cc);
	unlink(src);
}

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/xft-plugins-XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

Test(registry, builtins_are_listed)
{
	struct xft_registry r;
	xft_registry_init(&r);
	cr_assert_not_null(xft_registry_find(&r, "synthetic"));
	cr_assert_null(xft_registry_find(&r, "nope"));
	char err[256];
	cr_assert_eq(xft_registry_add(&r, xft_registry_find(&r, "synthetic"), err, sizeof(err)), -EEXIST);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	xft_registry_print(&r, f);
	fclose(f);
	cr_assert(strstr(out, "synthetic"));
	free(out);
	xft_registry_fini(&r);
}

Test(registry, a_plugin_loads_and_delivers, .init = setup, .fini = teardown)
{
	build_plugin("good.so", XFLOW_COLLECTOR_ABI, "testplug");
	struct xft_config cfg;
	char err[512];
	xft_config_defaults(&cfg);
	snprintf(cfg.collector_paths[0], XFT_SPEC_LEN, "%s", dir);
	cfg.ncollector_paths = 1;
	snprintf(cfg.collectors[0], XFT_SPEC_LEN, "testplug");
	cfg.ncollectors = 1;
	cfg.limits.max_flows = 64;
	cfg.limits.max_pending = 64;
	cfg.limits.max_hops = 16;
	struct xft_app *app = calloc(1, sizeof(*app));
	cr_assert_eq(xft_app_init(app, &cfg, err, sizeof(err)), 0, "%s", err);
	struct xft_registry builtin;
	xft_registry_init(&builtin);
	cr_assert_eq(app->reg.n, builtin.n + 1, "the built-in collectors and the plugin");
	xft_registry_fini(&builtin);
	cr_assert(strstr(app->reg.e[app->reg.n - 1].path, "good.so"));
	cr_assert_eq(xft_app_collect(app, 0, 100), 2);
	xft_agg_drain(app->agg);
	xft_app_refresh(app, 10);
	cr_assert(app->src[0].ended, "-ENODATA ends the source");
	cr_assert_str_eq(app->src[0].error, "end of input");
	cr_assert_eq(app->frame.nhops, 1);
	cr_assert_eq(app->frame.hops[0].p50, 500);
	/* No site_info: names are made up, never missing. */
	cr_assert_str_eq(app->frame.hops[0].from->function, "site#0");
	cr_assert_str_eq(app->frame.hops[0].from_dom, "dom3");
	xft_app_fini(app);
	free(app);
}

Test(registry, a_plugin_for_another_abi_is_refused, .init = setup, .fini = teardown)
{
	/* ABI 1 (before the hypervisor hook), 2 (before the wake histogram,
	 * whose vcpu array has another stride), 3 (before trap sites and
	 * aspect notes, which moved an aspect's counters), 4 (before a
	 * domain's clock bound, which grew its info), 5 (before the sched
	 * hook, which grew the table), 6 (before a domain's lies, which grew
	 * its info again), 7 (before the STATS and share kinds of lie and a
	 * domain's progress, which grew it once more), 8 (before a site's
	 * roles, which grew its info), 9 (before Xen's own time, a sched
	 * event kind an older monitor would count as bad), 10 (before the detach
	 * hook, which grew the table), 11 (before the NOTIFIES role, a bit its
	 * roles would never set) and a future one. */
	static const int abis[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, XFLOW_COLLECTOR_ABI + 1 };
	cr_assert_eq(XFLOW_COLLECTOR_ABI, 13);
	for (size_t i = 0; i < sizeof(abis) / sizeof(abis[0]); i++) {
		build_plugin("old.so", abis[i], "oldplug");
		struct xft_registry r;
		char err[512], path[128];
		xft_registry_init(&r);
		snprintf(path, sizeof(path), "%s/old.so", dir);
		cr_assert_eq(xft_registry_load_file(&r, path, err, sizeof(err)), -EPROTO);
		char want[256];
		snprintf(want, sizeof(want), "%s: collector plugin built for collector ABI %d, but this xflowtop speaks ABI %d",
			 path, abis[i], XFLOW_COLLECTOR_ABI);
		cr_assert(strstr(err, want), "%s", err);
		cr_assert_null(xft_registry_find(&r, "oldplug"));
		cr_assert_eq(xft_registry_load_dir(&r, dir, err, sizeof(err)), -EPROTO);
		xft_registry_fini(&r);
		unlink(path);
	}
}

Test(registry, bad_files_and_names, .init = setup, .fini = teardown)
{
	struct xft_registry r;
	char err[512], path[128];
	xft_registry_init(&r);
	snprintf(path, sizeof(path), "%s/junk.so", dir);
	FILE *f = fopen(path, "w");
	fputs("not an ELF file", f);
	fclose(f);
	cr_assert_eq(xft_registry_load_file(&r, path, err, sizeof(err)), -ENOEXEC);
	cr_assert(strstr(err, "cannot load collector plugin"), "%s", err);
	cr_assert_neq(xft_registry_load_dir(&r, "/nonexistent-dir", err, sizeof(err)), 0);
	cr_assert(strstr(err, "/nonexistent-dir"), "%s", err);
	unlink(path);
	build_plugin("twice.so", XFLOW_COLLECTOR_ABI, "synthetic");
	snprintf(path, sizeof(path), "%s/twice.so", dir);
	cr_assert_eq(xft_registry_load_file(&r, path, err, sizeof(err)), -EEXIST);
	cr_assert(strstr(err, "already loaded"), "%s", err);
	xft_registry_fini(&r);

	struct xft_app *app = apptest_new("synthetic", 0);
	cr_assert_eq(xft_app_add_source(app, "nosuch:x=1", err, sizeof(err)), -ENOENT);
	cr_assert(strstr(err, "unknown collector 'nosuch' (known: synthetic"), "%s", err);
	cr_assert_neq(xft_app_add_source(app, "synthetic:rate=0", err, sizeof(err)), 0);
	cr_assert(strstr(err, "rate"), "%s", err);
	apptest_free(app);
}
