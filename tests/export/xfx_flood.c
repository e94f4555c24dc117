/*
 * xfx-flood: load for the /metrics server, for tests/export/exporter_load.sh
 * and by hand.
 *
 *   xfx-flood ADDR:PORT conns N [--get] [--hold MS]
 *       Open N connections at once (non-blocking connects, one poll loop);
 *       with --get each sends GET /metrics as soon as it is connected.
 *       Wait up to MS ms (default 3000) and sort them: served (a complete
 *       200 response), refused (refused, reset or closed before any
 *       answer), held (connected, nothing received: an idle connection
 *       the server keeps), failed (anything else), pending (never
 *       connected: the server's backlog was full and the kernel is still
 *       retrying its SYN).  Prints one line:
 *           conns N: served S, refused R, held H, failed F, pending P
 *   xfx-flood ADDR:PORT scrape THREADS SECONDS [PER_SECOND]
 *       THREADS loops of GET /metrics for SECONDS, as fast as they can or
 *       PER_SECOND in all; prints
 *           scrapes K in S s (K/s), failed F
 *   xfx-flood ADDR:PORT slowloris N SECONDS [--from A.B.C.D,...] [--every MS]
 *                                           [--scrape MS] [--limit MS]
 *       N connections from the --from addresses in turn (default: any),
 *       each sending a request head one byte every MS ms (default 4000),
 *       never finishing it; one the server closes is opened again when
 *       its next byte is due, as slowloris does.  Meanwhile, from the address the kernel picks, a GET
 *       /metrics every --scrape ms (default 500), each given --limit ms
 *       (default 2000) to be answered in full.  Prints
 *           slowloris N for S s: reopened R, open errors E; scrapes K: ok O,
 *           late or failed F; latency ms p50 A p90 B max C
 *       (R: connections the server closed; E: connections that could not
 *       be opened, e.g. from a source address this host does not have)
 *   xfx-flood ADDR:PORT get PATH
 *       One GET of PATH; prints the body (exit 1 unless the answer is 200).
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
	int served = 0, refused = 0, held = 0, failed = 0, pending = 0;
	for (int i = 0; i < n; i++) {
		served += c[i].st == SERVED;
		refused += c[i].st == REFUSED;
		held += c[i].st == SENT;
		pending += c[i].st == CONNECTING;
		failed += c[i].st == FAILED || c[i].st == READING;
		if (c[i].fd >= 0)
			close(c[i].fd);
	}
	printf("conns %d: served %d, refused %d, held %d, failed %d, pending %d\n", n, served, refused, held, failed,
	       pending);
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

/* --- slowloris ------------------------------------------------------------- */

#define MAX_SOURCES 16

struct loris {
	int fd;
	size_t sent;      /* bytes of the head sent so far */
	uint64_t next_ms; /* when the next byte is due */
};

/* Never ends: the blank line that would finish the head never comes. */
static const char loris_head[] = "GET /metrics HTTP/1.1\r\nHost: flood\r\nX-Slow: ";

/* A non-blocking socket connecting to @to from @from (port 0: any), or -1. */
static int open_from(const struct sockaddr_in *to, const struct sockaddr_in *from)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (from && bind(fd, (const struct sockaddr *)from, sizeof(*from)) < 0) {
		close(fd);
		return -1;
	}
	if (connect(fd, (const struct sockaddr *)to, sizeof(*to)) < 0 && errno != EINPROGRESS) {
		close(fd);
		return -1;
	}
	return fd;
}

struct loris_run {
	const char *addr;
	struct sockaddr_in to;
	struct sockaddr_in from[MAX_SOURCES];
	int nfrom;
	int n, every_ms;
	uint64_t end_ms;
	unsigned reopened, open_errors;
};

