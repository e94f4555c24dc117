/*
 * Bad inputs to join-point resolution give clear errors, never a crash:
 * stripped binaries, binaries without DWARF, non-ELF files, truncated and
 * corrupted ELF, files that are not regular (a FIFO must not block), names
 * that do not exist (with "did you mean"), variables
 * optimized out at a site; and separate debug files are found by build id
 * and by .gnu_debuglink.
 */
#include <criterion/criterion.h>
#include <sys/stat.h>

#include "tests/weaver/fixtures/jp_fixture.h"
#include "tests/lib/testlib.h"
#include "weaver/jp/joinpoint.h"

static char *dir;

static void setup(void)
{
	dir = jpf_tmp_new();
	cr_assert(dir);
}

static void teardown(void)
{
	jpf_tmp_free(dir);
}

TestSuite(jp_errors, .init = setup, .fini = teardown, .timeout = 60);

static void strip_all(const char *bin)
{
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "strip --strip-all '%s'", bin);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
}

static int open_err(const char *path, struct jp_err *err)
{
	struct jp_image *img = NULL;
	int rc = jp_image_open(&img, path, NULL, err);
	jp_image_free(img);
	return rc;
}

Test(jp_errors, stripped)
{
	char *bin = jpf_build(dir, "jp_shapes", "gcc", "-g -O0", "strip");
	cr_assert(bin);
	strip_all(bin);
	struct jp_err err;
	cr_assert_eq(open_err(bin, &err), -ENODATA);
	cr_expect(strstr(err.msg, "stripped"), "%s", err.msg);
	cr_expect(strstr(err.msg, ".build-id/"), "says where it looked: %s", err.msg);
	free(bin);
}

Test(jp_errors, no_dwarf)
{
	char *bin = jpf_build(dir, "jp_shapes", "gcc", "-O0", "nodw");
	cr_assert(bin);
	struct jp_err err;
	cr_assert_eq(open_err(bin, &err), -ENODATA);
	cr_expect(strstr(err.msg, "no DWARF"), "%s", err.msg);
	cr_expect(strstr(err.msg, "-g"), "%s", err.msg);
	free(bin);
}

Test(jp_errors, not_elf)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/text", dir);
	FILE *f = fopen(path, "w");
	fputs("#!/bin/sh\necho hello\n", f);
	fclose(f);
	struct jp_err err;
	cr_assert_eq(open_err(path, &err), -ENOEXEC);
	cr_expect(strstr(err.msg, "not an ELF"), "%s", err.msg);
	snprintf(path, sizeof(path), "%s/missing", dir);
	cr_assert_eq(open_err(path, &err), -ENOENT);
	cr_expect(strstr(err.msg, "No such file"), "%s", err.msg);
	cr_assert_eq(open_err(dir, &err), -EISDIR);
	cr_expect(strstr(err.msg, "not a regular file (a directory)"), "%s", err.msg);
	/* A FIFO nobody writes to (a guest over Xen names the binary dom0
	 * reads): refused at once, not waited on. */
	snprintf(path, sizeof(path), "%s/fifo", dir);
	cr_assert_eq(mkfifo(path, 0600), 0);
	cr_assert_eq(open_err(path, &err), -EINVAL);
	cr_expect(strstr(err.msg, "not a regular file (a FIFO)"), "%s", err.msg);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert(f);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc(*len);
	cr_assert_eq(fread(b, 1, *len, f), *len);
	fclose(f);
	return b;
}

Test(jp_errors, truncated_everywhere)
{
	char *bin = jpf_build(dir, "jp_shapes", "gcc", "-g -O2", "trunc");
	cr_assert(bin);
	size_t len;
	unsigned char *b = slurp(bin, &len);
	/* Every prefix length up to the headers, then a stride through the
	 * rest: an error or (only for the whole file) success, never a crash. */
	for (size_t n = 0; n < len; n += n < 256 ? 1 : 997) {
		struct jp_image *img = NULL;
		struct jp_err err = { "" };
		int rc = jp_image_open_mem(&img, "t", b, n, &err);
		cr_assert_neq(rc, 0, "a %zu-byte prefix of %zu was accepted", n, len);
		cr_assert(err.msg[0], "no message for a %zu-byte prefix", n);
		jp_image_free(img);
	}
	struct jp_err err;
	struct jp_image *img = NULL;
	cr_assert_eq(jp_image_open_mem(&img, "t", b, len / 2, &err), -ENOEXEC);
	cr_expect(strstr(err.msg, "truncated"), "%s", err.msg);
	jp_image_free(img);
	free(b);
	free(bin);
}

