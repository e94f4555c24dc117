/*
 * The /metrics server: libmicrohttpd on its own thread, serving the
 * snapshot the loop published last.  libmicrohttpd is included here only.
 *
 * Why libmicrohttpd: Debian ships it (libmicrohttpd12, 0.9.75 in Debian 12),
 * it is made to be embedded, it runs its own polling thread (epoll) so the
 * monitor's libuv loop is untouched, and it bounds what a client can take:
 * memory per connection (a larger request head gets an error, never an
 * allocation) and an idle timeout.  Connections past the limit are
 * accepted and closed at once by our accept policy: libmicrohttpd's own
 * limit stops accepting instead, which leaves them waiting in the kernel's
 * backlog, Prometheus's scrape among them, until some idle one times out.
 * Its own limit is kept above ours so that it never takes over.
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
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
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

	unsigned max_connections;
	atomic_uint_fast64_t scrapes, requests, formats, connections, refused, last_format_ns, last_bytes;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

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

/* Called on the server's thread for each accepted connection, before it
 * counts as open (on_connection), so the count is exact here. */
static enum MHD_Result on_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen)
{
	struct xfx_server *s = cls;
	(void)addr;
	(void)addrlen;
	if (atomic_load(&s->connections) < s->max_connections)
		return MHD_YES;
	atomic_fetch_add(&s->refused, 1);
	return MHD_NO;
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct xfx_server *s = cls;
	(void)c;
	(void)socket_context;
	if (code == MHD_CONNECTION_NOTIFY_STARTED)
		atomic_fetch_add(&s->connections, 1);
	else
		atomic_fetch_sub(&s->connections, 1);
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
	s->latest = s->pinned = s->building = -1;
	pthread_mutex_init(&s->lock, NULL);
	int rc = -ENOMEM;
	for (int i = 0; i < NSNAPS; i++)
		if (xfx_snap_new(&s->snaps[i]))
			s->snaps[i] = NULL;
	s->index = fixed("xflowtop exports its figures for Prometheus at /metrics\n", NULL);
	s->not_found = fixed("not found: the figures are at /metrics\n", NULL);
	s->bad_method = fixed("method not allowed: use GET /metrics\n", "GET, HEAD");
	s->unavailable = fixed("no figures yet: xflowtop is starting\n", NULL);
	s->failed = fixed("out of memory formatting the figures\n", NULL);
	if (!s->snaps[0] || !s->snaps[1] || !s->snaps[2] || !s->index || !s->not_found || !s->bad_method ||
	    !s->unavailable || !s->failed) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	int fd;
	if ((rc = xfx_listen_open(&s->addr, BACKLOG, &fd, err, errlen)))
		goto fail;
	/* The server's thread takes no signal: they stay with the loop,
	 * which handles them.  It inherits the mask of the thread creating it. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO;
	if (s->addr.sa.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->d = MHD_start_daemon(flags, 0, on_accept, s, on_request, s,
				MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
				MHD_OPTION_CONNECTION_LIMIT, 2 * s->max_connections + 16,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(o->timeout_s ? o->timeout_s : 10),
				MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
				MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
				MHD_OPTION_END);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!s->d) {
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
	/* Joins the thread, closes every connection and the listening socket. */
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
	out->last_format_ns = atomic_load(&s->last_format_ns);
	out->last_bytes = atomic_load(&s->last_bytes);
}

const char *xfx_server_address(const struct xfx_server *s)
{
	return s->addr.text;
}
