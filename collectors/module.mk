# collectors/: record sources for the monitor, one library (agent rings,
# xentrace files and pipes, ...); every collectors/*.c but the mains.
collectors_SRCS := $(filter-out %_main.c,$(wildcard collectors/*.c))
ALL_OBJS += $(call objs_of,$(collectors_SRCS))
$(call folder_lib,collectors): $(call objs_of,$(collectors_SRCS))
LINK_LIBS := $(call folder_lib,collectors) $(LINK_LIBS)

# Interim command-line tool: summary or dump of a trace file (to be folded
# into xflowtop's --xentrace batch mode).
ALL_OBJS += $(OBJDIR)/collectors/xflow_xentrace_main.o
BINS += $(BINDIR)/xflow-xentrace
$(BINDIR)/xflow-xentrace: $(OBJDIR)/collectors/xflow_xentrace_main.o $(LINK_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LINK_LIBS) $(ALL_LDLIBS)
TEST_SCRIPTS += tests/collectors/xentrace_cli.sh
