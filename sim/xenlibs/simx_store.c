/*
 * The simulated xenstore's tree, permissions and watch firing (a
 * simulation for tests, not Xen; see simx_store.h and README).
 *
 * Node /a/b is the directory store/a/b; its value is the file .value in it
 * and its permissions the file .perms ("n0 r7").  Node names cannot contain
 * '.', so those two never clash with a child.  A node without .perms
 * inherits its parent's, and one without .value has an empty value, so
 * that a test playing a hostile guest can create nodes with mkdir alone.
 */
#include "simx_store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NODE_PATH_SIZE (SIMX_PATH_SIZE + 16)

static const char node_chars[] =
	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-/_@";

int simx_store_canon(unsigned int domid, const char *path, bool special_ok,
		     char abs[SIMX_PATH_SIZE], bool *relative)
{
	size_t len;
	int n;

	if (!path || !*path)
		return -EINVAL;
	len = strlen(path);
	if (relative)
		*relative = false;
	if (path[0] == '@') {
		if (!special_ok || len >= SIMX_PATH_SIZE ||
		    strspn(path, node_chars) != len)
			return -EINVAL;
		memcpy(abs, path, len + 1);
		return 0;
	}
	if (path[0] == '/') {
		if (len > XENSTORE_ABS_PATH_MAX)
			return -EINVAL;
		memcpy(abs, path, len + 1);
	} else {
		if (len > XENSTORE_REL_PATH_MAX)
			return -EINVAL;
		n = snprintf(abs, SIMX_PATH_SIZE, "/local/domain/%u/%s", domid, path);
		if (n < 0 || n >= SIMX_PATH_SIZE)
			return -EINVAL;
		if (relative)
			*relative = true;
	}
	len = strlen(abs);
	if (strspn(abs, node_chars) != len || strstr(abs, "//") ||
	    (len > 1 && abs[len - 1] == '/'))
		return -EINVAL;
	return 0;
}

int simx_perms_parse(const char *text, struct simx_perms *perms)
{
	const char *p = text;

	perms->num = 0;
	for (;;) {
		unsigned int mask;
		unsigned long id;
		char *end;

		while (*p == ' ' || *p == '\n' || *p == '\t')
			p++;
		if (!*p)
			break;
		switch (*p) {
		case 'n': mask = XS_PERM_NONE; break;
		case 'r': mask = XS_PERM_READ; break;
		case 'w': mask = XS_PERM_WRITE; break;
		case 'b': mask = XS_PERM_READ | XS_PERM_WRITE; break;
		default: return -EINVAL;
		}
		if (p[1] < '0' || p[1] > '9')
			return -EINVAL;
		id = strtoul(p + 1, &end, 10);
		if (id >= SIMX_DOMID_LIMIT || perms->num == SIMX_PERMS_MAX)
			return -EINVAL;
		perms->p[perms->num].id = (unsigned int)id;
		perms->p[perms->num].perms = mask;
		perms->num++;
		p = end;
	}
	return perms->num ? 0 : -EINVAL;
}

int simx_perms_format(const struct simx_perms *perms, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < perms->num; i++) {
		static const char letters[] = "nrwb";
		unsigned int m = perms->p[i].perms & (XS_PERM_READ | XS_PERM_WRITE);
		int n = snprintf(buf + used, size - used, "%s%c%u", i ? " " : "",
				 letters[m], perms->p[i].id);

		if (n < 0 || (size_t)n >= size - used)
			return -E2BIG;
		used += (size_t)n;
	}
	return 0;
}

unsigned int simx_perms_for(const struct simx_perms *perms, unsigned int domid)
{
	const unsigned int all = XS_PERM_READ | XS_PERM_WRITE | XS_PERM_OWNER;

	if (domid == 0 || perms->p[0].id == domid)
		return all;
	for (unsigned int i = 1; i < perms->num; i++)
		if (perms->p[i].id == domid)
			return perms->p[i].perms & (XS_PERM_READ | XS_PERM_WRITE);
	return perms->p[0].perms & (XS_PERM_READ | XS_PERM_WRITE);
}

/* store/<abs>, or store for the root. */
static void node_dir(const char *abs, char out[NODE_PATH_SIZE])
{
	snprintf(out, NODE_PATH_SIZE, "store%s", strcmp(abs, "/") ? abs : "");
}

