# xflow-agent: the runtime of one domain (guestrt/agent/), its end-to-end
# tests on the simulated host, and their C driver.
ALL_OBJS += $(OBJDIR)/guestrt/agent/xflow_agent_main.o
BINS += $(BINDIR)/xflow-agent
$(BINDIR)/xflow-agent: $(OBJDIR)/guestrt/agent/xflow_agent_main.o $(call libs_of,guestrt)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(call libs_of,guestrt) $(ALL_LDLIBS)

MAN_PAGES += man/man8/xflow-agent.8

# The end-to-end driver (tests/e2e/xflow_e2e.c) and the scripts that run it.
E2E_DRIVER := $(TESTDIR)/e2e/xflow-e2e
ALL_OBJS += $(OBJDIR)/tests/e2e/xflow_e2e.o
TEST_PROGS += $(E2E_DRIVER)
$(E2E_DRIVER): $(OBJDIR)/tests/e2e/xflow_e2e.o $(LINK_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LINK_LIBS) $(ALL_LDLIBS)
TEST_SCRIPTS += tests/e2e/agent_flows.sh tests/e2e/agent_detach.sh tests/e2e/xflowtop_delay.sh \
	tests/e2e/flow_counts.sh tests/e2e/agent_plan_file.sh tests/e2e/agent_burst.sh tests/e2e/agent_nothing.sh \
	tests/e2e/agent_gaps.sh tests/e2e/agent_tail.sh tests/e2e/agent_quit.sh tests/e2e/quit_twice.sh tests/e2e/agent_counters.sh \
	tests/e2e/agent_target_dies.sh tests/e2e/abort_says.sh \
	tests/e2e/xen_sim.sh
