/*
 * Built-in and plugin collectors.  See tui/registry.h.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "collectors/builtin.h"
#include "tui/registry.h"

void xft_registry_init(struct xft_registry *r)
{
	memset(r, 0, sizeof(*r));
	for (const struct xflow_collector_ops *const *c = xflow_collectors_builtin; *c; c++)
		xft_registry_add(r, *c, NULL, 0);
}

void xft_registry_fini(struct xft_registry *r)
{
	/* Plugins are closed last, after every instance of theirs is. */
	for (unsigned i = 0; i < r->n; i++)
		if (r->e[i].dl)
			dlclose(r->e[i].dl);
	memset(r, 0, sizeof(*r));
}

static int check_ops(const struct xflow_collector_ops *ops, const char *where, char *err,
		     size_t errlen)
{
	if (ops->abi != XFLOW_COLLECTOR_ABI) {
		if (errlen)
			snprintf(err, errlen,
				 "%s: collector plugin built for collector ABI %u, but this xflowtop "
				 "speaks ABI %d; rebuild it against this version's xflow/collector.h",
				 where, ops->abi, XFLOW_COLLECTOR_ABI);
		return -EPROTO;
	}
	if (!ops->name || !*ops->name || !ops->open || !ops->read) {
		if (errlen)
			snprintf(err, errlen, "%s: collector table has no name, open or read hook", where);
		return -EINVAL;
	}
	return 0;
}

int xft_registry_add(struct xft_registry *r, const struct xflow_collector_ops *ops, char *err,
		     size_t errlen)
{
	int rc = check_ops(ops, ops && ops->name ? ops->name : "collector", err, errlen);
	if (rc)
		return rc;
	if (xft_registry_find(r, ops->name)) {
		if (errlen)
			snprintf(err, errlen, "collector '%s' is defined twice", ops->name);
		return -EEXIST;
	}
	if (r->n >= XFT_MAX_COLLECTORS) {
		if (errlen)
			snprintf(err, errlen, "too many collectors (at most %d)", XFT_MAX_COLLECTORS);
		return -ENOSPC;
	}
	r->e[r->n].ops = ops;
	r->e[r->n].dl = NULL;
	r->e[r->n].path[0] = '\0';
	r->n++;
	return 0;
}

int xft_registry_load_file(struct xft_registry *r, const char *path, char *err, size_t errlen)
{
	void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		snprintf(err, errlen, "%s: cannot load collector plugin: %s", path, dlerror());
		return -ENOEXEC;
	}
	xflow_collector_plugin_fn fn;
	void *sym = dlsym(dl, XFLOW_COLLECTOR_PLUGIN_SYMBOL);
	memcpy(&fn, &sym, sizeof(fn)); /* object to function pointer, as POSIX allows */
	if (!sym) {
		snprintf(err, errlen, "%s: not a collector plugin: no symbol %s()", path,
			 XFLOW_COLLECTOR_PLUGIN_SYMBOL);
		dlclose(dl);
		return -ENOEXEC;
	}
	const struct xflow_collector_ops *ops = fn();
	if (!ops) {
		snprintf(err, errlen, "%s: %s() returned no table", path, XFLOW_COLLECTOR_PLUGIN_SYMBOL);
		dlclose(dl);
		return -ENOEXEC;
	}
	int rc = check_ops(ops, path, err, errlen);
	if (!rc) {
		rc = xft_registry_add(r, ops, err, errlen);
		if (rc == -EEXIST)
			snprintf(err, errlen, "%s: a collector named '%s' is already loaded", path,
				 ops->name);
	}
	if (rc) {
		dlclose(dl);
		return rc;
	}
	r->e[r->n - 1].dl = dl;
	snprintf(r->e[r->n - 1].path, sizeof(r->e[r->n - 1].path), "%s", path);
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int xft_registry_load_dir(struct xft_registry *r, const char *dir, char *err, size_t errlen)
{
	DIR *d = opendir(dir);
	if (!d) {
		int e = errno;
		snprintf(err, errlen, "%s: collector path: %s", dir, strerror(e));
		return -e;
	}
	char *names[XFT_MAX_COLLECTORS];
	unsigned n = 0;
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		if (len < 4 || strcmp(de->d_name + len - 3, ".so") || de->d_name[0] == '.')
			continue;
		if (n >= XFT_MAX_COLLECTORS) {
			snprintf(err, errlen, "%s: too many plugins (at most %d)", dir, XFT_MAX_COLLECTORS);
			rc = -ENOSPC;
			break;
		}
		if (!(names[n] = strdup(de->d_name))) {
			rc = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			break;
		}
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(names[0]), name_cmp);
	for (unsigned i = 0; i < n; i++) {
		if (!rc) {
			char path[512];
			snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
			rc = xft_registry_load_file(r, path, err, errlen);
		}
		free(names[i]);
	}
	return rc;
}

const struct xflow_collector_ops *xft_registry_find(const struct xft_registry *r, const char *name)
{
	for (unsigned i = 0; i < r->n; i++)
		if (!strcmp(r->e[i].ops->name, name))
			return r->e[i].ops;
	return NULL;
}

void xft_registry_print(const struct xft_registry *r, FILE *f)
{
	for (unsigned i = 0; i < r->n; i++) {
		fprintf(f, "%-12s %s", r->e[i].ops->name, r->e[i].ops->help ? r->e[i].ops->help : "");
		if (r->e[i].dl)
			fprintf(f, " (plugin %s)", r->e[i].path);
		fputc('\n', f);
	}
}
