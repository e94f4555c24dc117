/*
 * libxenstore.so.4 of the simulated Xen toolstack: Debian's Xen 4.17
 * xenstore client API over the simulated store (a simulation for tests,
 * not Xen; see README).
 *
 * Every call acts at once on the state directory under its lock; there is
 * no daemon.  A handle that watches gets a mailbox, watchers/<id>/fifo,
 * and publishes its watches in watchers/<id>/watches; whoever changes a
 * node posts the matching events there (simx_store.c), and xs_fileno() is
 * the FIFO itself, readable exactly while events are pending.
 */
#include <xenstore.h>

#include "simx.h"
#include "simx_store.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

struct watch {
	struct watch *next;
	uint64_t wid;
	char *abs;          /* the canonical path watched */
	char *given;        /* the path as the caller gave it */
	char *token;
	bool relative;
	/*
	 * Unwatched, but events posted before may still be in the mailbox and
	 * are delivered as libxenstore delivers queued events (unless the
	 * handle filters them, XS_UNWATCH_FILTER); forgotten once the mailbox
	 * has been seen empty.
	 */
	bool gone;
};

struct xs_handle {
	struct simx_env env;
	pthread_mutex_t mutex;     /* the fields below, and env.lockfd */
	bool unwatch_filter;
	int fifo;                  /* the watch mailbox, -1 until needed */
	char name[24];             /* its directory under watchers/ */
	struct watch *watches;
	uint64_t next_wid;
	uint32_t *tx;              /* open transactions */
	unsigned int ntx, captx;
	uint32_t next_tx;
};

static void *fail_ptr(int rc)
{
	errno = -rc;
	return NULL;
}

static bool fail_bool(int rc)
{
	errno = -rc;
	return false;
}

struct xs_handle *xs_open(unsigned long flags)
{
	struct xs_handle *h = calloc(1, sizeof(*h));
	int rc;

	if (!h)
		return NULL;
	rc = simx_env_open(&h->env, "libxenstore");
	if (rc) {
		free(h);
		return fail_ptr(rc);
	}
	pthread_mutex_init(&h->mutex, NULL);
	/* XS_OPEN_READONLY and XS_OPEN_SOCKETONLY change nothing in 4.17 either. */
	h->unwatch_filter = (flags & XS_UNWATCH_FILTER) != 0;
	h->fifo = -1;
	h->next_wid = 1;
	h->next_tx = 1;
	return h;
}

struct xs_handle *xs_daemon_open(void)
{
	return xs_open(0);
}

struct xs_handle *xs_domain_open(void)
{
	return xs_open(0);
}

struct xs_handle *xs_daemon_open_readonly(void)
{
	return xs_open(0);
}

static void free_watch(struct watch *w)
{
	free(w->abs);
	free(w->given);
	free(w->token);
	free(w);
}

/* Frees @h; @forget also removes its mailbox from the state directory. */
static void destroy(struct xs_handle *h, bool forget)
{
	char dir[48];

	if (h->fifo >= 0) {
		if (forget) {
			snprintf(dir, sizeof(dir), "watchers/%s", h->name);
			simx_rm_tree(h->env.dirfd, dir);
		}
		close(h->fifo);
	}
	while (h->watches) {
		struct watch *w = h->watches;

		h->watches = w->next;
		free_watch(w);
	}
	free(h->tx);
	simx_env_close(&h->env);
	pthread_mutex_destroy(&h->mutex);
	free(h);
}

void xs_daemon_close(struct xs_handle *h)
{
	destroy(h, simx_env_owned(&h->env));
}

void xs_close(struct xs_handle *h)
{
	if (h)
		xs_daemon_close(h);
}

void xs_daemon_destroy_postfork(struct xs_handle *h)
{
	destroy(h, false);
}

/* The handle's mutex, then the state lock. */
static void lock(struct xs_handle *h, bool exclusive)
{
	pthread_mutex_lock(&h->mutex);
	simx_lock(&h->env, exclusive);
}

static void unlock(struct xs_handle *h)
{
	simx_unlock(&h->env);
	pthread_mutex_unlock(&h->mutex);
}

/* Transactions are accepted but not isolated: see README. */
static int check_tx(struct xs_handle *h, xs_transaction_t t)
{
	int rc = -ENOENT;

	if (t == XBT_NULL)
		return 0;
	pthread_mutex_lock(&h->mutex);
	for (unsigned int i = 0; i < h->ntx; i++)
		if (h->tx[i] == t)
			rc = 0;
	pthread_mutex_unlock(&h->mutex);
	return rc;
}

