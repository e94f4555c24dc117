/*
 * Plan generation on large binaries: index the debug info, then resolve
 * access(S.%) over the whole binary (every function decoded and typed),
 * then the same query again with the code cached.  Prints time and peak
 * RSS per binary.
 *
 *   bench_plan [BINARY STRUCT]...
 *
 * With no arguments: the project's own xflowc (build/bin/xflowc, -O2 -g)
 * on struct xflow_unit, and glibc with Debian's libc6-dbg debug file
 * (found by build id) on struct _IO_FILE, when they are there.
 */
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tests/bench/bench_util.h"
#include "weaver/jp/joinpoint.h"

static long peak_rss_kb(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static int bench_one(const char *path, const char *sname)
{
	if (access(path, R_OK) != 0) {
		printf("%-40s not there, skipped\n", path);
		return 0;
	}
	struct jp_image *img;
	struct jp_err err;
	uint64_t t0 = bench_now_ns();
	int rc = jp_image_open(&img, path, NULL, &err);
	uint64_t t1 = bench_now_ns();
	if (rc) {
		printf("%-40s %s\n", path, err.msg);
		return 0;
	}
	struct jp_index *ix = jp_image_index(img);
	struct jp_sites s = { 0 };
	rc = jp_find_access(img, sname, "%", NULL, &s, &err);
	uint64_t t2 = bench_now_ns();
	size_t n1 = s.n;
	jp_sites_free(&s);
	rc |= jp_find_access(img, sname, "%", NULL, &s, &err);
	uint64_t t3 = bench_now_ns();
	size_t insns = 0;
	for (size_t f = 0; f < ix->nfuncs; f++) {
		const struct jp_code *c = ix->funcs[f].inlined ? NULL : jp_image_code(img, f, &err);
		if (c)
			insns += c->ninsns;
	}
	if (rc)
		printf("%-40s access(%s.%%): %s\n", path, sname, err.msg);
	printf("%s (debug info: %s)\n", path, jp_image_debug_path(img));
	printf("  index: %zu units, %zu functions, %zu types, %zu line rows in %.1f ms\n", ix->ncus,
	       ix->nfuncs, ix->ntypes, ix->nlines, (t1 - t0) / 1e6);
	printf("  access(%s.%%): %zu sites; %.1f ms decoding and typing %zu instructions, %.1f ms again cached\n",
	       sname, n1, (t2 - t1) / 1e6, insns, (t3 - t2) / 1e6);
	printf("  total %.1f ms, peak RSS %.1f MB\n", (t2 - t0) / 1e6, peak_rss_kb() / 1024.0);
	jp_sites_free(&s);
	jp_image_free(img);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 2) {
		for (int i = 1; i + 1 < argc; i += 2)
			bench_one(argv[i], argv[i + 1]);
		return 0;
	}
	bench_one("build/bin/xflowc", "xflow_unit");
	bench_one("/lib/x86_64-linux-gnu/libc.so.6", "_IO_FILE");
	return 0;
}
