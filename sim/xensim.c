/*
 * xensim: starts a simulated Xen host — dom0 (linux0) and N guests (linuxU,
 * domain ids 1..N) — and stops it cleanly.  See sim/README.
 *
 * The launcher plays the toolstack: it creates each guest's shared memory
 * (a memfd) and event channels (eventfds) and hands each domain exactly the
 * file descriptors it needs, so nothing is named in /dev/shm and the memory
 * goes away with the last process.  The domains run in a process group of
 * their own and die with the launcher (PR_SET_PDEATHSIG).  A guest that
 * exits or is killed leaves dom0 and the other guests running; when every
 * guest is gone, dom0 is stopped.  SIGINT/SIGTERM stop the whole host.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim/hostmem.h"
#include "sim/knobs.h"
#include "sim/sched.h"
#include "sim/truth.h"

#define STOP_GRACE_MS 5000
#define MAX_ARGS 128

struct dom {
	uint32_t domid;
	pid_t pid;
	bool exited;
	int status;
	/* Guests: the fds the launcher made for this guest. */
	int memfd, net_front, net_back, blk_front, blk_back, xb_read, xb_write;
};

struct xensim {
	struct sim_knobs knobs;
	char sim_dir[PATH_MAX];
	struct dom dom0;
	struct dom guests[KNOBS_MAX_GUESTS];
	pid_t pgid;
	bool verbose;
	const char *domains_file;
	/* The scheduler model (sim/sched.h), when one of its knobs is given. */
	int sched_fd;
	FILE *trace;       /* --xentrace */
	FILE *sched_truth; /* its part of the truth: FILE.sched */
	bool trace_failed;
};

static void usage(FILE *out)
{
	fputs("usage: xensim [OPTION]...\n"
	      "Start a simulated Xen host: dom0 (linux0) and guests (linuxU) as processes\n"
	      "sharing real Xen rings; stop it with SIGINT or SIGTERM.\n\n", out);
	sim_knobs_usage(out);
	fputs("  --domains FILE        list the domains (domid, name, pid) in FILE while\n"
	      "                        they run\n"
	      "  -v, --verbose         say what is started and stopped\n"
	      "  -h, --help            show this help\n\n"
	      "Runs until every guest has sent for --duration seconds and seen all its\n"
	      "messages and block requests completed.  Exit status: 0 when every domain\n"
	      "finished cleanly (or the host was stopped by a signal), 1 when a domain\n"
	      "failed or died, 2 for a bad option.  See sim/README.\n", out);
}

