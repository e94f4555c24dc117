/*
 * xflowtop: a top-like live monitor of I/O flows through Xen domains.
 * The program is tui/ (libxflow-tui); this is only its entry point.
 */
#include <stdio.h>
#include <stdlib.h>

#include "common/crash.h"
#include "tui/app.h"

int main(int argc, char **argv)
{
	static struct xft_config cfg;
	static struct xft_app app;
	char err[1024];

	xflow_crash_install("xflowtop");
	xft_config_defaults(&cfg);
	int rc = xft_config_from_args(&cfg, argc, argv, err, sizeof(err));
	if (rc == 1)
		return 0;
	if (rc) {
		fprintf(stderr, "xflowtop: %s\n", err);
		return 2;
	}
	if (cfg.batch < 0) { /* --list-collectors */
		struct xft_registry reg;
		xft_registry_init(&reg);
		for (unsigned i = 0; i < cfg.ncollector_paths; i++)
			if (xft_registry_load_dir(&reg, cfg.collector_paths[i], err, sizeof(err))) {
				fprintf(stderr, "xflowtop: %s\n", err);
				xft_registry_fini(&reg);
				return 2;
			}
		xft_registry_print(&reg, stdout);
		xft_registry_fini(&reg);
		return 0;
	}
	if (xft_app_init(&app, &cfg, err, sizeof(err))) {
		fprintf(stderr, "xflowtop: %s\n", err);
		xft_app_fini(&app);
		return 2;
	}
	const struct xft_renderer *r = cfg.headless ? &xft_renderer_headless
				       : !cfg.batch ? &xft_renderer_curses
				       : cfg.json   ? &xft_renderer_batch_json
						    : &xft_renderer_batch_text;
	rc = xft_app_run(&app, r);
	xft_app_fini(&app);
	return rc;
}
