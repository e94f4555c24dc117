# common/: ring, flow-id table, histogram, clock, errors — linked by every binary.
common_SRCS := $(filter-out %_main.c common/xen_time_bpf.c common/xen_time_none.c,$(wildcard common/*.c))
ALL_OBJS += $(call objs_of,$(common_SRCS))
$(call folder_lib,common): $(call objs_of,$(common_SRCS))
LINK_LIBS := $(call folder_lib,common) $(LINK_LIBS)