/* The canonical path of @path for a request in transaction @t. */
static int prepare(struct xs_handle *h, xs_transaction_t t, const char *path,
		   char abs[SIMX_PATH_SIZE])
{
	int rc = check_tx(h, t);

	if (!rc)
		rc = simx_store_canon(h->env.domid, path, false, abs, NULL);
	return rc;
}

void *xs_read(struct xs_handle *h, xs_transaction_t t, const char *path, unsigned int *len)
{
	char abs[SIMX_PATH_SIZE], *value = NULL;
	unsigned int n = 0;
	int rc = prepare(h, t, path, abs);

	if (rc)
		return fail_ptr(rc);
	lock(h, false);
	rc = simx_store_read_locked(&h->env, abs, &value, &n);
	unlock(h);
	if (rc)
		return fail_ptr(rc);
	if (len)
		*len = n;
	return value;
}

bool xs_write(struct xs_handle *h, xs_transaction_t t, const char *path, const void *data,
	      unsigned int len)
{
	char abs[SIMX_PATH_SIZE];
	int rc;

	/* One message carries the path, its NUL and the value. */
	if (!path || strlen(path) + 1 + (size_t)len > XENSTORE_PAYLOAD_MAX)
		return fail_bool(path ? -E2BIG : -EINVAL);
	rc = prepare(h, t, path, abs);
	if (rc)
		return fail_bool(rc);
	lock(h, true);
	rc = simx_store_write_locked(&h->env, abs, data, len);
	unlock(h);
	return rc ? fail_bool(rc) : true;
}

bool xs_mkdir(struct xs_handle *h, xs_transaction_t t, const char *path)
{
	char abs[SIMX_PATH_SIZE];
	int rc = prepare(h, t, path, abs);

	if (rc)
		return fail_bool(rc);
	lock(h, true);
	rc = simx_store_mkdir_locked(&h->env, abs);
	unlock(h);
	return rc ? fail_bool(rc) : true;
}

bool xs_rm(struct xs_handle *h, xs_transaction_t t, const char *path)
{
	char abs[SIMX_PATH_SIZE];
	int rc = prepare(h, t, path, abs);

	if (rc)
		return fail_bool(rc);
	lock(h, true);
	rc = simx_store_rm_locked(&h->env, abs);
	unlock(h);
	return rc ? fail_bool(rc) : true;
}

char **xs_directory(struct xs_handle *h, xs_transaction_t t, const char *path, unsigned int *num)
{
	char abs[SIMX_PATH_SIZE], **names = NULL;
	unsigned int n = 0;
	int rc = prepare(h, t, path, abs);

	if (rc)
		return fail_ptr(rc);
	lock(h, false);
	rc = simx_store_directory_locked(&h->env, abs, &names, &n);
	unlock(h);
	if (rc)
		return fail_ptr(rc);
	*num = n;
	return names;
}

bool xs_restrict(struct xs_handle *h, unsigned domid)
{
	(void)h;
	(void)domid;
	return false;
}

struct xs_permissions *xs_get_permissions(struct xs_handle *h, xs_transaction_t t,
					  const char *path, unsigned int *num)
{
	char abs[SIMX_PATH_SIZE];
	struct simx_perms perms;
	struct xs_permissions *out;
	int rc = prepare(h, t, path, abs);

	if (rc)
		return fail_ptr(rc);
	lock(h, false);
	rc = simx_store_get_perms_locked(&h->env, abs, &perms);
	unlock(h);
	if (rc)
		return fail_ptr(rc);
	out = malloc(perms.num * sizeof(*out));
	if (!out)
		return NULL;
	memcpy(out, perms.p, perms.num * sizeof(*out));
	*num = perms.num;
	return out;
}

bool xs_set_permissions(struct xs_handle *h, xs_transaction_t t, const char *path,
			struct xs_permissions *perms, unsigned int num_perms)
{
	char abs[SIMX_PATH_SIZE];
	struct simx_perms p;
	int rc = prepare(h, t, path, abs);

