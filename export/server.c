/*
 * The /metrics server: libmicrohttpd on its own thread, serving the
 * snapshot the loop published last.  libmicrohttpd is included here only.
 *
 * Why libmicrohttpd: Debian ships it (libmicrohttpd12, 0.9.75 in Debian 12),
 * it is made to be embedded, it runs its own polling thread (epoll) so the
 * monitor's libuv loop is untouched, and it bounds what a client can take:
 * memory per connection (a larger request head gets an error, never an
 * allocation) and an idle timeout.
 *
 * What it does not bound is a client that keeps connections busy doing
 * nothing: its idle timeout starts again at every byte, so a request head
 * sent one byte every few seconds holds a slot for ever (slowloris), and
 * its connection limit stops accepting, which leaves every newcomer,
 * Prometheus's scrape among them, waiting in the kernel's backlog.  So the
 * connections are ours to manage (struct conn, one per open connection,
 * reached through libmicrohttpd's socket context):
 *
 *  - every request must be complete (its head read) within the request
 *    deadline of the connection's start or of the previous answer's end,
 *    however it trickles in; a thread of ours shuts down the ones that
 *    are late;
 *  - an address holds at most max_per_address connections, and the
 *    server max_connections: a newcomer past either limit is not refused
 *    but takes the place of the oldest connection still waiting for its
 *    request (of its own address first; when the server is full, of the
 *    address holding the most), so that a client that asks at once gets
 *    in however many others hold connections open.  Only when every
 *    connection is being answered is the newcomer closed, and counted.
 *
 * Closing is shutdown(2) of the connection's socket: libmicrohttpd sees
 * its end and closes it on its own thread.  That is safe from our thread
 * because libmicrohttpd says a connection is closed (our lock taken in
 * on_connection) before it closes the descriptor, so no descriptor we
 * shut down can have been given to another connection.  libmicrohttpd's
 * own limits are kept above ours so that they never take over: connections
 * we have shut down still count for it until it has closed them.
 *
 * Snapshots are triple-buffered.  The loop fills one ("building"), the
 * server may be formatting another ("pinned"), and a third is the one
 * published ("latest"); the mutex guards only those three indices, so
 * neither thread holds it for longer than a few loads and stores.  Each
 * published snapshot is formatted once, on the first scrape that wants it,
 * and every scrape until the next publish shares that one response
 * (libmicrohttpd counts its references): a thousand scrapes cost one
 * formatting and one buffer.
 */
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "export/export.h"

/* Enough for any request line and headers a scraper sends; a larger head
 * is answered with an error by libmicrohttpd. */
#define CONNECTION_MEMORY (16 * 1024)
#define NSNAPS 3
/* Connections the kernel may hold before they are accepted (and, past the
 * limit, closed): a burst larger than this waits for SYN retries. */
#define BACKLOG 256

/* An open connection, as the limits see it (guarded by conns_lock). */
struct conn {
	bool used;
	bool answering;      /* its request is complete: being answered */
	bool closing;        /* shut down by us; no longer counted */
	int fd;
	uint64_t waiting_ns; /* since when it waits for a request */
	uint64_t deadline_ns;/* when that request must be complete */
	unsigned peers;      /* counted connections of its address, itself included */
	struct addr_key {
		sa_family_t family;
		unsigned char bytes[16];
	} addr;
};

struct xfx_server {
	struct MHD_Daemon *d;
	struct xfx_listen addr;

	pthread_mutex_t lock;
	struct xfx_snap *snaps[NSNAPS];
	int latest, pinned, building; /* indices in snaps[], -1: none */
	uint64_t gen;                 /* publishes so far */

	/* The server thread's own: the response of generation resp_gen, and
	 * the fixed ones. */
	uint64_t resp_gen;
	struct MHD_Response *resp;
	struct MHD_Response *index, *not_found, *bad_method, *unavailable, *failed;

	unsigned max_connections, max_per_address;
	uint64_t request_timeout_ns;

	/* The connections: on_accept, on_connection, on_request and
	 * on_completed (the server's thread) and the sweeper take the lock. */
	pthread_mutex_t conns_lock;
	pthread_cond_t sweeper_wake;
	pthread_t sweeper;
	bool sweeper_started, stopping;
	struct conn *conns;
	unsigned nconns;     /* slots: libmicrohttpd's own limit */

