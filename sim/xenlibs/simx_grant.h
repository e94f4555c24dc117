/*
 * The simulated grant tables (a simulation for tests, not Xen).
 *
 * A page that domain D grants is the file grants/D/<ref> (SIMX_PAGE_SIZE
 * bytes), mapped MAP_SHARED by the granting process and by every process
 * that maps the grant, so that they share the page as two domains would.
 * grants/D/<ref>.meta says to whom and how: "<grantee domid> <1 if
 * writable, else 0>".
 *
 * A grant lives as long as the granting process maps its page, as with
 * Linux's gntalloc: the granter takes a shared flock() on the file it maps
 * and closes the descriptor, so that the lock lasts exactly as long as the
 * mapping (munmap, exit or kill).  A grant whose lock anybody can take
 * exclusively has ended; its files are removed when next found, and its
 * ref is reused.
 */
#ifndef SIMX_GRANT_H
#define SIMX_GRANT_H

#include <stdbool.h>
#include <stdint.h>

#include "simx.h"

/* Linux keeps refs 0..7 for itself; so do we. */
#define SIMX_GRANT_FIRST 8U
#define SIMX_GRANT_LIMIT 32768U

/*
 * Grants a new page of env->domid to @grantee: returns a descriptor of it,
 * holding the grant's lock, for the caller to map and then close, and sets
 * *@ref.  -ENOSPC when every ref is in use.
 */
int simx_grant_alloc_locked(const struct simx_env *env, unsigned int grantee, bool writable,
			    uint32_t *ref);

/*
 * Opens the page of grant @ref of @granter for env->domid to map with
 * @prot.  -EINVAL when the ref was never granted, has ended, was granted
 * to another domain, or is read-only and @prot asks for writing.
 */
int simx_grant_open_locked(const struct simx_env *env, unsigned int granter, uint32_t ref,
			   int prot);

/* Ends grant @ref of env->domid: nobody can map it from now on. */
void simx_grant_end_locked(const struct simx_env *env, uint32_t ref);

/* Ends every grant of @domid (the domain is being destroyed). */
void simx_grant_end_domain_locked(const struct simx_env *env, unsigned int domid);

#endif
