/*
 * What a kernel agent's HELLO says of its kernel (guestrt/hook/kernel/kernel_name.c):
 * the release, and the modules with BTF, sorted, vmlinux left out, and
 * names the HELLO may not carry counted rather than sent.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "guestrt/hook/kernel/kernel_name.h"

static void touch(const char *dir, const char *name)
{
	char p[300];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	int fd = open(p, O_CREAT | O_WRONLY, 0600);
	cr_assert_geq(fd, 0, "%s", p);
	close(fd);
}

static void rm(const char *dir, const char *name)
{
	char p[300];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	unlink(p);
}

Test(kernel_name, release_and_modules_sorted)
{
	char dir[] = "/tmp/xflow-kname-XXXXXX";
	cr_assert(mkdtemp(dir));
	static const char *const names[] = { "vmlinux", "xen_netfront", "bridge", "xen_blkfront", "bad+name" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		touch(dir, names[i]);
	struct agent_kernel_name k;
	cr_assert_eq(agent_kernel_name_read(&k, dir), 0);
	struct utsname un;
	cr_assert_eq(uname(&un), 0);
	cr_expect_str_eq(k.release, un.release);
	cr_assert_eq(k.nmods, 3);
	cr_expect_str_eq(k.modv[0], "bridge");
	cr_expect_str_eq(k.modv[1], "xen_blkfront");
	cr_expect_str_eq(k.modv[2], "xen_netfront");
	cr_expect_eq(k.left_out, 1, "a name with '+' is not sent");
	agent_kernel_name_fini(&k);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		rm(dir, names[i]);
	rmdir(dir);
}

Test(kernel_name, no_module_btf_is_no_modules)
{
	struct agent_kernel_name k;
	cr_assert_eq(agent_kernel_name_read(&k, "/nonexistent/btf"), 0);
	cr_expect_eq(k.nmods, 0);
	cr_expect_null(k.modv);
	cr_expect_neq(k.release[0], 0);
	agent_kernel_name_fini(&k);
}
