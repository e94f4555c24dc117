/*
 * The /metrics server (export/server.c) over real loopback sockets: what
 * each request gets, one formatting per published snapshot, bounded
 * connections and request heads, room for a newcomer however the others
 * hold theirs, a deadline for requests that trickle in, and snapshots never
 * torn while the loop publishes and scrapers read at once.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>

#include "export/export.h"
#include "tests/export/httpc.h"

static const struct xfx_family f_gen = { "t_generation_total", XFX_COUNTER, "Publishes." };
static const struct xfx_family f_hist = { "t_latency_seconds", XFX_HISTOGRAM, "Latency." };

static struct xfx_server *start_opts(struct xfx_server_opts o)
{
	char err[512];
	cr_assert_eq(xfx_listen_parse("127.0.0.1:0", &o.addr, err, sizeof(err)), 0);
	struct xfx_server *s;
	cr_assert_eq(xfx_server_start(&o, &s, err, sizeof(err)), 0, "%s", err);
	return s;
}

static struct xfx_server *start(unsigned max_conn, unsigned timeout_s)
{
	return start_opts((struct xfx_server_opts){ .max_connections = max_conn, .timeout_s = timeout_s });
}

/* A snapshot whose every figure is @gen: a torn read would mix two. */
static void publish(struct xfx_server *s, uint64_t gen)
{
	struct xfx_snap *snap = xfx_server_snap_begin(s);
	xfx_snap_reset(snap, "h");
	xfx_snap_family(snap, &f_gen);
	xfx_snap_u64(snap, gen);
	xfx_snap_family(snap, &f_hist);
	uint64_t b[XFX_NBUCKETS + 1] = { 0 };
	b[0] = gen;
	for (unsigned k = 0; k < 50; k++) {
		char to[16];
		snprintf(to, sizeof(to), "d:f%u", k);
		xfx_snap_label(snap, "to", to);
		xfx_snap_hist(snap, b, gen, gen * 1000);
	}
	xfx_server_snap_publish(s, snap);
}

static void wait_connections(struct xfx_server *s, uint64_t n)
{
	struct xfx_server_stats st;
	for (int i = 0; i < 400; i++) {
		xfx_server_stats(s, &st);
		if (st.connections == n)
			return;
		nanosleep(&(struct timespec){ 0, 10000000 }, NULL);
	}
	cr_assert_fail("the server holds %llu connections, not %llu", (unsigned long long)st.connections,
		       (unsigned long long)n);
}

Test(server, answers_each_kind_of_request)
{
	struct xfx_server *s = start(8, 10);
	const char *addr = xfx_server_address(s);
	struct http_resp r;
	cr_assert_eq(http_get(addr, "GET", "/metrics", &r), 0);
	cr_assert_eq(r.status, 503, "nothing published yet: %s", r.raw);
	http_resp_free(&r);

	publish(s, 7);
	cr_assert_eq(http_get(addr, "GET", "/metrics", &r), 0);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.raw, "Content-Type: " XFX_CONTENT_TYPE "\r\n"), "%.300s", r.raw);
	cr_assert(strstr(r.body, "t_generation_total{host=\"h\"} 7\n"));
	cr_assert(strstr(r.body, "t_latency_seconds_count{host=\"h\",to=\"d:f49\"} 7\n"));
	size_t body = r.body_len;
	http_resp_free(&r);

	cr_assert_eq(http_get(addr, "HEAD", "/metrics", &r), 0);
	cr_assert_eq(r.status, 200);
	cr_assert_eq(r.body_len, 0, "HEAD has no body");
	char cl[64];
	snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", body);
	cr_assert(strstr(r.raw, cl), "%s", r.raw);
	http_resp_free(&r);

	cr_assert_eq(http_get(addr, "POST", "/metrics", &r), 0);
	cr_assert_eq(r.status, 405);
	cr_assert(strstr(r.raw, "Allow: GET, HEAD\r\n"), "%s", r.raw);
	http_resp_free(&r);

	cr_assert_eq(http_get(addr, "GET", "/nope", &r), 0);
	cr_assert_eq(r.status, 404);
	cr_assert(strstr(r.body, "/metrics"));
	http_resp_free(&r);

	cr_assert_eq(http_get(addr, "GET", "/", &r), 0);
	cr_assert_eq(r.status, 200);
	cr_assert(strstr(r.body, "/metrics"));
	http_resp_free(&r);

	struct xfx_server_stats st;
	xfx_server_stats(s, &st);
	cr_assert_eq(st.scrapes, 2, "two answered /metrics requests (GET and HEAD)");
	cr_assert_eq(st.requests, 6);
	cr_assert_eq(st.last_bytes, body);
	xfx_server_stop(s);
}

