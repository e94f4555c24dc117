/*
 * The simulated libxenstore (sim/xenlibs/xenstore.c, simx_store.c): the
 * environment it needs, reads and writes, relative paths, xenstored's
 * permission rules, and watches within and across processes, including
 * the initial event, @introduceDomain/@releaseDomain and a burst that
 * overflows the mailbox.
 */
#include <dlfcn.h>
#include <xenevtchn.h>
#include <xengnttab.h>
#include <xenstore.h>

#include "tests/sim/simxen_test.h"

TestSuite(simxen_xenstore, .init = simxen_setup, .fini = simxen_teardown, .timeout = 60);

static struct xs_handle *open_as(unsigned int domid)
{
	struct xs_handle *h;

	simxen_use_domid(domid);
	h = xs_open(0);
	simxen_use_domid(0);
	cr_assert_not_null(h, "xs_open as dom%u: %s", domid, strerror(errno));
	return h;
}

static char *read_str(struct xs_handle *h, const char *path)
{
	unsigned int len = 12345;
	char *v = xs_read(h, XBT_NULL, path, &len);

	if (v)
		cr_assert_eq(strlen(v), len);
	return v;
}

static void assert_value(struct xs_handle *h, const char *path, const char *want)
{
	char *v = read_str(h, path);

	cr_assert_not_null(v, "read %s: %s", path, strerror(errno));
	cr_assert_str_eq(v, want, "%s", path);
	free(v);
}

static bool put(struct xs_handle *h, const char *path, const char *value)
{
	return xs_write(h, XBT_NULL, path, value, (unsigned int)strlen(value));
}

Test(simxen_xenstore, is_the_simulation_that_is_loaded)
{
	Dl_info info;

	cr_assert(dladdr((void *)xs_open, &info));
	cr_assert_not_null(strstr(info.dli_fname, "sim/xenlibs/libxenstore.so.4"),
			   "xs_open comes from %s", info.dli_fname);
	cr_assert(dladdr((void *)xenevtchn_open, &info));
	cr_assert_not_null(strstr(info.dli_fname, "sim/xenlibs/libxenevtchn.so.1"));
	cr_assert(dladdr((void *)xengnttab_open, &info));
	cr_assert_not_null(strstr(info.dli_fname, "sim/xenlibs/libxengnttab.so.1"));
}

Test(simxen_xenstore, refuses_to_open_without_a_state_directory)
{
	char msg[1024] = "";
	int pipefd[2], saved;
	ssize_t n;

	unsetenv("XFLOW_SIMXEN_DIR");
	cr_assert_eq(pipe(pipefd), 0);
	saved = dup(STDERR_FILENO);
	dup2(pipefd[1], STDERR_FILENO);
	errno = 0;
	cr_assert_null(xs_open(0));
	cr_assert_eq(errno, ENOENT);
	errno = 0;
	cr_assert_null(xs_open(0));   /* said once only */
	cr_assert_eq(errno, ENOENT);
	errno = 0;
	cr_assert_null(xenevtchn_open(NULL, 0));
	cr_assert_eq(errno, ENOENT);
	errno = 0;
	cr_assert_null(xengnttab_open(NULL, 0));
	cr_assert_eq(errno, ENOENT);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(pipefd[1]);
	n = read(pipefd[0], msg, sizeof(msg) - 1);
	cr_assert_gt(n, 0);
	msg[n] = '\0';
	close(pipefd[0]);
	cr_assert_not_null(strstr(msg, "libxenstore"), "%s", msg);
	cr_assert_not_null(strstr(msg, "XFLOW_SIMXEN_DIR is not set"), "%s", msg);
	cr_assert_not_null(strstr(msg, "libxenevtchn"), "%s", msg);
	/* One line per library. */
	cr_assert_null(strstr(strstr(msg, "libxenstore") + 1, "libxenstore ("), "%s", msg);
}