	if (rc)
		return fail_bool(rc);
	if (num_perms == 0 || !perms)
		return fail_bool(-EINVAL);
	if (num_perms > SIMX_PERMS_MAX)
		return fail_bool(-E2BIG);
	for (unsigned int i = 0; i < num_perms; i++) {
		if (perms[i].id >= SIMX_DOMID_LIMIT ||
		    (perms[i].perms & ~(unsigned int)(XS_PERM_READ | XS_PERM_WRITE)))
			return fail_bool(-EINVAL);
		p.p[i] = perms[i];
	}
	p.num = num_perms;
	lock(h, true);
	rc = simx_store_set_perms_locked(&h->env, abs, &p);
	unlock(h);
	return rc ? fail_bool(rc) : true;
}

/* Creates the watch mailbox on first need.  Called with the mutex held. */
static int ensure_mailbox(struct xs_handle *h)
{
	char tmp[48], path[64], dir[48], text[32];
	int fd, rc;

	if (h->fifo >= 0)
		return 0;
	snprintf(h->name, sizeof(h->name), "%016" PRIx64, simx_new_id());
	snprintf(tmp, sizeof(tmp), "tmp/x.%s", h->name);
	rc = simx_mkdir(h->env.dirfd, tmp);
	if (rc)
		return rc;
	snprintf(path, sizeof(path), "%s/fifo", tmp);
	fd = simx_mailbox_make(h->env.dirfd, path);
	if (fd < 0) {
		rc = fd;
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/watches", tmp);
	snprintf(text, sizeof(text), "domid %u\n", h->env.domid);
	rc = simx_write_file(h->env.dirfd, path, text, strlen(text));
	/* In place only once its reader exists: writers take a FIFO without one as dead. */
	snprintf(dir, sizeof(dir), "watchers/%s", h->name);
	if (!rc && renameat(h->env.dirfd, tmp, h->env.dirfd, dir) < 0)
		rc = -errno;
	if (rc) {
		close(fd);
		goto fail;
	}
	h->fifo = fd;
	return 0;
fail:
	simx_rm_tree(h->env.dirfd, tmp);
	return rc;
}

/* Publishes the live watches.  Called with the mutex and the state lock held. */
static int publish_watches(struct xs_handle *h)
{
	size_t size = 32, used;
	char path[64], *text;
	int rc;

	for (struct watch *w = h->watches; w; w = w->next)
		size += strlen(w->abs) + 24;
	text = malloc(size);
	if (!text)
		return -ENOMEM;
	used = (size_t)snprintf(text, size, "domid %u\n", h->env.domid);
	for (struct watch *w = h->watches; w; w = w->next)
		if (!w->gone)
			used += (size_t)snprintf(text + used, size - used, "%" PRIu64 " %s\n",
						 w->wid, w->abs);
	snprintf(path, sizeof(path), "watchers/%s/watches", h->name);
	rc = simx_write_file(h->env.dirfd, path, text, used);
	free(text);
	return rc;
}

static void raise_overflow_flag(struct xs_handle *h)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "watchers/%s/overflow", h->name);
	fd = openat(h->env.dirfd, path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
}

/* Posts an event to our own mailbox.  Called with the mutex held. */
static void post_self(struct xs_handle *h, uint64_t wid, const char *path)
{
	char buf[sizeof(struct simx_watch_rec) + SIMX_PATH_SIZE];
	struct simx_watch_rec rec = { .len = (uint32_t)strlen(path), .wid = wid };

	memcpy(buf, &rec, sizeof(rec));
	memcpy(buf + sizeof(rec), path, rec.len);
	if (write(h->fifo, buf, sizeof(rec) + rec.len) < 0)
		raise_overflow_flag(h);   /* full: we look at the flag once it is empty */
}

/*
 * Events were lost to a full mailbox: fire every watch, which is what a
 * coalesced event means (something at or below the watched path changed).
 */
static bool recover_overflow(struct xs_handle *h)
{
	char path[64];
	bool any = false;

	snprintf(path, sizeof(path), "watchers/%s/overflow", h->name);
	if (unlinkat(h->env.dirfd, path, 0) < 0)
		return false;
	for (struct watch *w = h->watches; w; w = w->next) {
		if (!w->gone) {
			post_self(h, w->wid, w->abs);
			any = true;
		}
	}
	return any;
}

static bool mailbox_empty(struct xs_handle *h)
{
	int n = 0;

	return ioctl(h->fifo, FIONREAD, &n) == 0 && n == 0;
}

/* Forgets unwatched watches once no event of theirs can be queued. */
static void forget_gone(struct xs_handle *h)
{
	struct watch **pp = &h->watches;

	while (*pp) {
		struct watch *w = *pp;

		if (w->gone) {
			*pp = w->next;
			free_watch(w);
		} else {
			pp = &w->next;
		}
	}
}

