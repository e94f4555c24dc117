/*
 * tui/app.h — xflowtop's one state struct, the renderers, and the loop.
 *
 * Everything the program holds lives in struct xft_app: configuration,
 * collectors, the model, the frame on screen, the UI state.  Output goes
 * through one renderer chosen at start-up (curses, batch text, batch JSON);
 * nothing tests "are we in batch mode" anywhere else.  Key handlers return
 * reaction flags (XFT_RX_*) and the loop acts on them: they never draw.
 */
#ifndef XFLOW_TUI_APP_H
#define XFLOW_TUI_APP_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "tui/aggregate.h"
#include "tui/canvas.h"
#include "tui/config.h"
#include "tui/frame.h"
#include "tui/registry.h"
#include "tui/sites.h"
#include "xflow/collector.h"

#define XFT_MAX_SOURCES 16
#define XFT_MAX_FDS 8
#define XFT_MAX_ASPECTS 128
#define XFT_MAX_DOMROWS 64

/* --demo: the simulated Xen host (sim/, xensim) with one xflow-agent per
 * domain weaving flows/netflow.xml, read by the agent collector.  The
 * synthetic collector stays available as --collector synthetic. */
#define XFT_DEMO_NOTE "demo: the simulated Xen host \u2014 xensim, an xflow-agent per domain, flows/netflow.xml"
#define XFT_DEMO_NOTE_FLOWS "demo: the simulated Xen host \u2014 xensim, an xflow-agent per domain, the -f flows"
#define XFT_DEMO_GUESTS 1
/* Messages/s per guest: xensim's own default.  Woven in process (the
 * agents' default backend) a hit costs tens of nanoseconds and the host
 * keeps this pace; with --backend ptrace it could not (tens of
 * microseconds a hit, ~40 hits a packet). */
#define XFT_DEMO_RATE 1000

/* One open collector. */
struct xft_source {
	const struct xflow_collector_ops *ops;
	struct xflow_collector *c;
	char spec[XFT_SPEC_LEN];
	int ended;       /* read() said no more: -ENODATA (end of replay) or an error */
	int failed;      /* ... and it was an error: xflowtop exits non-zero */
	int record_clock; /* a replay: the model follows its records' time */
	int sched_ended;  /* its sched() hook said -ENODATA (or it has none) */
	int detached;     /* leaving: its detach() hook said nothing more comes */
	char error[256];
	struct xflow_collector_stats st;
	int nfds;
	int fds[XFT_MAX_FDS];
};

enum xft_view_id {
	XFT_VIEW_HOPS,
	XFT_VIEW_FLOWS,
	XFT_VIEW_PATH,
	XFT_VIEW_HIST,
	XFT_VIEW_ASPECTS,
	XFT_VIEW_DOMAINS,
	XFT_VIEW_HYPERVISOR, /* shown when a collector has a hypervisor() hook */
	XFT_VIEW_N
};

/* What a key handler asks the loop to do. */
enum xft_reaction {
	XFT_RX_NONE = 0,
	XFT_RX_REDRAW = 1u << 0,   /* draw again */
	XFT_RX_REORDER = 1u << 1,  /* filter or sort changed: order the frame again */
	XFT_RX_QUIT = 1u << 2,
	XFT_RX_SNAPSHOT = 1u << 3, /* write a snapshot */
	XFT_RX_REFRESH = 1u << 4,  /* collect and rebuild now (unpause) */
	XFT_RX_RESIZE = 1u << 5,
};

/* Keys as views see them: Unicode code points, and these above them. */
enum xft_key {
	XFT_KEY_BASE = 0x110000,
	XFT_KEY_UP, XFT_KEY_DOWN, XFT_KEY_LEFT, XFT_KEY_RIGHT, XFT_KEY_PGUP, XFT_KEY_PGDN,
	XFT_KEY_HOME, XFT_KEY_END, XFT_KEY_ENTER, XFT_KEY_BACKSPACE, XFT_KEY_ESC,
	XFT_KEY_BTAB, XFT_KEY_DELETE,
	XFT_KEY_F0 = 0x110100, /* XFT_KEY_F(n) = XFT_KEY_F0 + n */
};
#define XFT_KEY_F(n) (XFT_KEY_F0 + (n))

struct xft_list_state {
	size_t sel, top;
	int sort, desc;
};

