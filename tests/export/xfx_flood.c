/*
 * xfx-flood: load for the /metrics server, for tests/export/exporter_load.sh
 * and by hand.
 *
 *   xfx-flood ADDR:PORT conns N [--get] [--hold MS]
 *       Open N connections at once (non-blocking connects, one poll loop);
 *       with --get each sends GET /metrics as soon as it is connected.
 *       Wait up to MS ms (default 3000) and sort them: served (a complete
 *       200 response), refused (refused, reset or closed before any
 *       answer), held (still open, nothing received: an idle connection
 *       the server keeps), failed (anything else).  Prints one line:
 *           conns N: served S, refused R, held H, failed F
 *   xfx-flood ADDR:PORT scrape THREADS SECONDS [PER_SECOND]
 *       THREADS loops of GET /metrics for SECONDS, as fast as they can or
 *       PER_SECOND in all; prints
 *           scrapes K in S s (K/s), failed F
 *
 * Exit 0 when it could run, 1 on a usage or system error.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tests/export/httpc.h"

static const char request[] = "GET /metrics HTTP/1.0\r\nHost: flood\r\n\r\n";

enum state { CONNECTING, SENT, READING, SERVED, REFUSED, FAILED };

struct conn {
	int fd;
	enum state st;
	int get;
	size_t got;
	char head[16];
};

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Advance @c on poll's @revents. */
static void step(struct conn *c, short revents)
{
	if (c->st == CONNECTING) {
		int e = 0;
		socklen_t l = sizeof(e);
		getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &l);
		if (e) {
			c->st = e == ECONNREFUSED || e == ECONNRESET ? REFUSED : FAILED;
			return;
		}
		if (!(revents & POLLOUT))
			return;
		if (!c->get) {
			c->st = SENT;
			return;
		}
		c->st = send(c->fd, request, sizeof(request) - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof(request) - 1)
				? SENT : REFUSED;
		return;
	}
	if (!(revents & (POLLIN | POLLHUP | POLLERR)))
		return;
	char buf[65536];
	ssize_t r = recv(c->fd, buf, sizeof(buf), 0);
	if (r > 0) {
		if (c->got < sizeof(c->head) - 1) {
			size_t n = (size_t)r < sizeof(c->head) - 1 - c->got ? (size_t)r : sizeof(c->head) - 1 - c->got;
			memcpy(c->head + c->got, buf, n);
		}
		c->got += (size_t)r;
		c->st = READING;
		return;
	}
	/* The end: an answer read in full, or closed before any. */
	if (c->got == 0)
		c->st = REFUSED;
	else
		c->st = !strncmp(c->head, "HTTP/1.1 200", 12) || !strncmp(c->head, "HTTP/1.0 200", 12) ? SERVED : FAILED;
}

static int flood(const char *addr, int n, int get, int hold_ms)
{
	struct sockaddr_in sa;
	if (http_addr(addr, &sa)) {
		fprintf(stderr, "xfx-flood: bad address %s\n", addr);
		return 1;
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)n + 64) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)n + 64 ? rl.rlim_max : (rlim_t)n + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	struct conn *c = calloc((size_t)n, sizeof(*c));
	struct pollfd *p = calloc((size_t)n, sizeof(*p));
	if (!c || !p)
		return 1;
	for (int i = 0; i < n; i++) {
		c[i].get = get;
		c[i].fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (c[i].fd < 0) {
			fprintf(stderr, "xfx-flood: socket %d: %s\n", i, strerror(errno));
			c[i].st = FAILED;
			continue;
		}
		if (connect(c[i].fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 && errno != EINPROGRESS)
			c[i].st = errno == ECONNREFUSED ? REFUSED : FAILED;
	}
	uint64_t end = now_ms() + (uint64_t)hold_ms;
	for (;;) {
		int k = 0;
		for (int i = 0; i < n; i++) {
			p[i].fd = c[i].st <= READING ? c[i].fd : -1;
			p[i].events = c[i].st == CONNECTING ? POLLOUT : POLLIN;
			p[i].revents = 0;
			k += c[i].st <= READING;
		}
		uint64_t t = now_ms();
		if (!k || t >= end)
			break;
		if (poll(p, (nfds_t)n, (int)(end - t)) < 0)
			break;
		for (int i = 0; i < n; i++)
			if (p[i].revents)
				step(&c[i], p[i].revents);
	}
	int served = 0, refused = 0, held = 0, failed = 0;
	for (int i = 0; i < n; i++) {
		served += c[i].st == SERVED;
		refused += c[i].st == REFUSED;
		held += c[i].st == SENT || c[i].st == CONNECTING;
		failed += c[i].st == FAILED || c[i].st == READING;
		if (c[i].fd >= 0)
			close(c[i].fd);
	}
	printf("conns %d: served %d, refused %d, held %d, failed %d\n", n, served, refused, held, failed);
	free(c);
	free(p);
	return 0;
}

struct scraper {
	const char *addr;
	uint64_t end_ms;
	double period_ms; /* between two scrapes of this thread; 0: none */
	unsigned ok, failed;
};

static void *scrape_loop(void *arg)
{
	struct scraper *s = arg;
	uint64_t start = now_ms();
	while (now_ms() < s->end_ms) {
		if (s->period_ms > 0) {
			uint64_t due = start + (uint64_t)((s->ok + s->failed) * s->period_ms);
			uint64_t t = now_ms();
			if (due > t)
				nanosleep(&(struct timespec){ (time_t)((due - t) / 1000), (long)((due - t) % 1000) * 1000000 },
					  NULL);
		}
		struct http_resp r;
		if (http_get(s->addr, "GET", "/metrics", &r) == 0 && r.status == 200)
			s->ok++;
		else
			s->failed++;
		http_resp_free(&r);
	}
	return NULL;
}

static int scrape(const char *addr, int threads, double secs, double per_second)
{
	struct scraper s[64];
	pthread_t t[64];
	if (threads < 1 || threads > 64)
		return 1;
	uint64_t t0 = now_ms();
	for (int i = 0; i < threads; i++) {
		s[i] = (struct scraper){ .addr = addr, .end_ms = t0 + (uint64_t)(secs * 1000),
					 .period_ms = per_second > 0 ? 1000.0 * threads / per_second : 0 };
		pthread_create(&t[i], NULL, scrape_loop, &s[i]);
	}
	unsigned ok = 0, failed = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(t[i], NULL);
		ok += s[i].ok;
		failed += s[i].failed;
	}
	double el = (double)(now_ms() - t0) / 1000;
	printf("scrapes %u in %.1f s (%.0f/s), failed %u\n", ok, el, ok / el, failed);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && !strcmp(argv[2], "conns")) {
		int get = 0, hold = 3000;
		for (int i = 4; i < argc; i++) {
			if (!strcmp(argv[i], "--get"))
				get = 1;
			else if (!strcmp(argv[i], "--hold") && i + 1 < argc)
				hold = atoi(argv[++i]);
		}
		return flood(argv[1], atoi(argv[3]), get, hold);
	}
	if ((argc == 5 || argc == 6) && !strcmp(argv[2], "scrape"))
		return scrape(argv[1], atoi(argv[3]), atof(argv[4]), argc == 6 ? atof(argv[5]) : 0);
	fprintf(stderr, "usage: xfx-flood ADDR:PORT conns N [--get] [--hold MS]\n"
			"       xfx-flood ADDR:PORT scrape THREADS SECONDS [PER_SECOND]\n");
	return 1;
}
