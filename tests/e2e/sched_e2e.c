/*
 * sched-e2e XFLOWTOP OUTDIR [--duration S] [--rate N] [--block-rate N]
 *           [--wake-delay DOM=DUR] [--notify-delay DUR] [--xen-irq DUR]
 *           [--delay STAGE=DUR]
 *           [--no-trace] [--clock-offset NS] [--iterations N] [--refresh S]
 *           [--flows FILE]
 *
 * Issue 24 end to end: the demo host with its scheduler model, xensim's
 * trace read live by xflowtop's xentrace collector (through a FIFO this
 * driver copies to OUTDIR/x.trace on the way, for a replay), and xflowtop
 * -b --json through the agent collector, saving its session.  Leaves in
 * OUTDIR: live.json (xflowtop's output, one object an interval), session,
 * x.trace, truth (xensim's).  --no-trace runs the scheduler model (the same
 * host) without giving xflowtop its trace; --clock-offset NS shifts the
 * trace on xflowtop's clock; --refresh S is xflowtop's -d (1 s by
 * default); --flows FILE weaves FILE instead of the shipped netflow.xml
 * (a variant of it: the host's truth follows netflow's stages).  Exit 0 when xflowtop and the host finished
 * well, 1 otherwise, 77 to skip.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tui/demo_host.h"

struct tee {
	int in, out, file;
};

/* The trace from the FIFO to xflowtop and to the file, until xensim
 * closes it. */
static void *tee_main(void *arg)
{
	struct tee *t = arg;
	char buf[65536];
	ssize_t n;
	while ((n = read(t->in, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
		if (n < 0)
			continue;
		if (write(t->file, buf, (size_t)n) != n)
			fprintf(stderr, "sched-e2e: writing the trace: %s\n", strerror(errno));
		for (ssize_t o = 0; t->out >= 0 && o < n;) {
			ssize_t w = write(t->out, buf + o, (size_t)(n - o));
			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break; /* xflowtop is gone: keep the file whole */
			o += w;
		}
	}
	if (t->out >= 0)
		close(t->out);
	return NULL;
}

static struct xflow_demo_host *host;

static void on_signal(int sig)
{
	if (host)
		xflow_demo_host_kill(host);
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: sched-e2e XFLOWTOP OUTDIR [options]\n");
		return 2;
	}
	const char *xflowtop = argv[1], *dir = argv[2], *offset = NULL, *refresh = "1";
	struct xflow_demo_opts o = { .guests = 1, .rate = 200, .duration = "3", .pcpus = 2, .hold = 1 };
	int trace = 1, iterations = 0;
	char fifo[4096], tracefile[4096], truth[4096], out[4096], session[4096];
	snprintf(fifo, sizeof(fifo), "%s/x.fifo", dir);
	snprintf(tracefile, sizeof(tracefile), "%s/x.trace", dir);
	snprintf(truth, sizeof(truth), "%s/truth", dir);
	snprintf(out, sizeof(out), "%s/live.json", dir);
	snprintf(session, sizeof(session), "%s/session", dir);
	for (int i = 3; i < argc; i++) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(argv[i], "--no-trace")) {
			trace = 0;
			continue;
		}
		if (!v) {
			fprintf(stderr, "sched-e2e: %s needs a value\n", argv[i]);
			return 2;
		}
		if (!strcmp(argv[i], "--duration"))
			o.duration = v;
		else if (!strcmp(argv[i], "--rate"))
			o.rate = (unsigned)atoi(v);
		else if (!strcmp(argv[i], "--block-rate"))
			o.block_rate = (unsigned)atoi(v);
		else if (!strcmp(argv[i], "--wake-delay"))
			o.wake_delay = v;
		else if (!strcmp(argv[i], "--notify-delay"))
			o.notify_delay = v;
		else if (!strcmp(argv[i], "--xen-irq"))
			o.xen_irq = v;
		else if (!strcmp(argv[i], "--delay") && o.ndelays < XFLOW_DEMO_MAX_DELAYS)
			o.delays[o.ndelays++] = v;
		else if (!strcmp(argv[i], "--clock-offset"))
			offset = v;
		else if (!strcmp(argv[i], "--iterations"))
			iterations = atoi(v);
		else if (!strcmp(argv[i], "--refresh"))
			refresh = v;
		else if (!strcmp(argv[i], "--flows"))
			o.flows = v;
		else {
			fprintf(stderr, "sched-e2e: unknown option %s\n", argv[i]);
			return 2;
		}
		i++;
	}
	if (!iterations)
		iterations = atoi(o.duration) + 5;
	o.truth = truth;
	o.bindir = getenv("E2E_BINDIR");
	o.xentrace = fifo;
	unlink(fifo);
	if (mkfifo(fifo, 0600) < 0) {
		perror(fifo);
		return 1;
	}
	/* Open for reading first, so that xensim's open for writing does not
	 * wait; then block as a reader does. */
	int in = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (in < 0 || fcntl(in, F_SETFL, 0) < 0) {
		perror(fifo);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (xflow_demo_host_start(&o, &host)) {
		printf("%s\n", xflow_demo_host_error());
		return 1;
	}
	int p[2];
	struct tee t = { .in = in };
	t.file = open(tracefile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	pthread_t th;
	if (t.file < 0 || pipe(p) < 0) {
		perror(tracefile);
		xflow_demo_host_stop(host);
		return 1;
	}
	/* Without a trace for xflowtop the copy still drains the FIFO. */
	t.out = trace ? p[1] : -1;
	fcntl(p[1], F_SETFD, FD_CLOEXEC);
	if (!trace)
		close(p[1]);
	pthread_create(&th, NULL, tee_main, &t);
	char agent[8192], xt[256], iters[16];
	snprintf(agent, sizeof(agent), "agent:%s", xflow_demo_host_options(host));
	snprintf(xt, sizeof(xt), "xentrace:fd=%d,cpu-hz=2.4G%s%s", p[0], offset ? ",clock-offset=" : "",
		 offset ? offset : "");
	snprintf(iters, sizeof(iters), "%d", iterations);
	pid_t kid = fork();
	if (kid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		if (fd < 0)
			_exit(127);
		dup2(fd, 1);
		const char *av[] = { xflowtop, "-b", "--json", "-n", iters, "-d", refresh, "--save-session", session,
				     "--collector", agent, "--collector", xt, NULL };
		if (!trace)
			av[11] = NULL; /* no xentrace collector */
		execv(xflowtop, (char *const *)av);
		_exit(127);
	}
	close(p[0]);
	/* The first object is printed once the collectors are open, every
	 * plan loaded: the traffic may start. */
	struct stat st;
	int go = 0, status = 1;
	for (int waited = 0; waited < 3000; waited++) {
		if (stat(out, &st) == 0 && st.st_size > 0) {
			go = 1;
			break;
		}
		if (waitpid(kid, &status, WNOHANG) == kid) {
			kid = 0;
			break;
		}
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (go)
		xflow_demo_host_go(host);
	if (kid)
		waitpid(kid, &status, 0);
	int hs = go ? xflow_demo_host_wait(host, 30000) : -ECANCELED;
	xflow_demo_host_stop(host);
	host = NULL;
	pthread_join(th, NULL);
	close(in);
	close(t.file);
	unlink(fifo);
	int xs = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	printf("xflowtop exit %d, host exit %d\n", xs, hs);
	return go && xs == 0 && hs == 0 ? 0 : 1;
}
