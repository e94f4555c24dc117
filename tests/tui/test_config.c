/*
 * Configuration: the file's syntax, every error with file and line, the
 * command line overriding the file.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tui/config.h"

static int parse(struct xft_config *c, const char *text, char *err)
{
	xft_config_defaults(c);
	return xft_config_parse(c, "test.conf", text, err, 256);
}

static void assert_error(const char *text, const char *want)
{
	struct xft_config c;
	char err[256] = "";
	cr_assert_neq(parse(&c, text, err), 0, "accepted: %s", text);
	cr_assert(strstr(err, want), "for %s: got '%s', want '%s'", text, err, want);
}

Test(config, defaults_are_the_models_defaults)
{
	struct xft_config c;
	struct xft_agg_limits l;
	xft_config_defaults(&c);
	xft_agg_limits_default(&l);
	cr_assert_eq(memcmp(&c.limits, &l, sizeof(l)), 0);
	cr_assert_eq(c.refresh_s, 1.0);
	cr_assert_eq(c.color, 1);
	cr_assert_str_eq(c.sort, "total");
}

Test(config, keys_sections_comments)
{
	struct xft_config c;
	char err[256];
	const char *text = "# comment\n"
			   "  refresh = 0.5   # half a second\n"
			   "\n"
			   "collector = synthetic:rate=10\n"
			   "collector=synthetic:rate=20\n"
			   "flows = a.xml\n"
			   "max-flows = 1000000\n"
			   "reorder-window = 250\n"
			   "flow-expire = 2.5\n"
			   "join-grace = 0.5\n"
			   "color = no\n"
			   "sort = p99\n"
			   "[domain linux0]\n"
			   "id = 0\n"
			   "agent = socket:/run/x\n"
			   "binary = /bin/a\n"
			   "binary = /bin/b\n"
			   "[ domain linuxU ]\n"
			   "id = 1\n";
	cr_assert_eq(parse(&c, text, err), 0, "%s", err);
	cr_assert_eq(c.refresh_s, 0.5);
	cr_assert_eq(c.ncollectors, 2);
	cr_assert_str_eq(c.collectors[1], "synthetic:rate=20");
	cr_assert_eq(c.nflow_files, 1);
	cr_assert_eq(c.limits.max_flows, 1000000);
	cr_assert_eq(c.limits.window_ns, 250000000u);
	cr_assert_eq(c.limits.expire_ns, 2500000000u);
	cr_assert_eq(c.limits.join_grace_ns, 500000000u, "join-grace is its own limit");
	cr_assert_eq(c.color, 0);
	cr_assert_str_eq(c.sort, "p99");
	cr_assert_eq(c.ndomains, 2);
	cr_assert_str_eq(c.domains[0].name, "linux0");
	cr_assert_eq(c.domains[0].id, 0);
	cr_assert_eq(c.domains[0].nbinaries, 2);
	cr_assert_str_eq(c.domains[0].agent, "socket:/run/x");
	cr_assert_eq(c.domains[1].id, 1);
}

Test(config, errors_name_file_and_line)
{
	assert_error("refresh = 1\n\nrefesh = 2\n", "test.conf:3: unknown key 'refesh' (did you mean 'refresh'?)");
	assert_error("bogus = 1\n", "test.conf:1: unknown key 'bogus'");
	assert_error("\n\nrefresh = 0\n", "test.conf:3: bad value '0' for 'refresh'");
	assert_error("refresh = fast\n", "test.conf:1: bad value 'fast'");
	assert_error("refresh = 1s\n", "test.conf:1:");
	assert_error("max-hops = 0\n", "test.conf:1: bad value '0' for 'max-hops': expected distinct hops, 16 to 1048576");
	assert_error("max-flows = -5\n", "test.conf:1: bad value '-5'");
	assert_error("max-flows = 99999999999999999999\n", "test.conf:1: bad value");
	assert_error("top-k = 1e3\n", "test.conf:1: bad value");
	assert_error("color = maybe\n", "test.conf:1: bad value 'maybe' for 'color': expected yes or no");
	assert_error("sort = speed\n", "test.conf:1: bad value 'speed' for 'sort'");
	assert_error("x\n", "test.conf:1: expected 'key = value', got 'x'");
	assert_error("= 3\n", "test.conf:1: missing key");
	assert_error("refresh =\n", "test.conf:1: missing value for 'refresh'");
	assert_error("[domain]\n", "test.conf:1: missing the domain name");
	assert_error("[domain a\n", "test.conf:1: bad section header");
	assert_error("[dom a]\n", "test.conf:1: unknown section '[dom a]'");
	assert_error("[domain a]\n[domain a]\n", "test.conf:2: domain 'a' is defined twice");
	assert_error("[domain a]\nid = 70000\n", "test.conf:2: bad value '70000' for 'id'");
	assert_error("[domain a]\nrefresh = 1\n", "test.conf:2: unknown key 'refresh' in a [domain] section");
	assert_error("[domain a]\nagnet = x\n", "test.conf:2: unknown key 'agnet' in a [domain] section (did you mean 'agent'?)");
}

Test(config, too_long_line_is_reported)
{
	char *text = malloc(3000);
	memset(text, 'a', 2999);
	text[2999] = '\0';
	struct xft_config c;
	char err[256];
	cr_assert_neq(parse(&c, text, err), 0);
	cr_assert(strstr(err, "test.conf:1: line too long"), "%s", err);
	free(text);
}

Test(config, load_names_the_file)
{
	char path[] = "/tmp/xft-conf-XXXXXX";
	int fd = mkstemp(path);
	cr_assert(fd >= 0);
	const char *text = "refresh = 2\nmax-path = 1\n";
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct xft_config c;
	char err[256];
	xft_config_defaults(&c);
	cr_assert_neq(xft_config_load(&c, path, err, sizeof(err)), 0);
	char want[300];
	snprintf(want, sizeof(want), "%s:2: bad value '1' for 'max-path'", path);
	cr_assert(strstr(err, want), "%s", err);
	unlink(path);
	cr_assert_neq(xft_config_load(&c, "/nonexistent/x.conf", err, sizeof(err)), 0);
	cr_assert(strstr(err, "/nonexistent/x.conf: No such file"), "%s", err);
}

Test(config, the_shipped_default_parses)
{
	struct xft_config c;
	char err[256];
	xft_config_defaults(&c);
	cr_assert_eq(xft_config_load(&c, "config/xflowtop.conf", err, sizeof(err)), 0, "%s", err);
	cr_assert_geq(c.ncollectors, 1);
	cr_assert_eq(c.ndomains, 2);
}

static int args(struct xft_config *c, char *err, int argc, ...)
{
	char *argv[32];
	va_list ap;
	va_start(ap, argc);
	for (int i = 0; i < argc; i++)
		argv[i] = va_arg(ap, char *);
	argv[argc] = NULL;
	va_end(ap);
	xft_config_defaults(c);
	return xft_config_from_args(c, argc, argv, err, 256);
}

Test(config, command_line_overrides_the_file)
{
	char path[] = "/tmp/xft-conf-XXXXXX";
	int fd = mkstemp(path);
	const char *text = "refresh = 2\ncollector = synthetic:rate=1\ncollector = synthetic:rate=2\nmax-flows = 100\n";
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	struct xft_config c;
	char err[256];
	unsetenv("NO_COLOR");
	cr_assert_eq(args(&c, err, 9, "xflowtop", "-c", path, "-d", "0.25", "--collector", "synthetic:rate=9",
			  "--set", "max-flows=5000"), 0, "%s", err);
	cr_assert_eq(c.refresh_s, 0.25);
	cr_assert_eq(c.ncollectors, 1, "the command line's list replaces the file's");
	cr_assert_str_eq(c.collectors[0], "synthetic:rate=9");
	cr_assert_eq(c.limits.max_flows, 5000);
	cr_assert_eq(args(&c, err, 3, "xflowtop", "-c", path), 0, "%s", err);
	cr_assert_eq(c.ncollectors, 2);
	cr_assert_eq(c.refresh_s, 2);
	unlink(path);
}

Test(config, command_line_errors)
{
	struct xft_config c;
	char err[256];
	cr_assert_neq(args(&c, err, 3, "xflowtop", "-d", "0"), 0);
	cr_assert(strstr(err, "--delay: bad value '0'"), "%s", err);
	cr_assert_neq(args(&c, err, 2, "xflowtop", "--bogus"), 0);
	cr_assert(strstr(err, "unknown option '--bogus'"), "%s", err);
	cr_assert_neq(args(&c, err, 2, "xflowtop", "-n"), 0);
	cr_assert(strstr(err, "needs a value"), "%s", err);
	cr_assert_neq(args(&c, err, 3, "xflowtop", "-n", "0"), 0);
	cr_assert_neq(args(&c, err, 3, "xflowtop", "--set", "nokey"), 0);
	cr_assert_neq(args(&c, err, 3, "xflowtop", "--set", "max-hops=3"), 0);
	cr_assert(strstr(err, "max-hops"), "%s", err);
	cr_assert_neq(args(&c, err, 2, "xflowtop", "stray"), 0);
	cr_assert_neq(args(&c, err, 3, "xflowtop", "-c", "/nonexistent.conf"), 0);
}

Test(config, flags_and_no_color)
{
	struct xft_config c;
	char err[256];
	unsetenv("NO_COLOR");
	cr_assert_eq(args(&c, err, 5, "xflowtop", "--json", "-n", "3", "--demo"), 0, "%s", err);
	cr_assert_eq(c.batch, 1, "--json implies batch mode");
	cr_assert_eq(c.iterations, 3);
	cr_assert_eq(c.demo, 1);
	cr_assert_eq(c.color, 1);
	setenv("NO_COLOR", "1", 1);
	cr_assert_eq(args(&c, err, 1, "xflowtop"), 0);
	cr_assert_eq(c.color, 0);
	unsetenv("NO_COLOR");
	cr_assert_eq(args(&c, err, 2, "xflowtop", "--no-color"), 0);
	cr_assert_eq(c.color, 0);
}

Test(config, domains_and_flows_become_agent_options)
{
	struct xft_config c;
	char err[256], spec[1024];
	const char *text = "flows = net.xml\n"
			   "flows = blk.xml\n"
			   "[domain linux0]\n"
			   "agent = socket:/run/a0.sock\n"
			   "binary = /bin/back\n"
			   "[domain linuxU]\n"
			   "agent = socket:/run/aU.sock\n";
	cr_assert_eq(parse(&c, text, err), 0, "%s", err);
	cr_assert_eq(xft_config_agent_spec(&c, "agent", spec, sizeof(spec)), 0);
	cr_assert_str_eq(spec, "agent:socket=/run/a0.sock,bin=linux0:/bin/back,socket=/run/aU.sock,flows=net.xml,flows=blk.xml");
	cr_assert_eq(xft_config_agent_spec(&c, "agent:timeout=5", spec, sizeof(spec)), 0);
	cr_assert(!strncmp(spec, "agent:timeout=5,socket=/run/a0.sock,", 36), "%s", spec);
	cr_assert_eq(xft_config_agent_spec(&c, "agent:", spec, sizeof(spec)), 0);
	cr_assert(!strncmp(spec, "agent:socket=", 13), "%s", spec);
	cr_assert_eq(xft_config_agent_spec(&c, "synthetic:rate=5", spec, sizeof(spec)), 0);
	cr_assert_str_eq(spec, "synthetic:rate=5", "other collectors are left alone");
	cr_assert_eq(xft_config_agent_spec(&c, "agent", spec, 20), -ENAMETOOLONG);
	assert_error("[domain a]\nagent = ring:/x\n", "test.conf:2: bad value 'ring:/x' for 'agent': expected socket:PATH");
	assert_error("[domain a]\nbinary = /a,b\n", "test.conf:2: bad value '/a,b' for 'binary'");
}
