/*
 * xflow/control.h — the control protocol between the monitor (xflowtop's
 * agent collector) and an agent (xflow-agent) in a domain.
 *
 * Messages are frames: a fixed 24-byte header and a payload.  They travel
 * over any reliable byte stream (a Unix stream socket locally; libxenvchan
 * between domains later), so nothing here depends on the transport except
 * one thing: the local ring offer of HELLO, whose two descriptors (the
 * ring's memfd and its eventfd) ride with the frame as SCM_RIGHTS.  Over a
 * transport without descriptor passing the agent offers no local ring:
 * over Xen it says VCHAN and the records come on a second vchan
 * (xflow/xen.h).
 *
 * Both peers are untrusted.  A receiver checks the header (magic, version,
 * known type, payload length within XFLOW_CTL_MAX_PAYLOAD, reserved fields
 * zero), then decodes the payload with bounds checks on every field: counts
 * must fit in what is left of the payload, strings are length-prefixed,
 * at most XFLOW_CTL_MAX_STR bytes and contain no NUL, enums hold known
 * values, and nothing may follow the last field.  Descriptors are accepted
 * only with a HELLO offering a local ring, exactly XFLOW_CTL_HELLO_NFDS of
 * them; any others are closed and the frame refused.
 *
 * ---- Wire format (version 3; all integers little-endian) -------------------
 *
 *   header, 24 bytes:
 *     0  u32 magic      XFLOW_CTL_MAGIC ("XFCT")
 *     4  u16 version    XFLOW_CTL_VERSION
 *     6  u16 type       enum xflow_ctl_type
 *     8  u32 seq        sender's sequence number; a REPLY echoes the
 *                       request's in req_seq.  EVENT and HELLO use the
 *                       sender's own counter too.
 *    12  u32 len        payload bytes that follow, <= XFLOW_CTL_MAX_PAYLOAD
 *    16  u32 flags      0 (reserved)
 *    20  u32 reserved   0
 *
 *   str  = u16 n, then n bytes (no NUL; n <= XFLOW_CTL_MAX_STR)
 *   target = u32 pid, u8 state (enum xflow_ctl_target_state),
 *            i32 status (wait status once EXITED/CRASHED, else 0), str exe
 *
 *   HELLO (agent -> monitor, first frame on a connection):
 *     u16 domain_id, str domain, u32 agent_pid,
 *     u16 clock (enum xflow_clock_kind of record timestamps),
 *     u64 tsc_hz, u64 base_tick, u64 base_ns   (the agent's calibration,
 *                       xflow/clock.h; 0s for CLOCK_MONOTONIC),
 *     u16 ring_offer (enum xflow_ctl_ring_offer),
 *     u32 slot_size, u32 nslots, u64 region_size   (ring geometry),
 *     u32 ntargets (<= XFLOW_CTL_MAX_TARGETS), ntargets x target,
 *     str kernel_release (uname -r of the agent's kernel; printable ASCII,
 *                       no space or '/'; "" when not said),
 *     u32 nmodules (<= XFLOW_CTL_MAX_MODULES), nmodules x str module
 *                       (a kernel agent's modules with BTF, the names under
 *                       its /sys/kernel/btf but vmlinux: 1 to
 *                       XFLOW_CTL_MAX_MODNAME bytes of [A-Za-z0-9_-]; none
 *                       from a process agent)
 *     u8 xen_time, i64 xen_minus_mono   (version 4: with xen_time 1, Xen's
 *                       system time minus the agent's CLOCK_MONOTONIC, in
 *                       ns, read from its kernel's timekeeper when its
 *                       clocksource is Xen's; xen_time 0 and 0: not said)
 *     With ring_offer LOCAL the frame carries two descriptors: [0] the
 *     ring's sealed memfd, [1] its eventfd.  With VCHAN it carries none
 *     and base_ns of a CLOCK_MONOTONIC agent is its clock at sending
 *     (xflow/xen.h).  A CLOCK_MONOTONIC agent may add a TSC anchor:
 *     tsc_hz its TSC's rate and base_tick the TSC when its clock read
 *     base_ns (taken just before sending); tsc_hz 0 means none.  The
 *     monitor uses it to place the agent's clock on its own when both
 *     read one TSC (under Xen, domains usually do; xflow/clock.h).
 *   PLAN_LOAD (monitor -> agent): u32 flags (0), u32 plan_len, plan_len
 *     bytes of a weave plan file (xflow/plan.h), which the agent validates
 *     with xflow_plan_read().  A new plan replaces the old one.
 *   ASPECT_SET (monitor -> agent): u8 kind (enum xflow_ctl_aspect_kind),
 *     u8 enabled (0 or 1), u32 index (advice index, or flow kind).
 *   STATS (monitor -> agent): empty.  Answered by a REPLY with stats.
 *   DETACH (monitor -> agent): empty.  The agent moves what its targets
 *     recorded into its ring (and its loss notes), answers, restores every
 *     byte, lets its targets go and exits (or, with --stay, waits for the
 *     next monitor).  So a monitor that reads the ring until the answer
 *     (xflow/collector.h, detach()) has every record sent.
 *   REPLY (agent -> monitor): u32 req_seq, u16 req_type, i32 status
 *     (0 or a negative errno), str message, then by req_type:
 *       PLAN_LOAD: u32 sites (in the plan's domain), u32 installed,
 *                  u32 nfailed_total, u32 nfailed (<= XFLOW_CTL_MAX_FAILED,
 *                  the first ones), nfailed x { u32 site, i32 err, str why }
 *                  where err is a negative errno for a site not installed,
 *                  or 0 for a site installed with a breakpoint where the
 *                  in-process backend could not put a jump (why says why;
 *                  its hits cost a trap each)
 *       ASPECT_SET: u32 sites (breakpoints switched)
 *       STATS:     u64 records, u64 ring_dropped, u64 faults_total,
 *                  u32 nadvice (<= XFLOW_CTL_MAX_ADVICE),
 *                  nadvice x { u64 hits, u64 drops, u64 faults,
 *                              u32 sites, u8 enabled },
 *                  u32 ntargets, ntargets x target,
 *                  u64 clock_now (the agent's record clock just before
 *                  sending: TSC ticks or CLOCK_MONOTONIC ns, as its
 *                  HELLO's clock; 0: not said), from which the monitor
 *                  places a guest's clock to within half the round trip,
 *                  u8 xen_time, i64 xen_minus_mono (version 4: as in the
 *                  HELLO, read again; two domains' differ by how far
 *                  apart their CLOCK_MONOTONICs are, exactly)
 *       others:    nothing
 *   EVENT (agent -> monitor): u16 kind (enum xflow_ctl_event_kind),
 *     u32 pid, i32 status, u32 sites (retired), str message
 *
 * Refusals.  A frame that breaks a rule above is refused, and the
 * connection ends: framing cannot resynchronise.  The agent says why first
 * (xflow_ctl_refuse()), in a REPLY of this version with status -EPROTO
 * (magic, version) or -EBADMSG (anything else) and a message that begins
 * with what was wrong, then the details:
 *     "bad magic"        not a control frame
 *     "unknown version"  another protocol version
 *     "unknown type"     a type this version does not have
 *     "absurd length"    a payload over XFLOW_CTL_MAX_PAYLOAD
 *     "reserved bits"    flags or reserved not zero
 *     "truncated"        the payload ends inside a field, a count says
 *                        more than the payload holds, or the stream ended
 *                        inside the frame
 *     "bad field"        a field's value breaks its rule (named)
 *     "trailing bytes"   bytes after the last field
 *     "bad descriptors"  descriptors missing, unexpected or too many
 * Its req_seq and req_type are the frame's when its header was read and
 * its type is a request (PLAN_LOAD, ASPECT_SET, STATS, DETACH), so that
 * the monitor's wait for that answer ends with the reason; else req_seq
 * 0 and req_type HELLO, which speaks of the connection as a whole, as the
 * agent's refusal of a second monitor does.  Every refusal is a REPLY
 * that version 4 already had: no peer needs a new version to read it.
 *
 * Compatibility: a new version changes XFLOW_CTL_VERSION; a peer refuses
 * frames of a version it does not know (-EPROTO) and says so in a REPLY
 * when it can.  Version 3 added the HELLO's kernel_release and modules,
 * and the STATS reply's clock_now; version 4 the xen_time pair of both.
 */
