/*
 * Xen trace files: sources, the per-cpu window walk, the merge by TSC.
 *
 * xentrace copies each cpu's trace buffer to the file as a window: a
 * TRC_TRACE_CPU_CHANGE record {cpu, bytes} and then that many bytes of the
 * cpu's records.  Windows of different cpus interleave in the order the
 * buffers filled, so the file is sorted per cpu but not overall.
 *
 * As xenalyze does, each cpu gets a cursor that walks the chain of window
 * headers and reads only its own windows, through its own buffer; the
 * cursors are merged by TSC with a heap.  Memory is one buffer per cpu seen
 * (at most XENTRACE_MAX_CPUS), whatever the file size.  The chain of window
 * headers is walked once at open to find the cpus and to report framing
 * problems once; each cursor walks it again as it goes, silently.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collectors/xentrace.h"

#define DEFAULT_BUFFER (256u * 1024u)
#define MIN_BUFFER 64u      /* must hold the largest record (36 bytes) */
#define SCAN_CHUNK 65536u
/* The header of a cpu-change record as xentrace writes it: 2 extra words, no TSC. */
#define CPU_CHANGE_HDR (XENTRACE_EV_CPU_CHANGE | (2u << 28))

/* --- sources ------------------------------------------------------------- */

static ssize_t fd_read_at(const struct xentrace_source *src, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = pread(src->u.fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static ssize_t mem_read_at(const struct xentrace_source *src, void *buf, size_t len, uint64_t off)
{
	if (off >= src->size)
		return 0;
	if (len > src->size - off)
		len = (size_t)(src->size - off);
	memcpy(buf, src->u.mem + off, len);
	return (ssize_t)len;
}

int xentrace_source_init_fd(struct xentrace_source *src, int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -errno;
	/* Cursors re-read the file at their own offsets: a pipe cannot. */
	if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		return -ESPIPE;
	src->read_at = fd_read_at;
	src->size = (uint64_t)st.st_size;
	src->u.fd = fd;
	return 0;
}

void xentrace_source_init_mem(struct xentrace_source *src, const void *data, size_t len)
{
	src->read_at = mem_read_at;
	src->size = len;
	src->u.mem = data;
}

/* --- reader state -------------------------------------------------------- */

struct window {
	uint64_t hdr;  /* offset of the cpu-change record */
	uint64_t data; /* first record */
	uint64_t end;  /* one past the last byte (clamped to the file) */
	unsigned cpu;
};

struct cursor {
	uint8_t *buf;
	size_t pos, len;   /* unread bytes are buf[pos, len) */
	uint64_t foff;     /* file offset of buf[0] */
	uint64_t win_end;
	uint64_t last_tsc, last_order;
	unsigned cpu;
	bool have_tsc, done, lost_end_pending;
	bool starved;          /* stream mode: waits for its cpu's next window */
	size_t cap;            /* stream mode: the queue's size (buf grows) */
	uint64_t last_window;  /* stream mode: window count when it got one */
	uint64_t key;  /* slot[cur].order_tsc, where the heap looks */
	unsigned cur;  /* slot[cur]: the next record to deliver */
	/* Two slots: a delivered record stays valid while the cursor reads
	 * the next one into the other, so nothing is copied per record. */
	struct xentrace_record slot[2];
};

/* Window headers recently read, by the offset asked for: the cursors walk
 * the same chain at nearly the same place, so most walks hit. */
#define WCACHE_SLOTS 4096

struct wcache_entry {
	uint64_t key; /* requested offset + 1; 0: empty */
	struct window w;
};

struct xentrace_reader {
	const struct xentrace_source *src;
	struct wcache_entry *wcache;
	/* Stream mode (a pipe from xentrace): windows are read once, in file
	 * order, into per-cpu queues; the merge waits for a cpu only while it
	 * is not quiet and the queues stay within the budget. */
	bool stream, stream_eof, first_round_done;
	int fd;
	uint64_t soff, windows_read, last_emitted;
	size_t budget, held; /* the queues' capacity, at most, and now */
	unsigned quiet_windows, nseen;
	uint16_t seen[XENTRACE_MAX_CPUS];
	size_t bufsz;
	int err;
	bool discovering; /* framing problems are reported by the discovery pass only */
	unsigned nheap;
	struct heap_entry {
		uint64_t key;
		struct cursor *c;
	} heap[XENTRACE_MAX_CPUS];
	struct cursor *cur[XENTRACE_MAX_CPUS];
	uint64_t first_window[XENTRACE_MAX_CPUS];
	struct xentrace_reader_stats st;
	unsigned ndiags;
	struct xentrace_diag diags[XENTRACE_MAX_DIAGS];
};

static inline uint32_t le32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4); /* x86 and the file are both little-endian */
	return v;
}