static void node_file(const char *abs, const char *file, char out[NODE_PATH_SIZE])
{
	snprintf(out, NODE_PATH_SIZE, "store%s/%s", strcmp(abs, "/") ? abs : "", file);
}

static bool node_exists(const struct simx_env *env, const char *abs)
{
	char path[NODE_PATH_SIZE];
	struct stat st;

	node_dir(abs, path);
	return fstatat(env->dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISDIR(st.st_mode);
}

/* Cuts the last component off @abs; false for the root. */
static bool to_parent(char *abs)
{
	char *slash = strrchr(abs, '/');

	if (!slash || !strcmp(abs, "/"))
		return false;
	if (slash == abs)
		slash[1] = '\0';
	else
		*slash = '\0';
	return true;
}

static void get_perms(const struct simx_env *env, const char *abs, struct simx_perms *perms)
{
	char path[NODE_PATH_SIZE], parent[SIMX_PATH_SIZE];
	char *text;

	node_file(abs, ".perms", path);
	if (simx_read_file(env->dirfd, path, 4096, &text, NULL) == 0) {
		int rc = simx_perms_parse(text, perms);

		free(text);
		if (!rc)
			return;
	}
	snprintf(parent, sizeof(parent), "%s", abs);
	if (to_parent(parent)) {
		get_perms(env, parent, perms);
		return;
	}
	/* The root: dom0's, nobody else's. */
	perms->num = 1;
	perms->p[0].id = 0;
	perms->p[0].perms = XS_PERM_NONE;
}

static int put_perms(const struct simx_env *env, const char *abs, const struct simx_perms *perms)
{
	char path[NODE_PATH_SIZE], text[SIMX_PERMS_MAX * 8 + 8];
	int rc = simx_perms_format(perms, text, sizeof(text));

	if (rc)
		return rc;
	node_file(abs, ".perms", path);
	return simx_write_file(env->dirfd, path, text, strlen(text));
}

static int put_value(const struct simx_env *env, const char *abs, const void *data, unsigned int len)
{
	char path[NODE_PATH_SIZE];

	node_file(abs, ".value", path);
	return simx_write_file(env->dirfd, path, data, len);
}

/*
 * The error for a node that is missing or that we may not access, as
 * xenstored reports it: ENOENT only to those who may read the nearest
 * existing ancestor, so that nobody learns what they cannot read.
 */
static int missing_errno(const struct simx_env *env, const char *abs)
{
	char anc[SIMX_PATH_SIZE];
	struct simx_perms perms;

	snprintf(anc, sizeof(anc), "%s", abs);
	while (to_parent(anc) && !node_exists(env, anc))
		;
	get_perms(env, anc, &perms);
	return (simx_perms_for(&perms, env->domid) & XS_PERM_READ) ? -ENOENT : -EACCES;
}

/* Checks that @abs exists and that we may do @need with it. */
static int access_node(const struct simx_env *env, const char *abs, unsigned int need,
		       struct simx_perms *perms)
{
	if (!node_exists(env, abs))
		return missing_errno(env, abs);
	get_perms(env, abs, perms);
	if ((simx_perms_for(perms, env->domid) & need) != need)
		return -EACCES;
	return 0;
}

static bool is_child(const char *child, const char *parent)
{
	size_t len = strlen(parent);

	if (!strcmp(parent, "/"))
		return child[0] == '/';
	return !strncmp(child, parent, len) && (child[len] == '/' || child[len] == '\0');
}

/* One watcher's registration file, parsed. */
struct watcher_view {
	unsigned int domid;
	char *text;          /* the file, cut into lines */
};

/* Posts one event to a watcher; a full mailbox gets the overflow flag. */
static void post_event(const struct simx_env *env, const char *name, uint64_t wid,
		       const char *path)
{
	char buf[sizeof(struct simx_watch_rec) + SIMX_PATH_SIZE];
	struct simx_watch_rec rec = { .len = (uint32_t)strlen(path), .wid = wid };
	char fifo[64], flag[64];
	int rc, fd;

	memcpy(buf, &rec, sizeof(rec));
	memcpy(buf + sizeof(rec), path, rec.len);
	snprintf(fifo, sizeof(fifo), "watchers/%s/fifo", name);
	rc = simx_mailbox_post(env->dirfd, fifo, buf, sizeof(rec) + rec.len);
	if (rc != -EAGAIN)
		return;
	/*
	 * The flag first, then a record saying so: either the record gets in,
	 * or the mailbox is still full and its owner, which looks at the flag
	 * whenever it has emptied the mailbox, has not emptied it yet.
	 */
	snprintf(flag, sizeof(flag), "watchers/%s/overflow", name);
	fd = openat(env->dirfd, flag, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	rec.len = 0;
	rec.wid = SIMX_WATCH_OVERFLOW;
	simx_mailbox_post(env->dirfd, fifo, &rec, sizeof(rec));
}

/*
 * Sends the event for a change of @path to every watch that matches it:
 * watches on @path or an ancestor get @path; when @path was removed,
 * watches below it get their own path.  Watchers in domains that may not
 * read the node (by @perms, before the change) get nothing; special events
 * (@perms NULL) go to dom0's watchers only.  Watchers whose process has
 * gone are removed on the way.
 */
static void fire(const struct simx_env *env, const char *path, const struct simx_perms *perms,
		 bool removal)
{
	int fd = openat(env->dirfd, "watchers", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		char file[64], *text, *line, *save = NULL;
		unsigned int domid;
		bool checked = false;

		if (e->d_name[0] == '.' || strlen(e->d_name) > 32)
			continue;
		snprintf(file, sizeof(file), "watchers/%s/watches", e->d_name);
		if (simx_read_file(env->dirfd, file, 1 << 20, &text, NULL))
			continue;
		line = strtok_r(text, "\n", &save);
		if (!line || sscanf(line, "domid %u", &domid) != 1) {
			free(text);
			continue;
		}
		if ((perms && domid != 0 && !(simx_perms_for(perms, domid) & XS_PERM_READ)) ||
		    (!perms && domid != 0)) {
			free(text);
			continue;
		}
		while ((line = strtok_r(NULL, "\n", &save))) {
			char *sp = strchr(line, ' ');
			const char *wpath, *epath;
			uint64_t wid;

			if (!sp)
				continue;
			*sp = '\0';
			wid = strtoull(line, NULL, 10);
			wpath = sp + 1;
			if (!perms)
				epath = strcmp(wpath, path) ? NULL : path;
			else if (wpath[0] == '@')
				epath = NULL;
			else if (is_child(path, wpath))
				epath = path;
			else if (removal && is_child(wpath, path))
				epath = wpath;
			else
				epath = NULL;
			if (!epath || !wid)
				continue;
			if (!checked) {
				snprintf(file, sizeof(file), "watchers/%s/fifo", e->d_name);
				checked = true;
				if (!simx_mailbox_alive(env->dirfd, file)) {
					snprintf(file, sizeof(file), "watchers/%s", e->d_name);
					simx_rm_tree(env->dirfd, file);
					break;
				}
			}
			post_event(env, e->d_name, wid, epath);
		}
		free(text);
	}
	closedir(d);
}

void simx_store_fire_special_locked(const struct simx_env *env, const char *special)
{
	fire(env, special, NULL, false);
}

static int make_node(const struct simx_env *env, const char *abs, const struct simx_perms *perms)
{
	char path[NODE_PATH_SIZE];
	int rc;

	node_dir(abs, path);
	if (mkdirat(env->dirfd, path, 0700) < 0 && errno != EEXIST)
		return -errno;
	rc = put_perms(env, abs, perms);
	if (!rc)
		rc = put_value(env, abs, "", 0);
	return rc;
}

/*
 * Makes sure that @abs exists and that we may write it: an existing node
 * needs write permission on itself, a new one on its nearest existing
 * ancestor.  New nodes (and missing ancestors) inherit their parent's
 * permissions, except that what an unprivileged domain creates is its own.
 * *@created tells whether @abs was made.
 */
static int writable_node(const struct simx_env *env, const char *abs, struct simx_perms *perms,
			 bool *created)
{
	char anc[SIMX_PATH_SIZE];
	size_t len;
	int rc;

	*created = false;
	if (node_exists(env, abs))
		return access_node(env, abs, XS_PERM_WRITE, perms);
	snprintf(anc, sizeof(anc), "%s", abs);
	while (to_parent(anc) && !node_exists(env, anc))
		;
	get_perms(env, anc, perms);
	if (!(simx_perms_for(perms, env->domid) & XS_PERM_WRITE))
		return -EACCES;
	if (env->domid != 0)
		perms->p[0].id = env->domid;
	/* Create each missing component, top down. */
	len = strlen(anc);
	for (;;) {
		const char *next = strchr(abs + len + 1, '/');
		char sub[SIMX_PATH_SIZE];

		len = next ? (size_t)(next - abs) : strlen(abs);
		memcpy(sub, abs, len);
		sub[len] = '\0';
		rc = make_node(env, sub, perms);
		if (rc)
			return rc;
		if (!next)
			break;
	}
	*created = true;
	return 0;
}

int simx_store_init_locked(const struct simx_env *env)
{
	static const char *const nodes[][3] = {
		{ "/", "n0", "" },
		{ "/local", "n0", "" },
		{ "/local/domain", "n0", "" },
		{ "/local/domain/0", "n0", "" },
		{ "/local/domain/0/name", "n0", "Domain-0" },
		{ "/local/domain/0/domid", "n0", "0" },
	};
	int rc = simx_mkdir(env->dirfd, "store");

	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]) && !rc; i++) {
		struct simx_perms perms;

		simx_perms_parse(nodes[i][1], &perms);
		rc = make_node(env, nodes[i][0], &perms);
		if (!rc)
			rc = put_value(env, nodes[i][0], nodes[i][2], (unsigned int)strlen(nodes[i][2]));
	}
	return rc;
}

