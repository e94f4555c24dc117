/*
 * export/export.h — xflowtop's figures for Prometheus: the text exposition
 * format, the documented histogram layout, a bounded table of series, and
 * the HTTP server that serves /metrics.
 *
 * The stage knows nothing of the monitor's model: tui/metrics.c walks the
 * model and fills a snapshot (struct xfx_snap) with families and samples;
 * this library turns snapshots into text and serves them.
 *
 * Threads.  The monitor's loop thread builds snapshots; the server's own
 * thread (libmicrohttpd's) formats and sends them.  They meet at
 * xfx_server_snap_begin()/xfx_server_snap_publish(), which take a mutex only
 * to swap pointers: the loop never waits for a scrape, a slow client or the
 * formatting of a large response.  Everything else here is single-threaded.
 *
 * Errors: 0 or a negative errno; functions that can fail for a reason a
 * person must read also write it to @err.
 */
#ifndef XFLOW_EXPORT_EXPORT_H
#define XFLOW_EXPORT_EXPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "xflow/histogram.h"

/* --- the histogram layout (buckets.c) ------------------------------------ */

/*
 * Every latency histogram is exported with the same buckets: in each decade
 * from 1 us to 10 s, the upper bounds 1, 1.2, 1.4, 1.6, 1.8, 2, 2.2, 2.5, 3,
 * 3.5, 4, 4.5, 5, 6, 7, 8 and 9 times the decade, and 10 s; then +Inf.  A
 * bucket is at most 20 % wider than its lower bound, the bounds are the
 * round numbers people put in alerts, and ±10 % of 2 ms (1.8 and 2.2 ms)
 * are bounds.  xflowtop(1) states what this costs in quantile error.
 */
#define XFX_DECADES 7
#define XFX_PER_DECADE 17
#define XFX_NBUCKETS (XFX_DECADES * XFX_PER_DECADE + 1) /* finite bounds: 120 */

/* Upper bound of bucket @i (0 <= i < XFX_NBUCKETS) in nanoseconds. */
uint64_t xfx_bucket_ns(unsigned i);

/* Seconds written as Prometheus's own client writes a float (Go's
 * strconv 'g', shortest): "1e-06", "0.0025", "10".  Returns the length;
 * @buf needs 32 bytes. */
int xfx_seconds_format(uint64_t ns, char *buf);

/*
 * Fold a fine histogram into the layout: out[i] = samples in bucket i (not
 * cumulative), out[XFX_NBUCKETS] = samples above the last bound.  A sample
 * is counted under a bound only if its whole fine bucket is at or below it,
 * so "le" never claims a sample faster than it was.  @ns_per_unit converts
 * the histogram's unit (1 for nanoseconds, 1e9/Hz for TSC cycles).  Reads
 * only the fine buckets between the recorded min and max.
 */
void xfx_hist_coarsen(const struct xflow_hist *h, double ns_per_unit, uint64_t out[XFX_NBUCKETS + 1]);

/* --- snapshots (snap.c) and their text (expo.c) --------------------------- */

enum xfx_type { XFX_COUNTER, XFX_GAUGE, XFX_HISTOGRAM };

/* A metric family: static data, named by Prometheus's conventions (the
 * unit in the name, counters ending in _total, seconds and bytes). */
struct xfx_family {
	const char *name;
	enum xfx_type type;
	const char *help;
};

/* Label values longer than this are cut (at a character boundary), so a
 * guest's names cannot make a scrape arbitrarily large. */
#define XFX_LABEL_MAX 128

struct xfx_snap;

int xfx_snap_new(struct xfx_snap **out);
void xfx_snap_free(struct xfx_snap *s);

/* Empty @s for a new set of figures; @host is put on every series. */
int xfx_snap_reset(struct xfx_snap *s, const char *host);

/* Start family @f: the samples that follow belong to it.  A family may be
 * started once per snapshot (-EEXIST otherwise). */
int xfx_snap_family(struct xfx_snap *s, const struct xfx_family *f);

/* A label of the next sample: the value sanitized (below) and escaped. */
int xfx_snap_label(struct xfx_snap *s, const char *name, const char *value);

/*
 * A label value as it will be shown, into @out (XFX_LABEL_MAX + 1 bytes):
 * cut to XFX_LABEL_MAX bytes at a character boundary, invalid UTF-8 and
 * control bytes (newline aside) as '?'.  Returns its length.  Two values
 * that sanitize alike make the same label: callers that keep one series
 * per value must key their series by the sanitized value, or a scrape
 * would hold a series twice, which Prometheus refuses.
 */
size_t xfx_label_sanitize(const char *value, char *out);

/* The next sample of the current family, with the labels given since the
 * last one.  For counters and gauges: */
int xfx_snap_u64(struct xfx_snap *s, uint64_t v);
int xfx_snap_seconds(struct xfx_snap *s, uint64_t ns); /* written exactly, in seconds */
int xfx_snap_double(struct xfx_snap *s, double v);
/* For histograms: @buckets as xfx_hist_coarsen() gives them, the number of
 * samples and their sum in nanoseconds. */
int xfx_snap_hist(struct xfx_snap *s, const uint64_t buckets[XFX_NBUCKETS + 1], uint64_t count,
		  uint64_t sum_ns);

/* Samples in @s (a histogram counts once). */
size_t xfx_snap_samples(const struct xfx_snap *s);