Test(jp_errors, corrupted)
{
	char *bin = jpf_build(dir, "jp_shapes", "gcc", "-g -O2", "corrupt");
	cr_assert(bin);
	size_t len;
	unsigned char *b = slurp(bin, &len);
	unsigned char *c = malloc(len);
	/* A section header table far past the end. */
	memcpy(c, b, len);
	uint64_t huge = 1ull << 40;
	memcpy(c + 0x28, &huge, 8);
	struct jp_image *img = NULL;
	struct jp_err err;
	cr_assert_eq(jp_image_open_mem(&img, "c", c, len, &err), -ENOEXEC);
	cr_expect(strstr(err.msg, "section headers"), "%s", err.msg);
	/* Wrong machine. */
	memcpy(c, b, len);
	c[0x12] = 0x28;
	c[0x13] = 0;
	cr_assert_eq(jp_image_open_mem(&img, "c", c, len, &err), -ENOTSUP);
	cr_expect(strstr(err.msg, "x86-64"), "%s", err.msg);
	/* Garbage sprayed over the middle of the file (DWARF, code, tables):
	 * whatever opens must answer queries without crashing. */
	uint64_t seed = 42;
	for (int round = 0; round < 40; round++) {
		memcpy(c, b, len);
		for (int k = 0; k < 64; k++) {
			size_t at = 64 + (size_t)(test_rand_next(&seed) % (len - 64));
			c[at] = (unsigned char)test_rand_next(&seed);
		}
		img = NULL;
		if (jp_image_open_mem(&img, "c", c, len, &err) == 0) {
			struct jp_sites s = { 0 };
			jp_find_access(img, "node", "%", NULL, &s, &err);
			jp_find_entry(img, "list_push", NULL, &s, &err);
			jp_find_return(img, "list_push", NULL, &s, &err);
			for (size_t i = 0; i < s.n; i++) {
				struct jp_recipe r;
				jp_local_var(img, &s.v[i], "l", &r, &err);
			}
			jp_sites_free(&s);
		} else {
			cr_assert(err.msg[0]);
		}
		jp_image_free(img);
	}
	free(c);
	free(b);
	free(bin);
}

static struct jp_image *open_ok(const char *bin, const char *root)
{
	struct jp_image *img;
	struct jp_err err;
	struct jp_image_opts o = { .debug_root = root };
	cr_assert_eq(jp_image_open(&img, bin, &o, &err), 0, "%s", err.msg);
	return img;
}

Test(jp_errors, did_you_mean)
{
	char *bin = jpf_build(dir, "jp_shapes", "gcc", "-g -O0", "dym");
	cr_assert(bin);
	struct jp_image *img = open_ok(bin, NULL);
	struct jp_sites s = { 0 };
	struct jp_err err;
	cr_assert_eq(jp_find_access(img, "nod", "%", NULL, &s, &err), -ENOENT);
	cr_expect(strstr(err.msg, "no struct 'nod'") && strstr(err.msg, "did you mean 'node'?"), "%s", err.msg);
	cr_assert_eq(jp_find_access(img, "node", "totl", NULL, &s, &err), -ENOENT);
	cr_expect(strstr(err.msg, "no member 'totl'") && strstr(err.msg, "did you mean 'total'?"), "%s", err.msg);
	/* Members of anonymous unions and structs count as the struct's. */
	cr_assert_eq(jp_find_access(img, "node", "ivl", NULL, &s, &err), -ENOENT);
	cr_expect(strstr(err.msg, "did you mean 'ival'?"), "%s", err.msg);
	cr_assert_eq(jp_find_entry(img, "list_psh", NULL, &s, &err), -ENOENT);
	cr_expect(strstr(err.msg, "no function 'list_psh'") && strstr(err.msg, "did you mean 'list_push'?"),
		  "%s", err.msg);
	cr_assert_eq(jp_find_return(img, "zzzzzzzz", NULL, &s, &err), -ENOENT);
	cr_expect(!strstr(err.msg, "did you mean"), "nothing near: %s", err.msg);
	const char *fn[] = { "node_bumb" };
	struct jp_scope sc = { .funcs = fn, .nfuncs = 1 };
	cr_assert_eq(jp_find_access(img, "node", "%", &sc, &s, &err), -ENOENT);
	cr_expect(strstr(err.msg, "did you mean 'node_bump'?"), "%s", err.msg);
	cr_assert_eq(s.n, 0);
	/* The scope works: only node_bump's accesses, and typedef names too. */
	fn[0] = "node_bump";
	cr_assert_eq(jp_find_access(img, "node_t", "total", &sc, &s, &err), 0, "%s", err.msg);
	cr_expect_eq(s.n, 2, "node_bump reads and writes total once each at -O0");
	for (size_t i = 0; i < s.n; i++)
		cr_expect_str_eq(s.v[i].func, "node_bump");
	/* Unknown local variable at a site. */
	struct jp_recipe r;
	cr_assert_eq(jp_local_var(img, &s.v[0], "pp", &r, &err), -ENOENT);
	cr_expect(strstr(err.msg, "no variable 'pp'") && strstr(err.msg, "did you mean 'p'?"), "%s", err.msg);
	jp_sites_free(&s);
	/* within_file with '...' and suffixes. */
	const char *files[] = { "tests/.../jp_shapes.c" };
	struct jp_scope fs = { .files = files, .nfiles = 1 };
	cr_assert_eq(jp_find_access(img, "list", "%", &fs, &s, &err), 0);
	cr_expect_gt(s.n, 0);
	jp_sites_free(&s);
	files[0] = "other/jp_shapes.c";
	cr_assert_eq(jp_find_access(img, "list", "%", &fs, &s, &err), 0);
	cr_expect_eq(s.n, 0);
	jp_sites_free(&s);
	jp_image_free(img);
	free(bin);
}

