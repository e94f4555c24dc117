/*
 * The live demo host (tui/demo_host.h): xensim held at boot, one
 * xflow-agent per domain process, torn down agents first.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/quiet_thread.h"
#include "tui/demo_host.h"

#define MAX_DOMAINS 65

struct xflow_demo_host {
	char dir[64];            /* scratch directory, 0700 */
	char sockdir[96];
	char options[PATH_MAX + 128];
	pid_t sim;               /* xensim, 0 once reaped */
	int sim_status;
	/* o->trace: xensim's FIFO, read by a thread that passes it on the
	 * socket pair (the reader's end is trace[1]). */
	int fifo, fifo_w, trace[2];
	pthread_t tee;
	int tee_started;
	unsigned ndoms;
	struct dom {
		unsigned id;
		char name[32];
		pid_t pid;           /* the domain process */
		pid_t agent;         /* its agent, 0 once reaped */
	} doms[MAX_DOMAINS];
};

/* The trace from xensim's FIFO to the socket the caller reads, until
 * xensim closes it; once the caller stops reading (the socket closed on
 * its side), the rest is read and dropped, so that xensim never waits. */
static void *tee_main(void *arg)
{
	struct xflow_demo_host *h = arg;
	char buf[65536];
	ssize_t n;
	int out = h->trace[0];
	while ((n = read(h->fifo, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (ssize_t o = 0; out >= 0 && o < n;) {
			ssize_t w = send(out, buf + o, (size_t)(n - o), MSG_NOSIGNAL);
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				out = -1;
				break;
			}
			o += w;
		}
	}
	/* End of input for the reader. */
	shutdown(h->trace[0], SHUT_WR);
	return NULL;
}

int xflow_demo_host_trace_fd(const struct xflow_demo_host *h)
{
	return h->tee_started ? h->trace[1] : -1;
}

/* The host still running, for the exit path. */
static struct xflow_demo_host *live_host;

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void nap(void)
{
	struct timespec ts = { 0, 20 * 1000000L };
	nanosleep(&ts, NULL);
}

/* Directory of this program's binary. */
static int self_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0)
		return -errno;
	buf[n] = 0;
	char *s = strrchr(buf, '/');
	if (s)
		*s = 0;
	return 0;
}

/* The first of @cands that exists: a candidate starting with '@' is
 * relative to the binary's directory, others to the current one. */
static int find_file(const char *const *cands, size_t n, const char *selfdir, int mode, char *out, size_t len)
{
	for (size_t i = 0; i < n; i++) {
		int k = cands[i][0] == '@' ? snprintf(out, len, "%s%s", selfdir, cands[i] + 1)
					   : snprintf(out, len, "%s", cands[i]);
		if (k > 0 && (size_t)k < len && access(out, mode) == 0)
			return 0;
	}
	return -ENOENT;
}

/* fork + exec with the log as stdout/stderr (unless @verbose), dying with
 * the parent. */
static pid_t spawn(char *const argv[], const char *log, int verbose)
{
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid != 0)
		return pid < 0 ? -errno : pid;
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)
		_exit(127);
	/* Out of the terminal's foreground group: Ctrl-C is for xflowtop,
	 * which then stops the agents before the host under them.  Reached by
	 * the terminal too, the host would stop its guests while the agents
	 * still take their runtimes out of them. */
	setpgid(0, 0);
	int fd = open("/dev/null", O_RDONLY);
	if (fd >= 0) {
		dup2(fd, 0);
		close(fd);
	}
	if (!verbose && log) {
		fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
	}
	/* xflowtop blocks signals for its loop: the children must not. */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGUSR1, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	execv(argv[0], argv);
	_exit(127);
}

/* waitpid with a deadline; the status, or -ETIMEDOUT. */
static int wait_for(pid_t pid, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms);
	for (;;) {
		int st;
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return st;
		if (r < 0)
			return -errno;
		if (now_ms() >= end)
			return -ETIMEDOUT;
		nap();
	}
}

static void fail_msg(char *err, size_t errlen, const char *dir, const char *what, const char *log)
{
	char tail[300] = "";
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, log);
	FILE *f = fopen(path, "r");
	if (f) {
		size_t n = fread(tail, 1, sizeof(tail) - 1, f);
		tail[n] = 0;
		fclose(f);
		char *nl = strrchr(tail, '\n');
		if (nl && nl[1] == 0)
			*nl = 0;
	}
	snprintf(err, errlen, "demo: %s%s%s", what, tail[0] ? ": " : "", tail);
}

static int read_domains(struct xflow_demo_host *h, const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return -errno;
	char line[256];
	h->ndoms = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned id;
		char name[32];
		int pid;
		if (line[0] == '#' || sscanf(line, "%u\t%31s\t%d", &id, name, &pid) != 3)
			continue;
		if (h->ndoms == MAX_DOMAINS)
			break;
		struct dom *d = &h->doms[h->ndoms++];
		d->id = id;
		snprintf(d->name, sizeof(d->name), "%s", name);
		d->pid = pid;
	}
	fclose(f);
	return h->ndoms ? 0 : -ENOENT;
}