#ifndef XFLOW_CONTROL_H
#define XFLOW_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define XFLOW_CTL_MAGIC 0x54434658u /* "XFCT" little-endian */
#define XFLOW_CTL_VERSION 4
#define XFLOW_CTL_HDR_SIZE 24
/* Limits a receiver enforces. */
#define XFLOW_CTL_MAX_PAYLOAD (64u << 20) /* plans of large binaries fit */
#define XFLOW_CTL_MAX_STR 4096u
#define XFLOW_CTL_MAX_TARGETS 1024u
#define XFLOW_CTL_MAX_FAILED 1024u
#define XFLOW_CTL_MAX_ADVICE 65536u
#define XFLOW_CTL_MAX_MODULES 1024u
#define XFLOW_CTL_MAX_MODNAME 63u /* the kernel's own limit is 55 */
#define XFLOW_CTL_HELLO_NFDS 2
/* Descriptors one frame may carry at most (receivers close any more). */
#define XFLOW_CTL_MAX_FDS 4

enum xflow_ctl_type {
	XFLOW_CTL_HELLO = 1,
	XFLOW_CTL_PLAN_LOAD = 2,
	XFLOW_CTL_ASPECT_SET = 3,
	XFLOW_CTL_STATS = 4,
	XFLOW_CTL_DETACH = 5,
	XFLOW_CTL_REPLY = 6,
	XFLOW_CTL_EVENT = 7,
	XFLOW_CTL_TYPE_MAX = 7,
};