/* Reads one record: 1, 0 when the mailbox is empty, or -errno. */
static int read_record(struct xs_handle *h, struct simx_watch_rec *rec, char path[SIMX_PATH_SIZE])
{
	ssize_t n = read(h->fifo, rec, sizeof(*rec));

	if (n < 0)
		return errno == EAGAIN ? 0 : -errno;
	/* Writers post whole records (at most PIPE_BUF) with one write. */
	if (n != (ssize_t)sizeof(*rec) || rec->len >= SIMX_PATH_SIZE)
		return -EIO;
	if (rec->len && read(h->fifo, path, rec->len) != (ssize_t)rec->len)
		return -EIO;
	path[rec->len] = '\0';
	return 1;
}

static struct watch *find_wid(struct xs_handle *h, uint64_t wid)
{
	for (struct watch *w = h->watches; w; w = w->next)
		if (w->wid == wid)
			return w;
	return NULL;
}

/* The path an event reports: relative for a watch given relative. */
static const char *event_path(const struct xs_handle *h, const struct watch *w, const char *abs)
{
	char prefix[40];
	size_t n;

	if (!w->relative)
		return abs;
	n = (size_t)snprintf(prefix, sizeof(prefix), "/local/domain/%u/", h->env.domid);
	return strncmp(abs, prefix, n) ? abs : abs + n;
}

static char **make_vec(const char *path, const char *token)
{
	size_t lp = strlen(path) + 1, lt = strlen(token) + 1;
	char **vec = malloc(2 * sizeof(char *) + lp + lt);

	if (!vec)
		return NULL;
	vec[XS_WATCH_PATH] = memcpy((char *)(vec + 2), path, lp);
	vec[XS_WATCH_TOKEN] = memcpy(vec[XS_WATCH_PATH] + lp, token, lt);
	return vec;
}

/* The next event, or NULL with errno (EAGAIN: none).  Called with the mutex held. */
static char **next_event(struct xs_handle *h)
{
	char path[SIMX_PATH_SIZE];
	struct simx_watch_rec rec;

	if (h->fifo < 0) {
		errno = EAGAIN;
		return NULL;
	}
	for (;;) {
		struct watch *w;
		int rc = read_record(h, &rec, path);

		if (rc < 0)
			return fail_ptr(rc);
		if (rc == 0) {
			forget_gone(h);
			if (recover_overflow(h))
				continue;
			errno = EAGAIN;
			return NULL;
		}
		if (rec.wid == SIMX_WATCH_OVERFLOW) {
			recover_overflow(h);
			continue;
		}
		w = find_wid(h, rec.wid);
		if (!w)
			continue;
		char **vec = make_vec(event_path(h, w, path), w->token);

		/* Whoever waits for readability must see what recovery adds. */
		if (mailbox_empty(h)) {
			forget_gone(h);
			recover_overflow(h);
		}
		return vec;
	}
}

char **xs_check_watch(struct xs_handle *h)
{
	char **vec;

	pthread_mutex_lock(&h->mutex);
	vec = next_event(h);
	pthread_mutex_unlock(&h->mutex);
	return vec;
}

char **xs_read_watch(struct xs_handle *h, unsigned int *num)
{
	for (;;) {
		struct pollfd pfd = { .events = POLLIN };
		char **vec;
		int rc;

		pthread_mutex_lock(&h->mutex);
		rc = ensure_mailbox(h);
		vec = rc ? fail_ptr(rc) : next_event(h);
		pfd.fd = h->fifo;
		pthread_mutex_unlock(&h->mutex);
		if (vec) {
			if (num)
				*num = 2;
			return vec;
		}
		if (errno != EAGAIN)
			return NULL;
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			return NULL;
	}
}

int xs_fileno(struct xs_handle *h)
{
	int rc, fd;

	pthread_mutex_lock(&h->mutex);
	rc = ensure_mailbox(h);
	fd = h->fifo;
	pthread_mutex_unlock(&h->mutex);
	if (rc) {
		errno = -rc;
		return -1;
	}
	return fd;
}