struct xft_aspect_row {
	unsigned src;
	uint32_t index;
	struct xflow_aspect_info info;
	uint64_t prev_hits;
	double hits_per_s;
};

struct xft_domain_row {
	unsigned src;
	struct xflow_domain_info info;
	uint64_t prev_records;
	double per_s;
};

struct xft_ui {
	int view, back_view;
	int help;
	int paused;
	struct xft_list_state list[XFT_VIEW_N];
	int prompt;                 /* 0, '/' search or '\\' filter being typed */
	char prompt_buf[128];
	char filter_text[128];
	char search_text[128];
	struct xft_filter filter;
	char message[256];
	uint64_t message_until;
	int color;
	/* The flow the path view shows: a copy, so it stays while the top-K moves. */
	struct xft_flow_row path;
	struct xft_point *path_points;
	struct xft_gap_split *path_gaps; /* its gaps' split, when it has one */
	int have_path;
	/* The hop the histogram view shows (index in the model), and its
	 * histogram as of the last refresh, so a paused screen stays still. */
	uint32_t hist_hop;
	int have_hist;
	struct xflow_hist *hist_copy;
	uint32_t hist_copy_hop; /* UINT32_MAX: no copy */
	/* Hypervisor view: its second table (events) has its own list, and
	 * one of the two has the focus (keys move and sort it). */
	struct xft_list_state hv_events;
	int hv_focus; /* 0: vcpus, 1: events */
};

struct xft_app_loop; /* libuv handles, private to app.c */
struct xft_renderer;

struct xflow_demo_host;
struct xflow_session_writer;

struct xft_app {
	struct xft_config cfg;
	struct xft_registry reg;
	struct xft_source src[XFT_MAX_SOURCES];
	unsigned nsrc;
	struct xft_sites sites;
	struct xft_agg *agg;
	struct xft_frame frame;
	struct xft_ui ui;
	struct xft_canvas canvas;
	const struct xft_renderer *renderer;
	void *rstate;
	struct xft_app_loop *loop;
	const char *note;           /* shown in the header (demo) */
	struct xflow_demo_host *demo; /* --demo's simulated host, or NULL */
	uint64_t start_ns, now_ns, last_refresh_ns;
	uint64_t records, prev_records, drops, bad;
	double rate;                /* records/s over the last refresh */
	/* What the process holds in memory (its resident set, at the last
	 * refresh; 0 if unknown), beside the model's bound, which is address
	 * space reserved at start and resident only as flows fill it. */
	uint64_t resident_bytes;
	unsigned long iteration;
	int quit, exit_code;
	unsigned snap_seq;
	struct xft_aspect_row aspects[XFT_MAX_ASPECTS];
	unsigned naspects;
	struct xft_domain_row domains[XFT_MAX_DOMROWS];
	unsigned ndomains;
	/* The hypervisor's state from the first collector that gives one
	 * (xentrace), as of the last refresh; NULL when none does. */
	int have_hv_source;         /* some collector has the hypervisor() hook */
	const struct xflow_hv_summary *hv;
	unsigned hv_src;
	uint32_t *hv_vcpu_order, *hv_event_order; /* shown order of hv->vcpus, hv->events */
	size_t hv_vcpu_cap, hv_event_cap;
	/* --save-session: what emit() feeds the model is written here; NULL
	 * when not saving or once a write failed (session_error says why). */
	struct xflow_session_writer *session;
	char session_error[512];
	/* The flow files the collectors weave (their flows= options), as
	 * named there; the header and the JSON list these. */
	char woven[XFT_MAX_LIST][XFT_SPEC_LEN];
	unsigned nwoven;
	/* The newest time a replay's records carry: a replay at speed N runs
	 * N times ahead of the clock, and the model's window and expiry
	 * follow the records. */
	uint64_t record_now;
	int recorded_clock; /* a source is a replay with clock=recorded */
	/* A failure the run went on after (a snapshot not written), for the
	 * next batch JSON object's "note"; the JSON renderer empties it. */
	char pending_note[600];
	/* The newest time emit() fed the model: how far the scheduler's
	 * events are taken ahead of the flows (xft_app_collect). */
	uint64_t newest_ns;
	/* --listen: the Prometheus exporter (tui/metrics.h), or NULL. */
	struct xft_metrics *metrics;
	/* The weave matches nothing: a domain is planned and no aspect has
	 * a site (XFT_NOTHING_WOVEN); said in the header, the batch text and
	 * the JSON's note, and once on standard error. */
	int nothing_woven, nothing_woven_said;
	/* Quit signals held from the loop's end to xft_app_fini()'s (a
	 * second Ctrl-C, or timeout(1)'s signal to the child and then to its
	 * group, would otherwise find their default action there and kill the
	 * shutdown before the session is committed and the agents detach),
	 * and the mask to restore once those pending are taken. */
	int quit_held;
	sigset_t quit_held_before;
};