enum xflow_ctl_ring_offer {
	XFLOW_CTL_RING_NONE = 0,  /* no ring on this transport (yet) */
	XFLOW_CTL_RING_LOCAL = 1, /* memfd + eventfd attached (SCM_RIGHTS) */
	XFLOW_CTL_RING_VCHAN = 2, /* records on the agent's rec vchan (xflow/xen.h) */
	XFLOW_CTL_RING_OFFER_MAX = 2,
};

enum xflow_ctl_aspect_kind {
	XFLOW_CTL_ASPECT_ADVICE = 0, /* one advice of the plan, by index */
	XFLOW_CTL_ASPECT_FLOW = 1,   /* every advice derived from flow kind index */
};

enum xflow_ctl_target_state {
	XFLOW_CTL_TARGET_RUNNING = 0,
	XFLOW_CTL_TARGET_EXITED = 1,   /* exited normally: status is the wait status */
	XFLOW_CTL_TARGET_CRASHED = 2,  /* killed by a signal */
	XFLOW_CTL_TARGET_DETACHED = 3, /* let go (asked, or after an error) */
	XFLOW_CTL_TARGET_STATE_MAX = 3,
};

enum xflow_ctl_event_kind {
	XFLOW_CTL_EV_TARGET_EXITED = 1,  /* status: wait status */
	XFLOW_CTL_EV_TARGET_CRASHED = 2, /* status: wait status */
	XFLOW_CTL_EV_SITES_RETIRED = 3,  /* exec, or code unmapped: sites gone */
	XFLOW_CTL_EV_TARGET_ERROR = 4,   /* status: negative errno; detached */
	XFLOW_CTL_EV_KIND_MAX = 4,
};

struct xflow_ctl_target {
	uint32_t pid;
	uint8_t state;  /* enum xflow_ctl_target_state */
	int32_t status;
	const char *exe;
};

struct xflow_ctl_hello {
	uint16_t domain_id;
	const char *domain;
	uint32_t agent_pid;
	uint16_t clock;
	uint64_t tsc_hz, base_tick, base_ns;
	uint16_t ring_offer;
	uint32_t slot_size, nslots;
	uint64_t region_size;
	uint32_t ntargets;
	const struct xflow_ctl_target *targets;
	const char *kernel_release;  /* NULL or "": not said */
	uint32_t nmodules;
	const char *const *modules;
	bool xen_time;               /* xen_minus_mono is said */
	int64_t xen_minus_mono;      /* Xen system time - CLOCK_MONOTONIC, ns */
};