bool xs_watch(struct xs_handle *h, const char *path, const char *token)
{
	char abs[SIMX_PATH_SIZE];
	struct watch *w;
	bool relative;
	int rc;

	if (!token)
		return fail_bool(-EINVAL);
	rc = simx_store_canon(h->env.domid, path, true, abs, &relative);
	if (rc)
		return fail_bool(rc);
	if (strlen(path) + strlen(token) + 2 > XENSTORE_PAYLOAD_MAX)
		return fail_bool(-E2BIG);
	pthread_mutex_lock(&h->mutex);
	rc = ensure_mailbox(h);
	for (w = h->watches; !rc && w; w = w->next)
		if (!w->gone && !strcmp(w->given, path) && !strcmp(w->token, token))
			rc = -EEXIST;
	w = rc ? NULL : calloc(1, sizeof(*w));
	if (!rc && w) {
		w->abs = strdup(abs);
		w->given = strdup(path);
		w->token = strdup(token);
	}
	if (!rc && (!w || !w->abs || !w->given || !w->token))
		rc = -ENOMEM;
	if (rc) {
		if (w)
			free_watch(w);
		pthread_mutex_unlock(&h->mutex);
		return fail_bool(rc);
	}
	w->wid = h->next_wid++;
	w->relative = relative;
	w->next = h->watches;
	h->watches = w;
	/* Registered and fired once under the lock: later changes come after. */
	simx_lock(&h->env, true);
	rc = publish_watches(h);
	if (!rc)
		post_self(h, w->wid, abs);
	simx_unlock(&h->env);
	if (rc) {
		h->watches = w->next;
		free_watch(w);
	}
	pthread_mutex_unlock(&h->mutex);
	return rc ? fail_bool(rc) : true;
}

/* Drops queued events of @token at or below @given (XS_UNWATCH_FILTER). */
static void filter_queue(struct xs_handle *h, const char *given, const char *token)
{
	char path[SIMX_PATH_SIZE];
	struct simx_watch_rec rec;
	size_t used = 0, cap = 0;
	char *keep = NULL;

	while (read_record(h, &rec, path) == 1) {
		struct watch *w = find_wid(h, rec.wid);
		size_t n = sizeof(rec) + rec.len;

		if (w && !strcmp(w->token, token) &&
		    xs_path_is_subpath(given, event_path(h, w, path)))
			continue;
		if (used + n > cap) {
			char *bigger = realloc(keep, cap ? 2 * cap + n : 4096 + n);

			if (!bigger) {
				raise_overflow_flag(h);
				continue;
			}
			keep = bigger;
			cap = cap ? 2 * cap + n : 4096 + n;
		}
		memcpy(keep + used, &rec, sizeof(rec));
		memcpy(keep + used + sizeof(rec), path, rec.len);
		used += n;
	}
	for (size_t off = 0; off < used;) {
		memcpy(&rec, keep + off, sizeof(rec));
		if (write(h->fifo, keep + off, sizeof(rec) + rec.len) < 0)
			raise_overflow_flag(h);
		off += sizeof(rec) + rec.len;
	}
	free(keep);
}

bool xs_unwatch(struct xs_handle *h, const char *path, const char *token)
{
	struct watch *w;
	int rc;

	if (!path || !token)
		return fail_bool(-EINVAL);
	pthread_mutex_lock(&h->mutex);
	for (w = h->watches; w; w = w->next)
		if (!w->gone && !strcmp(w->given, path) && !strcmp(w->token, token))
			break;
	if (!w) {
		pthread_mutex_unlock(&h->mutex);
		return fail_bool(-ENOENT);
	}
	w->gone = true;
	simx_lock(&h->env, true);
	rc = publish_watches(h);
	simx_unlock(&h->env);
	if (h->unwatch_filter)
		filter_queue(h, path, token);
	if (mailbox_empty(h))
		forget_gone(h);
	pthread_mutex_unlock(&h->mutex);
	return rc ? fail_bool(rc) : true;
}

xs_transaction_t xs_transaction_start(struct xs_handle *h)
{
	xs_transaction_t t = XBT_NULL;

	pthread_mutex_lock(&h->mutex);
	if (h->ntx == h->captx) {
		unsigned int cap = h->captx ? 2 * h->captx : 8;
		uint32_t *bigger = realloc(h->tx, cap * sizeof(*bigger));

		if (!bigger)
			goto out;
		h->tx = bigger;
		h->captx = cap;
	}
	t = h->next_tx++;
	if (h->next_tx == XBT_NULL)
		h->next_tx = 1;
	h->tx[h->ntx++] = t;
out:
	pthread_mutex_unlock(&h->mutex);
	return t;
}

