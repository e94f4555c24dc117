/*
 * tui/config.h — xflowtop's configuration: the file (xflowtop.conf(5)) and
 * the command line, which overrides it.
 *
 * The file is `key = value` lines, `#` comments, and `[domain NAME]`
 * sections.  Every error names the file and line:
 *     xflowtop.conf:12: unknown key 'refesh' (did you mean 'refresh'?)
 */
#ifndef XFLOW_TUI_CONFIG_H
#define XFLOW_TUI_CONFIG_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tui/aggregate.h"

#define XFT_MAX_LIST 16
#define XFT_MAX_DOMAINS 32
#define XFT_SPEC_LEN 256

struct xft_domain_conf {
	char name[64];
	int id;                 /* -1 when not given */
	char agent[XFT_SPEC_LEN];  /* how its agent is reached: "socket:PATH" */
	char binaries[XFT_MAX_LIST][XFT_SPEC_LEN];
	unsigned nbinaries;
};

struct xft_config {
	double refresh_s;          /* refresh interval (-d) */
	struct xft_agg_limits limits;
	char collectors[XFT_MAX_LIST][XFT_SPEC_LEN]; /* "name[:options]" */
	unsigned ncollectors;
	char collector_paths[XFT_MAX_LIST][XFT_SPEC_LEN];
	unsigned ncollector_paths;
	char flow_files[XFT_MAX_LIST][XFT_SPEC_LEN];
	unsigned nflow_files;
	struct xft_domain_conf domains[XFT_MAX_DOMAINS];
	unsigned ndomains;
	char snapshot_dir[XFT_SPEC_LEN];
	char snapshot_on_exit[XFT_SPEC_LEN];
	char sort[32];             /* initial sort column of the hops view */
	int color;                 /* 1 on, 0 off */
	int batch, json, demo;
	long iterations;           /* -n; 0 = forever */
	char config_path[XFT_SPEC_LEN]; /* the file loaded, "" if none */
	char xentrace[XFT_SPEC_LEN]; /* --xentrace: a trace file, or "-" for standard input */
	char cpu_hz[32];             /* --cpu-hz: the traced host's TSC rate, as given */
	char save_session[XFT_SPEC_LEN]; /* --save-session: write what the model is fed here */
	char replay[XFT_SPEC_LEN];   /* --replay: a saved session to play back */
	char speed[32];              /* --speed: its pace, N or "max"; "" = 1 */
	/* The Prometheus exporter (tui/metrics.c, tui/config_export.c). */
	char listen[XFT_SPEC_LEN];   /* --listen ADDR:PORT; "" = no exporter */
	char host[256];              /* the host label; "" = the host name */
	uint32_t metrics_max_hops;   /* hops with series of their own */
	uint32_t metrics_max_connections;
	uint32_t metrics_max_per_address; /* connections of one client address */
	uint32_t metrics_request_timeout_s; /* a request's head must be in by then */
	int headless;                /* --headless: serve /metrics, show nothing */
};

/* Built-in defaults (no file read). */
void xft_config_defaults(struct xft_config *c);

/* Read @path into @c (on top of what it holds).  0, or -errno with a
 * "file:line: message" in @err. */
int xft_config_load(struct xft_config *c, const char *path, char *err, size_t errlen);

/* Same from a string (tests); @name is used in messages. */
int xft_config_parse(struct xft_config *c, const char *name, const char *text, char *err,
		     size_t errlen);

/* Apply one setting: the file's keys and the command line share this so
 * that both accept the same words.  0 or -EINVAL with the reason in @err
 * (without location). */
int xft_config_set(struct xft_config *c, const char *key, const char *value, char *err,
		   size_t errlen);

/* The command line.  Returns 0 to run, 1 when --help/--version printed
 * (exit 0), or -EINVAL with the message in @err.  Reads the config file
 * first (--config FILE, $XFLOWTOP_CONF, or none) and lets options win. */
int xft_config_from_args(struct xft_config *c, int argc, char **argv, char *err, size_t errlen);

void xft_config_usage(FILE *f);

/* --- config_export.c: the exporter's keys --------------------------------- */

void xft_config_export_defaults(struct xft_config *c);
/* listen, host, metrics-max-hops, metrics-max-connections,
 * metrics-max-connections-per-address, metrics-request-timeout: 0, or -EINVAL
 * with "expected ..." in @err. */
int xft_config_export_set(struct xft_config *c, const char *key, const char *value, char *err,
			  size_t errlen);
/* What no single key can check: --headless needs --listen, and prints no
 * tables.  0 or -EINVAL with the reason in @err. */
int xft_config_export_check(const struct xft_config *c, char *err, size_t errlen);

/*
 * The spec to open @collector with: for the agent collector, the
 * configuration's domains and flow files become its options (socket= per
 * domain agent, bin=DOMAIN:PATH per binary, flows= per flow file) after
 * those given; other collectors are unchanged.  0, or -ENAMETOOLONG.
 */
int xft_config_agent_spec(const struct xft_config *c, const char *collector, char *out, size_t len);

/*
 * The xentrace collector's spec for --xentrace FILE [--cpu-hz HZ] (or the
 * keys xentrace and cpu-hz): "xentrace:file=FILE,cpu-hz=HZ", with "pipe"
 * for "-".  0, or -EINVAL (a comma in the path) or -ENAMETOOLONG.
 */
int xft_config_xentrace_spec(const struct xft_config *c, char *out, size_t len);

/*
 * The replay collector's spec for --replay FILE [--speed N|max] (or the
 * keys replay and speed): "replay:file=FILE,speed=N".  0, or -EINVAL (a
 * comma in the path) or -ENAMETOOLONG.
 */
int xft_config_replay_spec(const struct xft_config *c, char *out, size_t len);

#endif