Test(simxen_xenstore, refuses_bad_or_missing_domains)
{
	setenv("XFLOW_SIMXEN_DOMID", "seven", 1);
	cr_assert_null(xs_open(0));
	cr_assert_eq(errno, EINVAL);
	setenv("XFLOW_SIMXEN_DOMID", "7", 1);
	cr_assert_null(xs_open(0));
	cr_assert_eq(errno, ESRCH);
	simxen_domain_create(7, "guest");
	xs_close(open_as(7));
}

Test(simxen_xenstore, reads_writes_lists_and_removes)
{
	struct xs_handle *h = open_as(0);
	unsigned int num = 99;
	char **names, *v;

	assert_value(h, "/local/domain/0/name", "Domain-0");
	assert_value(h, "/local/domain/0/domid", "0");
	cr_assert(put(h, "/a/b/c", "leaf"));
	assert_value(h, "/a/b/c", "leaf");
	assert_value(h, "/a/b", "");          /* made on the way, empty */
	cr_assert(put(h, "/a/b", "both"));    /* a value and children */
	assert_value(h, "/a/b", "both");
	cr_assert(put(h, "/a/b/d", ""));
	names = xs_directory(h, XBT_NULL, "/a/b", &num);
	cr_assert_not_null(names);
	cr_assert_eq(num, 2);
	cr_assert_str_eq(names[0], "c");
	cr_assert_str_eq(names[1], "d");
	free(names);
	names = xs_directory(h, XBT_NULL, "/a/b/c", &num);
	cr_assert_not_null(names);
	cr_assert_eq(num, 0);
	free(names);

	/* Binary values keep their length; reads add a NUL. */
	cr_assert(xs_write(h, XBT_NULL, "/bin", "x\0y", 3));
	unsigned int len = 0;
	v = xs_read(h, XBT_NULL, "/bin", &len);
	cr_assert_eq(len, 3);
	cr_assert_eq(memcmp(v, "x\0y", 4), 0);
	free(v);

	cr_assert(xs_mkdir(h, XBT_NULL, "/m/n"));
	assert_value(h, "/m/n", "");
	cr_assert(xs_mkdir(h, XBT_NULL, "/a/b"));   /* exists: fine, unchanged */
	assert_value(h, "/a/b", "both");

	cr_assert(xs_rm(h, XBT_NULL, "/a/b"));
	cr_assert_null(xs_read(h, XBT_NULL, "/a/b/c", NULL));
	cr_assert_eq(errno, ENOENT);
	cr_assert_null(xs_read(h, XBT_NULL, "/a/b", NULL));
	cr_assert_eq(errno, ENOENT);
	assert_value(h, "/a", "");
	cr_assert(xs_rm(h, XBT_NULL, "/a/gone"));   /* missing, parent exists */
	cr_assert_not(xs_rm(h, XBT_NULL, "/x/y"));
	cr_assert_eq(errno, ENOENT);
	cr_assert_not(xs_rm(h, XBT_NULL, "/"));
	cr_assert_eq(errno, EINVAL);
	xs_close(h);
}

Test(simxen_xenstore, checks_paths_and_sizes)
{
	struct xs_handle *h = open_as(0);
	static char big[5000];

	memset(big, 'v', sizeof(big) - 1);
	cr_assert_not(put(h, "/a//b", "x"));
	cr_assert_eq(errno, EINVAL);
	cr_assert_not(put(h, "/a/", "x"));
	cr_assert_eq(errno, EINVAL);
	cr_assert_not(put(h, "/a.b", "x"));
	cr_assert_eq(errno, EINVAL);
	cr_assert_not(put(h, "", "x"));
	cr_assert_eq(errno, EINVAL);
	cr_assert_not(put(h, "@releaseDomain", "x"));
	cr_assert_eq(errno, EINVAL);
	cr_assert_not(put(h, "/big", big));
	cr_assert_eq(errno, E2BIG);
	cr_assert(xs_write(h, XBT_NULL, "/big", big, 4096 - 5));
	xs_close(h);
}