/*
 * The text exposition format, version 0.0.4, of @s into a buffer allocated
 * here (*out, *len; free() it).  Families without samples are left out.
 * 0 or -ENOMEM.
 */
int xfx_snap_format(const struct xfx_snap *s, char **out, size_t *len);

#define XFX_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* --- a bounded table of series (fold.c) ----------------------------------- */

/*
 * Keys (label values, as bytes) to stable slot numbers, first come first
 * served, at most @max of them; later keys get XFX_FOLDED and their figures
 * go to one shared series, so cardinality stays bounded whatever the
 * traffic.  A slot, once given, is kept: series do not come and go.
 */
#define XFX_FOLDED UINT32_MAX

struct xfx_fold;

int xfx_fold_new(uint32_t max, struct xfx_fold **out);
void xfx_fold_free(struct xfx_fold *f);
/* The slot of @key, a new one while there is room, else XFX_FOLDED.  Keys
 * longer than 2 * XFX_LABEL_MAX + 2 bytes are cut (their label values are
 * anyway). */
uint32_t xfx_fold_slot(struct xfx_fold *f, const char *key, size_t len);
/* The key of @slot (not NUL-terminated), *len set. */
const char *xfx_fold_key(const struct xfx_fold *f, uint32_t slot, size_t *len);
uint32_t xfx_fold_count(const struct xfx_fold *f);
uint32_t xfx_fold_max(const struct xfx_fold *f);

/* --- the listening address (listen.c) ------------------------------------- */

struct xfx_listen {
	struct sockaddr_storage sa;
	socklen_t len;
	char text[64]; /* as it is bound: "127.0.0.1:9464", "[::1]:9464" */
};

/*
 * Parse "PORT" (loopback), "ADDR:PORT", "[IPV6]:PORT" or
 * "localhost:PORT"; port 0 asks for any free port.  Addresses are numeric:
 * a name that resolved elsewhere would bind where nobody expected.
 * -EINVAL with what to write in @err.
 */
int xfx_listen_parse(const char *spec, struct xfx_listen *out, char *err, size_t errlen);

/*
 * A listening socket (non-blocking, close-on-exec, SO_REUSEADDR) bound to
 * @l, which is updated to the address bound (the port chosen for port 0);
 * or -errno with the reason and what to do in @err ("address already in
 * use: ...").
 */
int xfx_listen_open(struct xfx_listen *l, int backlog, int *fd, char *err, size_t errlen);

/* --- requests (route.c) --------------------------------------------------- */

enum xfx_route {
	XFX_ROUTE_METRICS,    /* GET or HEAD /metrics */
	XFX_ROUTE_INDEX,      /* GET or HEAD /: a page that links /metrics */
	XFX_ROUTE_NOT_FOUND,  /* 404 */
	XFX_ROUTE_BAD_METHOD, /* 405: anything but GET and HEAD */
};

/* What to answer to @method @url (the path, with any query string). */
enum xfx_route xfx_route(const char *method, const char *url);

/* --- the server (server.c) ------------------------------------------------ */

/*
 * The limits on what clients hold (server.c says why each is there).  A
 * connection past max_connections, or past max_per_address of one client
 * address, takes the place of the connection waiting longest for its
 * request (of the same address; when the server is full, of the address
 * holding the most); it is closed at once only when every connection is
 * being answered.  A request not complete request_timeout_ms after its
 * connection opened or the previous answer ended is closed, however it
 * trickles in.
 */
struct xfx_server_opts {
	struct xfx_listen addr;
	unsigned max_connections;    /* open at once */
	unsigned max_per_address;    /* of one client address; 0: max_connections */
	unsigned request_timeout_ms; /* 0: 5000 */
	unsigned timeout_s;          /* an idle connection is closed after this */
};

struct xfx_server_stats {
	uint64_t scrapes;     /* /metrics answered */
	uint64_t requests;    /* every request answered, errors included */
	uint64_t formats;     /* snapshots formatted (once each, however many scrapes) */
	uint64_t connections; /* open now */
	uint64_t refused;     /* closed at once: the limits were reached, none could give way */
	uint64_t shed;        /* closed, waiting for a request, to make room for a newcomer */
	uint64_t timed_out;   /* closed, their request late (request_timeout_ms) */
	uint64_t last_format_ns; /* how long the last formatting took */
	uint64_t last_bytes;  /* size of the last /metrics body */
};

struct xfx_server;

/* Listen and start the server's thread.  No snapshot is served until the
 * first publish (a scrape gets 503 until then). */
int xfx_server_start(const struct xfx_server_opts *o, struct xfx_server **out, char *err, size_t errlen);
/* Stop the thread, close every connection, free everything.  NULL is fine. */
void xfx_server_stop(struct xfx_server *s);

/* A snapshot to fill (one that no scrape is reading and that is not the
 * published one); never NULL, never blocks on a scrape. */
struct xfx_snap *xfx_server_snap_begin(struct xfx_server *s);
/* Make @snap (from xfx_server_snap_begin()) the one scrapes get. */
void xfx_server_snap_publish(struct xfx_server *s, struct xfx_snap *snap);

void xfx_server_stats(struct xfx_server *s, struct xfx_server_stats *out);
const char *xfx_server_address(const struct xfx_server *s);

#endif