struct xflow_ctl_plan_load {
	uint32_t flags;
	uint32_t plan_len;
	const void *plan;
};

struct xflow_ctl_aspect_set {
	uint8_t kind;    /* enum xflow_ctl_aspect_kind */
	uint8_t enabled;
	uint32_t index;
};

struct xflow_ctl_site_fail {
	uint32_t site;
	int32_t err;
	const char *why;
};

struct xflow_ctl_plan_result {
	uint32_t sites, installed, nfailed_total, nfailed;
	const struct xflow_ctl_site_fail *failed;
};

struct xflow_ctl_advice_stats {
	uint64_t hits, drops, faults;
	uint32_t sites;
	uint8_t enabled;
};

struct xflow_ctl_stats {
	uint64_t records, ring_dropped, faults_total;
	uint32_t nadvice;
	const struct xflow_ctl_advice_stats *advice;
	uint32_t ntargets;
	const struct xflow_ctl_target *targets;
	uint64_t clock_now;  /* the agent's record clock when it answered; 0: not said */
	bool xen_time;       /* xen_minus_mono is said */
	int64_t xen_minus_mono; /* Xen system time - CLOCK_MONOTONIC, ns */
};

struct xflow_ctl_reply {
	uint32_t req_seq;
	uint16_t req_type;
	int32_t status;
	const char *message;
	union {
		struct xflow_ctl_plan_result plan;  /* req_type PLAN_LOAD */
		uint32_t aspect_sites;              /* req_type ASPECT_SET */
		struct xflow_ctl_stats stats;       /* req_type STATS */
	} u;
};

struct xflow_ctl_event {
	uint16_t kind;   /* enum xflow_ctl_event_kind */
	uint32_t pid;
	int32_t status;
	uint32_t sites;
	const char *message;
};

/* One message, decoded or to encode.  Decoded messages own their memory
 * (strings and arrays point into it): free with xflow_ctl_msg_free(). */
struct xflow_ctl_msg {
	uint16_t type;   /* enum xflow_ctl_type */
	uint32_t seq;
	union {
		struct xflow_ctl_hello hello;
		struct xflow_ctl_plan_load plan_load;
		struct xflow_ctl_aspect_set aspect;
		struct xflow_ctl_reply reply;
		struct xflow_ctl_event event;
	} u;
	/* Descriptors that came with the frame (HELLO with a local ring):
	 * owned by the message until taken (set to -1 by the taker). */
	int fds[XFLOW_CTL_MAX_FDS];
	int nfds;
	void *mem_;      /* private */
};

/* What was wrong with a refused frame (see "Refusals" above). */
enum xflow_ctl_fault_kind {
	XFLOW_CTL_FAULT_NONE = 0,
	XFLOW_CTL_FAULT_MAGIC,     /* not a control frame */
	XFLOW_CTL_FAULT_VERSION,   /* another protocol version */
	XFLOW_CTL_FAULT_TYPE,      /* a type this version does not have */
	XFLOW_CTL_FAULT_LENGTH,    /* payload length over the maximum, or not the frame's */
	XFLOW_CTL_FAULT_RESERVED,  /* reserved header fields not zero */
	XFLOW_CTL_FAULT_TRUNCATED, /* the payload ends inside a field */
	XFLOW_CTL_FAULT_FIELD,     /* a field breaks its rule */
	XFLOW_CTL_FAULT_TRAILING,  /* bytes after the last field */
	XFLOW_CTL_FAULT_FDS,       /* descriptors missing, unexpected or too many */
	XFLOW_CTL_FAULT_CUT,       /* the stream ended inside the frame */
};

struct xflow_ctl_fault {
	enum xflow_ctl_fault_kind kind;
	const char *why; /* static: the rule broken, or the field cut short */
};

