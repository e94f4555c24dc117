/*
 * A memcached load generator for tests/bench/real_server.sh: the text
 * protocol over loopback, C connections driven by one thread with epoll,
 * each with at most P requests outstanding, for a fixed time; it prints the
 * requests answered per second.
 *
 * Debian's memcached source has no standalone load client (its t/ tests are
 * Perl, one request at a time, and mc-crusher is not packaged), so this is
 * ours.  Every answer is checked byte for byte against what the request
 * must get back (the keys are loaded first, the values have a fixed size),
 * so that a server damaged by the tracer shows as errors, not as speed.
 *
 *   mc_client [-p PORT] [-c CONNS] [-P DEPTH] [-d SECONDS] [-k KEYS]
 *             [-s VALUE_BYTES] [-w SET_PERCENT] [-l]
 *
 * -l loads the keys and exits.  Output, one line:
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
#define MAX_DEPTH 64
#define MAX_VALUE 4096
#define BUF_SIZE (MAX_DEPTH * (MAX_VALUE + 128))

struct mcc_opts {
	int port, conns, depth, keys, vsize, set_pct;
	double seconds;
	bool load_only;
};

struct mcc_conn {
	int fd;
	/* What each outstanding request must get back, in order. */
	size_t expect_len[MAX_DEPTH];
	unsigned expect_key[MAX_DEPTH];
	bool expect_get[MAX_DEPTH];
	int head, count;
	char in[BUF_SIZE];
	size_t in_len;
	uint64_t rng;
};

struct mcc_state {
	struct mcc_opts o;
	struct mcc_conn *c;
	char *value;          /* the value every key holds */
	uint64_t done, errors;
};

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng_next(uint64_t *s)
{
	/* xorshift64*: cheap, and the same sequence in every run. */
	uint64_t x = *s;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*s = x;
	return x * 2685821657736338717ull;
}