__attribute__((format(printf, 5, 6)))
static void diag(struct xentrace_reader *r, enum xentrace_diag_kind kind, int cpu, uint64_t off,
		 const char *fmt, ...)
{
	if (r->ndiags >= XENTRACE_MAX_DIAGS) {
		r->st.diags_dropped++;
		return;
	}
	struct xentrace_diag *d = &r->diags[r->ndiags++];
	d->kind = kind;
	d->cpu = cpu;
	d->offset = off;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d->what, sizeof(d->what), fmt, ap);
	va_end(ap);
}

const char *xentrace_diag_kind_name(enum xentrace_diag_kind k)
{
	static const char *const names[] = {
		[XENTRACE_DIAG_FRAMING] = "framing",   [XENTRACE_DIAG_RECORD] = "record",
		[XENTRACE_DIAG_TRUNCATED] = "truncated", [XENTRACE_DIAG_TSC_BACK] = "tsc-backwards",
		[XENTRACE_DIAG_LOST] = "lost-records", [XENTRACE_DIAG_DECODE] = "decode",
	};
	return (unsigned)k < sizeof(names) / sizeof(names[0]) ? names[k] : "?";
}

static int read_exact(struct xentrace_reader *r, void *buf, size_t len, uint64_t off)
{
	ssize_t n = r->src->read_at(r->src, buf, len, off);
	if (n < 0) {
		r->err = (int)n;
		return (int)n;
	}
	return (size_t)n == len ? 1 : 0;
}

/* Is there a cpu-change record we would believe at @off? */
static bool plausible_window(struct xentrace_reader *r, uint64_t off)
{
	uint8_t b[12];
	if (read_exact(r, b, sizeof(b), off) != 1)
		return false;
	uint32_t cpu = le32(b + 4), size = le32(b + 8);
	return le32(b) == CPU_CHANGE_HDR && cpu < XENTRACE_MAX_CPUS && size % 4 == 0 &&
	       size <= XENTRACE_MAX_WINDOW && off + 12 + size <= r->src->size;
}

/* The offset of the next believable cpu-change record after @off, or the
 * file size.  Byte by byte: a header may sit anywhere in garbage. */
static uint64_t resync(struct xentrace_reader *r, uint64_t off)
{
	static const uint8_t pat[4] = { CPU_CHANGE_HDR & 0xff, (CPU_CHANGE_HDR >> 8) & 0xff,
					(CPU_CHANGE_HDR >> 16) & 0xff, CPU_CHANGE_HDR >> 24 };
	uint8_t buf[SCAN_CHUNK];
	uint64_t pos = off + 1;
	while (pos + 12 <= r->src->size) {
		ssize_t n = r->src->read_at(r->src, buf, sizeof(buf), pos);
		if (n < 0) {
			r->err = (int)n;
			break;
		}
		if (n < 4)
			break;
		for (size_t i = 0; i + 4 <= (size_t)n; i++) {
			if (buf[i] == pat[0] && memcmp(buf + i, pat, 4) == 0 && plausible_window(r, pos + i))
				return pos + i;
		}
		pos += (uint64_t)n - 3;
	}
	return r->src->size;
}

/*
 * The window whose header is at or after @off: 1 and *@w, or 0 at the end.
 * Bad headers are reported (in the discovery pass) and skipped: a window for
 * an impossible cpu is skipped whole when its size is sane, anything else
 * by searching for the next believable header.
 */
static int window_read(struct xentrace_reader *r, uint64_t off, struct window *w);

static int window_at(struct xentrace_reader *r, uint64_t off, struct window *w)
{
	struct wcache_entry *e = &r->wcache[(off >> 2) % WCACHE_SLOTS];
	if (e->key == off + 1) {
		*w = e->w;
		return 1;
	}
	int rc = window_read(r, off, w);
	if (rc == 1) {
		e->key = off + 1;
		e->w = *w;
	}
	return rc;
}