int simx_store_read_locked(const struct simx_env *env, const char *abs,
			   char **value, unsigned int *len)
{
	char path[NODE_PATH_SIZE];
	struct simx_perms perms;
	size_t got;
	int rc;

	if (abs[0] == '@')
		return -EINVAL;
	rc = access_node(env, abs, XS_PERM_READ, &perms);
	if (rc)
		return rc;
	node_file(abs, ".value", path);
	rc = simx_read_file(env->dirfd, path, SIMX_VALUE_MAX, value, &got);
	if (rc == -ENOENT) {
		*value = calloc(1, 1);
		if (!*value)
			return -ENOMEM;
		got = 0;
		rc = 0;
	}
	if (!rc && len)
		*len = (unsigned int)got;
	return rc;
}

int simx_store_write_locked(const struct simx_env *env, const char *abs,
			    const void *data, unsigned int len)
{
	struct simx_perms perms;
	bool created;
	int rc;

	if (abs[0] == '@')
		return -EINVAL;
	rc = writable_node(env, abs, &perms, &created);
	if (!rc)
		rc = put_value(env, abs, data, len);
	if (!rc)
		fire(env, abs, &perms, false);
	return rc;
}

int simx_store_mkdir_locked(const struct simx_env *env, const char *abs)
{
	struct simx_perms perms;
	bool created;
	int rc;

	if (abs[0] == '@')
		return -EINVAL;
	rc = writable_node(env, abs, &perms, &created);
	if (!rc && created)
		fire(env, abs, &perms, false);
	return rc;
}