static int key_name(char *buf, size_t len, unsigned k)
{
	return snprintf(buf, len, "xflowbench:%08u", k);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Append one request to @out and what it must get back to @c. */
static size_t request_build(struct mcc_state *st, struct mcc_conn *c, char *out)
{
	unsigned k = (unsigned)(rng_next(&c->rng) % (uint64_t)st->o.keys);
	bool set = (int)(rng_next(&c->rng) % 100) < st->o.set_pct;
	char key[32];
	int kl = key_name(key, sizeof(key), k);
	size_t n;
	int slot = (c->head + c->count) % MAX_DEPTH;
	if (set) {
		n = (size_t)sprintf(out, "set %s 0 0 %d\r\n", key, st->o.vsize);
		memcpy(out + n, st->value, (size_t)st->o.vsize);
		n += (size_t)st->o.vsize;
		memcpy(out + n, "\r\n", 2);
		n += 2;
		c->expect_len[slot] = 8; /* STORED\r\n */
	} else {
		n = (size_t)sprintf(out, "get %s\r\n", key);
		/* VALUE <key> 0 <bytes>\r\n<data>\r\nEND\r\n */
		c->expect_len[slot] = (size_t)(6 + kl + 3 + snprintf(NULL, 0, "%d", st->o.vsize) + 2) +
				      (size_t)st->o.vsize + 2 + 5;
	}
	c->expect_key[slot] = k;
	c->expect_get[slot] = !set;
	c->count++;
	return n;
}

static bool answer_ok(struct mcc_state *st, const struct mcc_conn *c, int slot, const char *p)
{
	if (!c->expect_get[slot])
		return memcmp(p, "STORED\r\n", 8) == 0;
	char key[32], head[80];
	key_name(key, sizeof(key), c->expect_key[slot]);
	int hl = snprintf(head, sizeof(head), "VALUE %s 0 %d\r\n", key, st->o.vsize);
	size_t n = c->expect_len[slot];
	return memcmp(p, head, (size_t)hl) == 0 && memcmp(p + hl, st->value, (size_t)st->o.vsize) == 0 &&
	       memcmp(p + n - 7, "\r\nEND\r\n", 7) == 0;
}

/* Send requests until @c has @depth outstanding. */
static int conn_fill(struct mcc_state *st, struct mcc_conn *c)
{
	static char out[BUF_SIZE];
	size_t n = 0;
	while (c->count < st->o.depth)
		n += request_build(st, c, out + n);
	return n ? write_all(c->fd, out, n) : 0;
}

/* Read what arrived and retire the answers that are whole; the number
 * retired, or -1 when the connection failed. */
static int conn_drain(struct mcc_state *st, struct mcc_conn *c)
{
	ssize_t r = read(c->fd, c->in + c->in_len, sizeof(c->in) - c->in_len);
	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (r <= 0)
		return -1;
	c->in_len += (size_t)r;
	int got = 0;
	size_t off = 0;
	while (c->count && c->in_len - off >= c->expect_len[c->head]) {
		if (!answer_ok(st, c, c->head, c->in + off)) {
			st->errors++;
			if (st->errors <= 3)
				fprintf(stderr, "mc_client: unexpected answer: %.60s\n", c->in + off);
			/* The stream can no longer be framed. */
			return -1;
		}
		off += c->expect_len[c->head];
		c->head = (c->head + 1) % MAX_DEPTH;
		c->count--;
		got++;
	}
	memmove(c->in, c->in + off, c->in_len - off);
	c->in_len -= off;
	return got;
}

static int load_keys(struct mcc_state *st)
{
	int fd = loopback_connect(st->o.port);
	if (fd < 0) {
		fprintf(stderr, "mc_client: cannot connect to port %d: %s\n", st->o.port, strerror(-fd));
		return -1;
	}
	char buf[MAX_VALUE + 128], key[32];
	for (int k = 0; k < st->o.keys; k++) {
		key_name(key, sizeof(key), (unsigned)k);
		int n = snprintf(buf, sizeof(buf), "set %s 0 0 %d\r\n", key, st->o.vsize);
		memcpy(buf + n, st->value, (size_t)st->o.vsize);
		memcpy(buf + n + st->o.vsize, "\r\n", 2);
		char ans[16];
		if (write_all(fd, buf, (size_t)n + (size_t)st->o.vsize + 2) < 0 || read(fd, ans, 8) != 8 ||
		    memcmp(ans, "STORED\r\n", 8) != 0) {
			fprintf(stderr, "mc_client: loading key %d failed\n", k);
			close(fd);
			return -1;
		}
	}
	close(fd);
	return 0;
}

static int run(struct mcc_state *st)
{
	int ep = epoll_create1(0);
	if (ep < 0)
		return -1;
	for (int i = 0; i < st->o.conns; i++) {
		struct mcc_conn *c = &st->c[i];
		c->rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
		c->fd = loopback_connect(st->o.port);
		if (c->fd < 0) {
			fprintf(stderr, "mc_client: connection %d: %s\n", i, strerror(-c->fd));
			return -1;
		}
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = (uint32_t)i };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) < 0)
			return -1;
	}
	double t0 = now_s(), end = t0 + st->o.seconds;
	for (int i = 0; i < st->o.conns; i++)
		if (conn_fill(st, &st->c[i]) < 0)
			return -1;
	struct epoll_event evs[MAX_CONNS];
	double t = t0;
	while (t < end) {
		int n = epoll_wait(ep, evs, MAX_CONNS, 100);
		if (n < 0 && errno != EINTR)
			return -1;
		for (int i = 0; i < n; i++) {
			struct mcc_conn *c = &st->c[evs[i].data.u32];
			int got = conn_drain(st, c);
			if (got < 0)
				return -1;
			st->done += (uint64_t)got;
			if (got && conn_fill(st, c) < 0)
				return -1;
		}
		t = now_s();
	}
	double secs = t - t0;
	printf("requests %llu seconds %.3f rps %.0f errors %llu\n", (unsigned long long)st->done, secs,
	       (double)st->done / secs, (unsigned long long)st->errors);
	for (int i = 0; i < st->o.conns; i++)
		close(st->c[i].fd);
	close(ep);
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: mc_client [-p PORT] [-c CONNS] [-P DEPTH] [-d SECONDS] [-k KEYS] "
			"[-s VALUE_BYTES] [-w SET_PERCENT] [-l]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct mcc_state st = { .o = { .port = 11211, .conns = 16, .depth = 1, .keys = 1000, .vsize = 64,
				       .set_pct = 10, .seconds = 5 } };
	int opt;
	while ((opt = getopt(argc, argv, "p:c:P:d:k:s:w:l")) != -1) {
		switch (opt) {
		case 'p': st.o.port = atoi(optarg); break;
		case 'c': st.o.conns = atoi(optarg); break;
		case 'P': st.o.depth = atoi(optarg); break;
		case 'd': st.o.seconds = atof(optarg); break;
		case 'k': st.o.keys = atoi(optarg); break;
		case 's': st.o.vsize = atoi(optarg); break;
		case 'w': st.o.set_pct = atoi(optarg); break;
		case 'l': st.o.load_only = true; break;
		default: usage();
		}
	}
	if (st.o.conns < 1 || st.o.conns > MAX_CONNS || st.o.depth < 1 || st.o.depth > MAX_DEPTH ||
	    st.o.keys < 1 || st.o.vsize < 1 || st.o.vsize > MAX_VALUE || st.o.set_pct < 0 || st.o.set_pct > 100 ||
	    st.o.seconds <= 0)
		usage();
	st.value = malloc((size_t)st.o.vsize);
	st.c = calloc((size_t)st.o.conns, sizeof(*st.c));
	if (!st.value || !st.c)
		return 1;
	for (int i = 0; i < st.o.vsize; i++)
		st.value[i] = (char)('a' + i % 26);
	if (st.o.load_only)
		return load_keys(&st) < 0;
	if (run(&st) < 0) {
		fprintf(stderr, "mc_client: the run failed after %llu requests\n", (unsigned long long)st.done);
		return 1;
	}
	return st.errors != 0;
}
