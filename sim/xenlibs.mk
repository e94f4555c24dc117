# sim/xenlibs/: the simulated Xen toolstack (sim/xenlibs/README).
#
# Drop-in replacements of Debian's libxenstore.so.4, libxenevtchn.so.1 and
# libxengnttab.so.1 (same sonames, same symbol versions) that keep a
# simulated host's state in a directory instead of using /dev/xen, and
# simxen, the tool that creates domains and edits that state.  Run any
# program with LD_LIBRARY_PATH=$(BUILD)/sim/xenlibs to put it on the
# simulated host; the real libxenvchan then runs on top of them.
#
# Internal functions are hidden by the version scripts (local: *).
# Like the rest of sim/, built without sanitizers in both trees: they stand
# for the platform, not for code under test, and they are loaded into
# programs that may or may not be sanitized.

XENLIBS_DIR := $(BUILD)/sim/xenlibs
XENLIBS_CORE := sim/xenlibs/simx.c sim/xenlibs/simx_store.c sim/xenlibs/simx_evtchn.c \
	sim/xenlibs/simx_grant.c
XENLIBS_SRCS := $(XENLIBS_CORE) sim/xenlibs/xenstore.c sim/xenlibs/evtchn.c \
	sim/xenlibs/gnttab.c sim/xenlibs/simxen.c
XENLIBS_OBJS := $(call objs_of,$(XENLIBS_SRCS))
ALL_OBJS += $(XENLIBS_OBJS)

$(XENLIBS_OBJS): CFLAGS = -O2 -g
$(XENLIBS_OBJS): XCFLAGS = $(CSTD) $(WARN) -I. -MMD -MP -fno-strict-aliasing -fPIC -pthread

XENLIBS := $(XENLIBS_DIR)/libxenstore.so.4 $(XENLIBS_DIR)/libxenevtchn.so.1 \
	$(XENLIBS_DIR)/libxengnttab.so.1
XENLIBS_TOOL := $(XENLIBS_DIR)/simxen

# $(1) soname, $(2) API source, $(3) version script
define xenlib_link
$(XENLIBS_DIR)/$(1): $$(call objs_of,$(2) $(XENLIBS_CORE)) sim/xenlibs/$(3)
	@mkdir -p $$(@D)
	@$$(if $$(Q),echo "  LD      $$@")
	$$(Q)$$(CC) -shared $$(LDFLAGS) -Wl,-soname,$(1) -Wl,--version-script=sim/xenlibs/$(3) \
		-Wl,-z,defs -o $$@ $$(filter %.o,$$^) -pthread
endef
$(eval $(call xenlib_link,libxenstore.so.4,sim/xenlibs/xenstore.c,libxenstore.map))
$(eval $(call xenlib_link,libxenevtchn.so.1,sim/xenlibs/evtchn.c,libxenevtchn.map))
$(eval $(call xenlib_link,libxengnttab.so.1,sim/xenlibs/gnttab.c,libxengnttab.map))

$(XENLIBS_TOOL): $(call objs_of,sim/xenlibs/simxen.c $(XENLIBS_CORE))
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ -pthread

# Not in BINS: `make install` has no business installing fake Xen libraries.
all: $(XENLIBS) $(XENLIBS_TOOL)
sim: $(XENLIBS) $(XENLIBS_TOOL)
.PHONY: xenlibs
xenlibs: $(XENLIBS) $(XENLIBS_TOOL)

# The sim test runner re-executes itself on these (tests/sim/simxen_test.h).
$(TESTDIR)/sim.test: | $(XENLIBS) $(XENLIBS_TOOL)

TEST_SCRIPTS += tests/sim/sim_xenlibs_abi.sh