Test(server, each_snapshot_is_formatted_once_however_many_scrape)
{
	struct xfx_server *s = start(8, 10);
	struct xfx_server_stats st;
	publish(s, 1);
	struct http_resp r;
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(http_get(xfx_server_address(s), "GET", "/metrics", &r), 0);
		cr_assert_eq(r.status, 200);
		http_resp_free(&r);
	}
	xfx_server_stats(s, &st);
	cr_assert_eq(st.formats, 1);
	publish(s, 2);
	cr_assert_eq(http_get(xfx_server_address(s), "GET", "/metrics", &r), 0);
	cr_assert(strstr(r.body, "t_generation_total{host=\"h\"} 2\n"), "the new snapshot is served");
	http_resp_free(&r);
	xfx_server_stats(s, &st);
	cr_assert_eq(st.formats, 2);
	xfx_server_stop(s);
}

Test(server, begin_never_hands_out_the_published_snapshot)
{
	struct xfx_server *s = start(8, 10);
	struct xfx_snap *prev = NULL;
	for (int i = 0; i < 10; i++) {
		struct xfx_snap *b = xfx_server_snap_begin(s);
		cr_assert_neq(b, prev, "the published one is being served");
		cr_assert_eq(xfx_server_snap_begin(s), b, "begin twice without publishing: the same one");
		xfx_snap_reset(b, "h");
		xfx_server_snap_publish(s, b);
		prev = b;
	}
	xfx_server_stop(s);
}

Test(server, a_huge_request_head_is_refused_and_the_server_goes_on)
{
	struct xfx_server *s = start(8, 10);
	publish(s, 3);
	size_t n = 64 * 1024;
	char *req = malloc(n + 128);
	int o = sprintf(req, "GET /metrics HTTP/1.0\r\nX-Big: ");
	memset(req + o, 'a', n);
	strcpy(req + o + n, "\r\n\r\n");
	struct http_resp r;
	cr_assert_eq(http_do(xfx_server_address(s), req, &r), 0);
	cr_assert(r.status == 0 || r.status >= 400, "a 64 KiB header got %d", r.status);
	http_resp_free(&r);
	free(req);
	cr_assert_eq(http_get(xfx_server_address(s), "GET", "/metrics", &r), 0);
	cr_assert_eq(r.status, 200);
	http_resp_free(&r);
	xfx_server_stop(s);
}

/* A connection to @s from @from (NULL: the address the kernel picks),
 * once the server counts @n open. */
static int hold(struct xfx_server *s, const char *from, uint64_t n)
{
	struct sockaddr_in to, src = { .sin_family = AF_INET };
	cr_assert_eq(http_addr(xfx_server_address(s), &to), 0);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	cr_assert_geq(fd, 0);
	if (from) {
		cr_assert_eq(inet_pton(AF_INET, from, &src.sin_addr), 1);
		cr_assert_eq(bind(fd, (struct sockaddr *)&src, sizeof(src)), 0, "bind %s: %s", from, strerror(errno));
	}
	cr_assert_eq(connect(fd, (struct sockaddr *)&to, sizeof(to)), 0, "%s", strerror(errno));
	wait_connections(s, n);
	return fd;
}

