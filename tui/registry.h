/*
 * tui/registry.h — the collectors xflowtop knows: the built-in ones
 * (collectors/builtin.h) and plugins loaded from directories with dlopen.
 *
 * A plugin is a shared object exporting xflow_collector_plugin() (see
 * xflow/collector.h); it is refused, with a message naming the file and
 * both ABI versions, unless its table says XFLOW_COLLECTOR_ABI.
 */
#ifndef XFLOW_TUI_REGISTRY_H
#define XFLOW_TUI_REGISTRY_H

#include <stddef.h>
#include <stdio.h>

#include "xflow/collector.h"

#define XFT_MAX_COLLECTORS 64

struct xft_registry_entry {
	const struct xflow_collector_ops *ops;
	void *dl;       /* dlopen handle; NULL when built in */
	char path[256]; /* the plugin's file, "" when built in */
};

struct xft_registry {
	struct xft_registry_entry e[XFT_MAX_COLLECTORS];
	unsigned n;
};

/* The built-in collectors only. */
void xft_registry_init(struct xft_registry *r);
void xft_registry_fini(struct xft_registry *r);

/* Add a table (tests, embedders); -EEXIST when the name is taken, -EPROTO
 * on an ABI mismatch, -ENOSPC when full. */
int xft_registry_add(struct xft_registry *r, const struct xflow_collector_ops *ops, char *err,
		     size_t errlen);

/* Load one plugin file, or every *.so of a directory (sorted by name).
 * 0, or -errno with the reason in @err. */
int xft_registry_load_file(struct xft_registry *r, const char *path, char *err, size_t errlen);
int xft_registry_load_dir(struct xft_registry *r, const char *dir, char *err, size_t errlen);

const struct xflow_collector_ops *xft_registry_find(const struct xft_registry *r, const char *name);

/* "name: help" per line, for --list-collectors. */
void xft_registry_print(const struct xft_registry *r, FILE *f);

#endif
