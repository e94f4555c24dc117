# The scheduler join's end-to-end driver on the simulated host (issue 24):
# tests/e2e/sched_e2e.c, and the scripts that run it.
SCHED_E2E := $(TESTDIR)/e2e/sched-e2e
ALL_OBJS += $(OBJDIR)/tests/e2e/sched_e2e.o
TEST_PROGS += $(SCHED_E2E)
$(SCHED_E2E): $(OBJDIR)/tests/e2e/sched_e2e.o $(LINK_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LINK_LIBS) $(ALL_LDLIBS)
# Its helper: every hop sample of a saved session split against a trace.
SCHED_SPLITS := $(TESTDIR)/e2e/sched-splits
ALL_OBJS += $(OBJDIR)/tests/e2e/sched_splits.o
TEST_PROGS += $(SCHED_SPLITS)
$(SCHED_SPLITS): $(OBJDIR)/tests/e2e/sched_splits.o $(LINK_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LINK_LIBS) $(ALL_LDLIBS)
TEST_SCRIPTS += tests/e2e/sched_split_wake.sh tests/e2e/sched_split_notify.sh tests/e2e/sched_split_notify_point.sh tests/e2e/sched_split_delay.sh tests/e2e/sched_split_live.sh \
	tests/e2e/sched_split_xen.sh \
	tests/e2e/sched_demo.sh