static int window_read(struct xentrace_reader *r, uint64_t off, struct window *w)
{
	const uint64_t size = r->src->size;
	while (off < size) {
		uint8_t b[20];
		uint64_t left = size - off;
		if (left < 12) {
			if (r->discovering)
				diag(r, XENTRACE_DIAG_TRUNCATED, -1, off,
				     "%" PRIu64 " stray bytes at the end where a cpu-change record should be", left);
			return 0;
		}
		if (read_exact(r, b, 12, off) != 1)
			return 0;
		uint32_t h = le32(b);
		unsigned ne = (h >> 28) & 7, tf = h >> 31;
		unsigned hsz = 4 + 8 * tf + 4 * ne;
		if ((h & 0x0fffffffu) != XENTRACE_EV_CPU_CHANGE || ne < 2) {
			uint64_t next = resync(r, off);
			if (r->discovering) {
				diag(r, XENTRACE_DIAG_FRAMING, -1, off,
				     "expected a cpu-change record, found header 0x%08x; skipped %" PRIu64
				     " bytes to the next window", h, next - off);
				r->st.skipped_bytes += next - off;
			}
			off = next;
			continue;
		}
		if (tf && read_exact(r, b, hsz < 20 ? hsz : 20, off) != 1)
			return 0;
		const uint8_t *data = b + 4 + 8 * tf;
		uint32_t cpu = le32(data), wsz = le32(data + 4);
		if (wsz % 4 != 0 || wsz > XENTRACE_MAX_WINDOW) {
			uint64_t next = resync(r, off);
			if (r->discovering) {
				diag(r, XENTRACE_DIAG_FRAMING, cpu < XENTRACE_MAX_CPUS ? (int)cpu : -1, off,
				     "window size %u is %s; skipped %" PRIu64 " bytes", wsz,
				     wsz % 4 ? "not a multiple of 4" : "more than any trace buffer", next - off);
				r->st.skipped_bytes += next - off;
			}
			off = next;
			continue;
		}
		uint64_t end = off + hsz + wsz;
		if (cpu >= XENTRACE_MAX_CPUS) {
			uint64_t next = end <= size ? end : resync(r, off);
			if (r->discovering) {
				diag(r, XENTRACE_DIAG_FRAMING, -1, off,
				     "cpu %u out of range (max %u); skipped its %" PRIu64 " bytes", cpu,
				     XENTRACE_MAX_CPUS - 1, next - off);
				r->st.skipped_bytes += next - off;
			}
			off = next;
			continue;
		}
		if (end > size) {
			if (r->discovering)
				diag(r, XENTRACE_DIAG_TRUNCATED, (int)cpu, off,
				     "window of cpu %u claims %u bytes, the file ends %" PRIu64 " bytes short",
				     cpu, wsz, end - size);
			end = size;
		}
		w->hdr = off;
		w->data = off + hsz;
		w->end = end;
		w->cpu = cpu;
		return 1;
	}
	return 0;
}

/* Moves @c to its next window at or after @off; false when there is none. */
static bool cursor_seek_window(struct xentrace_reader *r, struct cursor *c, uint64_t off)
{
	struct window w;
	while (window_at(r, off, &w) == 1) {
		if (w.cpu == c->cpu) {
			c->foff = w.data;
			c->pos = c->len = 0;
			c->win_end = w.end;
			return true;
		}
		off = w.end;
	}
	return false;
}

/* Reads more of the current window into the buffer: bytes added, 0 at its end. */
static size_t cursor_fill(struct xentrace_reader *r, struct cursor *c)
{
	size_t keep = c->len - c->pos;
	if (c->pos) {
		memmove(c->buf, c->buf + c->pos, keep);
		c->foff += c->pos;
		c->pos = 0;
		c->len = keep;
	}
	uint64_t at = c->foff + keep;
	if (at >= c->win_end)
		return 0;
	size_t want = r->bufsz - keep;
	if (want > c->win_end - at)
		want = (size_t)(c->win_end - at);
	ssize_t n = r->src->read_at(r->src, c->buf + keep, want, at);
	if (n <= 0) {
		if (n < 0)
			r->err = (int)n;
		return 0;
	}
	c->len += (size_t)n;
	return (size_t)n;
}

/* Skips the rest of the current window. */
static void cursor_drop_window(struct cursor *c)
{
	c->foff = c->win_end;
	c->pos = c->len = 0;
}

/*
 * Reads @c's next record into its free slot: true, or false when the cpu has no
 * more (c->done).  This is the hot loop: no allocation, no system call
 * except one read per buffer.
 */
