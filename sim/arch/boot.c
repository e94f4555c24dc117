/* Boot-time arguments and signals of a simulated domain: see boot.h. */
#include "sim/arch/boot.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "sim/sched.h"

static volatile sig_atomic_t stopping, go;
static int stop_fd = -1, go_fd = -1;

static int parse_fds(const char *s, int *out, int n)
{
	for (int i = 0; i < n; i++) {
		char *end;
		long v;

		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || end == s || v < 0 || v > 1000000 || (i + 1 < n ? *end != ':' : *end))
			return -1;
		out[i] = (int)v;
		s = end + 1;
	}
	return 0;
}

int boot_parse(struct boot_info *bi, int argc, char **argv, const char *prog, int dom0)
{
	enum { OPT_DOMID = 256, OPT_GUEST, OPT_KNOB, OPT_SCHED };
	struct option opts[32];
	int n = 0, c, idx;

	memset(bi, 0, sizeof(*bi));
	sim_knobs_init(&bi->knobs);
	bi->stop_fd = -1;
	bi->sched_fd = -1;
	for (int i = 0; sim_knob_names[i]; i++)
		opts[n++] = (struct option){ sim_knob_names[i], required_argument, NULL, OPT_KNOB };
	opts[n++] = (struct option){ "domid", required_argument, NULL, OPT_DOMID };
	opts[n++] = (struct option){ "guest", required_argument, NULL, OPT_GUEST };
	opts[n++] = (struct option){ "sched", required_argument, NULL, OPT_SCHED };
	opts[n] = (struct option){ NULL, 0, NULL, 0 };

	bi->domid = UINT32_MAX;
	while ((c = getopt_long(argc, argv, "", opts, &idx)) != -1) {
		int fds[7];

		switch (c) {
		case OPT_KNOB:
			if (sim_knobs_set(&bi->knobs, opts[idx].name, optarg, stderr) != 0)
				return -1;
			break;
		case OPT_DOMID:
			bi->domid = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case OPT_SCHED:
			if (parse_fds(optarg, &bi->sched_fd, 1) < 0) {
				fprintf(stderr, "%s: --sched: bad descriptor '%s'\n", prog, optarg);
				return -1;
			}
			break;
		case OPT_GUEST:
			/* DOMID:MEMFD:NETLOCAL:NETREMOTE:BLKLOCAL:BLKREMOTE:XENBUSFD */
			if (bi->nguests == KNOBS_MAX_GUESTS || parse_fds(optarg, fds, 7) < 0) {
				fprintf(stderr, "%s: --guest: bad connection '%s'\n", prog, optarg);
				return -1;
			}
			bi->guests[bi->nguests++] = (struct boot_guest){
				(uint32_t)fds[0], fds[1], fds[2], fds[3], fds[4], fds[5], fds[6],
			};
			break;
		default:
			fprintf(stderr, "%s: a simulated domain; start it with xensim(1)\n", prog);
			return -1;
		}
	}
	if (optind != argc || bi->domid == UINT32_MAX || (dom0 ? bi->domid != 0 : bi->domid == 0) ||
	    (!dom0 && bi->nguests != 1)) {
		fprintf(stderr, "%s: a simulated domain; start it with xensim(1)\n", prog);
		return -1;
	}
	return 0;
}

int boot_sched(struct boot_info *bi, const char *prog)
{
	int rc;

	if (bi->sched_fd < 0)
		return 0;
	rc = sched_attach(bi->sched_fd, bi->domid);
	bi->sched_fd = -1;
	if (rc < 0) {
		fprintf(stderr, "%s: cannot join the scheduler model: %s\n", prog, strerror(-rc));
		return -1;
	}
	return 0;
}

static void on_signal(int sig)
{
	uint64_t one = 1;
	int saved = errno;

	(void)sig;
	stopping = 1;
	if (stop_fd >= 0 && write(stop_fd, &one, sizeof(one)) < 0) {
		/* nothing to do in a handler; the flag is set */
	}
	errno = saved;
}

static void on_go(int sig)
{
	uint64_t one = 1;
	int saved = errno;

	(void)sig;
	go = 1;
	if (go_fd >= 0 && write(go_fd, &one, sizeof(one)) < 0) {
		/* the flag is set */
	}
	errno = saved;
}

int boot_wait_go(struct boot_info *bi)
{
	struct pollfd pfd[2] = {
		{ .fd = bi->stop_fd, .events = POLLIN },
		{ .fd = go_fd, .events = POLLIN },
	};

	/* The flags are the truth; the fds only end the wait early. */
	while (!go && !stopping)
		poll(pfd, 2, 100);
	return stopping ? -1 : 0;
}

int boot_signals(struct boot_info *bi)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct sigaction sg = { .sa_handler = on_go };

	stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	go_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (stop_fd < 0 || go_fd < 0)
		return -errno;
	bi->stop_fd = stop_fd;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&sg.sa_mask);
	sigaction(SIGUSR1, &sg, NULL);
	/* xensim keeps it blocked until here: a go sent early is kept pending. */
	sigemptyset(&sg.sa_mask);
	sigaddset(&sg.sa_mask, SIGUSR1);
	sigprocmask(SIG_UNBLOCK, &sg.sa_mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

int boot_stopping(void)
{
	return stopping;
}

void boot_stop(struct boot_info *bi)
{
	(void)bi;
	on_signal(0);
}
