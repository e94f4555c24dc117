/*
 * within_file() patterns.
 */
#include "wtest.h"

Test(path_match, the_papers_patterns)
{
	cr_expect(xflow_path_match("drivers/.../netfront.c", "sim/linux/drivers/xen/netfront/netfront.c"));
	cr_expect(xflow_path_match(".../netfront.c", "drivers/xen/netfront/netfront.c"));
	cr_expect(xflow_path_match("drivers/.../netback.c", "drivers/xen/netback/netback.c"));
	cr_expect_not(xflow_path_match("drivers/.../netback.c", "drivers/xen/netfront/netfront.c"));
}

Test(path_match, suffix_and_anchoring)
{
	cr_expect(xflow_path_match("net/core/dev.c", "/usr/src/linux/net/core/dev.c"));
	cr_expect(xflow_path_match("dev.c", "net/core/dev.c"));
	cr_expect_not(xflow_path_match("dev.c", "net/core/netdev.c"), "whole components only");
	cr_expect_not(xflow_path_match("core/dev.c", "net/core/dev.c/x"));
	cr_expect(xflow_path_match("/net/core/dev.c", "/net/core/dev.c"));
	cr_expect_not(xflow_path_match("/core/dev.c", "/net/core/dev.c"), "a leading / anchors");
	cr_expect(xflow_path_match("/net/...", "/net/core/dev.c"));
}

Test(path_match, dots_match_any_run_including_none)
{
	cr_expect(xflow_path_match("drivers/.../netfront.c", "drivers/netfront.c"));
	cr_expect(xflow_path_match("a/.../b/.../c", "a/x/b/y/z/c"));
	cr_expect(xflow_path_match("a/.../b/.../c", "a/b/c"));
	cr_expect_not(xflow_path_match("a/.../b/.../c", "a/c"));
	cr_expect(xflow_path_match("a/.../b", "a/b/x/b"), "backtracks to the last b");
	cr_expect(xflow_path_match("...", "anything/at/all"));
	cr_expect(xflow_path_match("./a//b", "x/a/./b"), "empty and . components ignored");
	cr_expect_not(xflow_path_match("a", ""));
}
