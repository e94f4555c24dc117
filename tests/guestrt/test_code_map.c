/*
 * Where branches land in a binary (guestrt/hook/code_map.c, with the sweep of
 * guestrt/x86/insn_reloc.c): jump tables as GCC -O2 lays out a switch in a loop
 * (fixtures/cm_switch.c).
 */
#include <criterion/criterion.h>

#include "guestrt/hook/hook_priv.h"
#include "tests/guestrt/gt.h"

static struct xflow_code_map *open_map(const char *bin)
{
	struct xflow_code_map *m;
	char err[256] = "";
	int rc = xflow_code_map_open(bin, &m, err, sizeof(err));
	cr_assert_eq(rc, 0, "%s", err);
	return m;
}

static struct xflow_code_func func_of(const struct xflow_code_map *m, const char *bin, const char *sym)
{
	struct xflow_code_func f;
	cr_assert_eq(xflow_code_map_func(m, gt_sym(bin, sym), &f), 0, "no function holds %s", sym);
	return f;
}

/* The table's base set once, far before the jump; its bound compared in
 * memory; a case in the .cold part: every case is a target, and the
 * function can take jumps that cover more than one instruction. */
Test(code_map, switch_in_a_loop_is_followed)
{
	const char *bin = gt_build("cm_switch", "-O2");
	struct xflow_code_map *m = open_map(bin);
	struct xflow_code_func f = func_of(m, bin, "sw_good");
	cr_expect_not(f.opaque, "sw_good's table was not followed");
	const char *cases[] = { "sw_good_case0", "sw_good_case1", "sw_good_case2", "sw_good_case3" };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect(xflow_code_map_is_target(m, gt_sym(bin, cases[i])), "%s is not a target", cases[i]);
	xflow_code_map_free(m);
}

/* A base register written by anything but its lea may hold another
 * address when the jump runs: nothing in the function is trusted. */
Test(code_map, base_written_twice_is_opaque)
{
	const char *bin = gt_build("cm_switch", "-O2");
	struct xflow_code_map *m = open_map(bin);
	struct xflow_code_func f = func_of(m, bin, "sw_bad");
	cr_expect(f.opaque, "sw_bad's table was trusted though its base is written twice");
	xflow_code_map_free(m);
}