static void *loris_loop(void *arg)
{
	struct loris_run *r = arg;
	struct loris *c = calloc((size_t)r->n, sizeof(*c));
	struct pollfd *p = calloc((size_t)r->n, sizeof(*p));
	if (!c || !p)
		exit(1);
	for (int i = 0; i < r->n; i++)
		c[i].fd = -1;
	for (;;) {
		uint64_t t = now_ms();
		if (t >= r->end_ms)
			break;
		uint64_t wake = r->end_ms;
		for (int i = 0; i < r->n; i++) {
			if (c[i].fd < 0 && c[i].next_ms <= t) {
				c[i].fd = open_from(&r->to, r->nfrom ? &r->from[i % r->nfrom] : NULL);
				c[i].sent = 0;
				if (c[i].fd < 0) {
					/* A source address this host does not have: no attack. */
					r->open_errors++;
					c[i].next_ms = t + (uint64_t)r->every_ms;
				}
			}
			/* A byte when it is due; the first one as soon as the
			 * connection is up (send fails until then). */
			if (c[i].fd >= 0 && c[i].next_ms <= t) {
				char b = c[i].sent < sizeof(loris_head) - 1 ? loris_head[c[i].sent] : 'x';
				if (send(c[i].fd, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) {
					c[i].sent++;
					c[i].next_ms = t + (uint64_t)r->every_ms;
				} else {
					c[i].next_ms = t + 20;
				}
			}
			if (c[i].next_ms < wake)
				wake = c[i].next_ms;
			p[i].fd = c[i].fd;
			p[i].events = POLLIN;
			p[i].revents = 0;
		}
		poll(p, (nfds_t)r->n, wake > t ? (int)(wake - t) : 0);
		/* Whatever the server says (an error, or its end of the
		 * stream), the attacker comes back. */
		for (int i = 0; i < r->n; i++)
			if (c[i].fd >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
				close(c[i].fd);
				c[i].fd = -1;
				r->reopened++;
			}
	}
	for (int i = 0; i < r->n; i++)
		if (c[i].fd >= 0)
			close(c[i].fd);
	free(c);
	free(p);
	return NULL;
}

/* One GET /metrics answered in full (200, then the server's end of the
 * stream) within @limit_ms?  Its time in *ms. */
static int timed_scrape(const struct sockaddr_in *to, int limit_ms, uint64_t *ms)
{
	uint64_t t0 = now_ms(), end = t0 + (uint64_t)limit_ms;
	int fd = open_from(to, NULL), ok = 0;
	size_t sent = 0, got = 0;
	char head[16] = "";
	while (fd >= 0) {
		uint64_t t = now_ms();
		if (t >= end)
			break;
		struct pollfd p = { .fd = fd, .events = sent < sizeof(request) - 1 ? POLLOUT : POLLIN };
		if (poll(&p, 1, (int)(end - t)) <= 0)
			continue;
		if (sent < sizeof(request) - 1) {
			ssize_t k = send(fd, request + sent, sizeof(request) - 1 - sent, MSG_NOSIGNAL);
			if (k < 0 && errno != EAGAIN)
				break;
			sent += k > 0 ? (size_t)k : 0;
			continue;
		}
		char buf[65536];
		ssize_t k = recv(fd, buf, sizeof(buf), 0);
		if (k < 0 && errno == EAGAIN)
			continue;
		if (k <= 0) {
			ok = !strncmp(head, "HTTP/1.1 200", 12) || !strncmp(head, "HTTP/1.0 200", 12);
			break;
		}
		if (got < sizeof(head) - 1)
			memcpy(head + got, buf, (size_t)k < sizeof(head) - 1 - got ? (size_t)k : sizeof(head) - 1 - got);
		got += (size_t)k;
	}
	if (fd >= 0)
		close(fd);
	*ms = now_ms() - t0;
	return ok;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static int slowloris(int argc, char **argv)
{
	struct loris_run r = { .addr = argv[1], .n = atoi(argv[3]), .every_ms = 4000 };
	double secs = atof(argv[4]);
	int scrape_ms = 500, limit_ms = 2000;
	if (http_addr(r.addr, &r.to) || r.n < 1 || secs <= 0)
		return 1;
	for (int i = 5; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--every"))
			r.every_ms = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--scrape"))
			scrape_ms = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--limit"))
			limit_ms = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--from")) {
			char list[256];
			snprintf(list, sizeof(list), "%s", argv[i + 1]);
			for (char *a = strtok(list, ","); a && r.nfrom < MAX_SOURCES; a = strtok(NULL, ",")) {
				struct sockaddr_in *f = &r.from[r.nfrom++];
				f->sin_family = AF_INET;
				if (inet_pton(AF_INET, a, &f->sin_addr) != 1) {
					fprintf(stderr, "xfx-flood: bad source address %s\n", a);
					return 1;
				}
			}
		} else
			return 1;
	}
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)r.n + 64) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)r.n + 64 ? rl.rlim_max : (rlim_t)r.n + 64;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	uint64_t t0 = now_ms();
	r.end_ms = t0 + (uint64_t)(secs * 1000);
	pthread_t t;
	pthread_create(&t, NULL, loris_loop, &r);
	/* The attack settles (every connection up) before the first scrape. */
	nanosleep(&(struct timespec){ 0, 500000000 }, NULL);
	uint64_t lat[1024];
	unsigned k = 0, ok = 0;
	while (now_ms() + (uint64_t)limit_ms < r.end_ms && k < 1024) {
		uint64_t start = now_ms();
		ok += timed_scrape(&r.to, limit_ms, &lat[k]);
		k++;
		uint64_t next = start + (uint64_t)scrape_ms, t1 = now_ms();
		if (next > t1)
			nanosleep(&(struct timespec){ (time_t)((next - t1) / 1000), (long)((next - t1) % 1000) * 1000000 },
				  NULL);
	}
	pthread_join(t, NULL);
	qsort(lat, k, sizeof(lat[0]), cmp_u64);
	printf("slowloris %d for %.0f s: reopened %u, open errors %u; scrapes %u: ok %u, late or failed %u; "
	       "latency ms p50 %llu p90 %llu max %llu\n",
	       r.n, secs, r.reopened, r.open_errors, k, ok, k - ok, k ? (unsigned long long)lat[k / 2] : 0ULL,
	       k ? (unsigned long long)lat[(k * 9) / 10 < k ? (k * 9) / 10 : k - 1] : 0ULL,
	       k ? (unsigned long long)lat[k - 1] : 0ULL);
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
	if (argc >= 5 && !strcmp(argv[2], "slowloris"))
		return slowloris(argc, argv);
	if (argc == 4 && !strcmp(argv[2], "get")) {
		struct http_resp r;
		int ok = http_get(argv[1], "GET", argv[3], &r) == 0 && r.status == 200;
		if (ok)
			fwrite(r.body, 1, r.body_len, stdout);
		http_resp_free(&r);
		return ok ? 0 : 1;
	}
	fprintf(stderr, "usage: xfx-flood ADDR:PORT conns N [--get] [--hold MS]\n"
			"       xfx-flood ADDR:PORT scrape THREADS SECONDS [PER_SECOND]\n"
			"       xfx-flood ADDR:PORT slowloris N SECONDS [--from A.B.C.D,...] [--every MS]\n"
			"                 [--scrape MS] [--limit MS]\n"
			"       xfx-flood ADDR:PORT get PATH\n");
	return 1;
}
