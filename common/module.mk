# common/: ring, flow-id table, histogram, clock, errors — linked by every
# binary.  Its part common/xen_time/ (xen_time.mk) adds Xen's time.
common_SRCS := $(filter-out %_main.c,$(wildcard common/*.c))
ALL_OBJS += $(call objs_of,$(common_SRCS))
$(call folder_lib,common): $(call objs_of,$(common_SRCS))
LINK_LIBS := $(call folder_lib,common) $(LINK_LIBS)
