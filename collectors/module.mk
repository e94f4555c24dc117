# collectors/: record sources for the monitor, one library (agent rings,
# xentrace files and pipes, ...); every collectors/*.c but the mains.
# The agent collector compiles and plans flows (weaver/weave.h only).
collectors_USES := common weaver
collectors_SRCS := $(filter-out %_main.c,$(wildcard collectors/*.c))
ALL_OBJS += $(call objs_of,$(collectors_SRCS))
$(call folder_lib,collectors): $(call objs_of,$(collectors_SRCS))
LINK_LIBS := $(call folder_lib,collectors) $(LINK_LIBS)

# Interim command-line tool: summary or dump of a trace file (to be folded
# into xflowtop's --xentrace batch mode).
ALL_OBJS += $(OBJDIR)/collectors/xflow_xentrace_main.o
BINS += $(BINDIR)/xflow-xentrace
$(BINDIR)/xflow-xentrace: $(OBJDIR)/collectors/xflow_xentrace_main.o $(call libs_of,collectors)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(call libs_of,collectors) $(ALL_LDLIBS)
TEST_SCRIPTS += tests/collectors/xentrace_cli.sh
# The judge of flow ids on the demo's honest agents, past its table's size.
TEST_SCRIPTS += tests/e2e/demo_honest.sh