static void at_exit_stop(void)
{
	if (live_host)
		xflow_demo_host_stop(live_host);
}

static char start_error[512];

const char *xflow_demo_host_error(void)
{
	return start_error;
}

int xflow_demo_host_start(const struct xflow_demo_opts *o, struct xflow_demo_host **out)
{
	char *err = start_error;
	size_t errlen = sizeof(start_error);
	static int atexit_done;
	struct xflow_demo_host *h = calloc(1, sizeof(*h));
	if (h)
		h->fifo = h->fifo_w = h->trace[0] = h->trace[1] = -1;
	char self[PATH_MAX], xensim[PATH_MAX], agent[PATH_MAX], flows[PATH_MAX], path[PATH_MAX];
	int rc;
	*out = NULL;
	start_error[0] = 0;
	if (!h)
		return -ENOMEM;
	if (o->bindir)
		snprintf(self, sizeof(self), "%s", o->bindir);
	else if ((rc = self_dir(self, sizeof(self)))) {
		snprintf(err, errlen, "demo: cannot find my own binary: %s", strerror(-rc));
		free(h);
		return rc;
	}
	/* Beside this binary (a build's bin/, or installed); a test suite's
	 * own build's bin/ (a sanitized build's tests run its binaries, not
	 * those of a plain build that may be older); the plain build's. */
	static const char *const sims[] = { "@/xensim", "@/../lib/xflowtop/sim/xensim", "@/../bin/xensim",
					    "build/bin/xensim" };
	static const char *const agents[] = { "@/xflow-agent", "@/../bin/xflow-agent", "build/bin/xflow-agent" };
	static const char *const flowfiles[] = { "@/../share/xflowtop/flows/netflow.xml", "@/../../flows/netflow.xml",
						 "flows/netflow.xml" };
	if (find_file(sims, sizeof(sims) / sizeof(sims[0]), self, X_OK, xensim, sizeof(xensim)) ||
	    find_file(agents, sizeof(agents) / sizeof(agents[0]), self, X_OK, agent, sizeof(agent))) {
		snprintf(err, errlen, "demo: xensim and xflow-agent are not beside %.300s nor in build/bin", self);
		free(h);
		return -ENOENT;
	}
	if (o->flows)
		snprintf(flows, sizeof(flows), "%s", o->flows);
	else if (find_file(flowfiles, 3, self, R_OK, flows, sizeof(flows))) {
		snprintf(err, errlen, "demo: netflow.xml is not in %.300s/../share/xflowtop/flows nor in flows/", self);
		free(h);
		return -ENOENT;
	}
	char real[PATH_MAX];
	if (realpath(flows, real))
		snprintf(flows, sizeof(flows), "%s", real);
	strcpy(h->dir, "/tmp/xflow-demo-XXXXXX");
	if (!mkdtemp(h->dir)) {
		rc = -errno;
		snprintf(err, errlen, "demo: cannot create a scratch directory: %s", strerror(errno));
		free(h);
		return rc;
	}
	snprintf(h->sockdir, sizeof(h->sockdir), "%s/s", h->dir);
	if (mkdir(h->sockdir, 0700) < 0) {
		rc = -errno;
		goto fail_rm;
	}
	live_host = h;
	if (!atexit_done++)
		atexit(at_exit_stop);

	/* The host, held until go(). */
	char domfile[128], guests[16], rate[16], size[16], brate[16];
	snprintf(domfile, sizeof(domfile), "%s/domains", h->dir);
	snprintf(guests, sizeof(guests), "%u", o->guests ? o->guests : 1);
	snprintf(rate, sizeof(rate), "%u", o->rate ? o->rate : 1000);
	snprintf(brate, sizeof(brate), "%u", o->block_rate);
	snprintf(size, sizeof(size), "%u", (unsigned)o->size);
	char *argv[64];
	unsigned n = 0;
	argv[n++] = xensim;
	argv[n++] = (char *)"--hold";
	argv[n++] = (char *)"--domains";
	argv[n++] = domfile;
	argv[n++] = (char *)"--guests";
	argv[n++] = guests;
	argv[n++] = (char *)"--rate";
	argv[n++] = rate;
	argv[n++] = (char *)"--block-rate";
	argv[n++] = brate;
	argv[n++] = (char *)"--duration";
	argv[n++] = (char *)(o->duration ? o->duration : "86400");
	if (o->size) {
		argv[n++] = (char *)"--size";
		argv[n++] = size;
	}
	if (o->jitter) {
		argv[n++] = (char *)"--jitter";
		argv[n++] = (char *)o->jitter;
	}
	if (o->truth) {
		argv[n++] = (char *)"--truth";
		argv[n++] = (char *)o->truth;
	}
	for (unsigned i = 0; i < o->ndelays && i < XFLOW_DEMO_MAX_DELAYS; i++) {
		argv[n++] = (char *)"--delay";
		argv[n++] = (char *)o->delays[i];
	}
	char pcpus[16], fifo[160];
	snprintf(pcpus, sizeof(pcpus), "%u", o->pcpus);
	const char *xentrace = o->xentrace;
	if (o->trace) {
		/* Open for reading first, so that xensim's open for writing
		 * does not wait; then read as a reader blocks. */
		snprintf(fifo, sizeof(fifo), "%s/x.fifo", h->dir);
		if (mkfifo(fifo, 0600) < 0 || (h->fifo = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0 ||
		    fcntl(h->fifo, F_SETFL, 0) < 0 ||
		    /* A writer of our own: no end of input before xensim's. */
		    (h->fifo_w = open(fifo, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0 ||
		    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, h->trace) < 0) {
			rc = -errno;
			snprintf(err, errlen, "demo: cannot make the trace's FIFO: %s", strerror(errno));
			goto fail;
		}
		if ((rc = xflow_thread_create_quiet(&h->tee, tee_main, h))) {
			snprintf(err, errlen, "demo: cannot start the trace's reader: %s", strerror(-rc));
			goto fail;
		}
		h->tee_started = 1;
		xentrace = fifo;
	}
	const char *sched[][2] = { { "--xentrace", xentrace }, { "--pcpus", o->pcpus ? pcpus : NULL },
				   { "--wake-delay", o->wake_delay }, { "--notify-delay", o->notify_delay },
				   { "--xen-irq", o->xen_irq } };
	for (unsigned i = 0; i < sizeof(sched) / sizeof(sched[0]); i++)
		if (sched[i][1]) {
			argv[n++] = (char *)sched[i][0];
			argv[n++] = (char *)sched[i][1];
		}
	argv[n] = NULL;
	snprintf(path, sizeof(path), "%s/xensim.log", h->dir);
	h->sim = spawn(argv, path, o->verbose);
	if (h->sim < 0) {
		rc = h->sim;
		h->sim = 0;
		snprintf(err, errlen, "demo: cannot start %.300s: %s", xensim, strerror(-rc));
		goto fail;
	}
	uint64_t end = now_ms() + 15000;
	while ((rc = read_domains(h, domfile)) != 0) {
		int st;
		if (waitpid(h->sim, &st, WNOHANG) == h->sim) {
			h->sim = 0;
			fail_msg(err, errlen, h->dir, "xensim stopped while booting", "xensim.log");
			rc = -ECHILD;
			goto fail;
		}
		if (now_ms() > end) {
			snprintf(err, errlen, "demo: xensim did not list its domains within 15 s");
			rc = -ETIMEDOUT;
			goto fail;
		}
		nap();
	}
	/* One agent per domain. */
	for (unsigned i = 0; i < h->ndoms; i++) {
		struct dom *d = &h->doms[i];
		char id[16], pid[16], sock[160], slots[16], lslots[16];
		snprintf(id, sizeof(id), "%u", d->id);
		snprintf(pid, sizeof(pid), "%d", (int)d->pid);
		snprintf(sock, sizeof(sock), "%s/agent-%u.sock", h->sockdir, d->id);
		snprintf(slots, sizeof(slots), "%u", (unsigned)o->ring_slots);
		snprintf(lslots, sizeof(lslots), "%u", (unsigned)o->lane_slots);
		/* Each simulated domain has one vCPU, 0 (sim/sched.h): its
		 * records name it, not the host's CPU its thread ran on. */
		char *av[14] = { agent, (char *)"--domain", d->name, (char *)"--domain-id", id, (char *)"--pid", pid,
				 (char *)"--socket", sock, (char *)"--vcpu", (char *)"0" };
		unsigned ac = 11;
		if (o->ring_slots) {
			av[ac++] = (char *)"--ring-slots";
			av[ac++] = slots;
		}
		if (o->lane_slots) {
			av[ac++] = (char *)"--lane-slots";
			av[ac++] = lslots;
		}
		av[ac] = NULL;
		snprintf(path, sizeof(path), "%s/agent-%u.log", h->dir, d->id);
		d->agent = spawn(av, path, o->verbose);
		if (d->agent < 0) {
			rc = d->agent;
			d->agent = 0;
			snprintf(err, errlen, "demo: cannot start %.300s: %s", agent, strerror(-rc));
			goto fail;
		}
	}
	for (unsigned i = 0; i < h->ndoms; i++) {
		struct dom *d = &h->doms[i];
		char sock[160], log[32];
		snprintf(sock, sizeof(sock), "%s/agent-%u.sock", h->sockdir, d->id);
		snprintf(log, sizeof(log), "agent-%u.log", d->id);
		while (access(sock, F_OK) != 0) {
			int st;
			if (waitpid(d->agent, &st, WNOHANG) == d->agent) {
				d->agent = 0;
				fail_msg(err, errlen, h->dir, "an agent stopped at start", log);
				rc = -ECHILD;
				goto fail;
			}
			if (now_ms() > end) {
				snprintf(err, errlen, "demo: the agent of domain %u did not listen within 15 s", d->id);
				rc = -ETIMEDOUT;
				goto fail;
			}
			nap();
		}
	}
	snprintf(h->options, sizeof(h->options), "dir=%s,flows=%s", h->sockdir, flows);
	if (!o->hold && (rc = xflow_demo_host_go(h))) {
		snprintf(err, errlen, "demo: cannot start the traffic: %s", strerror(-rc));
		goto fail;
	}
	*out = h;
	return 0;
fail_rm:
	snprintf(err, errlen, "demo: cannot create %.100s: %s", h->sockdir, strerror(-rc));
fail:
	xflow_demo_host_stop(h);
	return rc;
}

const char *xflow_demo_host_options(const struct xflow_demo_host *h)
{
	return h->options;
}

const char *xflow_demo_host_socket_dir(const struct xflow_demo_host *h)
{
	return h->sockdir;
}

int xflow_demo_host_go(struct xflow_demo_host *h)
{
	if (!h->sim)
		return -ESRCH;
	return kill(h->sim, SIGUSR1) < 0 ? -errno : 0;
}

unsigned xflow_demo_host_ndomains(const struct xflow_demo_host *h)
{
	return h->ndoms;
}

int xflow_demo_host_domain(const struct xflow_demo_host *h, unsigned i, unsigned *domid, const char **name,
			   pid_t *pid)
{
	if (i >= h->ndoms)
		return -ENOENT;
	*domid = h->doms[i].id;
	*name = h->doms[i].name;
	*pid = h->doms[i].pid;
	return 0;
}

int xflow_demo_host_wait(struct xflow_demo_host *h, int timeout_ms)
{
	if (!h->sim)
		return h->sim_status;
	int st = wait_for(h->sim, timeout_ms);
	if (st < 0)
		return st;
	h->sim = 0;
	h->sim_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return h->sim_status;
}

void xflow_demo_host_kill(struct xflow_demo_host *h)
{
	if (!h)
		return;
	for (unsigned i = 0; i < h->ndoms; i++)
		if (h->doms[i].agent > 0)
			kill(h->doms[i].agent, SIGTERM);
	if (h->sim > 0)
		kill(h->sim, SIGTERM);
}

void xflow_demo_host_stop(struct xflow_demo_host *h)
{
	if (!h)
		return;
	/* Agents first: each restores every byte it patched and lets its
	 * domain go before the host is stopped under it. */
	for (unsigned i = 0; i < h->ndoms; i++)
		if (h->doms[i].agent > 0)
			kill(h->doms[i].agent, SIGTERM);
	for (unsigned i = 0; i < h->ndoms; i++) {
		struct dom *d = &h->doms[i];
		if (d->agent > 0 && wait_for(d->agent, 5000) == -ETIMEDOUT) {
			kill(d->agent, SIGKILL);
			waitpid(d->agent, NULL, 0);
		}
		d->agent = 0;
	}
	if (h->sim > 0) {
		kill(h->sim, SIGTERM);
		if (wait_for(h->sim, 10000) == -ETIMEDOUT) {
			kill(h->sim, SIGKILL);
			waitpid(h->sim, NULL, 0);
		}
		h->sim = 0;
	}
	/* xensim is gone: its trace ends with our own writer. */
	if (h->fifo_w >= 0)
		close(h->fifo_w);
	if (h->tee_started)
		pthread_join(h->tee, NULL);
	h->tee_started = 0;
	int fds[] = { h->fifo, h->trace[0], h->trace[1] };
	for (unsigned i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	h->fifo = h->fifo_w = h->trace[0] = h->trace[1] = -1;
	if (h->dir[0]) {
		char path[PATH_MAX];
		for (unsigned i = 0; i < h->ndoms; i++) {
			snprintf(path, sizeof(path), "%s/agent-%u.sock", h->sockdir, h->doms[i].id);
			unlink(path);
			snprintf(path, sizeof(path), "%s/agent-%u.log", h->dir, h->doms[i].id);
			unlink(path);
		}
		rmdir(h->sockdir);
		snprintf(path, sizeof(path), "%s/xensim.log", h->dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/domains", h->dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/x.fifo", h->dir);
		unlink(path);
		rmdir(h->dir);
	}
	if (live_host == h)
		live_host = NULL;
	free(h);
}
