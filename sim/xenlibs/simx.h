/*
 * The core of the simulated Xen toolstack (a simulation for tests, not Xen).
 *
 * libxenstore.so.4, libxenevtchn.so.1 and libxengnttab.so.1 under
 * build/sim/xenlibs/ are drop-in replacements of Debian's Xen 4.17 libraries
 * that keep their state in a directory instead of talking to /dev/xen: every
 * process that opens one of them with the same XFLOW_SIMXEN_DIR is a domain
 * (XFLOW_SIMXEN_DOMID) of the same simulated host.  sim/xenlibs/README
 * describes the layout of that directory and the limits of the simulation.
 *
 * This header is the part every library shares: the state directory, the
 * lock that serialises every update of it, handle ids and the mailboxes
 * (named FIFOs) through which one process wakes another.  Internal functions
 * return 0 or a negative errno; the public Xen APIs turn that into errno.
 */
#ifndef SIMX_H
#define SIMX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SIMX_PAGE_SIZE 4096
/* Domain ids 0..DOMID_FIRST_RESERVED-1 name domains, as in Xen. */
#define SIMX_DOMID_LIMIT 0x7FF0U
#define SIMX_DOMID_SELF 0x7FF0U

/* The simulated host as one opened handle sees it. */
struct simx_env {
	int dirfd;            /* the state directory */
	int lockfd;           /* its lock file, opened by this handle */
	unsigned int domid;   /* the domain the calling process belongs to */
	pid_t pid;            /* the process that opened the handle */
};

/*
 * Opens the state directory named by XFLOW_SIMXEN_DIR as domain
 * XFLOW_SIMXEN_DOMID (default 0), creating the directory and its initial
 * layout (dom0 and its xenstore nodes) when it is new.  @lib names the
 * calling library in the one message printed to stderr when the
 * environment is wrong.  Returns 0, -ENOENT when XFLOW_SIMXEN_DIR is unset,
 * -EINVAL for a bad domain id, -ESRCH when that domain does not exist.
 */
int simx_env_open(struct simx_env *env, const char *lib);

/* The same for an explicit directory and domain; prints nothing. */
int simx_env_open_dir(struct simx_env *env, const char *dir, unsigned int domid);

/* Closes what simx_env_open() opened.  Safe on a zeroed-out env. */
void simx_env_close(struct simx_env *env);

/* True when the handle was opened by this process (not inherited by fork). */
bool simx_env_owned(const struct simx_env *env);

/*
 * The state lock, an flock() on the state directory's lock file: exclusive
 * for every update, shared for reads that need a consistent view.  Not
 * recursive; callers of the *_locked functions hold it.
 */
void simx_lock(const struct simx_env *env, bool exclusive);
void simx_unlock(const struct simx_env *env);

/* A random 64-bit id for a handle; never 0. */
uint64_t simx_new_id(void);

/* True when domain @domid exists (has been created and not destroyed). */
bool simx_domain_exists(const struct simx_env *env, unsigned int domid);

/*
 * Files under the state directory.  simx_write_file() replaces @path
 * atomically (a temporary file renamed over it).  simx_read_file() returns a
 * malloc'd copy with a NUL after the @len bytes read (at most @max).
 */
int simx_write_file(int dirfd, const char *path, const void *data, size_t len);
int simx_read_file(int dirfd, const char *path, size_t max, char **data, size_t *len);

/* Removes the file or directory tree @path; -ENOENT when it is missing. */
int simx_rm_tree(int dirfd, const char *path);

/* Creates directory @path (mode 0700 as the state is private); EEXIST is ok. */
int simx_mkdir(int dirfd, const char *path);

/*
 * Mailboxes: a named FIFO that its owner holds open read-write, and that
 * others open to write whole records of at most PIPE_BUF bytes (so records
 * of concurrent writers never interleave).  A mailbox whose owner has gone
 * (closed or died) has no reader left.
 *
 * simx_mailbox_make() creates the FIFO at @tmp, opens it non-blocking, and
 * returns the fd (or -errno); the caller renames it into place once it is
 * ready, so that nobody finds a FIFO without its reader.
 * simx_mailbox_post() returns 0, -EAGAIN when the FIFO is full, or -errno
 * (-ENOENT when it is gone).  Writers open it read-write, so that a reader
 * exiting at the wrong moment can never raise SIGPIPE in the writer.
 * simx_mailbox_alive() tells whether anybody still reads it.
 */
int simx_mailbox_make(int dirfd, const char *tmp);
int simx_mailbox_post(int dirfd, const char *path, const void *rec, size_t len);
bool simx_mailbox_alive(int dirfd, const char *path);

/* A name for a temporary file or directory under tmp/ (size >= 32). */
void simx_tmp_name(char *buf, size_t size, const char *kind);

#endif