#define XFT_NOTHING_WOVEN "the flows match nothing: no site was woven in any domain " \
	"(xflowc plan --domain NAME=BINARY says why)"

/*
 * An output.  start() takes the terminal (or not), frame() shows a fresh
 * refresh, draw() shows the same data again after a key, input() reads what
 * the input descriptor has and returns XFT_RX_* flags, stop() gives the
 * terminal back and must be safe to call twice.  failed() tells of a
 * failure the run goes on after (a snapshot that was not written), besides
 * the message line the screen shows.  NULL hooks do nothing.
 */
struct xft_renderer {
	const char *name;
	int (*start)(struct xft_app *app, char *err, size_t errlen);
	void (*frame)(struct xft_app *app);
	void (*draw)(struct xft_app *app);
	int (*input_fd)(struct xft_app *app);
	unsigned (*input)(struct xft_app *app);
	void (*resize)(struct xft_app *app);
	void (*stop)(struct xft_app *app);
	void (*failed)(struct xft_app *app, const char *what);
};

extern const struct xft_renderer xft_renderer_curses;
extern const struct xft_renderer xft_renderer_batch_text;
extern const struct xft_renderer xft_renderer_batch_json;
/* --headless: nothing shown; the figures go to /metrics only. */
extern const struct xft_renderer xft_renderer_headless;

/* Set up from @cfg: collectors opened, model allocated.  0 or -errno with
 * the reason in @err. */
int xft_app_init(struct xft_app *app, const struct xft_config *cfg, char *err, size_t errlen);
void xft_app_fini(struct xft_app *app);
/* Add a collector instance by "name[:options]". */
int xft_app_add_source(struct xft_app *app, const char *spec, char *err, size_t errlen);
/* 1 when a collector weaves the flow file @path (named as in its flows=). */
int xft_app_flow_file_woven(const struct xft_app *app, const char *path);
/* 1 when the rows say the weave reached no site: aspects and domains are
 * listed, none of them still planning, and no aspect has a site. */
int xft_app_nothing_woven(const struct xft_app *app);

/* Read what the collectors have (at most @budget records); returns how many. */
uint64_t xft_app_collect(struct xft_app *app, uint64_t now_ns, uint64_t budget);
/* One refresh: collect, advance the model, rates, rebuild the frame unless paused. */
void xft_app_refresh(struct xft_app *app, uint64_t now_ns);
/* Filter and sort the frame (and the hypervisor's tables) as the UI says. */
void xft_app_order(struct xft_app *app);
/* Toggle aspect row @i; 0 or -errno. */
int xft_app_aspect_toggle(struct xft_app *app, unsigned i);
void xft_app_message(struct xft_app *app, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Apply reaction flags (snapshot, reorder, quit, redraw). */
void xft_app_react(struct xft_app *app, unsigned rx);
/* Run the loop with @r until quit; returns the exit status. */
int xft_app_run(struct xft_app *app, const struct xft_renderer *r);

/* --- views.c -------------------------------------------------------------- */
void xft_ui_init(struct xft_app *app);
/* Draw the whole screen into @cv. */
void xft_ui_draw(struct xft_app *app, struct xft_canvas *cv);
/* One key: returns XFT_RX_* flags.  Unknown keys are ignored. */
unsigned xft_ui_key(struct xft_app *app, int key);
/* Open the path view on shown flow @row (tests, batch). */
int xft_ui_open_path(struct xft_app *app, size_t row);
const char *xft_ui_view_name(int view);

/* --- snapshot.c ------------------------------------------------------------ */
/* Write BASE.txt, BASE.json and BASE.trace.json, each atomically. */
int xft_snapshot_write(struct xft_app *app, const char *base, char *err, size_t errlen);
/* A fresh BASE in the snapshot directory: xflowtop-YYYYmmdd-HHMMSS-N. */
void xft_snapshot_default_base(struct xft_app *app, char *buf, size_t len);

#endif