/* Does the server close @fd within @ms? */
static int closed_within(int fd, int ms)
{
	char c;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, ms) <= 0)
		return 0;
	return recv(fd, &c, 1, 0) <= 0;
}

/* Issue 30 item 4: connections that never finish their request cannot
 * keep a scraper out.  The server is full of them; the newcomer takes the
 * place of the one waiting longest, and is answered. */
Test(server, a_full_server_makes_room_for_a_newcomer)
{
	struct xfx_server *s = start(4, 30);
	publish(s, 4);
	int fds[4];
	for (int i = 0; i < 4; i++) {
		fds[i] = hold(s, NULL, (uint64_t)i + 1);
		cr_assert_eq(send(fds[i], "GET /me", 7, MSG_NOSIGNAL), 7);
	}
	struct http_resp r;
	cr_assert_eq(http_get(xfx_server_address(s), "GET", "/metrics", &r), 0);
	cr_assert_eq(r.status, 200, "the newcomer was not answered: %s", r.raw);
	http_resp_free(&r);
	cr_assert(closed_within(fds[0], 3000), "the oldest half request was not closed");
	for (int i = 1; i < 4; i++)
		cr_assert_not(closed_within(fds[i], 0), "connection %d was closed too", i);
	struct xfx_server_stats st;
	xfx_server_stats(s, &st);
	cr_assert_eq(st.shed, 1);
	cr_assert_eq(st.refused, 0);
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	xfx_server_stop(s);
}

/* One address holds at most max_per_address connections: its next one
 * replaces its own oldest waiting one, and other addresses keep theirs. */
Test(server, an_address_past_its_limit_gives_way_to_itself)
{
	struct xfx_server *s = start_opts((struct xfx_server_opts){ .max_connections = 8, .max_per_address = 2,
								    .timeout_s = 30 });
	publish(s, 5);
	int other = hold(s, "127.0.0.2", 1);
	int a = hold(s, NULL, 2), b = hold(s, NULL, 3);
	int c = http_connect(xfx_server_address(s));
	cr_assert_geq(c, 0);
	cr_assert(closed_within(a, 3000), "three connections from one address with a limit of two");
	cr_assert_not(closed_within(b, 200));
	cr_assert_not(closed_within(c, 0));
	cr_assert_not(closed_within(other, 0), "another address gave way");
	struct xfx_server_stats st;
	xfx_server_stats(s, &st);
	cr_assert_eq(st.shed, 1);
	int fds[] = { other, a, b, c };
	for (int i = 0; i < 4; i++)
		close(fds[i]);
	xfx_server_stop(s);
}

/* libmicrohttpd's idle timeout starts again at every byte: a request
 * head sent one byte at a time, faster than that, is closed at the
 * request deadline all the same. */