Test(simxen_xenstore, resolves_relative_paths_against_the_domain)
{
	struct xs_handle *h0 = open_as(0), *h7;
	char *path;

	simxen_domain_create(7, "guest");
	h7 = open_as(7);
	assert_value(h7, "domid", "7");
	assert_value(h7, "name", "guest");
	cr_assert(put(h7, "data/rel", "mine"));
	assert_value(h0, "/local/domain/7/data/rel", "mine");
	cr_assert(put(h0, "rel0", "zero"));
	assert_value(h0, "/local/domain/0/rel0", "zero");
	path = xs_get_domain_path(h0, 7);
	cr_assert_str_eq(path, "/local/domain/7");
	free(path);
	cr_assert(xs_path_is_subpath("/a", "/a/b"));
	cr_assert(xs_path_is_subpath("/a", "/a"));
	cr_assert_not(xs_path_is_subpath("/a", "/ab"));
	xs_close(h7);
	xs_close(h0);
}

Test(simxen_xenstore, keeps_a_guest_inside_its_own_tree)
{
	struct xs_handle *h0 = open_as(0), *h7;
	struct xs_permissions perms[2], *got;
	unsigned int num;
	char *v;

	simxen_domain_create(7, "guest");
	simxen_domain_create(3, "other");
	h7 = open_as(7);
	cr_assert(put(h7, "/local/domain/7/data/x", "ok"));
	cr_assert_not(put(h7, "/local/domain/0/x", "no"));
	cr_assert_eq(errno, EACCES);
	cr_assert_not(put(h7, "/local/domain/3/data/x", "no"));
	cr_assert_eq(errno, EACCES);
	cr_assert_not(put(h7, "/evil", "no"));
	cr_assert_eq(errno, EACCES);
	cr_assert_not(put(h7, "/local/domain/7/name", "renamed"));
	cr_assert_eq(errno, EACCES);
	cr_assert_not(xs_rm(h7, XBT_NULL, "/local/domain/7"));
	cr_assert_eq(errno, EACCES);
	cr_assert_null(xs_read(h7, XBT_NULL, "/local/domain/0/name", NULL));
	cr_assert_eq(errno, EACCES);
	cr_assert_null(xs_read(h7, XBT_NULL, "/local/domain/3/name/nothing", NULL));
	cr_assert_eq(errno, EACCES);   /* no reading what exists elsewhere */
	cr_assert_null(xs_read(h7, XBT_NULL, "data/nothing", NULL));
	cr_assert_eq(errno, ENOENT);
	cr_assert_null(xs_directory(h7, XBT_NULL, "/local/domain", &num));
	cr_assert_eq(errno, EACCES);

	/* What a guest creates is its own; it may share it, not give it away. */
	got = xs_get_permissions(h0, XBT_NULL, "/local/domain/7/data/x", &num);
	cr_assert_not_null(got);
	cr_assert_eq(num, 1);
	cr_assert_eq(got[0].id, 7);
	free(got);
	perms[0] = (struct xs_permissions){ .id = 7, .perms = XS_PERM_NONE };
	perms[1] = (struct xs_permissions){ .id = 3, .perms = XS_PERM_READ };
	cr_assert(xs_set_permissions(h7, XBT_NULL, "data/x", perms, 2));
	got = xs_get_permissions(h7, XBT_NULL, "data/x", &num);
	cr_assert_eq(num, 2);
	cr_assert_eq(got[1].id, 3);
	cr_assert_eq(got[1].perms, XS_PERM_READ);
	free(got);
	perms[0].id = 3;
	cr_assert_not(xs_set_permissions(h7, XBT_NULL, "data/x", perms, 2));
	cr_assert_eq(errno, EPERM);

	/* Domain 0 may do anything. */
	v = read_str(h0, "/local/domain/7/data/x");
	cr_assert_str_eq(v, "ok");
	free(v);
	cr_assert(put(h0, "/local/domain/7/name", "renamed"));
	xs_close(h7);
	xs_close(h0);
}

