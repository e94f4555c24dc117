# sim/: the simulated Xen host (DESIGN.md §8, sim/README).
#
# linuxU and linux0 are the "traced software": ordinary C built -O2 -g like
# a kernel (with -fno-strict-aliasing, as Linux), no LTO, without the project
# libraries.  Their sources mirror Linux's paths under sim/linux/ so that
# within_file() pointcuts name them as they would name the real kernel's.

# The simulated host stands for the platform: it uses no project folder.
sim_USES :=

SIM_CFLAGS := -O2 -g -iquote sim/linux/include -pthread
SIM_LDLIBS := -pthread -lm

SIM_INFRA := sim/evtchn.c sim/hostmem.c sim/knobs.c sim/stage.c sim/truth.c \
	sim/delayline.c sim/gate.c sim/late.c sim/sched.c sim/arch/boot.c
SIM_KERNEL := sim/linux/mm/page_alloc.c sim/linux/net/core/skbuff.c \
	sim/linux/net/core/dev.c sim/linux/drivers/xen/core/gnttab.c \
	sim/linux/fs/bio.c sim/linux/block/ll_rw_blk.c
SIM_U_SRCS := $(SIM_INFRA) $(SIM_KERNEL) sim/arch/linuxU.c \
	sim/linux/net/ipv4/tcp.c sim/linux/net/ipv4/tcp_output.c \
	sim/linux/net/ipv4/tcp_input.c sim/linux/net/ipv4/tcp_ipv4.c \
	sim/linux/drivers/xen/netfront/netfront.c \
	sim/linux/drivers/xen/blkfront/blkfront.c
SIM_0_SRCS := $(SIM_INFRA) $(SIM_KERNEL) sim/arch/linux0.c \
	sim/linux/drivers/xen/netback/netback.c \
	sim/linux/drivers/xen/blkback/blkback.c \
	sim/linux/net/bridge/br_if.c sim/linux/net/bridge/br_input.c \
	sim/linux/net/bridge/br_forward.c sim/linux/net/bridge/br_netfilter.c \
	sim/linux/drivers/net/sk98lin/skge.c sim/linux/drivers/block/simdisk.c
SIM_XENSIM_SRCS := sim/xensim.c sim/hostmem.c sim/evtchn.c sim/knobs.c sim/stage.c sim/late.c \
	sim/sched.c
SIM_CHECK_SRCS := sim/truth_check.c sim/knobs.c sim/stage.c

SIM_ALL_SRCS := $(sort $(SIM_U_SRCS) $(SIM_0_SRCS) $(SIM_XENSIM_SRCS) $(SIM_CHECK_SRCS))
ALL_OBJS += $(call objs_of,$(SIM_ALL_SRCS))

# The generic %.o rule adds $(CFLAGS); the simulated kernels keep -O2 -g
# whatever CFLAGS says, so that their code and DWARF are those the tests
# expect.  The code under sim/linux/ is also built as x86 Linux builds its
# kernel, without SSE/MMX/AVX: otherwise GCC stores neighbouring members
# with one vector store, which the real kernel never does and which hides
# the member access a tracer looks for.
EXTRA_CFLAGS_sim = $(SIM_CFLAGS)
SIM_KERNEL_OBJS := $(call objs_of,$(filter sim/linux/%,$(SIM_ALL_SRCS)))
$(call objs_of,$(SIM_ALL_SRCS)): CFLAGS = -O2 -g
# Not under SAN either: the simulated domains stand for kernels, which are
# not built with sanitizers, and instrumented code has other instructions
# and other DWARF (skb is "optimized out" at netfront's flags store), so
# flows that weave into the plain build would not weave into it.  The
# sanitizers check the tracer, which is what `make SAN=...` is for.
$(call objs_of,$(SIM_ALL_SRCS)): XCFLAGS = $(CSTD) $(WARN) -Iinclude -I. -MMD -MP -fno-strict-aliasing
ifneq ($(filter x86_64 i%86,$(shell uname -m)),)
$(SIM_KERNEL_OBJS): CFLAGS = -O2 -g -mno-sse -mno-mmx -mno-sse2 -mno-3dnow -mno-avx
endif

SIM_BINS := $(BUILD)/sim/linuxU $(BUILD)/sim/linux0 $(BUILD)/sim/truth-check $(BINDIR)/xensim
BINS += $(SIM_BINS)

define sim_link
$(1): $$(call objs_of,$(2))
	@mkdir -p $$(@D)
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(SIM_LDLIBS)
endef
$(eval $(call sim_link,$(BUILD)/sim/linuxU,$(SIM_U_SRCS)))
$(eval $(call sim_link,$(BUILD)/sim/linux0,$(SIM_0_SRCS)))
$(eval $(call sim_link,$(BUILD)/sim/truth-check,$(SIM_CHECK_SRCS)))
$(eval $(call sim_link,$(BINDIR)/xensim,$(SIM_XENSIM_SRCS)))

.PHONY: sim
sim: $(SIM_BINS)


# End-to-end tests of the host (about 45 s in all).
TEST_SCRIPTS += tests/sim/sim_options.sh tests/sim/sim_symbols.sh tests/sim/sim_run.sh \
	tests/sim/sim_delay.sh tests/sim/sim_kill.sh tests/sim/sim_stop.sh tests/sim/sim_flagbits.sh tests/sim/sim_hold.sh \
	tests/sim/sim_dwarf.sh tests/sim/sim_sched_wake.sh tests/sim/sim_sched_notify.sh \
	tests/sim/sim_sched_cover.sh