Test(server, a_trickling_request_is_closed_at_its_deadline)
{
	struct xfx_server *s = start_opts((struct xfx_server_opts){ .max_connections = 4, .request_timeout_ms = 700,
								    .timeout_s = 30 });
	publish(s, 6);
	int fd = hold(s, NULL, 1);
	const char head[] = "GET /metrics HTTP/1.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	int closed = 0;
	for (size_t i = 0; i < sizeof(head) - 1 && !closed; i++) {
		if (send(fd, head + i, 1, MSG_NOSIGNAL) != 1)
			break;
		closed = closed_within(fd, 100);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	long ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	cr_assert(closed || closed_within(fd, 1000), "a request trickling for %ld ms was not closed", ms);
	cr_assert_geq(ms, 600, "closed after %ld ms, before its deadline", ms);
	struct xfx_server_stats st;
	xfx_server_stats(s, &st);
	cr_assert_eq(st.timed_out, 1);
	close(fd);
	/* A whole request is answered at once, as before. */
	struct http_resp r;
	cr_assert_eq(http_get(xfx_server_address(s), "GET", "/metrics", &r), 0);
	cr_assert_eq(r.status, 200);
	http_resp_free(&r);
	xfx_server_stop(s);
}

Test(server, an_idle_connection_times_out)
{
	struct xfx_server *s = start(4, 1);
	int fd = http_connect(xfx_server_address(s));
	cr_assert_geq(fd, 0);
	wait_connections(s, 1);
	cr_assert(closed_within(fd, 4000), "an idle connection outlived the 1 s timeout");
	close(fd);
	xfx_server_stop(s);
}

Test(server, stops_with_connections_open)
{
	struct xfx_server *s = start(4, 30);
	int fd = http_connect(xfx_server_address(s));
	cr_assert_geq(fd, 0);
	send(fd, "GET /met", 8, MSG_NOSIGNAL); /* half a request */
	wait_connections(s, 1);
	xfx_server_stop(s);
	cr_assert(closed_within(fd, 2000));
	close(fd);
}

struct scraper {
	const char *addr;
	atomic_int *stop;
	unsigned ok, torn;
	char why[256];
};

static void *scrape_loop(void *arg)
{
	struct scraper *sc = arg;
	while (!atomic_load(sc->stop)) {
		struct http_resp r;
		if (http_get(sc->addr, "GET", "/metrics", &r) || r.status != 200) {
			http_resp_free(&r);
			continue;
		}
		/* Every figure of one snapshot carries the same generation. */
		unsigned long long gen = 0, b0 = 0, cnt = 0;
		const char *p = strstr(r.body, "t_generation_total{host=\"h\"} ");
		const char *q = strstr(r.body, "t_latency_seconds_bucket{host=\"h\",to=\"d:f49\",le=\"1e-06\"} ");
		const char *c = strstr(r.body, "t_latency_seconds_count{host=\"h\",to=\"d:f0\"} ");
		if (!p || !q || !c || sscanf(strchr(p, ' ') + 1, "%llu", &gen) != 1 ||
		    sscanf(strchr(q, ' ') + 1, "%llu", &b0) != 1 || sscanf(strchr(c, ' ') + 1, "%llu", &cnt) != 1 ||
		    gen != b0 || gen != cnt) {
			if (!sc->torn++)
				snprintf(sc->why, sizeof(sc->why), "gen %llu, bucket %llu, count %llu", gen, b0, cnt);
		} else
			sc->ok++;
		http_resp_free(&r);
	}
	return NULL;
}

Test(server, snapshots_are_never_torn_while_the_loop_publishes)
{
	struct xfx_server *s = start(16, 10);
	publish(s, 1);
	atomic_int stop = 0;
	struct scraper sc[3];
	pthread_t t[3];
	for (int i = 0; i < 3; i++) {
		sc[i] = (struct scraper){ .addr = xfx_server_address(s), .stop = &stop };
		pthread_create(&t[i], NULL, scrape_loop, &sc[i]);
	}
	/* The loop's side: publish as fast as it can for a while. */
	uint64_t gen = 2;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		publish(s, gen++);
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 1500 || sc[0].ok < 20);
	atomic_store(&stop, 1);
	unsigned ok = 0;
	for (int i = 0; i < 3; i++) {
		pthread_join(t[i], NULL);
		cr_assert_eq(sc[i].torn, 0, "scraper %d saw a torn snapshot: %s", i, sc[i].why);
		ok += sc[i].ok;
	}
	cr_assert_gt(ok, 30, "too few scrapes to tell (%u)", ok);
	struct xfx_server_stats st;
	xfx_server_stats(s, &st);
	cr_assert_leq(st.formats, gen, "never more formatting than publishes");
	xfx_server_stop(s);
}

Test(server, stopping_frees_the_port)
{
	struct xfx_server *s = start(4, 10);
	char addr[64];
	snprintf(addr, sizeof(addr), "%s", xfx_server_address(s));
	xfx_server_stop(s);
	struct xfx_listen l;
	char err[512];
	int fd;
	cr_assert_eq(xfx_listen_parse(addr, &l, err, sizeof(err)), 0);
	cr_assert_eq(xfx_listen_open(&l, 8, &fd, err, sizeof(err)), 0, "the listening socket was left open: %s", err);
	close(fd);
}
