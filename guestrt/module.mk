# guestrt/: the runtime in each domain — hook engines (ptrace first), later the
# advice interpreter and xflow-agent.
guestrt_SRCS := $(filter-out %_main.c guestrt/hook_kernel%,$(wildcard guestrt/*.c))
ALL_OBJS += $(call objs_of,$(guestrt_SRCS))
$(call folder_lib,guestrt): $(call objs_of,$(guestrt_SRCS))
LINK_LIBS := $(call folder_lib,guestrt) $(LINK_LIBS)
