/*
 * libxengnttab.so.1 of the simulated Xen toolstack: Debian's Xen 4.17
 * grant table API, both halves (xengnttab_* maps other domains' grants,
 * xengntshr_* grants our pages), over the simulated grant files (a
 * simulation for tests, not Xen; see simx_grant.h and README).
 *
 * Pages are mapped into one contiguous range: the range is reserved first
 * (PROT_NONE) and each page's file mapped over it with MAP_FIXED.  A
 * mapping made with an unmap notification keeps its page's file open, so
 * that the notification can clear its byte through the file even when the
 * caller has already munmap()ed the range, as Linux clears it in the page.
 */
#include <xengnttab.h>

#include "simx.h"
#include "simx_evtchn.h"
#include "simx_grant.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define NONE UINT32_MAX   /* -1: no notify offset, no notify port */

struct gnt_map {
	struct gnt_map *next;
	char *addr;
	uint32_t count;
	uint32_t *refs;          /* what we granted (sharing side), else NULL */
	int notify_fd;           /* the first page's file, or -1 */
	uint32_t notify_offset;
	uint32_t notify_port;
};

/* xengnttab_handle and xengntshr_handle are both this. */
struct xengntdev_handle {
	struct simx_env env;
	pthread_mutex_t mutex;          /* everything below, and env.lockfd */
	struct simx_evtchn_cache cache;
	struct gnt_map *maps;
};

static void *fail_ptr(int rc)
{
	errno = -rc;
	return NULL;
}

static struct xengntdev_handle *open_handle(const char *lib)
{
	struct xengntdev_handle *h = calloc(1, sizeof(*h));
	int rc;

	if (!h)
		return NULL;
	rc = simx_env_open(&h->env, lib);
	if (rc) {
		free(h);
		return fail_ptr(rc);
	}
	pthread_mutex_init(&h->mutex, NULL);
	return h;
}

/* The unmap notification: clear the byte, then send the event, as Linux does. */
static void notify_unmap(struct xengntdev_handle *h, struct gnt_map *m)
{
	static const char zero;

	if (m->notify_fd >= 0 && m->notify_offset != NONE)
		(void)!pwrite(m->notify_fd, &zero, 1, m->notify_offset);
	if (m->notify_port != NONE)
		simx_evtchn_send(&h->env, &h->cache, m->notify_port);
}

static void free_map(struct gnt_map *m)
{
	if (m->notify_fd >= 0)
		close(m->notify_fd);
	free(m->refs);
	free(m);
}

/* Ends what we granted in @m.  Called with the mutex held. */
static void end_grants(struct xengntdev_handle *h, struct gnt_map *m)
{
	if (!m->refs)
		return;
	simx_lock(&h->env, true);
	for (uint32_t i = 0; i < m->count; i++)
		simx_grant_end_locked(&h->env, m->refs[i]);
	simx_unlock(&h->env);
}

/*
 * Remembers @m.  Mappings the caller has since munmap()ed, whose range it
 * overlaps, are forgotten, their notification sent late rather than never.
 */
static void track(struct xengntdev_handle *h, struct gnt_map *m)
{
	struct gnt_map **pp = &h->maps;
	char *end = m->addr + (size_t)m->count * SIMX_PAGE_SIZE;

	while (*pp) {
		struct gnt_map *o = *pp;
		char *oend = o->addr + (size_t)o->count * SIMX_PAGE_SIZE;

		if (o->addr < end && m->addr < oend) {
			*pp = o->next;
			notify_unmap(h, o);
			free_map(o);
		} else {
			pp = &o->next;
		}
	}
	m->next = h->maps;
	h->maps = m;
}

static struct gnt_map *untrack(struct xengntdev_handle *h, void *addr)
{
	for (struct gnt_map **pp = &h->maps; *pp; pp = &(*pp)->next) {
		struct gnt_map *m = *pp;

		if (m->addr == addr) {
			*pp = m->next;
			return m;
		}
	}
	return NULL;
}

static int close_handle(struct xengntdev_handle *h)
{
	if (!h)
		return 0;
	while (h->maps) {
		struct gnt_map *m = h->maps;

		h->maps = m->next;
		/* Closing the device notifies; the pages stay mapped. */
		if (simx_env_owned(&h->env))
			notify_unmap(h, m);
		free_map(m);
	}
	simx_evtchn_cache_fini(&h->cache);
	simx_env_close(&h->env);
	pthread_mutex_destroy(&h->mutex);
	free(h);
	return 0;
}

static int check_notify(uint32_t notify_offset, int prot)
{
	if (notify_offset != NONE && (notify_offset >= SIMX_PAGE_SIZE || !(prot & PROT_WRITE)))
		return -EINVAL;
	return 0;
}