Test(jp_errors, optimized_out)
{
	char *bin = jpf_build(dir, "jp_netlike", "gcc", "-g -O2", "opt");
	cr_assert(bin);
	struct jp_image *img = open_ok(bin, NULL);
	struct jp_sites s = { 0 };
	struct jp_err err;
	const char *fn[] = { "tag_skb" };
	struct jp_scope sc = { .funcs = fn, .nfuncs = 1 };
	cr_assert_eq(jp_find_access(img, "sk_buff", "protocol", &sc, &s, &err), 0, "%s", err.msg);
	cr_assert_eq(s.n, 1);
	struct jp_recipe r;
	cr_assert_eq(jp_local_var(img, &s.v[0], "k", &r, &err), -ENODATA);
	cr_expect(strstr(err.msg, "'k' is optimized out at 0x") && strstr(err.msg, "jp_netlike.c:") &&
		  strstr(err.msg, "in tag_skb"), "%s", err.msg);
	/* skb itself is still there. */
	cr_expect_eq(jp_local_var(img, &s.v[0], "skb", &r, &err), 0, "%s", err.msg);
	jp_sites_free(&s);
	jp_image_free(img);
	free(bin);
}

Test(jp_errors, separate_debug_file)
{
	char *bin = jpf_build(dir, "jp_shapes", "gcc", "-g -O2 -Wl,--build-id", "sep");
	cr_assert(bin);
	struct jp_image *img = open_ok(bin, NULL);
	char bid[128];
	snprintf(bid, sizeof(bid), "%s", jp_image_build_id(img));
	struct jp_sites want = { 0 };
	struct jp_err err;
	cr_assert_eq(jp_find_access(img, "node", "%", NULL, &want, &err), 0);
	jp_image_free(img);
	cr_assert_geq(strlen(bid), 8);
	/* By build id under a debug root. */
	char root[512], dbg[1024], cmd[4096];
	snprintf(root, sizeof(root), "%s/debugroot", dir);
	snprintf(dbg, sizeof(dbg), "%s/.build-id/%.2s/%s.debug", root, bid, bid + 2);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\" && objcopy --only-keep-debug '%s' '%s' && "
		 "strip --strip-all '%s'", dbg, bin, dbg, bin);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	struct jp_err e2;
	cr_assert_eq(open_err(bin, &e2), -ENODATA, "no debug root: stripped");
	img = open_ok(bin, root);
	cr_expect_str_eq(jp_image_debug_path(img), dbg);
	struct jp_sites got = { 0 };
	cr_assert_eq(jp_find_access(img, "node", "%", NULL, &got, &err), 0, "%s", err.msg);
	cr_expect_eq(got.n, want.n, "the same sites with the debug info apart");
	jp_sites_free(&got);
	jp_image_free(img);
	/* By .gnu_debuglink next to the binary. */
	char *bin2 = jpf_build(dir, "jp_shapes", "gcc", "-g -O2 -Wl,--build-id=none", "link");
	cr_assert(bin2);
	snprintf(cmd, sizeof(cmd), "cd '%s' && objcopy --only-keep-debug jp_shapes-link jp_shapes-link.dbg && "
		 "strip --strip-all jp_shapes-link && objcopy --add-gnu-debuglink=jp_shapes-link.dbg jp_shapes-link",
		 dir);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	img = open_ok(bin2, root);
	cr_expect(strstr(jp_image_debug_path(img), "jp_shapes-link.dbg"), "%s", jp_image_debug_path(img));
	cr_assert_eq(jp_find_access(img, "node", "%", NULL, &got, &err), 0, "%s", err.msg);
	cr_expect_eq(got.n, want.n);
	jp_sites_free(&got);
	jp_sites_free(&want);
	jp_image_free(img);
	free(bin2);
	free(bin);
}
