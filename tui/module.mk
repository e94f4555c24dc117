# tui/: xflowtop — aggregation model, views, batch renderer, snapshots.
tui_USES := common weaver collectors export
tui_SRCS := $(filter-out %_main.c,$(wildcard tui/*.c))
ALL_OBJS += $(call objs_of,$(tui_SRCS))
$(call folder_lib,tui): $(call objs_of,$(tui_SRCS))
LINK_LIBS := $(call folder_lib,tui) $(LINK_LIBS)
