# tui/xflowtop.mk: the xflowtop binary, its man pages, `make run`, and the
# TUI test under tmux.  (tui/module.mk builds libxflow-tui from tui/*.c.)
ALL_OBJS += $(OBJDIR)/tui/xflowtop_main.o
BINS += $(BINDIR)/xflowtop
$(BINDIR)/xflowtop: $(OBJDIR)/tui/xflowtop_main.o $(call libs_of,tui)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(call libs_of,tui) $(ALL_LDLIBS) -ldl

MAN_PAGES += man/man1/xflowtop.1 man/man5/xflowtop.conf.5

# A JSON checker (parse, and validate against a schema) for the shell tests.
ALL_OBJS += $(OBJDIR)/tests/tui/jsoncheck.o
TEST_PROGS += $(TESTDIR)/tui-jsoncheck
$(TESTDIR)/tui-jsoncheck: $(OBJDIR)/tests/tui/jsoncheck.o
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $^

TEST_SCRIPTS += tests/tui/tui_tmux.sh tests/tui/batch_asan.sh tests/tui/exit_window.sh

# The demo runs the simulated host's programs and an xflow-agent per
# domain beside xflowtop: everything is built first.  With its scheduler
# model's trace joined, so that the demo shows where each hop's time went.
run: all
	$(BINDIR)/xflowtop --demo --xentrace sim