int simx_store_rm_locked(const struct simx_env *env, const char *abs)
{
	char path[NODE_PATH_SIZE], parent[SIMX_PATH_SIZE];
	struct simx_perms perms;
	int rc;

	if (abs[0] == '@' || !strcmp(abs, "/"))
		return -EINVAL;
	if (!node_exists(env, abs)) {
		/* Not an error, as long as the parent exists. */
		snprintf(parent, sizeof(parent), "%s", abs);
		to_parent(parent);
		return node_exists(env, parent) ? 0 : missing_errno(env, abs);
	}
	rc = access_node(env, abs, XS_PERM_WRITE, &perms);
	if (rc)
		return rc;
	node_dir(abs, path);
	rc = simx_rm_tree(env->dirfd, path);
	if (!rc)
		fire(env, abs, &perms, true);
	return rc;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int simx_store_directory_locked(const struct simx_env *env, const char *abs,
				char ***names, unsigned int *num)
{
	char path[NODE_PATH_SIZE];
	struct simx_perms perms;
	struct dirent *e;
	size_t count = 0, bytes = 0, cap = 16;
	char **list, **block, *str;
	DIR *d;
	int fd, rc;

	if (abs[0] == '@')
		return -EINVAL;
	rc = access_node(env, abs, XS_PERM_READ, &perms);
	if (rc)
		return rc;
	node_dir(abs, path);
	fd = openat(env->dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	list = malloc(cap * sizeof(*list));
	rc = list ? 0 : -ENOMEM;
	while (!rc && (e = readdir(d))) {
		struct stat st;

		if (e->d_name[0] == '.' || strspn(e->d_name, node_chars) != strlen(e->d_name))
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISDIR(st.st_mode))
			continue;
		if (count == cap) {
			char **bigger = realloc(list, 2 * cap * sizeof(*list));

			if (!bigger) {
				rc = -ENOMEM;
				break;
			}
			list = bigger;
			cap *= 2;
		}
		list[count] = strdup(e->d_name);
		if (!list[count]) {
			rc = -ENOMEM;
			break;
		}
		bytes += strlen(list[count]) + 1;
		count++;
	}
	closedir(d);
	if (!rc) {
		qsort(list, count, sizeof(*list), cmp_names);
		block = malloc((count + 1) * sizeof(char *) + bytes);
		if (block) {
			str = (char *)(block + count + 1);
			for (size_t i = 0; i < count; i++) {
				size_t n = strlen(list[i]) + 1;

				block[i] = memcpy(str, list[i], n);
				str += n;
			}
			block[count] = NULL;
			*names = block;
			*num = (unsigned int)count;
		} else {
			rc = -ENOMEM;
		}
	}
	for (size_t i = 0; list && i < count; i++)
		free(list[i]);
	free(list);
	return rc;
}

int simx_store_get_perms_locked(const struct simx_env *env, const char *abs,
				struct simx_perms *perms)
{
	if (abs[0] == '@')
		return -EINVAL;
	return access_node(env, abs, XS_PERM_READ, perms);
}

int simx_store_set_perms_locked(const struct simx_env *env, const char *abs,
				const struct simx_perms *perms)
{
	struct simx_perms old;
	int rc;

	if (abs[0] == '@' || perms->num == 0)
		return -EINVAL;
	rc = access_node(env, abs, XS_PERM_WRITE | XS_PERM_OWNER, &old);
	if (rc)
		return rc;
	/* Unprivileged domains may not give their nodes away. */
	if (env->domid != 0 && perms->p[0].id != old.p[0].id)
		return -EPERM;
	rc = put_perms(env, abs, perms);
	if (!rc)
		fire(env, abs, &old, false);
	return rc;
}

/* Removes, below @abs, every node that @domid owns by an explicit .perms. */
static void forget_owned(const struct simx_env *env, const char *abs, unsigned int domid)
{
	char path[NODE_PATH_SIZE], *text;
	struct dirent *e;
	DIR *d;
	int fd;

	node_dir(abs, path);
	fd = openat(env->dirfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		char child[SIMX_PATH_SIZE];
		struct simx_perms perms;
		bool owned = false;
		int n;

		if (e->d_name[0] == '.')
			continue;
		n = snprintf(child, sizeof(child), "%s/%s", strcmp(abs, "/") ? abs : "", e->d_name);
		if (n < 0 || n >= (int)sizeof(child) || !node_exists(env, child))
			continue;
		node_file(child, ".perms", path);
		if (simx_read_file(env->dirfd, path, 4096, &text, NULL) == 0) {
			owned = simx_perms_parse(text, &perms) == 0 && perms.p[0].id == domid;
			free(text);
		}
		if (owned) {
			node_dir(child, path);
			if (simx_rm_tree(env->dirfd, path) == 0)
				fire(env, child, &perms, true);
		} else {
			forget_owned(env, child, domid);
		}
	}
	closedir(d);
}

int simx_store_forget_domain_locked(const struct simx_env *env, unsigned int domid)
{
	struct simx_env dom0 = *env;
	char home[40];
	int rc;

	dom0.domid = 0;
	snprintf(home, sizeof(home), "/local/domain/%u", domid);
	rc = simx_store_rm_locked(&dom0, home);
	if (domid != 0)
		forget_owned(&dom0, "/", domid);
	return rc;
}