	atomic_uint_fast64_t scrapes, requests, formats, connections, refused, shed, timed_out, last_format_ns,
		last_bytes;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* --- the connections ------------------------------------------------------ */

static void addr_key_of(const struct sockaddr *sa, struct addr_key *k)
{
	memset(k, 0, sizeof(*k));
	if (!sa)
		return;
	k->family = sa->sa_family;
	if (sa->sa_family == AF_INET)
		memcpy(k->bytes, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	else if (sa->sa_family == AF_INET6)
		memcpy(k->bytes, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
}

static bool addr_key_eq(const struct addr_key *a, const struct addr_key *b)
{
	return a->family == b->family && !memcmp(a->bytes, b->bytes, sizeof(a->bytes));
}

static bool counted(const struct conn *c)
{
	return c->used && !c->closing;
}

/* Add @delta to the peer count of every counted connection of @k. */
static void peers_add(struct xfx_server *s, const struct addr_key *k, int delta)
{
	for (unsigned i = 0; i < s->nconns; i++)
		if (counted(&s->conns[i]) && addr_key_eq(&s->conns[i].addr, k))
			s->conns[i].peers = (unsigned)((int)s->conns[i].peers + delta);
}

/* Shut @c down: libmicrohttpd closes it when it sees the end.  Counted
 * first, so that whoever sees it closed sees it counted. */
static void conn_close(struct xfx_server *s, struct conn *c, atomic_uint_fast64_t *why)
{
	atomic_fetch_add(why, 1);
	c->closing = true;
	peers_add(s, &c->addr, -1);
	shutdown(c->fd, SHUT_RDWR);
}

/* The connection a newcomer replaces: the one waiting longest for its
 * request, of address @k if given, else of the address holding the most
 * connections; NULL when all are being answered. */
static struct conn *conn_victim(struct xfx_server *s, const struct addr_key *k)
{
	struct conn *v = NULL;
	for (unsigned i = 0; i < s->nconns; i++) {
		struct conn *c = &s->conns[i];
		if (!counted(c) || c->answering || (k && !addr_key_eq(&c->addr, k)))
			continue;
		if (!v || c->peers > v->peers || (c->peers == v->peers && c->waiting_ns < v->waiting_ns))
			v = c;
	}
	return v;
}

/* Called on the server's thread for each accepted connection, before it
 * counts as open (on_connection), which follows at once on this thread.
 * libmicrohttpd's own limits were checked before. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct xfx_server *s = cls;
	(void)addrlen;
	struct addr_key k;
	addr_key_of(addr, &k);
	pthread_mutex_lock(&s->conns_lock);
	unsigned all = 0, mine = 0;
	for (unsigned i = 0; i < s->nconns; i++)
		if (counted(&s->conns[i])) {
			all++;
			mine += addr_key_eq(&s->conns[i].addr, &k);
		}
	struct conn *v = NULL;
	bool ok = true;
	if (mine >= s->max_per_address)
		ok = (v = conn_victim(s, &k)) != NULL;
	else if (all >= s->max_connections)
		ok = (v = conn_victim(s, NULL)) != NULL;
	if (v)
		conn_close(s, v, &s->shed);
	pthread_mutex_unlock(&s->conns_lock);
	if (!ok)
		atomic_fetch_add(&s->refused, 1);
	return ok ? MHD_YES : MHD_NO;
}

static struct conn *conn_of(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	return ci ? ci->socket_context : NULL;
}

static void on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct xfx_server *s = cls;
	pthread_mutex_lock(&s->conns_lock);
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		atomic_fetch_add(&s->connections, 1);
		const union MHD_ConnectionInfo *fd = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
		const union MHD_ConnectionInfo *peer = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
		struct conn *c = NULL;
		for (unsigned i = 0; i < s->nconns && !c; i++)
			if (!s->conns[i].used)
				c = &s->conns[i];
		/* There is a slot for every connection libmicrohttpd may hold. */
		if (c && fd) {
			uint64_t now = now_ns();
			struct addr_key k;
			addr_key_of(peer ? peer->client_addr : NULL, &k);
			unsigned peers = 1;
			for (unsigned i = 0; i < s->nconns; i++)
				if (counted(&s->conns[i]) && addr_key_eq(&s->conns[i].addr, &k)) {
					s->conns[i].peers++;
					peers++;
				}
			*c = (struct conn){ .used = true, .fd = fd->connect_fd, .waiting_ns = now,
					    .deadline_ns = now + s->request_timeout_ns, .peers = peers, .addr = k };
		}
		*socket_context = c;
	} else {
		atomic_fetch_sub(&s->connections, 1);
		struct conn *c = *socket_context;
		if (c) {
			if (!c->closing)
				peers_add(s, &c->addr, -1);
			c->used = false;
		}
	}
	pthread_mutex_unlock(&s->conns_lock);
}

/* A request answered in full, or ended: the connection waits for the
 * next one, which has its own deadline. */
static void on_completed(void *cls, struct MHD_Connection *mc, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	struct xfx_server *s = cls;
	(void)con_cls;
	(void)toe;
	struct conn *c = conn_of(mc);
	if (!c)
		return;
	pthread_mutex_lock(&s->conns_lock);
	uint64_t now = now_ns();
	c->answering = false;
	c->waiting_ns = now;
	c->deadline_ns = now + s->request_timeout_ns;
	pthread_mutex_unlock(&s->conns_lock);
}

/* The sweeper's thread: shuts down each connection whose request is late,
 * waking at the earliest deadline.  A new deadline is never earlier than
 * the ones already set (they all run request_timeout_ns from a later
 * moment), so no one needs to wake it but xfx_server_stop(). */
static void *sweep(void *arg)
{
	struct xfx_server *s = arg;
	pthread_mutex_lock(&s->conns_lock);
	while (!s->stopping) {
		uint64_t now = now_ns(), wake = now + s->request_timeout_ns;
		for (unsigned i = 0; i < s->nconns; i++) {
			struct conn *c = &s->conns[i];
			if (!counted(c) || c->answering)
				continue;
			if (c->deadline_ns <= now)
				conn_close(s, c, &s->timed_out);
			else if (c->deadline_ns < wake)
				wake = c->deadline_ns;
		}
		struct timespec ts = { (time_t)(wake / 1000000000u), (long)(wake % 1000000000u) };
		pthread_cond_timedwait(&s->sweeper_wake, &s->conns_lock, &ts);
	}
	pthread_mutex_unlock(&s->conns_lock);
	return NULL;
}

/* --- answers ---------------------------------------------------------------- */

static struct MHD_Response *fixed(const char *text, const char *allow)
{
	struct MHD_Response *r =
		MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return NULL;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
	if (allow)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	return r;
}

/* The response for the latest snapshot, formatted if it is new; NULL
 * with *status set when there is none. */
static struct MHD_Response *metrics_response(struct xfx_server *s, unsigned *status)
{
	pthread_mutex_lock(&s->lock);
	uint64_t gen = s->gen;
	int l = s->latest;
	int fresh = l >= 0 && gen != s->resp_gen;
	if (fresh)
		s->pinned = l;
	pthread_mutex_unlock(&s->lock);
	if (l < 0) {
		*status = MHD_HTTP_SERVICE_UNAVAILABLE;
		return s->unavailable;
	}
	if (!fresh)
		return s->resp;
	uint64_t t0 = now_ns();
	char *text;
	size_t len;
	int rc = xfx_snap_format(s->snaps[l], &text, &len);
	pthread_mutex_lock(&s->lock);
	s->pinned = -1;
	pthread_mutex_unlock(&s->lock);
	struct MHD_Response *r = NULL;
	if (rc == 0) {
		r = MHD_create_response_from_buffer_with_free_callback(len, text, free);
		if (!r)
			free(text);
	}
	if (!r) {
		*status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		return s->failed;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, XFX_CONTENT_TYPE);
	atomic_store(&s->last_format_ns, now_ns() - t0);
	atomic_store(&s->last_bytes, len);
	atomic_fetch_add(&s->formats, 1);
	/* Connections still sending the old one hold their own reference. */
	if (s->resp)
		MHD_destroy_response(s->resp);
	s->resp = r;
	s->resp_gen = gen;
	return r;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct xfx_server *s = cls;
	(void)version;
	(void)upload_data;
	(void)upload_data_size;
	(void)con_cls;
	atomic_fetch_add(&s->requests, 1);
	/* Its head is in: the request deadline no longer applies. */
	struct conn *conn = conn_of(c);
	if (conn) {
		pthread_mutex_lock(&s->conns_lock);
		conn->answering = true;
		pthread_mutex_unlock(&s->conns_lock);
	}
	/* Answered at the first call, before any body is read: nothing here
	 * takes one, and libmicrohttpd closes a connection whose body was
	 * not read. */
	unsigned status = MHD_HTTP_OK;
	struct MHD_Response *r;
	switch (xfx_route(method, url)) {
	case XFX_ROUTE_METRICS:
		r = metrics_response(s, &status);
		if (status == MHD_HTTP_OK)
			atomic_fetch_add(&s->scrapes, 1);
		break;
	case XFX_ROUTE_INDEX:
		r = s->index;
		break;
	case XFX_ROUTE_BAD_METHOD:
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
		r = s->bad_method;
		break;
	default:
		status = MHD_HTTP_NOT_FOUND;
		r = s->not_found;
		break;
	}
	return MHD_queue_response(c, status, r);
}

int xfx_server_start(const struct xfx_server_opts *o, struct xfx_server **out, char *err, size_t errlen)
{
	struct xfx_server *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	s->addr = o->addr;
	s->max_connections = o->max_connections ? o->max_connections : 1;
	s->max_per_address = o->max_per_address && o->max_per_address < s->max_connections ? o->max_per_address
											    : s->max_connections;
	s->request_timeout_ns = (uint64_t)(o->request_timeout_ms ? o->request_timeout_ms : 5000) * 1000000u;
	s->latest = s->pinned = s->building = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_mutex_init(&s->conns_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->sweeper_wake, &ca);
	pthread_condattr_destroy(&ca);
	int rc = -ENOMEM;
	s->nconns = 2 * s->max_connections + 16;
	s->conns = calloc(s->nconns, sizeof(*s->conns));
	for (int i = 0; i < NSNAPS; i++)
		if (xfx_snap_new(&s->snaps[i]))
			s->snaps[i] = NULL;
	s->index = fixed("xflowtop exports its figures for Prometheus at /metrics\n", NULL);
	s->not_found = fixed("not found: the figures are at /metrics\n", NULL);
	s->bad_method = fixed("method not allowed: use GET /metrics\n", "GET, HEAD");
	s->unavailable = fixed("no figures yet: xflowtop is starting\n", NULL);
	s->failed = fixed("out of memory formatting the figures\n", NULL);
	if (!s->snaps[0] || !s->snaps[1] || !s->snaps[2] || !s->index || !s->not_found || !s->bad_method ||
	    !s->unavailable || !s->failed || !s->conns) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	int fd;
	if ((rc = xfx_listen_open(&s->addr, BACKLOG, &fd, err, errlen)))
		goto fail;
	/* The server's threads take no signal: they stay with the loop,
	 * which handles them.  They inherit the mask of the thread creating
	 * them. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
	if (s->addr.sa.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->d = MHD_start_daemon(flags, 0, on_accept, s, on_request, s,
				MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
				MHD_OPTION_CONNECTION_LIMIT, s->nconns,
				MHD_OPTION_PER_IP_CONNECTION_LIMIT, 2 * s->max_per_address + 8,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(o->timeout_s ? o->timeout_s : 10),
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_END);
	if (s->d)
		s->sweeper_started = pthread_create(&s->sweeper, NULL, sweep, s) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!s->d || !s->sweeper_started) {
		if (!s->d)
			close(fd);
		snprintf(err, errlen, "%s: the HTTP server (libmicrohttpd) did not start", s->addr.text);
		rc = -EIO;
		goto fail;
	}
	*out = s;
	return 0;
fail:
	xfx_server_stop(s);
	return rc;
}

void xfx_server_stop(struct xfx_server *s)
{
	if (!s)
		return;
	if (s->sweeper_started) {
		pthread_mutex_lock(&s->conns_lock);
		s->stopping = true;
		pthread_cond_signal(&s->sweeper_wake);
		pthread_mutex_unlock(&s->conns_lock);
		pthread_join(s->sweeper, NULL);
	}
	/* Joins its thread, closes every connection and the listening socket. */
	if (s->d)
		MHD_stop_daemon(s->d);
	struct MHD_Response *fixed_ones[] = { s->resp, s->index, s->not_found, s->bad_method, s->unavailable,
					      s->failed };
	for (size_t i = 0; i < sizeof(fixed_ones) / sizeof(fixed_ones[0]); i++)
		if (fixed_ones[i])
			MHD_destroy_response(fixed_ones[i]);
	for (int i = 0; i < NSNAPS; i++)
		xfx_snap_free(s->snaps[i]);
	pthread_mutex_destroy(&s->lock);
	pthread_mutex_destroy(&s->conns_lock);
	pthread_cond_destroy(&s->sweeper_wake);
	free(s->conns);
	free(s);
}

struct xfx_snap *xfx_server_snap_begin(struct xfx_server *s)
{
	pthread_mutex_lock(&s->lock);
	if (s->building < 0)
		for (int i = 0; i < NSNAPS; i++)
			if (i != s->latest && i != s->pinned) {
				s->building = i;
				break;
			}
	struct xfx_snap *snap = s->snaps[s->building];
	pthread_mutex_unlock(&s->lock);
	return snap;
}

void xfx_server_snap_publish(struct xfx_server *s, struct xfx_snap *snap)
{
	pthread_mutex_lock(&s->lock);
	if (s->building >= 0 && s->snaps[s->building] == snap) {
		s->latest = s->building;
		s->building = -1;
		s->gen++;
	}
	pthread_mutex_unlock(&s->lock);
}

void xfx_server_stats(struct xfx_server *s, struct xfx_server_stats *out)
{
	out->scrapes = atomic_load(&s->scrapes);
	out->requests = atomic_load(&s->requests);
	out->formats = atomic_load(&s->formats);
	out->connections = atomic_load(&s->connections);
	out->refused = atomic_load(&s->refused);
	out->shed = atomic_load(&s->shed);
	out->timed_out = atomic_load(&s->timed_out);
	out->last_format_ns = atomic_load(&s->last_format_ns);
	out->last_bytes = atomic_load(&s->last_bytes);
}

const char *xfx_server_address(const struct xfx_server *s)
{
	return s->addr.text;
}
