# weaver/: the flow language front end (and, later, join points) — xflowc.
weaver_SRCS := $(filter-out %_main.c,$(wildcard weaver/*.c))
ALL_OBJS += $(call objs_of,$(weaver_SRCS)) $(OBJDIR)/weaver/xflowc_main.o
$(call folder_lib,weaver): $(call objs_of,$(weaver_SRCS))
LINK_LIBS := $(call folder_lib,weaver) $(LINK_LIBS)
# Only weaver/xml_load.c may include libxml2: it alone gets the include
# path, so a second includer fails to compile.
$(OBJDIR)/weaver/xml_load.o: XCFLAGS += $(call pc_cflags,libxml-2.0)
# Likewise weaver/kbtf.c alone includes libbpf (kernel BTF).
$(OBJDIR)/weaver/kbtf.o: XCFLAGS += $(call pc_cflags,libbpf)

BINS += $(BINDIR)/xflowc
$(BINDIR)/xflowc: $(OBJDIR)/weaver/xflowc_main.o $(LINK_LIBS)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(LINK_LIBS) $(ALL_LDLIBS)

MAN_PAGES += man/man1/xflowc.1 man/man5/xflow.5
TEST_SCRIPTS += tests/weaver/bad_flows.sh tests/weaver/big_unit.sh
