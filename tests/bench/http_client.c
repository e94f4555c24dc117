/*
 * An HTTP/1.1 load generator for tests/bench/nginx_server.sh: C keep-alive
 * connections over loopback, driven by one thread with epoll, one request
 * in flight on each, for a fixed time; it prints the requests answered.
 *
 * Debian's nginx source has no load client (and ab is in another package,
 * apache2-utils, which a test should not need), so this is ours.  Every
 * answer must be "200" with the body length the first answer had, so that
 * a server damaged by the tracer shows as errors, not as speed.
 *
 *   http_client [-p PORT] [-c CONNS] [-d SECONDS] [-u PATH]
 *
 * Output, one line:
 *   requests N seconds S rps R errors E
 * The exit status is 1 when any answer was wrong or a connection failed.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "loopback.h"

#define MAX_CONNS 256
#define BUF_SIZE 65536

struct hc_conn {
	int fd;
	char in[BUF_SIZE];
	size_t in_len;
};

struct hc_state {
	int port, conns;
	double seconds;
	const char *path;
	char req[512];
	size_t req_len;
	long body_len;        /* of the first answer: every other must match */
	uint64_t done, errors;
	struct hc_conn *c;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static bool hc_send(struct hc_state *s, struct hc_conn *c)
{
	size_t off = 0;
	while (off < s->req_len) {
		ssize_t n = write(c->fd, s->req + off, s->req_len - off);
		if (n <= 0)
			return false;
		off += (size_t)n;
	}
	return true;
}

/* One whole answer at the start of c->in: its length, 0 if not yet whole,
 * -1 if it is not a 200 with the expected body.  *close: the server
 * closes the connection after it (keepalive_requests reached). */
static long hc_answer(struct hc_state *s, struct hc_conn *c, bool *close)
{
	c->in[c->in_len] = '\0';
	char *end = strstr(c->in, "\r\n\r\n");
	if (!end)
		return c->in_len >= BUF_SIZE - 1 ? -1 : 0;
	if (strncmp(c->in, "HTTP/1.1 200 ", 13) != 0)
		return -1;
	const char *cl = strstr(c->in, "\r\nContent-Length: ");
	if (!cl || cl > end)
		return -1;
	long body = strtol(cl + 18, NULL, 10);
	if (body < 0 || (s->body_len >= 0 && body != s->body_len))
		return -1;
	size_t whole = (size_t)(end + 4 - c->in) + (size_t)body;
	if (whole >= BUF_SIZE)
		return -1;
	if (c->in_len < whole)
		return 0;
	const char *conn = strstr(c->in, "\r\nConnection: close");
	*close = conn && conn < end;
	s->body_len = body;
	return (long)whole;
}

static int hc_run(struct hc_state *s)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return 1;
	s->c = calloc((size_t)s->conns, sizeof(*s->c));
	if (!s->c)
		return 1;
	for (int i = 0; i < s->conns; i++) {
		struct hc_conn *c = &s->c[i];
		c->fd = loopback_connect(s->port);
		if (c->fd < 0) {
			fprintf(stderr, "connect to port %d: %s\n", s->port, strerror(-c->fd));
			return 1;
		}
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) != 0 || !hc_send(s, c))
			return 1;
	}
	double t0 = now_s(), end = t0 + s->seconds;
	struct epoll_event evs[MAX_CONNS];
	while (now_s() < end && !s->errors) {
		int n = epoll_wait(ep, evs, MAX_CONNS, 100);
		for (int k = 0; k < n; k++) {
			struct hc_conn *c = evs[k].data.ptr;
			ssize_t r = read(c->fd, c->in + c->in_len, BUF_SIZE - 1 - c->in_len);
			if (r <= 0) {
				fprintf(stderr, "a connection was lost: %s\n", r ? strerror(errno) : "closed");
				s->errors++;
				break;
			}
			c->in_len += (size_t)r;
			bool closing = false;
			long whole = hc_answer(s, c, &closing);
			if (whole < 0) {
				fprintf(stderr, "a wrong answer: %.80s\n", c->in);
				s->errors++;
				break;
			}
			if (whole == 0)
				continue;
			memmove(c->in, c->in + whole, c->in_len - (size_t)whole);
			c->in_len -= (size_t)whole;
			s->done++;
			if (closing) {
				/* The server's last answer on it: a new one. */
				epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
				close(c->fd);
				c->in_len = 0;
				c->fd = loopback_connect(s->port);
				struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
				if (c->fd < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
					fprintf(stderr, "reconnect: %s\n", strerror(c->fd < 0 ? -c->fd : errno));
					s->errors++;
					break;
				}
			}
			if (!hc_send(s, c)) {
				s->errors++;
				break;
			}
		}
	}
	double secs = now_s() - t0;
	printf("requests %llu seconds %.2f rps %.0f errors %llu\n", (unsigned long long)s->done, secs,
	       (double)s->done / secs, (unsigned long long)s->errors);
	for (int i = 0; i < s->conns; i++)
		close(s->c[i].fd);
	free(s->c);
	close(ep);
	return s->errors ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct hc_state s = { .port = 8080, .conns = 16, .seconds = 4, .path = "/", .body_len = -1 };
	int opt;
	while ((opt = getopt(argc, argv, "p:c:d:u:")) != -1) {
		switch (opt) {
		case 'p': s.port = atoi(optarg); break;
		case 'c': s.conns = atoi(optarg); break;
		case 'd': s.seconds = atof(optarg); break;
		case 'u': s.path = optarg; break;
		default:
			fprintf(stderr, "usage: http_client [-p PORT] [-c CONNS] [-d SECONDS] [-u PATH]\n");
			return 2;
		}
	}
	if (s.conns < 1 || s.conns > MAX_CONNS || s.seconds <= 0 || strlen(s.path) > 256) {
		fprintf(stderr, "http_client: 1 to %d connections, a positive time, a short path\n", MAX_CONNS);
		return 2;
	}
	s.req_len = (size_t)snprintf(s.req, sizeof(s.req), "GET %s HTTP/1.1\r\nHost: localhost\r\n\r\n", s.path);
	return hc_run(&s);
}
