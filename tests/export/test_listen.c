/*
 * --listen (export/listen.c): what it accepts, and errors that say what to
 * write or do instead.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "export/export.h"

static void ok(const char *spec, const char *bound)
{
	struct xfx_listen l;
	char err[512] = "";
	cr_assert_eq(xfx_listen_parse(spec, &l, err, sizeof(err)), 0, "%s: %s", spec, err);
	cr_assert_str_eq(l.text, bound, "%s", spec);
}

static void bad(const char *spec, const char *says)
{
	struct xfx_listen l;
	char err[512] = "";
	cr_assert_eq(xfx_listen_parse(spec, &l, err, sizeof(err)), -EINVAL, "%s accepted", spec);
	cr_assert(strstr(err, says), "%s: '%s' does not say '%s'", spec, err, says);
}

Test(listen, loopback_by_default)
{
	ok("9464", "127.0.0.1:9464");
	ok("localhost:9464", "127.0.0.1:9464");
	ok("127.0.0.1:9464", "127.0.0.1:9464");
	ok("0.0.0.0:80", "0.0.0.0:80");
	ok("[::1]:9464", "[::1]:9464");
	ok("[::]:9464", "[::]:9464");
	ok("10.1.2.3:0", "10.1.2.3:0");
}

Test(listen, errors_say_what_to_write)
{
	bad("", "expected [ADDR:]PORT");
	bad(":9464", "127.0.0.1:9464 for this host only, 0.0.0.0:9464 for every interface");
	bad("9464x", "the port must be a number");
	bad("70000", "0 to 65535");
	bad("127.0.0.1:", "the port must be a number");
	bad("::1:9464", "in brackets, e.g. [::1]:9464");
	bad("[::1]9464", "expected [IPV6]:PORT");
	bad("[::1:9464", "expected [IPV6]:PORT");
	bad("[1.2.3.4]:9464", "is not an IPv6 address");
	bad("example.com:9464", "is not a numeric IPv4 address (names are not looked up");
	bad("256.1.1.1:9464", "is not a numeric IPv4 address");
	char longer[200];
	memset(longer, '1', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	bad(longer, "too long");
}

Test(listen, port_zero_takes_a_free_port_and_a_busy_one_is_named)
{
	struct xfx_listen l, again;
	char err[512];
	int fd, fd2;
	cr_assert_eq(xfx_listen_parse("127.0.0.1:0", &l, err, sizeof(err)), 0);
	cr_assert_eq(xfx_listen_open(&l, 8, &fd, err, sizeof(err)), 0, "%s", err);
	cr_assert_str_neq(l.text, "127.0.0.1:0", "the chosen port is reported");
	cr_assert_eq(xfx_listen_parse(l.text, &again, err, sizeof(err)), 0);
	cr_assert_eq(xfx_listen_open(&again, 8, &fd2, err, sizeof(err)), -EADDRINUSE);
	cr_assert(strstr(err, l.text) && strstr(err, "address already in use") && strstr(err, "choose another port"),
		  "%s", err);
	close(fd);
}

Test(listen, an_address_not_of_this_host_is_named)
{
	struct xfx_listen l;
	char err[512];
	int fd;
	/* TEST-NET-1 (RFC 5737): never an address of this host. */
	cr_assert_eq(xfx_listen_parse("192.0.2.1:9464", &l, err, sizeof(err)), 0);
	cr_assert_eq(xfx_listen_open(&l, 8, &fd, err, sizeof(err)), -EADDRNOTAVAIL);
	cr_assert(strstr(err, "no interface of this host has that address"), "%s", err);
}

Test(listen, a_privileged_port_without_privilege_is_explained)
{
	if (geteuid() == 0)
		cr_skip_test("root may bind port 80");
	struct xfx_listen l;
	char err[512];
	int fd;
	cr_assert_eq(xfx_listen_parse("127.0.0.1:80", &l, err, sizeof(err)), 0);
	int rc = xfx_listen_open(&l, 8, &fd, err, sizeof(err));
	if (rc == 0) {
		close(fd);
		cr_skip_test("this host lets anyone bind port 80");
	}
	cr_assert(strstr(err, "ports below 1024 need root"), "%s", err);
}
