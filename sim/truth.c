/* The truth writer: see truth.h. */
#include "sim/truth.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TRUTH_BUF 65536
#define TRUTH_LINE_MAX 192

struct truth_buf {
	struct truth_buf *next;
	size_t len;
	char data[TRUTH_BUF];
};

static int truth_fd = -1;
static uint32_t truth_domid;
static pthread_mutex_t truth_lock = PTHREAD_MUTEX_INITIALIZER;
static struct truth_buf *truth_bufs; /* every thread's buffer, for close */
static _Thread_local struct truth_buf *my_buf;

int truth_open(const char *prefix, uint32_t domid)
{
	char path[4096];

	if (snprintf(path, sizeof(path), "%s.%u", prefix, domid) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	/* O_APPEND: each write() of whole lines lands intact at the end. */
	truth_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
	if (truth_fd < 0)
		return -errno;
	truth_domid = domid;
	return 0;
}

static void buf_write(struct truth_buf *b)
{
	size_t off = 0;

	while (off < b->len) {
		ssize_t n = write(truth_fd, b->data + off, b->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* a full disk loses truth, never the simulation */
		off += (size_t)n;
	}
	b->len = 0;
}

void truth_note(enum sim_stage st, const struct truth_tag *tag, const void *addr)
{
	struct timespec ts;

	if (truth_fd < 0 || tag->nseg == 0)
		return;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	truth_note_at(st, tag, addr, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

void truth_note_at(enum sim_stage st, const struct truth_tag *tag, const void *addr,
		   int64_t time_ns)
{
	struct truth_buf *b = my_buf;
	int n;

	/* Untagged work (ACKs, rx buffers) is not part of the truth. */
	if (truth_fd < 0 || tag->nseg == 0)
		return;
	if (!b) {
		b = calloc(1, sizeof(*b));
		if (!b)
			return;
		pthread_mutex_lock(&truth_lock);
		b->next = truth_bufs;
		truth_bufs = b;
		pthread_mutex_unlock(&truth_lock);
		my_buf = b;
	}
	if (b->len + TRUTH_LINE_MAX > TRUTH_BUF)
		buf_write(b);
	n = snprintf(b->data + b->len, TRUTH_LINE_MAX,
		     "%" PRId64 "\t%u\t%u\t%s\t%u\t%u\t%u\t%s\t%p\n",
		     time_ns, truth_domid,
		     tag->guest, sim_path_name(sim_stages[st].path), tag->msg,
		     tag->seg, tag->nseg, sim_stages[st].name, addr);
	if (n > 0 && n < TRUTH_LINE_MAX)
		b->len += (size_t)n;
}

void truth_note_lateness(const char *what, const struct sim_late *late)
{
	char line[TRUTH_LINE_MAX];
	int n;

	if (truth_fd < 0)
		return;
	n = sim_late_line(line, sizeof(line), truth_domid, what, late);
	/* One write of a whole line: O_APPEND keeps it from interleaving. */
	if (n > 0 && write(truth_fd, line, (size_t)n) < 0)
		return; /* a full disk loses truth, never the simulation */
}

void truth_thread_flush(void)
{
	if (truth_fd >= 0 && my_buf)
		buf_write(my_buf);
}

void truth_close(void)
{
	pthread_mutex_lock(&truth_lock);
	while (truth_bufs) {
		struct truth_buf *b = truth_bufs;

		truth_bufs = b->next;
		if (truth_fd >= 0)
			buf_write(b);
		free(b);
	}
	pthread_mutex_unlock(&truth_lock);
	my_buf = NULL;
	if (truth_fd >= 0)
		close(truth_fd);
	truth_fd = -1;
}