/*
 * Serialise @m into a malloc'd frame (*out, *len: header + payload).
 * Returns 0, -EINVAL when a field breaks a rule above (a string too long,
 * a count over its limit, an unknown type), or -ENOMEM.
 */
int xflow_ctl_encode(const struct xflow_ctl_msg *m, void **out, size_t *len);

/*
 * Check a frame header (@hdr, XFLOW_CTL_HDR_SIZE bytes); *payload_len gets
 * the payload length.  0, -EPROTO (magic or version), or -EBADMSG.
 */
int xflow_ctl_header_check(const void *hdr, uint32_t *payload_len, const char **why);
/* The same, saying what kind of fault it is in *@fault (NONE when 0). */
int xflow_ctl_header_fault(const void *hdr, uint32_t *payload_len, struct xflow_ctl_fault *fault);

/*
 * Decode a whole frame of @len bytes (private memory).  @nfds descriptors
 * came with it (their numbers in @fds, ownership passes to the message on
 * success; on failure the caller still owns and closes them).  *out is a
 * new message (xflow_ctl_msg_free).  Returns 0, or -EPROTO, -EBADMSG
 * (with @why set to a static string naming the field), -ENOMEM.
 */
int xflow_ctl_decode(const void *frame, size_t len, const int *fds, int nfds,
		     struct xflow_ctl_msg **out, const char **why);
/* The same, saying what kind of fault it is in *@fault (NONE when 0). */
int xflow_ctl_decode_fault(const void *frame, size_t len, const int *fds, int nfds,
			   struct xflow_ctl_msg **out, struct xflow_ctl_fault *fault);

/* The HELLO's rules for a module name and a kernel release (the sender
 * checks what it sends, the receiver what it gets). */
bool xflow_ctl_module_name_ok(const char *name);
bool xflow_ctl_release_ok(const char *release);

/* Close the descriptors it still owns and free it; NULL is fine. */
void xflow_ctl_msg_free(struct xflow_ctl_msg *m);

const char *xflow_ctl_type_name(unsigned type);

/* ---- transport ------------------------------------------------------------
 *
 * A connection moves frames over a byte stream.  The I/O goes through a
 * table of hooks, so the same framing runs over a Unix socket (here) and
 * later over libxenvchan.
 */
struct xflow_ctl_conn;

struct xflow_ctl_io_ops {
	/* Write up to @len bytes, with @nfds descriptors attached to the first
	 * byte (only when @nfds > 0).  Returns bytes written, or a negative
	 * errno (-EAGAIN when it would block; -ENOTSUP when the transport
	 * cannot pass descriptors and @nfds > 0). */
	ssize_t (*write)(struct xflow_ctl_conn *c, const void *buf, size_t len, const int *fds,
			 int nfds);
	/* Read up to @len bytes; descriptors that arrive are stored in
	 * @fds (at most @maxfds, more are closed) and counted in *nfds.
	 * Returns bytes read, 0 at end of stream, or a negative errno
	 * (-EAGAIN when nothing is ready). */
	ssize_t (*read)(struct xflow_ctl_conn *c, void *buf, size_t len, int *fds, int maxfds,
			int *nfds);
	/* Release the transport (close the socket). */
	void (*close)(struct xflow_ctl_conn *c);
};

struct xflow_ctl_conn {
	const struct xflow_ctl_io_ops *ops;
	int fd;            /* the socket; what to poll */
	void *tctx;        /* the transport's own state (a vchan), or NULL */
	short out_events;  /* what poll() waits for when the peer has no room:
			    * POLLOUT on a socket; POLLIN on an event channel,
			    * where the reader's progress arrives as an event */
	uint32_t next_seq; /* for xflow_ctl_send() */
	/* Receive state: a frame being assembled. */
	unsigned char hdr[XFLOW_CTL_HDR_SIZE];
	size_t got;        /* bytes of the current frame so far */
	uint32_t plen;     /* its payload length, once the header is in */
	unsigned char *frame;
	int fds[XFLOW_CTL_MAX_FDS];
	int nfds;
	/* Send queue of xflow_ctl_send_async(): bytes not yet taken. */
	unsigned char *out;
	size_t out_len, out_off;
	int broken;        /* 0, or the negative errno that ended the stream */
	const char *why;   /* why it broke, if a frame was refused */
	struct xflow_ctl_fault fault; /* the refused frame's fault (header in hdr) */
	size_t cut_at;     /* CUT: bytes of the frame that came before the end */
	char refusal[384]; /* what xflow_ctl_refuse() told the peer; c->why then */
};

