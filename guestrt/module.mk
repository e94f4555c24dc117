# guestrt/: the runtime in each domain.  Its parts:
#   hook/           the hook core behind hook.h, and one sub-folder per backend:
#   hook/ptrace/      breakpoints, handlers in the agent;
#   hook/inproc/      built on ptrace: a runtime image (rt/, rt.mk) mapped
#                     into the target, jumps to trampolines;
#   hook/kernel/      eBPF: its BPF program, the lowering of a plan to it,
#                     their ABI header and the loader (kernel.mk);
#   x86/            x86-64 decoding for relocation, and the encoder;
#   interp/         the advice interpreter every backend shares;
#   agent/          xflow-agent and its transports (agent.mk).
# The rt/ image and the kernel engine are built by their own .mk files.
# The agent reads plans and writes sessions with the core's code; it
# carries nothing of the weaver or the monitor.
guestrt_USES := common
guestrt_SRCS := $(filter-out %_main.c guestrt/hook/kernel/hook_kernel%,\
	$(wildcard guestrt/*/*.c guestrt/hook/*/*.c))
ALL_OBJS += $(call objs_of,$(guestrt_SRCS))
$(call folder_lib,guestrt): $(call objs_of,$(guestrt_SRCS))
LINK_LIBS := $(call folder_lib,guestrt) $(LINK_LIBS)