/* Finds linux0/linuxU: beside xensim's build tree (build/bin/../sim/) or beside it. */
static int find_sim_dir(struct xensim *xs)
{
	char exe[PATH_MAX], cand[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *env = getenv("XENSIM_DIR");
	char *dir;

	if (env) {
		snprintf(xs->sim_dir, sizeof(xs->sim_dir), "%s", env);
		return 0;
	}
	if (n < 0)
		return -errno;
	exe[n] = '\0';
	dir = dirname(exe);
	snprintf(cand, sizeof(cand), "%s/../sim/linux0", dir);
	if (access(cand, X_OK) == 0) {
		snprintf(xs->sim_dir, sizeof(xs->sim_dir), "%s/../sim", dir);
		return 0;
	}
	snprintf(cand, sizeof(cand), "%s/linux0", dir);
	if (access(cand, X_OK) == 0) {
		snprintf(xs->sim_dir, sizeof(xs->sim_dir), "%s", dir);
		return 0;
	}
	return -ENOENT;
}

static int make_guest_fds(struct dom *g)
{
	int xb[2];

	g->memfd = hostmem_create(g->domid);
	if (g->memfd < 0)
		return g->memfd;
	/* Close-on-exec everywhere; each child clears it on its own fds. */
	fcntl(g->memfd, F_SETFD, FD_CLOEXEC);
	g->net_front = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	g->net_back = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	g->blk_front = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	g->blk_back = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (g->net_front < 0 || g->net_back < 0 || g->blk_front < 0 || g->blk_back < 0 ||
	    pipe2(xb, O_CLOEXEC) < 0)
		return -errno;
	g->xb_read = xb[0];
	g->xb_write = xb[1];
	return 0;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

static void close_guest_fds(struct dom *g)
{
	close_fd(&g->memfd);
	close_fd(&g->net_front);
	close_fd(&g->net_back);
	close_fd(&g->blk_front);
	close_fd(&g->blk_back);
	close_fd(&g->xb_read);
	close_fd(&g->xb_write);
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);

	if (!d) {
		perror("xensim");
		exit(1);
	}
	return d;
}

static void keep_fd(int fd)
{
	fcntl(fd, F_SETFD, 0);
}

/* For tests: XENSIM_EXEC_DELAY_MS holds each domain that long between its
 * fork and its exec, the window a loaded machine can stretch. */
static void test_exec_delay(void)
{
	const char *ms = getenv("XENSIM_EXEC_DELAY_MS");

	if (ms && *ms) {
		struct timespec ts = { .tv_sec = atoi(ms) / 1000, .tv_nsec = (atoi(ms) % 1000) * 1000000L };

		nanosleep(&ts, NULL);
	}
}

/*
 * Forks and execs one domain with @argv, and returns once it runs the
 * domain's program: the --domains file lists the pids of domains a tracer
 * may attach to at once, and one that attached between the fork and the
 * exec wove xensim's image, which the exec then threw away (under load its
 * flows then counted nothing, and said nothing).  A close-on-exec pipe
 * tells: it closes at the exec, or brings the exec's errno.  @fds (n of
 * them) are the descriptors it inherits; every other one is close-on-exec.
 */
static pid_t spawn(struct xensim *xs, char **argv, const int *fds, int n, sigset_t *oldmask)
{
	int execd[2];

	if (pipe2(execd, O_CLOEXEC) < 0)
		return -1;
	pid_t parent = getpid(), pid = fork();

	if (pid < 0) {
		close(execd[0]);
		close(execd[1]);
		return -1;
	}
	if (pid == 0) {
		setpgid(0, xs->pgid ? xs->pgid : 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1); /* the launcher died before prctl */
		close(execd[0]);
		for (int i = 0; i < n; i++)
			keep_fd(fds[i]);
		/*
		 * SIGUSR1 (--hold's go) stays blocked across exec until the
		 * domain has its handler, so that an early one waits rather
		 * than kills it.
		 */
		sigset_t m = *oldmask;

		sigaddset(&m, SIGUSR1);
		sigprocmask(SIG_SETMASK, &m, NULL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		test_exec_delay();
		execv(argv[0], argv);
		int e = errno;

		fprintf(stderr, "xensim: cannot run %s: %s\n", argv[0], strerror(e));
		if (write(execd[1], &e, sizeof(e)) != (ssize_t)sizeof(e)) {
			/* the launcher reads an EOF, and this exit */
		}
		_exit(127);
	}
	close(execd[1]);
	if (!xs->pgid)
		xs->pgid = pid;
	setpgid(pid, xs->pgid); /* also here, so that no signal finds it outside */
	int e = 0;
	ssize_t got;

	while ((got = read(execd[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(execd[0]);
	if (got > 0) {
		waitpid(pid, NULL, 0);
		errno = e;
		return -1;
	}
	return pid;
}

static int build_argv(struct xensim *xs, char **argv, const char *prog, uint32_t domid)
{
	char path[PATH_MAX + 16], buf[64];
	int argc = 0;

	snprintf(path, sizeof(path), "%s/%s", xs->sim_dir, prog);
	argv[argc++] = xstrdup(path);
	snprintf(buf, sizeof(buf), "--domid=%u", domid);
	argv[argc++] = xstrdup(buf);
	sim_knobs_to_argv(&xs->knobs, argv, &argc, MAX_ARGS - KNOBS_MAX_GUESTS - 3);
	if (xs->sched_fd >= 0) {
		snprintf(buf, sizeof(buf), "--sched=%d", xs->sched_fd);
		argv[argc++] = xstrdup(buf);
	}
	return argc;
}

static char *guest_arg(const struct dom *g, bool dom0_side)
{
	char buf[128];

	snprintf(buf, sizeof(buf), "--guest=%u:%d:%d:%d:%d:%d:%d", g->domid, g->memfd,
		 dom0_side ? g->net_back : g->net_front, dom0_side ? g->net_front : g->net_back,
		 dom0_side ? g->blk_back : g->blk_front, dom0_side ? g->blk_front : g->blk_back,
		 dom0_side ? g->xb_read : g->xb_write);
	return xstrdup(buf);
}

static void free_argv(char **argv, int argc)
{
	for (int i = 0; i < argc; i++)
		free(argv[i]);
}

static int start_host(struct xensim *xs, sigset_t *oldmask)
{
	char *argv[MAX_ARGS];
	int fds[KNOBS_MAX_GUESTS * 7 + 1], nfds = 0, argc;
	uint32_t n = xs->knobs.guests;

	for (uint32_t i = 0; i < n; i++) {
		struct dom *g = &xs->guests[i];
		int rc;

		*g = (struct dom){ .domid = i + 1, .memfd = -1, .net_front = -1, .net_back = -1,
				   .blk_front = -1, .blk_back = -1, .xb_read = -1, .xb_write = -1 };
		rc = make_guest_fds(g);
		if (rc < 0) {
			fprintf(stderr, "xensim: cannot create guest %u's shared memory and event channels: %s\n",
				g->domid, strerror(-rc));
			return -1;
		}
	}

	/* dom0 first: it gets every guest's memory, back ends and xenbus read end. */
	argc = build_argv(xs, argv, "linux0", 0);
	for (uint32_t i = 0; i < n; i++) {
		struct dom *g = &xs->guests[i];

		argv[argc++] = guest_arg(g, true);
		fds[nfds++] = g->memfd;
		fds[nfds++] = g->net_front;
		fds[nfds++] = g->net_back;
		fds[nfds++] = g->blk_front;
		fds[nfds++] = g->blk_back;
		fds[nfds++] = g->xb_read;
	}
	if (xs->sched_fd >= 0)
		fds[nfds++] = xs->sched_fd;
	argv[argc] = NULL;
	xs->dom0 = (struct dom){ .domid = 0 };
	xs->dom0.pid = spawn(xs, argv, fds, nfds, oldmask);
	free_argv(argv, argc);
	if (xs->dom0.pid < 0) {
		perror("xensim: cannot start linux0");
		return -1;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct dom *g = &xs->guests[i];
		int gfds[7] = { g->memfd, g->net_front, g->net_back, g->blk_front, g->blk_back,
				g->xb_write, xs->sched_fd };

		argc = build_argv(xs, argv, "linuxU", g->domid);
		argv[argc++] = guest_arg(g, false);
		argv[argc] = NULL;
		g->pid = spawn(xs, argv, gfds, xs->sched_fd >= 0 ? 7 : 6, oldmask);
		free_argv(argv, argc);
		if (g->pid < 0) {
			perror("xensim: cannot start a linuxU");
			return -1;
		}
		/* Only the domains hold these now: dom0 sees EOF when the guest dies. */
		close_guest_fds(g);
	}
	if (xs->verbose) {
		fprintf(stderr, "xensim: dom0 (linux0) pid %d", xs->dom0.pid);
		for (uint32_t i = 0; i < n; i++)
			fprintf(stderr, ", dom%u (linuxU) pid %d", xs->guests[i].domid, xs->guests[i].pid);
		fprintf(stderr, "; process group %d\n", xs->pgid);
	}
	return 0;
}

/*
 * --domains FILE: "domid<TAB>name<TAB>pid" per domain, written atomically
 * once every domain is started (a stand-in for listing them in xenstore).
 */
static int write_domains(const struct xensim *xs)
{
	char tmp[PATH_MAX + 8];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", xs->domains_file);
	f = fopen(tmp, "w");
	if (!f)
		goto fail;
	fprintf(f, "#domid\tname\tpid\n0\tlinux0\t%d\n", xs->dom0.pid);
	for (uint32_t i = 0; i < xs->knobs.guests; i++)
		fprintf(f, "%u\tlinuxU\t%d\n", xs->guests[i].domid, xs->guests[i].pid);
	if (fclose(f) != 0 || rename(tmp, xs->domains_file) < 0)
		goto fail;
	return 0;
fail:
	fprintf(stderr, "xensim: --domains: cannot write %s: %s\n", xs->domains_file, strerror(errno));
	unlink(tmp);
	return -1;
}

static struct dom *find_dom(struct xensim *xs, pid_t pid)
{
	if (xs->dom0.pid == pid)
		return &xs->dom0;
	for (uint32_t i = 0; i < xs->knobs.guests; i++)
		if (xs->guests[i].pid == pid)
			return &xs->guests[i];
	return NULL;
}

static bool dom_failed(const struct dom *d)
{
	return !WIFEXITED(d->status) || WEXITSTATUS(d->status) != 0;
}

static void report_exit(const struct dom *d)
{
	if (WIFSIGNALED(d->status))
		fprintf(stderr, "xensim: dom%u (pid %d) killed by signal %d (%s)\n", d->domid, d->pid,
			WTERMSIG(d->status), strsignal(WTERMSIG(d->status)));
	else if (WEXITSTATUS(d->status) != 0)
		fprintf(stderr, "xensim: dom%u (pid %d) failed with status %d\n", d->domid, d->pid,
			WEXITSTATUS(d->status));
}

static int reap(struct xensim *xs)
{
	int status, reaped = 0;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct dom *d = find_dom(xs, pid);

		if (!d)
			continue;
		d->exited = true;
		d->status = status;
		reaped++;
		sched_domain_gone(d->domid);
		report_exit(d);
	}
	return reaped;
}

static bool all_guests_exited(const struct xensim *xs)
{
	for (uint32_t i = 0; i < xs->knobs.guests; i++)
		if (!xs->guests[i].exited)
			return false;
	return true;
}

static bool all_exited(const struct xensim *xs)
{
	return xs->dom0.exited && all_guests_exited(xs);
}

/* Concatenates FILE.<domid> into FILE under one header, removing the parts. */
static int merge_truth(struct xensim *xs)
{
	const char *path = xs->knobs.truth;
	char part[PATH_MAX + 16], buf[65536];
	FILE *out = fopen(path, "w");
	size_t n;
	int rc = 0;

	if (!out) {
		fprintf(stderr, "xensim: --truth: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	fputs(TRUTH_HEADER, out);
	for (uint32_t d = 0; d <= xs->knobs.guests; d++) {
		FILE *in;

		snprintf(part, sizeof(part), "%s.%u", path, d);
		in = fopen(part, "r");
		if (!in)
			continue; /* a domain that died before writing anything */
		while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
			if (fwrite(buf, 1, n, out) != n)
				rc = -1;
		fclose(in);
		unlink(part);
	}
	if (xs->sched_truth) {
		/* The scheduler model's intervals, from the launcher. */
		rewind(xs->sched_truth);
		while ((n = fread(buf, 1, sizeof(buf), xs->sched_truth)) > 0)
			if (fwrite(buf, 1, n, out) != n)
				rc = -1;
		fclose(xs->sched_truth);
		xs->sched_truth = NULL;
	}
	if (fclose(out) != 0 || rc < 0) {
		fprintf(stderr, "xensim: --truth: error writing %s\n", path);
		return -1;
	}
	return 0;
}

/*
 * The scheduler model: its shared memory for the domains, the xentrace file
 * and the truth's part.  Returns 0, or -1 with sched_fd -2 for a bad
 * option value (exit 2) and -1 for anything else.
 */
static int open_sched(struct xensim *xs)
{
	char part[PATH_MAX + 16];

	if (!sim_knobs_sched(&xs->knobs))
		return 0;
	if (xs->knobs.xentrace && !(xs->trace = fopen(xs->knobs.xentrace, "we"))) {
		fprintf(stderr, "xensim: --xentrace: cannot write %s: %s\n", xs->knobs.xentrace, strerror(errno));
		xs->sched_fd = -2;
		return -1;
	}
	if (xs->knobs.truth) {
		snprintf(part, sizeof(part), "%s.sched", xs->knobs.truth);
		xs->sched_truth = fopen(part, "w+e");
		if (!xs->sched_truth) {
			fprintf(stderr, "xensim: --truth: cannot write %s: %s\n", part, strerror(errno));
			return -1;
		}
		unlink(part); /* only ours, merged into the truth at the end */
	}
	xs->sched_fd = sched_create(&xs->knobs);
	if (xs->sched_fd < 0) {
		fprintf(stderr, "xensim: cannot create the scheduler model: %s\n", strerror(-xs->sched_fd));
		xs->sched_fd = -1;
		return -1;
	}
	return 0;
}

/* The host has stopped: the model's last records and intervals. */
static int close_sched(struct xensim *xs)
{
	int rc = 0;

	if (xs->sched_fd < 0)
		return 0;
	if (sched_finish(xs->trace, xs->sched_truth) < 0)
		rc = -1;
	if (xs->trace && fclose(xs->trace) != 0)
		rc = -1;
	xs->trace = NULL;
	if (rc < 0 || xs->trace_failed) {
		fprintf(stderr, "xensim: --xentrace: error writing %s\n", xs->knobs.xentrace);
		return -1;
	}
	return 0;
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int run(struct xensim *xs, int sfd)
{
	bool stopping = false, dom0_stopped = false, signalled = false;
	int64_t kill_at = 0;

	while (!all_exited(xs)) {
		struct pollfd pfd = { .fd = sfd, .events = POLLIN };
		struct signalfd_siginfo si;

		/* The scheduler model's buffers are drained as xentrace does, often. */
		poll(&pfd, 1, xs->sched_fd >= 0 ? 20 : 100);
		if (sched_drain(xs->trace, xs->sched_truth) < 0 && !xs->trace_failed) {
			fprintf(stderr, "xensim: --xentrace: error writing %s\n", xs->knobs.xentrace);
			xs->trace_failed = true;
		}
		while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGUSR1) {
				/* --hold: the go signal, for every guest still there. */
				for (uint32_t i = 0; i < xs->knobs.guests; i++)
					if (!xs->guests[i].exited)
						kill(xs->guests[i].pid, SIGUSR1);
			}
			if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM) {
				if (!stopping && xs->verbose)
					fprintf(stderr, "xensim: stopping the host\n");
				stopping = signalled = true;
			}
		}
		reap(xs);
		if (xs->dom0.exited && !all_guests_exited(xs) && !stopping) {
			fprintf(stderr, "xensim: dom0 is gone; stopping the guests\n");
			stopping = true;
		}
		if (stopping && !kill_at) {
			kill(-xs->pgid, SIGTERM);
			kill_at = mono_ms() + STOP_GRACE_MS;
		}
		if (!stopping && all_guests_exited(xs) && !dom0_stopped) {
			kill(xs->dom0.pid, SIGTERM);
			dom0_stopped = true;
			kill_at = mono_ms() + STOP_GRACE_MS;
		}
		if (kill_at && mono_ms() > kill_at) {
			fprintf(stderr, "xensim: domains did not stop within %d ms; killing them\n",
				STOP_GRACE_MS);
			kill(-xs->pgid, SIGKILL);
			kill_at = INT64_MAX;
		}
	}
	if (signalled)
		return 0;
	if (dom_failed(&xs->dom0))
		return 1;
	for (uint32_t i = 0; i < xs->knobs.guests; i++)
		if (dom_failed(&xs->guests[i]))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct option opts[32];
	struct xensim xs = { .sched_fd = -1 };
	sigset_t mask, oldmask;
	int n = 0, c, idx, sfd, rc;

	sim_knobs_init(&xs.knobs);
	for (int i = 0; sim_knob_names[i]; i++)
		opts[n++] = (struct option){ sim_knob_names[i],
					     strcmp(sim_knob_names[i], "hold") == 0 ?
						     no_argument : required_argument, NULL, 'k' };
	opts[n++] = (struct option){ "verbose", no_argument, NULL, 'v' };
	opts[n++] = (struct option){ "domains", required_argument, NULL, 'd' };
	opts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[n] = (struct option){ NULL, 0, NULL, 0 };
	while ((c = getopt_long(argc, argv, "vh", opts, &idx)) != -1) {
		switch (c) {
		case 'k':
			if (sim_knobs_set(&xs.knobs, opts[idx].name, optarg ? optarg : "1", stderr) != 0)
				return 2;
			break;
		case 'd':
			if (!*optarg) {
				fprintf(stderr, "xensim: --domains: empty file name\n");
				return 2;
			}
			xs.domains_file = optarg;
			break;
		case 'v':
			xs.verbose = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			fprintf(stderr, "Try 'xensim --help'.\n");
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "xensim: unexpected argument '%s'\nTry 'xensim --help'.\n", argv[optind]);
		return 2;
	}
	if (sim_knobs_check(&xs.knobs, stderr) < 0)
		return 2;
	if (open_sched(&xs) < 0)
		return xs.sched_fd == -2 ? 2 : 1;
	if (find_sim_dir(&xs) < 0) {
		fprintf(stderr, "xensim: cannot find linux0 and linuxU in ../sim/ or beside xensim; "
			"set XENSIM_DIR to their directory\n");
		return 1;
	}

	/*
	 * Signals arrive through a signalfd, blocked before any child exists.
	 * A shell starts background jobs with SIGINT ignored, and an ignored
	 * signal never reaches a signalfd: SIGINT stops the host however we
	 * were started.
	 */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGUSR1);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		perror("xensim: signalfd");
		return 1;
	}
	if (start_host(&xs, &oldmask) < 0) {
		if (xs.pgid)
			kill(-xs.pgid, SIGKILL);
		while (wait(NULL) > 0)
			;
		return 1;
	}
	if (xs.domains_file && write_domains(&xs) < 0)
		kill(getpid(), SIGTERM); /* stop the host through the usual path */
	rc = run(&xs, sfd);
	if (xs.domains_file)
		unlink(xs.domains_file);
	if (close_sched(&xs) < 0)
		rc = 1;
	if (xs.knobs.truth && merge_truth(&xs) < 0)
		rc = 1;
	if (xs.verbose)
		fprintf(stderr, "xensim: host stopped\n");
	return rc;
}