/* A new mapping record and a reserved range of @count pages for it. */
static struct gnt_map *new_map(uint32_t count, uint32_t notify_offset, uint32_t notify_port)
{
	struct gnt_map *m = calloc(1, sizeof(*m));
	void *va = mmap(NULL, (size_t)count * SIMX_PAGE_SIZE, PROT_NONE,
			MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	if (!m || va == MAP_FAILED) {
		if (va != MAP_FAILED)
			munmap(va, (size_t)count * SIMX_PAGE_SIZE);
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	m->addr = va;
	m->count = count;
	m->notify_fd = -1;
	m->notify_offset = notify_offset;
	m->notify_port = notify_port;
	return m;
}

/* Keeps @m, or undoes it when @rc says it failed; releases the mutex. */
static void *finish(struct xengntdev_handle *h, struct gnt_map *m, int rc)
{
	void *va = m->addr;

	if (rc) {
		munmap(va, (size_t)m->count * SIMX_PAGE_SIZE);
		free_map(m);
	} else {
		track(h, m);
	}
	pthread_mutex_unlock(&h->mutex);
	return rc ? fail_ptr(rc) : va;
}

/* Grants: the sharing half. */

static void *share(struct xengntdev_handle *h, uint32_t domid, uint32_t count, uint32_t *refs,
		   bool writable, uint32_t notify_offset, uint32_t notify_port)
{
	struct gnt_map *m;
	char *va;
	uint32_t i;
	int rc = 0;

	if (count == 0 || !refs || domid >= SIMX_DOMID_LIMIT)
		return fail_ptr(-EINVAL);
	rc = check_notify(notify_offset, PROT_WRITE);
	if (rc)
		return fail_ptr(rc);
	m = new_map(count, notify_offset, notify_port);
	if (!m)
		return NULL;
	va = m->addr;
	m->refs = calloc(count, sizeof(*m->refs));
	if (!m->refs) {
		munmap(va, (size_t)count * SIMX_PAGE_SIZE);
		free_map(m);
		return fail_ptr(-ENOMEM);
	}
	pthread_mutex_lock(&h->mutex);
	simx_lock(&h->env, true);
	for (i = 0; i < count; i++) {
		int fd = simx_grant_alloc_locked(&h->env, domid, writable, &refs[i]);

		if (fd < 0) {
			rc = fd;
			break;
		}
		m->refs[i] = refs[i];
		if (mmap(va + (size_t)i * SIMX_PAGE_SIZE, SIMX_PAGE_SIZE, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
			rc = -errno;
			close(fd);
			i++;
			break;
		}
		/* The file keeps the grant's lock while the page is mapped. */
		if (i == 0 && (notify_offset != NONE || notify_port != NONE))
			m->notify_fd = fd;
		else
			close(fd);
	}
	for (uint32_t j = 0; rc && j < i; j++)
		simx_grant_end_locked(&h->env, m->refs[j]);
	simx_unlock(&h->env);
	return finish(h, m, rc);
}

xengntshr_handle *xengntshr_open(struct xentoollog_logger *logger, unsigned open_flags)
{
	(void)logger;
	(void)open_flags;
	return open_handle("libxengnttab (xengntshr)");
}

int xengntshr_close(xengntshr_handle *xgs)
{
	return close_handle(xgs);
}

int xengntshr_fd(xengntshr_handle *xgs)
{
	return xgs->env.dirfd;
}

void *xengntshr_share_pages(xengntshr_handle *xgs, uint32_t domid, int count, uint32_t *refs,
			    int writable)
{
	if (count <= 0)
		return fail_ptr(-EINVAL);
	return share(xgs, domid, (uint32_t)count, refs, writable != 0, NONE, NONE);
}

void *xengntshr_share_page_notify(xengntshr_handle *xgs, uint32_t domid, uint32_t *ref,
				  int writable, uint32_t notify_offset, evtchn_port_t notify_port)
{
	return share(xgs, domid, 1, ref, writable != 0, notify_offset, notify_port);
}

int xengntshr_unshare(xengntshr_handle *xgs, void *start_address, uint32_t count)
{
	struct gnt_map *m;
	int rc;

	pthread_mutex_lock(&xgs->mutex);
	m = untrack(xgs, start_address);
	if (m && m->count != count) {
		track(xgs, m);
		m = NULL;
	}
	if (m)
		notify_unmap(xgs, m);
	/* Unsharing is munmap(), as on Linux; a grant ends with its mapping. */
	rc = munmap(start_address, (size_t)count * SIMX_PAGE_SIZE);
	if (m) {
		end_grants(xgs, m);
		free_map(m);
	}
	pthread_mutex_unlock(&xgs->mutex);
	return rc;
}

/* Grants: the mapping half. */

static void *map(struct xengntdev_handle *h, uint32_t count, const uint32_t *domids,
		 uint32_t domid, const uint32_t *refs, int prot, uint32_t notify_offset,
		 uint32_t notify_port)
{
	struct gnt_map *m;
	char *va;
	int rc = 0;

	if (count == 0 || !refs || (prot & ~(PROT_READ | PROT_WRITE)))
		return fail_ptr(-EINVAL);
	rc = check_notify(notify_offset, prot);
	if (rc)
		return fail_ptr(rc);
	m = new_map(count, notify_offset, notify_port);
	if (!m)
		return NULL;
	va = m->addr;
	pthread_mutex_lock(&h->mutex);
	simx_lock(&h->env, true);
	for (uint32_t i = 0; i < count && !rc; i++) {
		int fd = simx_grant_open_locked(&h->env, domids ? domids[i] : domid, refs[i], prot);

		if (fd < 0) {
			rc = fd;
			break;
		}
		if (mmap(va + (size_t)i * SIMX_PAGE_SIZE, SIMX_PAGE_SIZE, prot,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
			rc = -errno;
		if (!rc && i == 0 && (notify_offset != NONE || notify_port != NONE))
			m->notify_fd = fd;
		else
			close(fd);
	}
	simx_unlock(&h->env);
	return finish(h, m, rc);
}

xengnttab_handle *xengnttab_open(struct xentoollog_logger *logger, unsigned open_flags)
{
	(void)logger;
	(void)open_flags;
	return open_handle("libxengnttab");
}

int xengnttab_close(xengnttab_handle *xgt)
{
	return close_handle(xgt);
}

int xengnttab_fd(xengnttab_handle *xgt)
{
	return xgt->env.dirfd;
}

void *xengnttab_map_grant_ref(xengnttab_handle *xgt, uint32_t domid, uint32_t ref, int prot)
{
	return map(xgt, 1, NULL, domid, &ref, prot, NONE, NONE);
}

void *xengnttab_map_grant_refs(xengnttab_handle *xgt, uint32_t count, uint32_t *domids,
			       uint32_t *refs, int prot)
{
	if (!domids)
		return fail_ptr(-EINVAL);
	return map(xgt, count, domids, 0, refs, prot, NONE, NONE);
}

void *xengnttab_map_domain_grant_refs(xengnttab_handle *xgt, uint32_t count, uint32_t domid,
				      uint32_t *refs, int prot)
{
	return map(xgt, count, NULL, domid, refs, prot, NONE, NONE);
}

void *xengnttab_map_grant_ref_notify(xengnttab_handle *xgt, uint32_t domid, uint32_t ref,
				     int prot, uint32_t notify_offset, evtchn_port_t notify_port)
{
	return map(xgt, 1, NULL, domid, &ref, prot, notify_offset, notify_port);
}

int xengnttab_unmap(xengnttab_handle *xgt, void *start_address, uint32_t count)
{
	struct gnt_map *m;
	int rc = 0;

	pthread_mutex_lock(&xgt->mutex);
	m = untrack(xgt, start_address);
	if (!m || m->count != count) {
		if (m)
			track(xgt, m);
		rc = -EINVAL;
	} else {
		notify_unmap(xgt, m);
		if (munmap(start_address, (size_t)count * SIMX_PAGE_SIZE) < 0)
			rc = -errno;
		free_map(m);
	}
	pthread_mutex_unlock(&xgt->mutex);
	if (rc) {
		errno = -rc;
		return -1;
	}
	return 0;
}

int xengnttab_set_max_grants(xengnttab_handle *xgt, uint32_t nr_grants)
{
	(void)xgt;
	(void)nr_grants;
	return 0;
}

int xengnttab_grant_copy(xengnttab_handle *xgt, uint32_t count,
			 xengnttab_grant_copy_segment_t *segs)
{
	(void)xgt;
	(void)count;
	(void)segs;
	errno = ENOSYS;
	return -1;
}

int xengnttab_dmabuf_exp_from_refs(xengnttab_handle *xgt, uint32_t domid, uint32_t flags,
				   uint32_t count, const uint32_t *refs, uint32_t *fd)
{
	(void)xgt;
	(void)domid;
	(void)flags;
	(void)count;
	(void)refs;
	(void)fd;
	errno = EOPNOTSUPP;
	return -1;
}

int xengnttab_dmabuf_exp_wait_released(xengnttab_handle *xgt, uint32_t fd, uint32_t wait_to_ms)
{
	(void)xgt;
	(void)fd;
	(void)wait_to_ms;
	errno = EOPNOTSUPP;
	return -1;
}

int xengnttab_dmabuf_imp_to_refs(xengnttab_handle *xgt, uint32_t domid, uint32_t fd,
				 uint32_t count, uint32_t *refs)
{
	(void)xgt;
	(void)domid;
	(void)fd;
	(void)count;
	(void)refs;
	errno = EOPNOTSUPP;
	return -1;
}

int xengnttab_dmabuf_imp_release(xengnttab_handle *xgt, uint32_t fd)
{
	(void)xgt;
	(void)fd;
	errno = EOPNOTSUPP;
	return -1;
}