bool xs_transaction_end(struct xs_handle *h, xs_transaction_t t, bool abort)
{
	bool found = false;

	(void)abort;   /* changes were made at once: see README */
	pthread_mutex_lock(&h->mutex);
	for (unsigned int i = 0; i < h->ntx; i++) {
		if (h->tx[i] == t) {
			h->tx[i] = h->tx[--h->ntx];
			found = true;
			break;
		}
	}
	pthread_mutex_unlock(&h->mutex);
	return found ? true : fail_bool(-ENOENT);
}

/* Domain management: only dom0 may, as with xenstored. */
static bool special_event(struct xs_handle *h, const char *special)
{
	if (h->env.domid != 0)
		return fail_bool(-EACCES);
	lock(h, true);
	simx_store_fire_special_locked(&h->env, special);
	unlock(h);
	return true;
}

bool xs_introduce_domain(struct xs_handle *h, unsigned int domid, unsigned long mfn,
			 unsigned int eventchn)
{
	(void)mfn;
	(void)eventchn;
	if (domid == 0 || domid >= SIMX_DOMID_LIMIT)
		return fail_bool(-EINVAL);
	return special_event(h, "@introduceDomain");
}

bool xs_release_domain(struct xs_handle *h, unsigned int domid)
{
	if (domid >= SIMX_DOMID_LIMIT)
		return fail_bool(-EINVAL);
	return special_event(h, "@releaseDomain");
}

bool xs_resume_domain(struct xs_handle *h, unsigned int domid)
{
	if (h->env.domid != 0)
		return fail_bool(-EACCES);
	return simx_domain_exists(&h->env, domid) ? true : fail_bool(-ESRCH);
}

bool xs_set_target(struct xs_handle *h, unsigned int domid, unsigned int target)
{
	(void)h;
	(void)domid;
	(void)target;
	return fail_bool(-ENOSYS);
}

char *xs_get_domain_path(struct xs_handle *h, unsigned int domid)
{
	char *path = NULL;

	(void)h;
	if (asprintf(&path, "/local/domain/%u", domid) < 0)
		return NULL;
	return path;
}

bool xs_path_is_subpath(const char *parent, const char *child)
{
	size_t lp = strlen(parent), lc = strlen(child);

	return lc >= lp && !memcmp(parent, child, lp) && (lc == lp || child[lp] == '/');
}

bool xs_is_domain_introduced(struct xs_handle *h, unsigned int domid)
{
	return simx_domain_exists(&h->env, domid);
}

char *xs_control_command(struct xs_handle *h, const char *cmd, void *data, unsigned int len)
{
	(void)h;
	(void)cmd;
	(void)data;
	(void)len;
	return fail_ptr(-ENOSYS);
}

char *xs_debug_command(struct xs_handle *h, const char *cmd, void *data, unsigned int len)
{
	return xs_control_command(h, cmd, data, len);
}

int xs_suspend_evtchn_port(int domid)
{
	(void)domid;
	errno = ENOSYS;
	return -1;
}

/* The daemon's paths, as the real library reports them; nothing listens there. */
const char *xs_daemon_rundir(void)
{
	const char *s = getenv("XENSTORED_RUNDIR");

	return s ? s : "/var/run/xenstored";
}

const char *xs_daemon_socket(void)
{
	const char *s = getenv("XENSTORED_PATH");

	return s ? s : "/var/run/xenstored/socket";
}

const char *xs_daemon_socket_ro(void)
{
	return xs_daemon_socket();
}

bool xs_write_all(int fd, const void *data, unsigned int len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		p += n;
		len -= (unsigned int)n;
	}
	return true;
}

bool xs_strings_to_perms(struct xs_permissions *perms, unsigned int num, const char *strings)
{
	const char *p = strings;

	for (unsigned int i = 0; i < num; i++, p += strlen(p) + 1) {
		char *end;
		unsigned long id;

		switch (*p) {
		case 'n': perms[i].perms = XS_PERM_NONE; break;
		case 'r': perms[i].perms = XS_PERM_READ; break;
		case 'w': perms[i].perms = XS_PERM_WRITE; break;
		case 'b': perms[i].perms = XS_PERM_READ | XS_PERM_WRITE; break;
		default:
			errno = EINVAL;
			return false;
		}
		id = strtoul(p + 1, &end, 0);
		if (end == p + 1 || *end) {
			errno = EINVAL;
			return false;
		}
		perms[i].id = (unsigned int)id;
	}
	return true;
}
