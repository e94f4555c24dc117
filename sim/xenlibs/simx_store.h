/*
 * The simulated xenstore (a simulation for tests, not Xen): a tree of
 * nodes kept as directories under store/ of the state directory, with the
 * permission rules and watch events of xenstored, evaluated by whichever
 * process makes a change.  README describes the layout.
 *
 * Paths given to the *_locked functions are canonical (simx_store_canon)
 * and the caller holds the state lock, exclusive for anything that changes
 * the tree.  They act as domain env->domid: domain 0 may do anything; other
 * domains get what the nodes' permissions grant them.
 */
#ifndef SIMX_STORE_H
#define SIMX_STORE_H

#include <stdbool.h>
#include <stdint.h>
#include <xenstore_lib.h>

#include "simx.h"

/* Room for a canonical path and its NUL. */
#define SIMX_PATH_SIZE (XENSTORE_ABS_PATH_MAX + 1)
#define SIMX_PERMS_MAX 64
/* A value is at most what fits in one xenstore message. */
#define SIMX_VALUE_MAX XENSTORE_PAYLOAD_MAX

struct simx_perms {
	unsigned int num;
	struct xs_permissions p[SIMX_PERMS_MAX];
};

/*
 * Checks @path as xenstored does (characters, no empty, doubled or
 * trailing slash, length) and makes it absolute: a relative path is under
 * /local/domain/<domid>.  Paths starting with '@' are accepted only when
 * @special_ok (watches).  Sets *@relative when given.  0 or -EINVAL.
 */
int simx_store_canon(unsigned int domid, const char *path, bool special_ok,
		     char abs[SIMX_PATH_SIZE], bool *relative);

/* "n0 r7" <-> perms; the first entry is the owner and everybody's default. */
int simx_perms_parse(const char *text, struct simx_perms *perms);
int simx_perms_format(const struct simx_perms *perms, char *buf, size_t size);

/* What domain @domid may do with a node of @perms (XS_PERM_READ|WRITE|OWNER). */
unsigned int simx_perms_for(const struct simx_perms *perms, unsigned int domid);

/* Creates the root and dom0's nodes in a new state directory. */
int simx_store_init_locked(const struct simx_env *env);

int simx_store_read_locked(const struct simx_env *env, const char *abs,
			   char **value, unsigned int *len);
int simx_store_write_locked(const struct simx_env *env, const char *abs,
			    const void *data, unsigned int len);
int simx_store_mkdir_locked(const struct simx_env *env, const char *abs);
int simx_store_rm_locked(const struct simx_env *env, const char *abs);
/* *@names is one malloc'd block: @num pointers followed by the names. */
int simx_store_directory_locked(const struct simx_env *env, const char *abs,
				char ***names, unsigned int *num);
int simx_store_get_perms_locked(const struct simx_env *env, const char *abs,
				struct simx_perms *perms);
int simx_store_set_perms_locked(const struct simx_env *env, const char *abs,
				const struct simx_perms *perms);

/* Fires the watches on @special ("@introduceDomain", "@releaseDomain"). */
void simx_store_fire_special_locked(const struct simx_env *env, const char *special);

/*
 * What xenstored does when domain @domid goes away: removes
 * /local/domain/<domid> and every node the domain owns, firing watches.
 * Acts as dom0 whatever env->domid is.
 */
int simx_store_forget_domain_locked(const struct simx_env *env, unsigned int domid);

/*
 * Watch events travel as records in the watching handle's mailbox,
 * watchers/<id>/fifo: this header, then @len bytes of the event's absolute
 * path.  @wid names the watch within its handle (watchers/<id>/watches
 * lists "<wid> <path>" per watch after a "domid <n>" line).  A record with
 * wid SIMX_WATCH_OVERFLOW says that a writer found the mailbox full and
 * created watchers/<id>/overflow instead of posting its events.
 */
struct simx_watch_rec {
	uint32_t len;
	uint32_t zero;
	uint64_t wid;
};
#define SIMX_WATCH_OVERFLOW 0

#endif
