# weaver/: flow files → weave plans, and xflowc.  Two libraries in one
# archive, each in its own folder, and what joins them:
#   lang/   the flow language: XML, pointcuts, advice, xflow expansion,
#           checking, bytecode emission (a unit, xflow/flowlang.h);
#   jp/     binary analysis: ELF, DWARF, x86 decoding, kernel BTF, and
#           join points found in them (jp/joinpoint.h); it knows nothing
#           of the language but the unit it resolves;
#   plan_build.c joins the two into weave plans; weave.h is the one header
#   other folders include: compile these flow files, and plan them.
# Reading, writing and verifying plans is the core's (common/plan/).
weaver_USES := common
weaver_PUBLIC := weaver/weave.h
weaver_SRCS := $(filter-out %_main.c,$(wildcard weaver/*.c weaver/lang/*.c weaver/jp/*.c))
ALL_OBJS += $(call objs_of,$(weaver_SRCS)) $(OBJDIR)/weaver/xflowc_main.o
$(call folder_lib,weaver): $(call objs_of,$(weaver_SRCS))
LINK_LIBS := $(call folder_lib,weaver) $(LINK_LIBS)
# Only weaver/lang/xml_load.c may include libxml2: it alone gets the include
# path, so a second includer fails to compile.
$(OBJDIR)/weaver/lang/xml_load.o: XCFLAGS += $(call pc_cflags,libxml-2.0)
# Likewise weaver/jp/kbtf.c alone includes libbpf (kernel BTF).
$(OBJDIR)/weaver/jp/kbtf.o: XCFLAGS += $(call pc_cflags,libbpf)

BINS += $(BINDIR)/xflowc
$(BINDIR)/xflowc: $(OBJDIR)/weaver/xflowc_main.o $(call libs_of,weaver)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(XLDFLAGS) $(LDFLAGS) -o $@ $(filter %.o,$^) $(call libs_of,weaver) $(ALL_LDLIBS)

MAN_PAGES += man/man1/xflowc.1 man/man5/xflow.5
TEST_SCRIPTS += tests/weaver/bad_flows.sh tests/weaver/big_unit.sh
