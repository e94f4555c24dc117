# export/: xflowtop's figures for Prometheus — the text exposition format,
# the exported histogram layout, bounded series, and the /metrics server
# (libmicrohttpd, in export/server.c only).  The monitor's side, which walks
# its model into snapshots, is tui/metrics.c.
export_USES := common
export_SRCS := $(filter-out %_main.c,$(wildcard export/*.c))
ALL_OBJS += $(call objs_of,$(export_SRCS))
$(call folder_lib,export): $(call objs_of,$(export_SRCS))
LINK_LIBS := $(call folder_lib,export) $(LINK_LIBS)
