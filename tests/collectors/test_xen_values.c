/*
 * Values a guest writes into xenstore, as the Xen transport parses them:
 * numbers (xflow_xs_parse_uint) and the agent's offer node
 * (xen_offer_parse).  Anything not in the one accepted spelling is refused.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "collectors/xen_discover.h"
#include "xflow/xen.h"

static int num(const char *s, uint32_t max, uint32_t *v)
{
	return xflow_xs_parse_uint(s, strlen(s), max, v);
}

Test(xen_values, numbers)
{
	uint32_t v = 99;
	cr_expect_eq(num("0", 10, &v), 0);
	cr_expect_eq(v, 0);
	cr_expect_eq(num("32751", XFLOW_XEN_MAX_DOMID, &v), 0);
	cr_expect_eq(v, 32751);
	cr_expect_eq(num("4294967295", UINT32_MAX, &v), 0);
	cr_expect_eq(v, UINT32_MAX);
	v = 7;
	static const char *const bad[] = { "", "-1", "+1", " 1", "1 ", "01", "00", "1a", "0x10", "32752",
					   "99999999999", "4294967296", "1.0" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(num(bad[i], XFLOW_XEN_MAX_DOMID, &v), -EINVAL, "'%s' accepted", bad[i]);
	cr_expect_eq(v, 7, "a refused value must not be stored");
	/* A NUL inside the value's length is not a terminator. */
	cr_expect_eq(xflow_xs_parse_uint("12\0003", 4, 100000, &v), -EINVAL);
	cr_expect_eq(xflow_xs_parse_uint(NULL, 0, 10, &v), -EINVAL);
}

Test(xen_values, offer_node)
{
	uint32_t pid = 0;
	bool busy = true;
	cr_expect_eq(xen_offer_parse("xflow-agent 1 4242 ready", &pid, &busy), 0);
	cr_expect_eq(pid, 4242);
	cr_expect(!busy);
	cr_expect_eq(xen_offer_parse("xflow-agent 1 17 busy", &pid, &busy), 0);
	cr_expect_eq(pid, 17);
	cr_expect(busy);
	cr_expect_eq(xen_offer_parse("xflow-agent 2 17 ready", &pid, &busy), -EPROTO);
	static const char *const bad[] = {
		"", "xflow-agent", "xflow-agent 1", "xflow-agent 1 17", "xflow-agent 1 17 ", "xflow-agent 1 17 Ready",
		"xflow-agent 1 17 ready ", "xflow-agent  1 17 ready", "xflow-agent 1 -17 ready",
		"xflow-agent 1 017 ready", "xflow-agent 1 99999999999 ready", "xflow-agent x 17 ready",
		"XFLOW-agent 1 17 ready", "xflow-agent 1 17 ready\n", "xflow-agent 01 17 ready",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(xen_offer_parse(bad[i], &pid, &busy), -EINVAL, "'%s' accepted", bad[i]);
}