static bool cursor_advance(struct xentrace_reader *r, struct cursor *c)
{
	struct xentrace_record *rec = &c->slot[c->cur ^ 1];
	if (c->lost_end_pending) {
		/* The same record again, now at its own TSC. */
		c->lost_end_pending = false;
		r->st.records--; /* delivered twice, counted once */
		*rec = c->slot[c->cur];
		rec->flags = XENTRACE_REC_LOST_END;
		rec->order_tsc = rec->tsc > c->last_order ? rec->tsc : c->last_order;
		c->last_order = rec->order_tsc;
		c->key = rec->order_tsc;
		c->cur ^= 1;
		return true;
	}
	for (;;) {
		size_t avail = c->len - c->pos;
		if (__builtin_expect(avail < 4, 0)) {
			if (r->stream) {
				/* Queues hold whole records: this one is empty. */
				c->starved = true;
				return false;
			}
			if (cursor_fill(r, c) == 0) {
				if (c->len - c->pos != 0 || c->foff + c->len < c->win_end) {
					/* A short tail, or the file ends early. */
					if (c->foff + c->len < c->win_end && r->err == 0)
						diag(r, XENTRACE_DIAG_TRUNCATED, (int)c->cpu, c->foff + c->pos,
						     "file ends inside cpu %u's window", c->cpu);
				}
				if (r->err || !cursor_seek_window(r, c, c->win_end)) {
					c->done = true;
					return false;
				}
			}
			continue;
		}
		const uint8_t *p = c->buf + c->pos;
		uint32_t h = le32(p);
		unsigned ne = (h >> 28) & 7, tf = h >> 31;
		size_t sz = 4 + 8 * (size_t)tf + 4 * (size_t)ne;
		if (__builtin_expect(avail < sz, 0)) {
			uint64_t at = c->foff + c->pos;
			if (r->stream) { /* cannot happen: windows are checked as they come */
				r->st.bad_records++;
				c->pos = c->len;
				continue;
			}
			if (at + sz > c->win_end) {
				r->st.bad_records++;
				if (c->win_end == r->src->size)
					diag(r, XENTRACE_DIAG_TRUNCATED, (int)c->cpu, at,
					     "record of %zu bytes cut by the end of the file", sz);
				else
					diag(r, XENTRACE_DIAG_RECORD, (int)c->cpu, at,
					     "record of %zu bytes (header 0x%08x) crosses the end of cpu %u's window; "
					     "rest of the window skipped", sz, h, c->cpu);
				cursor_drop_window(c);
				continue;
			}
			if (cursor_fill(r, c) == 0) {
				if (r->err) {
					c->done = true;
					return false;
				}
				/* The file shrank under us: give up on this window. */
				r->st.bad_records++;
				diag(r, XENTRACE_DIAG_TRUNCATED, (int)c->cpu, at, "short read inside cpu %u's window",
				     c->cpu);
				cursor_drop_window(c);
			}
			continue;
		}
		uint64_t at = c->foff + c->pos;
		c->pos += sz;
		uint32_t ev = h & 0x0fffffffu;
		p += 4;
		uint64_t tsc = c->last_tsc;
		if (tf) {
			tsc = (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
			p += 8;
			if (__builtin_expect(c->have_tsc && tsc < c->last_tsc, 0)) {
				r->st.tsc_backwards++;
				diag(r, XENTRACE_DIAG_TSC_BACK, (int)c->cpu, at,
				     "TSC went backwards on cpu %u: %" PRIu64 " after %" PRIu64
				     " (record kept at the earlier TSC)", c->cpu, tsc, c->last_tsc);
				tsc = c->last_tsc;
			} else if (__builtin_expect(c->have_tsc && tsc - c->last_tsc > XENTRACE_TSC_MAX_JUMP, 0)) {
				r->st.bad_tsc++;
				diag(r, XENTRACE_DIAG_RECORD, (int)c->cpu, at,
				     "absurd TSC %" PRIu64 " on cpu %u (last %" PRIu64 "); record skipped", tsc,
				     c->cpu, c->last_tsc);
				continue;
			}
			c->last_tsc = tsc;
			c->have_tsc = true;
		}
		if (__builtin_expect(ev == XENTRACE_EV_CPU_CHANGE, 0)) {
			if (r->stream && ne == 2 && !tf) {
				/* Our own marker of a window's start: its stream offset,
				 * so that later records report where they were. */
				uint64_t woff = le32(p) | (uint64_t)le32(p + 4) << 32;
				c->foff = woff + 12 - c->pos;
				continue;
			}
			r->st.bad_records++;
			diag(r, XENTRACE_DIAG_RECORD, (int)c->cpu, at,
			     "cpu-change record inside cpu %u's window; skipped", c->cpu);
			continue;
		}
		rec->tsc = tsc;
		rec->order_tsc = tsc;
		rec->offset = at;
		rec->event = ev;
		rec->cpu = (uint16_t)c->cpu;
		rec->nextra = (uint8_t)ne;
		rec->has_tsc = tf;
		rec->flags = 0;
		/* A fixed-size copy is cheaper than a variable one, when the
		 * buffer has the bytes (beyond the record: harmless). */
		if ((size_t)(c->buf + c->len - p) >= sizeof(rec->extra))
			memcpy(rec->extra, p, sizeof(rec->extra));
		else
			memcpy(rec->extra, p, 4 * (size_t)ne);
		if (__builtin_expect((ev & 0x0ffff000u) == 0x0001f000u, 0)) {
			if (ev == XENTRACE_EV_LOST_RECORDS) {
				r->st.lost_events++;
				if (ne >= 1)
					r->st.lost_records += rec->extra[0];
				if (ne == 4 && tf) {
					uint64_t first = rec->extra[2] | (uint64_t)rec->extra[3] << 32;
					/* Delivered first where the loss began, then again
					 * where it ended. */
					uint64_t o = first < tsc ? first : tsc;
					rec->order_tsc = o > c->last_order ? o : c->last_order;
					c->lost_end_pending = true;
					diag(r, XENTRACE_DIAG_LOST, (int)c->cpu, at,
					     "cpu %u lost %u records between TSC %" PRIu64 " and %" PRIu64, c->cpu,
					     rec->extra[0], first, tsc);
				} else {
					diag(r, XENTRACE_DIAG_LOST, (int)c->cpu, at,
					     "cpu %u lost records (malformed marker: %u extra words)", c->cpu, ne);
				}
			} else if (ev == XENTRACE_EV_WRAP_BUFFER) {
				r->st.wraps++;
			}
		}
		if (rec->order_tsc < c->last_order)
			rec->order_tsc = c->last_order;
		c->last_order = rec->order_tsc;
		c->key = rec->order_tsc;
		c->cur ^= 1;
		return true;
	}
}

/* --- the merge ----------------------------------------------------------- */

/*
 * The common case of cursor_advance(), inline: a whole record with a TSC in
 * the buffer, not going backwards nor jumping, not a trace-control record.
 * Anything else takes the careful path.
 */
static inline bool cursor_next(struct xentrace_reader *r, struct cursor *c)
{
	size_t avail = c->len - c->pos;
	if (__builtin_expect(c->lost_end_pending || avail < 4 + 8 + 4 * XENTRACE_MAX_EXTRA, 0))
		return cursor_advance(r, c);
	const uint8_t *p = c->buf + c->pos;
	uint32_t h = le32(p);
	uint64_t tsc;
	memcpy(&tsc, p + 4, 8);
	uint32_t ev = h & 0x0fffffffu;
	if (__builtin_expect(!(h >> 31) || tsc < c->last_tsc || tsc - c->last_tsc > XENTRACE_TSC_MAX_JUMP ||
				     (ev & 0x0ffff000u) == 0x0001f000u,
			     0))
		return cursor_advance(r, c);
	unsigned ne = (h >> 28) & 7;
	struct xentrace_record *rec = &c->slot[c->cur ^ 1];
	rec->tsc = tsc;
	rec->order_tsc = tsc; /* >= last_order: that never exceeds last_tsc */
	rec->offset = c->foff + c->pos;
	rec->event = ev;
	rec->cpu = (uint16_t)c->cpu;
	rec->nextra = (uint8_t)ne;
	rec->has_tsc = 1;
	rec->flags = 0;
	memcpy(rec->extra, p + 12, sizeof(rec->extra)); /* avail covers the largest record */
	c->pos += 12 + 4 * (size_t)ne;
	c->last_tsc = tsc;
	c->have_tsc = true;
	c->last_order = tsc;
	c->key = tsc;
	c->cur ^= 1;
	return true;
}

/* Ties keep the parent where it is, so the cpu just read keeps going when
 * its next record has the same TSC (records without one inherit it).  The
 * keys live in the heap itself: no pointer chasing to compare. */
static void heap_down(struct xentrace_reader *r, unsigned i)
{
	struct heap_entry *h = r->heap;
	unsigned n = r->nheap;
	struct heap_entry e = h[i];
	for (;;) {
		unsigned l = 2 * i + 1, m = i;
		if (l >= n)
			break;
		uint64_t best = e.key;
		if (h[l].key < best) {
			m = l;
			best = h[l].key;
		}
		if (l + 1 < n && h[l + 1].key < best)
			m = l + 1;
		if (m == i)
			break;
		h[i] = h[m];
		i = m;
	}
	h[i] = e;
}

static void heap_up(struct xentrace_reader *r, unsigned i)
{
	struct heap_entry e = r->heap[i];
	while (i > 0) {
		unsigned p = (i - 1) / 2;
		if (r->heap[p].key <= e.key)
			break;
		r->heap[i] = r->heap[p];
		i = p;
	}
	r->heap[i] = e;
}

static int stream_next(struct xentrace_reader *r, const struct xentrace_record **rec);

int xentrace_reader_next(struct xentrace_reader *r, const struct xentrace_record **rec)
{
	if (__builtin_expect(r->stream, 0))
		return stream_next(r, rec);
	if (__builtin_expect(r->nheap == 0, 0))
		return r->err;
	struct cursor *c = r->heap[0].c;
	struct xentrace_record *out = &c->slot[c->cur];
	r->st.records++;
	if (__builtin_expect(cursor_next(r, c), 1)) {
		r->heap[0].key = c->key;
		/* Most often the root stays, or swaps with one child. */
		if (r->nheap > 1)
			heap_down(r, 0);
	} else {
		out->flags |= XENTRACE_REC_CPU_LAST;
		r->heap[0] = r->heap[--r->nheap];
		if (r->nheap)
			heap_down(r, 0);
	}
	if (__builtin_expect(r->err != 0, 0))
		return r->err;
	*rec = out;
	return 1;
}

/* --- stream mode ------------------------------------------------------------ */

#define DEFAULT_BUDGET (16u << 20)
/* A queue drained to this little keeps at most this much capacity. */
#define STREAM_KEEP (64u << 10)

/* Reads up to @len bytes, fewer only at the end of the stream. */
static ssize_t stream_read(struct xentrace_reader *r, void *buf, size_t len)
{
	size_t done = 0;
	if (r->src) { /* any source, read once in order */
		ssize_t n = r->src->read_at(r->src, buf, len, r->soff);
		if (n < 0)
			return r->err = (int)n;
		r->soff += (uint64_t)n;
		return n;
	}
	while (done < len) {
		ssize_t n = read(r->fd, (char *)buf + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r->err = -errno;
			return r->err;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	r->soff += done;
	return (ssize_t)done;
}

static struct cursor *stream_cursor(struct xentrace_reader *r, unsigned cpu)
{
	struct cursor *c = r->cur[cpu];
	if (c)
		return c;
	if (!(c = calloc(1, sizeof(*c))))
		return NULL;
	c->cpu = cpu;
	c->starved = true;
	r->cur[cpu] = c;
	r->seen[r->nseen++] = (uint16_t)cpu;
	r->st.cpus++;
	return c;
}

static bool stream_header_ok(const uint8_t *h)
{
	uint32_t cpu = le32(h + 4), size = le32(h + 8);
	return le32(h) == CPU_CHANGE_HDR && cpu < XENTRACE_MAX_CPUS && size % 4 == 0 && size <= XENTRACE_MAX_WINDOW;
}

/* Gives @c's queue room for @need bytes, and gives back what a drained
 * queue no longer needs: the budget is held against the queues' capacity,
 * which is what the process holds, not against the bytes waiting. */
static int stream_room(struct xentrace_reader *r, struct cursor *c, size_t need)
{
	size_t cap = c->cap;
	if (need > cap) {
		cap = cap ? cap : 4096;
		while (cap < need)
			cap *= 2;
	} else if (cap > STREAM_KEEP && cap / 4 > need) {
		cap = need > STREAM_KEEP ? need : STREAM_KEEP;
	} else {
		return 0;
	}
	uint8_t *nb = realloc(c->buf, cap);
	if (!nb)
		return need > c->cap ? -ENOMEM : 0;
	r->held = r->held - c->cap + cap;
	if (r->held > r->st.stream_peak_bytes)
		r->st.stream_peak_bytes = r->held;
	c->buf = nb;
	c->cap = cap;
	return 0;
}

/*
 * Reads the next window into its cpu's queue, behind a marker carrying the
 * window's stream offset; only whole records are kept.  1, 0 at the end of
 * the stream, or a negative errno.
 */
static int stream_window(struct xentrace_reader *r)
{
	uint8_t h[12];
	uint64_t at = r->soff;
	ssize_t n = stream_read(r, h, sizeof(h));
	if (n < 0)
		return (int)n;
	if (n < (ssize_t)sizeof(h)) {
		if (n > 0)
			diag(r, XENTRACE_DIAG_TRUNCATED, -1, at, "stream ends with %zd stray bytes", n);
		return 0;
	}
	if (!stream_header_ok(h)) {
		/* Garbage: slide byte by byte to the next believable header. */
		uint64_t bad = at;
		uint32_t word = le32(h);
		do {
			memmove(h, h + 1, sizeof(h) - 1);
			n = stream_read(r, h + sizeof(h) - 1, 1);
			if (n <= 0) {
				diag(r, XENTRACE_DIAG_FRAMING, -1, bad,
				     "expected a cpu-change record, found header 0x%08x; no window after it", word);
				return n < 0 ? (int)n : 0;
			}
			at++;
		} while (!stream_header_ok(h));
		diag(r, XENTRACE_DIAG_FRAMING, -1, bad,
		     "expected a cpu-change record, found header 0x%08x; skipped %" PRIu64 " bytes", word, at - bad);
		r->st.skipped_bytes += at - bad;
	}
	unsigned cpu = le32(h + 4);
	uint32_t size = le32(h + 8);
	/* xentrace writes a window for each cpu with data at each pass: a cpu
	 * seen again means the first pass is over, and all cpus are known. */
	if (r->cur[cpu])
		r->first_round_done = true;
	struct cursor *c = stream_cursor(r, cpu);
	if (!c)
		return -ENOMEM;
	if (c->pos) {
		memmove(c->buf, c->buf + c->pos, c->len - c->pos);
		c->foff += c->pos;
		c->len -= c->pos;
		c->pos = 0;
	}
	int rc = stream_room(r, c, c->len + 12 + size);
	if (rc)
		return rc;
	uint8_t *m = c->buf + c->len;
	uint32_t mark[3] = { CPU_CHANGE_HDR, (uint32_t)at, (uint32_t)(at >> 32) };
	memcpy(m, mark, sizeof(mark));
	uint8_t *w = m + 12;
	n = stream_read(r, w, size);
	if (n < 0)
		return (int)n;
	if ((size_t)n < size)
		diag(r, XENTRACE_DIAG_TRUNCATED, (int)cpu, at,
		     "stream ends inside cpu %u's window (%zd of %u bytes)", cpu, n, size);
	/* Keep whole records: one crossing the window's end, or a cpu change
	 * inside it, ends the window here. */
	size_t pos = 0;
	while (pos + 4 <= (size_t)n) {
		uint32_t rh = le32(w + pos);
		size_t sz = 4 + 8 * (size_t)(rh >> 31) + 4 * (size_t)((rh >> 28) & 7);
		if (pos + sz > (size_t)n || (rh & 0x0fffffffu) == XENTRACE_EV_CPU_CHANGE) {
			r->st.bad_records++;
			diag(r, XENTRACE_DIAG_RECORD, (int)cpu, at + 12 + pos,
			     "%s in cpu %u's window; rest of the window skipped",
			     pos + sz > (size_t)n ? "record crosses the end" : "cpu-change record", cpu);
			break;
		}
		pos += sz;
	}
	c->len += 12 + pos;
	c->last_window = ++r->windows_read;
	r->st.windows++;
	if (c->starved && cursor_advance(r, c)) {
		c->starved = false;
		r->heap[r->nheap].c = c;
		r->heap[r->nheap].key = c->key;
		heap_up(r, r->nheap++);
	}
	return 1;
}

/* Is the merge to wait for more input before emitting? */
static bool stream_must_wait(struct xentrace_reader *r)
{
	if (r->stream_eof)
		return false;
	if (r->nheap == 0)
		return true;
	bool waiting = !r->first_round_done;
	for (unsigned i = 0; i < r->nseen; i++) {
		const struct cursor *c = r->cur[r->seen[i]];
		/* A cpu with nothing queued may still have earlier records to
		 * come, unless it has been quiet for a while. */
		if (c->starved && r->windows_read - c->last_window < r->quiet_windows)
			waiting = true;
	}
	/* And the record about to go out: if nothing follows it in its queue
	 * yet, its cpu's next window tells whether it is that cpu's last (the
	 * decoder closes a cpu right after its last record, as xenalyze does). */
	const struct cursor *top = r->heap[0].c;
	if (top->len == top->pos && !top->lost_end_pending &&
	    r->windows_read - top->last_window < r->quiet_windows)
		waiting = true;
	if (waiting && r->held > r->budget) {
		r->st.stream_forced++;
		return false;
	}
	return waiting;
}

static int stream_next(struct xentrace_reader *r, const struct xentrace_record **rec)
{
	while (stream_must_wait(r)) {
		int rc = stream_window(r);
		if (rc < 0)
			return rc;
		if (rc == 0)
			r->stream_eof = true;
	}
	if (r->nheap == 0 && r->stream_eof && !r->st.windows && !r->err) {
		/* The verdict a file gets from xentrace_reader_open(): not a
		 * trace at all, whichever way it came. */
		if (!r->soff)
			diag(r, XENTRACE_DIAG_TRUNCATED, -1, 0, "empty input");
		else if (!r->ndiags)
			diag(r, XENTRACE_DIAG_FRAMING, -1, 0, "no cpu-change record: not a xentrace file");
		r->err = -EBADMSG;
	}
	if (r->nheap == 0)
		return r->err;
	struct cursor *c = r->heap[0].c;
	struct xentrace_record *out = &c->slot[c->cur];
	r->st.records++;
	if (out->order_tsc < r->last_emitted)
		r->st.stream_late++;
	else
		r->last_emitted = out->order_tsc;
	if (cursor_next(r, c)) {
		r->heap[0].key = c->key;
		heap_down(r, 0);
	} else {
		/* Starved: back in the heap when its next window comes.  Its
		 * queue is empty: give back what it held (the record just
		 * delivered is in its slot, not in the queue). */
		if (r->stream_eof)
			out->flags |= XENTRACE_REC_CPU_LAST;
		r->heap[0] = r->heap[--r->nheap];
		if (r->nheap)
			heap_down(r, 0);
		c->foff += c->pos;
		c->len = c->pos = 0;
		stream_room(r, c, 0);
	}
	*rec = out;
	return 1;
}

int xentrace_reader_open_stream_src(struct xentrace_reader **out, const struct xentrace_source *src,
				    const struct xentrace_reader_opts *opts)
{
	int rc = xentrace_reader_open_stream(out, -1, opts);
	if (rc == 0)
		(*out)->src = src;
	return rc;
}

int xentrace_reader_open_stream(struct xentrace_reader **out, int fd, const struct xentrace_reader_opts *opts)
{
	struct xentrace_reader *r = calloc(1, sizeof(*r));
	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->stream = true;
	r->fd = fd;
	r->budget = opts && opts->stream_budget ? opts->stream_budget : DEFAULT_BUDGET;
	r->quiet_windows = opts && opts->stream_quiet_windows ? opts->stream_quiet_windows : 8;
	*out = r;
	return 0;
}

/* --- open / close -------------------------------------------------------- */

int xentrace_reader_open(struct xentrace_reader **out, const struct xentrace_source *src,
			 const struct xentrace_reader_opts *opts)
{
	int rc = 0;
	struct xentrace_reader *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->src = src;
	r->bufsz = opts && opts->buffer_bytes ? opts->buffer_bytes : DEFAULT_BUFFER;
	if (r->bufsz < MIN_BUFFER)
		r->bufsz = MIN_BUFFER;
	r->st.file_size = src->size;
	if (!(r->wcache = calloc(WCACHE_SLOTS, sizeof(*r->wcache)))) {
		free(r);
		return -ENOMEM;
	}

	/* Discovery: every window header once, to know the cpus up front (so
	 * that none joins the merge late) and to report framing problems once. */
	bool seen[XENTRACE_MAX_CPUS] = { false };
	struct window w;
	uint64_t off = 0;
	r->discovering = true;
	while (window_at(r, off, &w) == 1) {
		r->st.windows++;
		if (!seen[w.cpu]) {
			seen[w.cpu] = true;
			r->first_window[w.cpu] = w.hdr;
			r->st.cpus++;
		}
		off = w.end;
	}
	r->discovering = false;
	if (r->err) {
		rc = r->err;
		goto fail;
	}
	if (r->st.cpus == 0) {
		if (src->size == 0)
			diag(r, XENTRACE_DIAG_TRUNCATED, -1, 0, "empty file");
		else if (r->ndiags == 0)
			diag(r, XENTRACE_DIAG_FRAMING, -1, 0, "no cpu-change record: not a xentrace file");
		rc = -EBADMSG;
		goto fail;
	}
	for (unsigned cpu = 0; cpu < XENTRACE_MAX_CPUS; cpu++) {
		if (!seen[cpu])
			continue;
		struct cursor *c = calloc(1, sizeof(*c));
		if (!c || !(c->buf = malloc(r->bufsz))) {
			free(c);
			rc = -ENOMEM;
			goto fail;
		}
		c->cpu = cpu;
		r->cur[cpu] = c;
		if (!cursor_seek_window(r, c, r->first_window[cpu]) || !cursor_advance(r, c))
			continue;
		r->heap[r->nheap].c = c;
		r->heap[r->nheap].key = c->key;
		heap_up(r, r->nheap++);
	}
	if (r->err) {
		rc = r->err;
		goto fail;
	}
	*out = r;
	return 0;
fail:
	*out = NULL;
	if (rc == -EBADMSG) {
		/* Keep the diagnostics readable: hand the reader back empty. */
		*out = r;
		return rc;
	}
	xentrace_reader_free(r);
	return rc;
}

void xentrace_reader_free(struct xentrace_reader *r)
{
	if (!r)
		return;
	for (unsigned i = 0; i < XENTRACE_MAX_CPUS; i++) {
		if (r->cur[i]) {
			free(r->cur[i]->buf);
			free(r->cur[i]);
		}
	}
	free(r->wcache);
	free(r);
}

const struct xentrace_reader_stats *xentrace_reader_stats(const struct xentrace_reader *r)
{
	return &r->st;
}

unsigned xentrace_reader_ndiags(const struct xentrace_reader *r)
{
	return r->ndiags;
}

const struct xentrace_diag *xentrace_reader_diag(const struct xentrace_reader *r, unsigned i)
{
	return i < r->ndiags ? &r->diags[i] : NULL;
}
