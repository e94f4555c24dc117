# xflow-agent: the runtime of one domain (guestrt/agent.c), its end-to-end
# tests on the simulated host, and their C driver.
ALL_OBJS += $(OBJDIR)/guestrt/xflow_agent_main.o
BINS += $(BINDIR)/xflow-agent
$(BINDIR)/xflow-agent: $(OBJDIR)/guestrt/xflow_agent_main.o $(LINK_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LINK_LIBS) $(ALL_LDLIBS)

MAN_PAGES += man/man8/xflow-agent.8
