# common/xen_time/: Xen's system time against CLOCK_MONOTONIC
# (xflow/xen_time.h).  The arithmetic (xen_time.c) is always built; the
# timekeeper's read is a tiny BPF program (xen_time.bpf.c, its ABI
# xtime_abi.h) loaded by xen_time_bpf.c where the Makefile can build BPF
# objects, and else answered by xen_time_none.c.
XEN_TIME_SRCS := common/xen_time/xen_time.c
ifeq ($(KERNEL_BPF),1)
XEN_TIME_SRCS += common/xen_time/xen_time_bpf.c
$(OBJDIR)/common/xen_time/xen_time_bpf.o: XCFLAGS += -I$(KBPF_DIR) $(call pc_cflags,libbpf)
$(OBJDIR)/common/xen_time/xen_time_bpf.o: $(KBPF_DIR)/xflow_xtime.skel.h
else
XEN_TIME_SRCS += common/xen_time/xen_time_none.c
endif
ALL_OBJS += $(call objs_of,$(XEN_TIME_SRCS))
$(call folder_lib,common): $(call objs_of,$(XEN_TIME_SRCS))

$(KBPF_DIR)/xen_time.bpf.o: common/xen_time/xen_time.bpf.c common/xen_time/xtime_abi.h $(KBPF_DIR)/vmlinux.h
	@$(if $(Q),echo "  BPF     $@")
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@

$(KBPF_DIR)/xflow_xtime.skel.h: $(KBPF_DIR)/xen_time.bpf.o
	@$(if $(Q),echo "  SKEL    $@")
	$(Q)$(BPFTOOL) gen skeleton $< name xflow_xtime > $@.tmp && mv $@.tmp $@