/* The next event, waiting up to 5 s; NULL when none came. */
static char **next_event(struct xs_handle *h)
{
	char **ev = xs_check_watch(h);

	if (!ev && errno == EAGAIN && simxen_readable(xs_fileno(h), 5000))
		ev = xs_check_watch(h);
	return ev;
}

static void expect_event(struct xs_handle *h, const char *path, const char *token)
{
	char **ev = next_event(h);

	cr_assert_not_null(ev, "no event (want %s %s)", path, token);
	cr_assert_str_eq(ev[XS_WATCH_PATH], path);
	cr_assert_str_eq(ev[XS_WATCH_TOKEN], token);
	free(ev);
}

static void expect_quiet(struct xs_handle *h)
{
	char **ev;

	cr_assert_not(simxen_readable(xs_fileno(h), 100), "fd readable with nothing pending");
	ev = xs_check_watch(h);
	cr_assert_null(ev, "unexpected event %s %s", ev ? ev[0] : "", ev ? ev[1] : "");
	cr_assert_eq(errno, EAGAIN);
}

Test(simxen_xenstore, watches_fire_at_once_then_on_changes_at_or_below)
{
	struct xs_handle *h = open_as(0), *w = open_as(0);
	unsigned int num = 0;
	char **ev;

	cr_assert_null(xs_check_watch(w));
	cr_assert_eq(errno, EAGAIN);
	cr_assert(xs_watch(w, "/t", "tok"));
	expect_event(w, "/t", "tok");
	expect_quiet(w);
	cr_assert_not(xs_watch(w, "/t", "tok"));
	cr_assert_eq(errno, EEXIST);
	cr_assert(put(h, "/t/a/b", "1"));
	expect_event(w, "/t/a/b", "tok");
	cr_assert(put(h, "/other", "1"));
	cr_assert(put(h, "/tt", "1"));
	expect_quiet(w);
	cr_assert(xs_mkdir(h, XBT_NULL, "/t/m"));
	expect_event(w, "/t/m", "tok");
	cr_assert(xs_rm(h, XBT_NULL, "/t/a"));
	expect_event(w, "/t/a", "tok");

	/* Removing an ancestor fires a watch below it, with the watch's path. */
	cr_assert(xs_watch(w, "/t/m/deep", "deep"));
	expect_event(w, "/t/m/deep", "deep");
	cr_assert(xs_rm(h, XBT_NULL, "/t"));
	ev = next_event(w);
	cr_assert_not_null(ev);
	cr_assert(!strcmp(ev[1], "tok") || !strcmp(ev[1], "deep"));
	cr_assert_str_eq(ev[0], strcmp(ev[1], "tok") ? "/t/m/deep" : "/t");
	free(ev);
	ev = xs_read_watch(w, &num);
	cr_assert_eq(num, 2);
	cr_assert_str_eq(ev[0], strcmp(ev[1], "tok") ? "/t/m/deep" : "/t");
	free(ev);
	expect_quiet(w);

	cr_assert(xs_unwatch(w, "/t", "tok"));
	cr_assert_not(xs_unwatch(w, "/t", "tok"));
	cr_assert_eq(errno, ENOENT);
	cr_assert(put(h, "/t/again", "1"));
	expect_quiet(w);
	xs_close(w);
	xs_close(h);
}

Test(simxen_xenstore, relative_watches_report_relative_paths)
{
	struct xs_handle *h7, *h0 = open_as(0);

	simxen_domain_create(7, "guest");
	h7 = open_as(7);
	cr_assert(xs_watch(h7, "data", "rel"));
	expect_event(h7, "data", "rel");
	cr_assert(put(h0, "/local/domain/7/data/k", "v"));
	expect_event(h7, "data/k", "rel");
	xs_close(h7);
	xs_close(h0);
}

