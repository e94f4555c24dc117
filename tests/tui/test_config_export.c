/*
 * The exporter's configuration (tui/config_export.c): --listen, --headless
 * and the keys listen, host, metrics-max-hops, metrics-max-connections,
 * metrics-max-connections-per-address, metrics-request-timeout and
 * headless, from the file and the command line, with errors that say what
 * to write.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tui/config.h"

/* The command line @argv (NULL-terminated), on top of the defaults.
 * getopt permutes the pointers it is given, never the strings. */
static int cmdline(struct xft_config *c, char *err, const char *const *argv)
{
	char *v[32];
	int argc = 0;
	for (; argv[argc] && argc < 31; argc++)
		v[argc] = (char *)(uintptr_t)argv[argc];
	v[argc] = NULL;
	xft_config_defaults(c);
	unsetenv("XFLOWTOP_CONF");
	return xft_config_from_args(c, argc, v, err, 512);
}

#define ARGV(...) ((const char *const[]){ "xflowtop", __VA_ARGS__, NULL })

Test(config_export, defaults)
{
	struct xft_config c;
	xft_config_defaults(&c);
	cr_assert_str_eq(c.listen, "", "no exporter unless asked");
	cr_assert_str_eq(c.host, "");
	cr_assert_eq(c.metrics_max_hops, 64);
	cr_assert_eq(c.metrics_max_connections, 32);
	cr_assert_eq(c.metrics_max_per_address, 8);
	cr_assert_eq(c.metrics_request_timeout_s, 5);
	cr_assert_eq(c.headless, 0);
}

Test(config_export, the_file_and_the_command_line)
{
	struct xft_config c;
	char err[512];
	xft_config_defaults(&c);
	cr_assert_eq(xft_config_parse(&c, "t.conf",
				      "listen = 0.0.0.0:9464\nhost = dom0-rack7\nmetrics-max-hops = 500\n"
				      "metrics-max-connections = 4\nheadless = yes\n"
				      "metrics-max-connections-per-address = 2\nmetrics-request-timeout = 30\n",
				      err, sizeof(err)), 0, "%s", err);
	cr_assert_str_eq(c.listen, "0.0.0.0:9464");
	cr_assert_str_eq(c.host, "dom0-rack7");
	cr_assert_eq(c.metrics_max_hops, 500);
	cr_assert_eq(c.metrics_max_connections, 4);
	cr_assert_eq(c.metrics_max_per_address, 2);
	cr_assert_eq(c.metrics_request_timeout_s, 30);
	cr_assert_eq(c.headless, 1);

	cr_assert_eq(cmdline(&c, err, ARGV("--listen", "9464", "--set", "host=a b", "--headless")), 0, "%s", err);
	cr_assert_str_eq(c.listen, "9464");
	cr_assert_str_eq(c.host, "a b");
	cr_assert_eq(c.headless, 1);
}

static void refused(const char *const *argv, const char *says)
{
	struct xft_config c;
	char err[512] = "";
	cr_assert_neq(cmdline(&c, err, argv), 0, "accepted");
	cr_assert(strstr(err, says), "'%s' does not say '%s'", err, says);
}

Test(config_export, errors_say_what_to_write)
{
	refused(ARGV("--listen", ":9464"), "--listen: bad value ':9464' for 'listen': give the address: "
					  "127.0.0.1:9464 for this host only");
	refused(ARGV("--listen", "host.example:9464"), "names are not looked up");
	refused(ARGV("--listen"), "option '--listen' needs a value");
	refused(ARGV("--set", "metrics-max-hops=0"), "expected hops with series of their own, 1 to 1024");
	refused(ARGV("--set", "metrics-max-hops=1025"), "1 to 1024");
	refused(ARGV("--set", "metrics-max-connections=x"), "'metrics-max-connections': expected 1 to 1024");
	refused(ARGV("--set", "metrics-max-connections-per-address=0"), "expected 1 to 1024");
	refused(ARGV("--set", "metrics-request-timeout=0.5"), "expected whole seconds, 1 to 300");
	refused(ARGV("--set", "host="), "expected the host label, 1 to 255 printable characters");
	refused(ARGV("--set", "host=a\tb"), "printable");
	refused(ARGV("--set", "headless=maybe"), "expected yes or no");
	refused(ARGV("--set", "lisen=9464"), "did you mean 'listen'?");
	refused(ARGV("--headless"), "--headless shows nothing and only serves /metrics: give --listen ADDR:PORT too");
	refused(ARGV("--headless", "--listen", "9464", "-b"), "choose one");
	refused(ARGV("--headless", "--listen", "9464", "--json"), "choose one");
}
