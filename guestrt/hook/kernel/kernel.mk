# The kernel hook engine (guestrt/hook/kernel/): the BPF program
# (bpf/xflow.bpf.c), the ABI it shares with its loader (kabi.h), the
# lowering of a weave plan to its slot table (klower.c, plain C, always
# built and unit-tested), and the loader: the real one where the Makefile
# can build BPF objects, else a stub whose hook_new says why it was not
# built.  bpftool wraps the object in a skeleton header that embeds it in
# xflow-agent.
$(KBPF_DIR)/xflow.bpf.o: guestrt/hook/kernel/bpf/xflow.bpf.c guestrt/hook/kernel/kabi.h $(KBPF_DIR)/vmlinux.h
	@$(if $(Q),echo "  BPF     $@")
	$(Q)$(BPF_CLANG) $(BPF_CFLAGS) -c $< -o $@

$(KBPF_DIR)/xflow_kern.skel.h: $(KBPF_DIR)/xflow.bpf.o
	@$(if $(Q),echo "  SKEL    $@")
	$(Q)$(BPFTOOL) gen skeleton $< name xflow_kern > $@.tmp && mv $@.tmp $@

ifeq ($(KERNEL_BPF),1)
KERNEL_HOOK_SRC := guestrt/hook/kernel/hook_kernel.c
$(OBJDIR)/guestrt/hook/kernel/hook_kernel.o: XCFLAGS += -I$(KBPF_DIR) $(call pc_cflags,libbpf)
$(OBJDIR)/guestrt/hook/kernel/hook_kernel.o: $(KBPF_DIR)/xflow_kern.skel.h
else
KERNEL_HOOK_SRC := guestrt/hook/kernel/hook_kernel_none.c
$(OBJDIR)/guestrt/hook/kernel/hook_kernel_none.o: XCFLAGS += -DKERNEL_BPF_WHY='"$(KERNEL_BPF_WHY)"'
endif
ALL_OBJS += $(call objs_of,$(KERNEL_HOOK_SRC))
$(call folder_lib,guestrt): $(call objs_of,$(KERNEL_HOOK_SRC))

# Its end to end test: a veth pair, pings, the monitor's hop counts, and
# nothing left loaded (tests/e2e/kernel_veth.sh; skips without root or BTF).
TEST_SCRIPTS += tests/e2e/kernel_veth.sh
# Its losses mark the flows they touched partial (per CPU numbering).
TEST_SCRIPTS += tests/e2e/kernel_gaps.sh
# Its helper: the keyed records of a saved session, to check the keys the
# BPF program packed.
SESSION_KEYED := $(TESTDIR)/session_keyed
TEST_PROGS += $(SESSION_KEYED)
ALL_OBJS += $(OBJDIR)/tests/e2e/session_keyed.o
$(SESSION_KEYED): $(OBJDIR)/tests/e2e/session_keyed.o $(LINK_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LINK_LIBS) $(ALL_LDLIBS)
# And its aspects switched off and on under traffic.
KERNEL_TOGGLE := $(TESTDIR)/kernel_toggle
TEST_PROGS += $(KERNEL_TOGGLE)
ALL_OBJS += $(OBJDIR)/tests/e2e/kernel_toggle.o
$(KERNEL_TOGGLE): $(OBJDIR)/tests/e2e/kernel_toggle.o $(LINK_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LINK_LIBS) $(ALL_LDLIBS)