Test(simxen_xenstore, guests_see_no_events_of_nodes_they_cannot_read)
{
	struct xs_handle *h7, *h0 = open_as(0);

	simxen_domain_create(7, "guest");
	h7 = open_as(7);
	cr_assert(xs_watch(h7, "/local/domain", "all"));
	expect_event(h7, "/local/domain", "all");
	cr_assert(put(h0, "/local/domain/0/secret", "s"));
	expect_quiet(h7);
	cr_assert(put(h0, "/local/domain/7/data/visible", "v"));
	expect_event(h7, "/local/domain/7/data/visible", "all");
	xs_close(h7);
	xs_close(h0);
}

Test(simxen_xenstore, unwatch_filter_drops_queued_events)
{
	struct xs_handle *h = open_as(0), *w, *f;

	w = xs_open(0);
	f = xs_open(XS_UNWATCH_FILTER);
	cr_assert(xs_watch(w, "/q", "t"));
	cr_assert(xs_watch(f, "/q", "t"));
	cr_assert(put(h, "/q/1", "x"));
	cr_assert(xs_unwatch(w, "/q", "t"));
	cr_assert(xs_unwatch(f, "/q", "t"));
	/* Without the filter, what was queued is still delivered. */
	expect_event(w, "/q", "t");
	expect_event(w, "/q/1", "t");
	expect_quiet(w);
	expect_quiet(f);
	xs_close(f);
	xs_close(w);
	xs_close(h);
}

static int write_in_guest(void *arg)
{
	struct xs_handle *h = xs_open(0);

	CHILD_CHECK(h);
	CHILD_CHECK(xs_write(h, XBT_NULL, "data/from-child", arg, (unsigned int)strlen(arg)));
	xs_close(h);
	return 0;
}

Test(simxen_xenstore, watches_fire_across_processes)
{
	struct xs_handle *w = open_as(0);
	pid_t pid;

	simxen_domain_create(7, "guest");
	cr_assert(xs_watch(w, "/local/domain/7/data", "cross"));
	expect_event(w, "/local/domain/7/data", "cross");
	pid = simxen_spawn(7, write_in_guest, (char[]){ "hello" });
	expect_event(w, "/local/domain/7/data/from-child", "cross");
	cr_assert_eq(simxen_wait(pid), 0);
	assert_value(w, "/local/domain/7/data/from-child", "hello");
	xs_close(w);
}

Test(simxen_xenstore, domain_create_and_destroy_fire_the_special_watches)
{
	struct xs_handle *w = open_as(0);
	unsigned int num;

	cr_assert(xs_watch(w, "@introduceDomain", "in"));
	cr_assert(xs_watch(w, "@releaseDomain", "out"));
	expect_event(w, "@introduceDomain", "in");
	expect_event(w, "@releaseDomain", "out");
	simxen_domain_create(9, "nine");
	expect_event(w, "@introduceDomain", "in");
	expect_quiet(w);
	cr_assert(xs_is_domain_introduced(w, 9));
	cr_assert(put(w, "/local/domain/9/data/x", "1"));
	cr_assert_eq(simxen_tool("domain-destroy", "9", NULL), 0);
	expect_event(w, "@releaseDomain", "out");
	cr_assert_not(xs_is_domain_introduced(w, 9));
	cr_assert_null(xs_directory(w, XBT_NULL, "/local/domain/9", &num));
	cr_assert_eq(errno, ENOENT);
	cr_assert_neq(simxen_tool("domain-destroy", "9", NULL), 0);
	cr_assert_neq(simxen_tool("domain-create", "0", "again"), 0);
	xs_close(w);
}

#define BURST 3000

static int burst(void *arg)
{
	struct xs_handle *h = xs_open(0);
	char value[16];

	(void)arg;
	CHILD_CHECK(h);
	for (int i = 1; i <= BURST; i++) {
		snprintf(value, sizeof(value), "%d", i);
		CHILD_CHECK(xs_write(h, XBT_NULL, i % 2 ? "/burst/a" : "/burst/b", value,
				     (unsigned int)strlen(value)));
	}
	xs_close(h);
	return 0;
}

