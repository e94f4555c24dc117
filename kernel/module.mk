# kernel/: the kernel backend's BPF program (kernel/bpf/xflow.bpf.c) and the
# lowering of a weave plan to its slot table (klower.c, plain C, always
# built and unit-tested).  The backend's ops table is guestrt/hook_kernel.c,
# a sibling of the other hook engines (guestrt/kernel.mk picks it).
#
# The BPF object is built with clang's BPF target against vmlinux.h, which
# bpftool writes from the build machine's BTF; bpftool then wraps the object
# in a skeleton header that embeds it in xflow-agent.  Without BTF, bpftool,
# clang or libbpf the backend is not built (KERNEL_BPF=0): xflow-agent
# --backend kernel then says why, and the kernel tests skip with the reason.
kernel_SRCS := $(wildcard kernel/*.c)
ALL_OBJS += $(call objs_of,$(kernel_SRCS))
$(call folder_lib,kernel): $(call objs_of,$(kernel_SRCS))

KERNEL_BTF ?= /sys/kernel/btf/vmlinux
BPFTOOL ?= $(firstword $(wildcard /usr/sbin/bpftool /sbin/bpftool /usr/bin/bpftool) bpftool)
BPF_CLANG ?= clang
KERNEL_BPF_WHY := $(strip \
	$(if $(wildcard $(KERNEL_BTF)),,no kernel BTF at $(KERNEL_BTF)) \
	$(if $(shell command -v $(BPFTOOL) 2>/dev/null),,no bpftool) \
	$(if $(shell command -v $(BPF_CLANG) 2>/dev/null),,no clang) \
	$(if $(shell pkg-config --exists libbpf 2>/dev/null && echo y),,no libbpf (libbpf-dev)))
ifeq ($(KERNEL_BPF_WHY),)
KERNEL_BPF ?= 1
else
KERNEL_BPF ?= 0
endif
KBPF_DIR := $(BUILD)/kernel-bpf
# The weaver reads kernel BTF with libbpf (weaver/kbtf.c) whether or not
# the backend is built: scripts/deps.sh installs libbpf-dev.
PKGS += libbpf

$(KBPF_DIR)/vmlinux.h:
	@mkdir -p $(@D)
	@$(if $(Q),echo "  BTF     $@")
	$(Q)$(BPFTOOL) btf dump file $(KERNEL_BTF) format c > $@.tmp && mv $@.tmp $@

# No sanitizer, no host flags: this is code for the kernel's verifier.
$(KBPF_DIR)/xflow.bpf.o: kernel/bpf/xflow.bpf.c kernel/kabi.h $(KBPF_DIR)/vmlinux.h
	@$(if $(Q),echo "  BPF     $@")
	$(Q)$(BPF_CLANG) -target bpf -O2 -g -mcpu=v3 -Wall -Werror -I$(KBPF_DIR) -I. -c $< -o $@

$(KBPF_DIR)/xflow_kern.skel.h: $(KBPF_DIR)/xflow.bpf.o
	@$(if $(Q),echo "  SKEL    $@")
	$(Q)$(BPFTOOL) gen skeleton $< name xflow_kern > $@.tmp && mv $@.tmp $@

# The timekeeper's reader (xflow/xen_time.h): a second, tiny object, read
# by common/xen_time_bpf.c where the BPF objects can be built and else
# answered by common/xen_time_none.c (common/module.mk leaves both out).
ifeq ($(KERNEL_BPF),1)
XEN_TIME_SRC := common/xen_time_bpf.c
$(OBJDIR)/common/xen_time_bpf.o: XCFLAGS += -I$(KBPF_DIR) $(call pc_cflags,libbpf)
$(OBJDIR)/common/xen_time_bpf.o: $(KBPF_DIR)/xflow_xtime.skel.h
else
XEN_TIME_SRC := common/xen_time_none.c
endif
ALL_OBJS += $(call objs_of,$(XEN_TIME_SRC))
$(call folder_lib,common): $(call objs_of,$(XEN_TIME_SRC))

$(KBPF_DIR)/xen_time.bpf.o: kernel/bpf/xen_time.bpf.c kernel/xtime_abi.h $(KBPF_DIR)/vmlinux.h
	@$(if $(Q),echo "  BPF     $@")
	$(Q)$(BPF_CLANG) -target bpf -O2 -g -mcpu=v3 -Wall -Werror -I$(KBPF_DIR) -I. -c $< -o $@

$(KBPF_DIR)/xflow_xtime.skel.h: $(KBPF_DIR)/xen_time.bpf.o
	@$(if $(Q),echo "  SKEL    $@")
	$(Q)$(BPFTOOL) gen skeleton $< name xflow_xtime > $@.tmp && mv $@.tmp $@
