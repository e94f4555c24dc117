/*
 * What xflow-agent --backend kernel says in its HELLO (guestrt/agent/agent_monitor.c):
 * its kernel's release and modules with BTF, and a TSC anchor with its
 * CLOCK_MONOTONIC, none when XFLOW_CLOCK=monotonic says there is no TSC.
 * Skips where the kernel backend cannot start (not root, no BTF, no BPF).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "guestrt/agent/agent.h"
#include "xflow/clock.h"
#include "xflow/control.h"

static pid_t agent_pid;

static void stop_agent(void)
{
	if (agent_pid > 0) {
		kill(agent_pid, SIGKILL);
		waitpid(agent_pid, NULL, 0);
	}
	agent_pid = 0;
}

/* A kernel agent in a child serving @sock, @env_clock as XFLOW_CLOCK;
 * its HELLO, or NULL (with the test skipped) when it cannot start. */
static struct xflow_ctl_msg *kernel_hello(const char *sock, const char *env_clock)
{
	agent_pid = fork();
	if (agent_pid == 0) {
		if (env_clock)
			setenv("XFLOW_CLOCK", env_clock, 1);
		FILE *log = getenv("XFLOW_TEST_LOG") ? stderr : fopen("/dev/null", "w");
		struct xflow_agent_opts o = { .domain = "kern", .domain_id = 5, .socket_path = sock,
					      .backend = XFLOW_AGENT_KERNEL, .ring_slots = 1024, .log = log };
		struct xflow_agent *a;
		char err[512];
		if (xflow_agent_new(&o, &a, err, sizeof(err)))
			_exit(77);
		int rc = xflow_agent_run(a, NULL);
		xflow_agent_free(a);
		_exit(rc ? 1 : 0);
	}
	for (int i = 0; i < 500 && access(sock, F_OK) != 0; i++) {
		int st;
		if (waitpid(agent_pid, &st, WNOHANG) == agent_pid) {
			agent_pid = 0;
			if (WIFEXITED(st) && WEXITSTATUS(st) == 77)
				cr_skip_test("the kernel backend cannot start here (root, BTF and BPF needed)");
			cr_assert_fail("the kernel agent died at start (status %d)", st);
		}
		usleep(10000);
	}
	/* The socket is bound a moment before it listens. */
	int fd = xflow_ctl_connect(sock);
	for (int i = 0; i < 100 && fd < 0; i++) {
		usleep(10000);
		fd = xflow_ctl_connect(sock);
	}
	cr_assert_geq(fd, 0, "connect %s: %s", sock, strerror(-fd));
	struct xflow_ctl_conn c;
	cr_assert_eq(xflow_ctl_conn_init_unix(&c, fd), 0);
	struct xflow_ctl_msg *m = NULL;
	cr_assert_eq(xflow_ctl_recv(&c, &m, 10000), 1, "no HELLO");
	xflow_ctl_conn_close(&c);
	stop_agent();
	cr_assert_eq(m->type, XFLOW_CTL_HELLO);
	return m;
}

Test(agent_kernel_hello, names_its_kernel_and_anchors_its_clock, .timeout = 60, .fini = stop_agent)
{
	char dir[] = "/tmp/xflow-kh-XXXXXX", sock[200];
	cr_assert(mkdtemp(dir));
	snprintf(sock, sizeof(sock), "%s/s/a.sock", dir);
	uint64_t before = xflow_monotonic_ns();
	struct xflow_ctl_msg *m = kernel_hello(sock, NULL);
	const struct xflow_ctl_hello *h = &m->u.hello;
	struct utsname un;
	cr_assert_eq(uname(&un), 0);
	cr_expect_str_eq(h->kernel_release, un.release);
	cr_assert_eq(h->ntargets, 1);
	cr_expect_str_eq(h->targets[0].exe, "kernel:");
	/* The modules: what /sys/kernel/btf holds but vmlinux. */
	unsigned n = 0;
	DIR *d = opendir("/sys/kernel/btf");
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += e->d_name[0] != '.' && strcmp(e->d_name, "vmlinux") != 0;
	if (d)
		closedir(d);
	cr_expect_eq(h->nmodules, n);
	cr_expect_eq(h->clock, XFLOW_CLOCK_MONOTONIC);
	struct xflow_clock clk;
	xflow_clock_init(&clk, 0);
	if (clk.kind == XFLOW_CLOCK_TSC) {
		cr_expect_gt(h->tsc_hz, 0, "a TSC here, but no anchor");
		/* The agent's rate, measured on its own, within 0.1 %. */
		double r = (double)h->tsc_hz / (double)clk.tsc_hz;
		cr_expect(r > 0.999 && r < 1.001, "rate %llu against ours %llu", (unsigned long long)h->tsc_hz,
			  (unsigned long long)clk.tsc_hz);
		/* Its pair is one clock: converted with our rate, the anchor's
		 * TSC lands on its ns to a few microseconds. */
		int64_t dt = (int64_t)(xflow_clock_to_ns(&clk, h->base_tick) - h->base_ns);
		cr_expect(dt > -20000 && dt < 20000, "pair off by %lld ns", (long long)dt);
		cr_log_info("anchor pair against our calibration: %lld ns", (long long)dt);
		cr_expect_geq(h->base_ns, before, "taken at greeting, not at start");
	}
	xflow_ctl_msg_free(m);

	/* No TSC: no anchor. */
	unlink(sock);
	m = kernel_hello(sock, "monotonic");
	cr_expect_eq(m->u.hello.tsc_hz, 0);
	cr_expect_eq(m->u.hello.base_tick, 0);
	xflow_ctl_msg_free(m);
	unlink(sock);
	snprintf(sock, sizeof(sock), "%s/s", dir);
	rmdir(sock);
	rmdir(dir);
}