/* A connection over the connected Unix stream socket @fd (taken over:
 * closed by xflow_ctl_conn_close).  The socket is made non-blocking. */
int xflow_ctl_conn_init_unix(struct xflow_ctl_conn *c, int fd);
void xflow_ctl_conn_close(struct xflow_ctl_conn *c);

/*
 * Send @m (m->seq is set from the connection's counter unless @keep_seq)
 * with @nfds descriptors (kept by the caller).  Waits up to @timeout_ms
 * for room when the peer is slow; -ETIMEDOUT then.  Returns 0 or a
 * negative errno (-EPIPE: the peer is gone).
 */
int xflow_ctl_send(struct xflow_ctl_conn *c, struct xflow_ctl_msg *m, const int *fds, int nfds,
		   int timeout_ms);

/*
 * Send @m without waiting: what the transport does not take now is queued
 * (in order after anything queued before) and goes out with
 * xflow_ctl_flush().  For peers that must not be able to stall the
 * caller.  Descriptors cannot be queued.  0 or a negative errno.
 */
int xflow_ctl_send_async(struct xflow_ctl_conn *c, struct xflow_ctl_msg *m);
/* Write queued bytes without blocking: 1 when none are left, 0 when some
 * are, or a negative errno (-EPIPE: the peer is gone). */
int xflow_ctl_flush(struct xflow_ctl_conn *c);

/*
 * Receive one frame without blocking (@timeout_ms 0), or waiting up to
 * @timeout_ms (-1: forever).  Returns 1 with *out set, 0 when no whole
 * frame is there yet, or a negative errno: -ECONNRESET at the end of the
 * stream (with c->fault CUT when it ended inside a frame), -EPROTO/-EBADMSG
 * for a refused frame (the connection is then broken for good: framing
 * cannot resynchronise; c->why and c->fault say why).
 */
int xflow_ctl_recv(struct xflow_ctl_conn *c, struct xflow_ctl_msg **out, int timeout_ms);

/* Send a REPLY to request @req with @status and a printf-style message.
 * To a frame that is not a request (HELLO, REPLY, EVENT) it answers as
 * to the connection: req_type HELLO, which every peer can read. */
int xflow_ctl_reply_simple(struct xflow_ctl_conn *c, const struct xflow_ctl_msg *req, int status,
			   const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
 * After xflow_ctl_recv() refused a frame, or the stream ended inside one
 * (c->fault says which), tell the peer what was wrong: a REPLY as
 * "Refusals" above describes, queued without waiting (a peer that does
 * not read is owed nothing); c->why becomes the same sentence, for the
 * caller's log.  The caller closes the connection next.
 * 0 when it was handed to the transport or queued, -ENOENT when no frame
 * was refused, or a negative errno from the transport.
 */
int xflow_ctl_refuse(struct xflow_ctl_conn *c);

/* ---- the local socket -------------------------------------------------------
 *
 * Default directory: $XDG_RUNTIME_DIR/xflow, else /run/xflow (root), else
 * /tmp/xflow-UID; created 0700 and refused when it belongs to someone
 * else or is open to others.  Sockets are created 0600.
 */
int xflow_ctl_default_dir(char *buf, size_t len);
/* Create the directory of @path (one level) 0700 if needed and check it,
 * then bind and listen on @path, mode 0600.  Returns the listening fd or a
 * negative errno; a stale socket (nobody listening) is replaced, a live one
 * is -EADDRINUSE. */
int xflow_ctl_listen(const char *path);
/* Connect to @path; the fd or a negative errno. */
int xflow_ctl_connect(const char *path);

#endif
