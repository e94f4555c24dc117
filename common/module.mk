# common/: ring, flow-id table, histogram, clock, errors, control protocol —
# linked by every binary.  Its parts: plan/, weave plans read, written,
# dumped and their bytecode verified (xflow/plan.h, xflow/bytecode.h), for
# the agent and the weaver alike, never aborting; xen_time/ (xen_time.mk),
# Xen's system time.
# The core: it uses no other folder.
common_USES :=
common_SRCS := $(filter-out %_main.c,$(wildcard common/*.c common/plan/*.c))
ALL_OBJS += $(call objs_of,$(common_SRCS))
$(call folder_lib,common): $(call objs_of,$(common_SRCS))
LINK_LIBS := $(call folder_lib,common) $(LINK_LIBS)