Test(simxen_xenstore, a_full_mailbox_coalesces_into_one_event_per_watch)
{
	struct xs_handle *w = open_as(0);
	int coalesced = 0, events = 0;
	char **ev;
	pid_t pid;

	cr_assert(xs_watch(w, "/burst", "b"));
	expect_event(w, "/burst", "b");
	/* Nobody reads while the writer runs: 3000 events overflow 64 KiB. */
	pid = simxen_spawn(0, burst, NULL);
	cr_assert_eq(simxen_wait(pid), 0);
	while ((ev = xs_check_watch(w))) {
		events++;
		cr_assert_str_eq(ev[1], "b");
		if (!strcmp(ev[0], "/burst"))
			coalesced++;
		else
			cr_assert(!strcmp(ev[0], "/burst/a") || !strcmp(ev[0], "/burst/b"), "%s", ev[0]);
		free(ev);
	}
	cr_assert_eq(errno, EAGAIN);
	cr_assert_geq(coalesced, 1, "no event stood for the lost ones (%d events)", events);
	cr_assert_lt(events, BURST);
	expect_quiet(w);
	xs_close(w);
}

Test(simxen_xenstore, a_slow_reader_always_sees_the_last_state)
{
	struct xs_handle *w = open_as(0);
	char *a = NULL, *b = NULL;
	int quiet = 0, status;
	bool done = false;
	pid_t pid;

	cr_assert(xs_watch(w, "/burst", "b"));
	pid = simxen_spawn(0, burst, NULL);
	/* A reader that looks at the state only when told, and is slow at it. */
	while (!done || quiet < 5) {
		char **ev;
		bool any = false;

		if (!done && waitpid(pid, &status, WNOHANG) == pid) {
			cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
			done = true;
		}
		if (!simxen_readable(xs_fileno(w), 100)) {
			quiet += done;
			continue;
		}
		quiet = 0;
		while ((ev = xs_check_watch(w))) {
			any = true;
			free(ev);
		}
		if (any) {
			free(a);
			free(b);
			a = read_str(w, "/burst/a");
			b = read_str(w, "/burst/b");
		}
		usleep(20000);
	}
	cr_assert_not_null(a);
	cr_assert_not_null(b);
	cr_assert_str_eq(a, "2999");
	cr_assert_str_eq(b, "3000");
	free(a);
	free(b);
	xs_close(w);
}

Test(simxen_xenstore, transactions_are_accepted)
{
	struct xs_handle *h = open_as(0);
	xs_transaction_t t = xs_transaction_start(h);

	cr_assert_neq(t, XBT_NULL);
	cr_assert(xs_write(h, t, "/tx", "1", 1));
	cr_assert(xs_transaction_end(h, t, false));
	cr_assert_not(xs_transaction_end(h, t, false));
	cr_assert_eq(errno, ENOENT);
	cr_assert_null(xs_read(h, t, "/tx", NULL));
	cr_assert_eq(errno, ENOENT);
	assert_value(h, "/tx", "1");
	xs_close(h);
}

Test(simxen_xenstore, simxen_reads_and_writes_the_store)
{
	struct xs_handle *h = open_as(0);

	cr_assert_eq(simxen_tool("write", "/tool/x", "from-tool"), 0);
	assert_value(h, "/tool/x", "from-tool");
	cr_assert_eq(simxen_tool("read", "/tool/x", NULL), 0);
	cr_assert_eq(simxen_tool("ls", "/tool", NULL), 0);
	cr_assert_eq(simxen_tool("read", "/tool/none", NULL), 1);
	cr_assert_eq(simxen_tool("perms", "/tool/x", "r5"), 0);
	cr_assert_eq(simxen_tool("rm", "/tool", NULL), 0);
	cr_assert_null(xs_read(h, XBT_NULL, "/tool/x", NULL));
	cr_assert_eq(simxen_tool("frobnicate", NULL, NULL), 2);
	xs_close(h);
}
