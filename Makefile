# xflowtop — GNU Makefile.
#
#   make                 build everything (binaries under build/bin)
#   make run             build and start xflowtop live on the simulated Xen host
#   make check           build and run every test (unit, end to end, fuzz corpora)
#   make bench           build with optimisation and print the benchmarks
#   make stress          the long runs (six monitors, their agents killed; RUNS=N)
#   make fuzz            build the libFuzzer targets with clang and run each
#                        for FUZZ_TIME seconds (default 60; 600 for a release)
#   make install PREFIX=/usr/local [DESTDIR=...]
#   make xen-check       boot Xen 4.17 in QEMU, test on it (optional; README)
#   make deb             Debian packages (debian/) in build/deb
#
# Knobs: WERROR=1 (default; 0 to keep going on warnings), SAN=address,undefined
# (sanitized build in its own tree), CC=clang, V=1 (show commands).
#
# Each folder adds its sources in its own module.mk; this file holds only the
# generic rules, so that folders can grow without touching each other.

.DEFAULT_GOAL := all
SHELL := /bin/sh

PREFIX ?= /usr/local
DESTDIR ?=
WERROR ?= 1
SAN ?=
FUZZ_TIME ?= 60
V ?= 0

ifeq ($(V),0)
Q := @
else
Q :=
endif

# Install the Debian packages the build needs, once per make run and before
# pkg-config is asked anything.  Goals that need no toolchain skip it.
NODEPS_GOALS := clean help distclean
ifneq ($(filter-out $(NODEPS_GOALS),$(or $(MAKECMDGOALS),all)),)
ifndef XFLOW_DEPS_DONE
DEPS_RC := $(shell scripts/deps.sh ensure >&2; echo $$?)
ifneq ($(DEPS_RC),0)
$(error missing build dependencies (see the apt-get line above))
endif
export XFLOW_DEPS_DONE := 1
endif
endif

# Sanitized builds get their own object tree so objects never mix.
ifeq ($(SAN),)
BUILD ?= build
else
BUILD ?= build-san
endif

PKGS := ncursesw libxml-2.0 libelf libuv capstone xenstore xenevtchn xenvchan xengnttab libmicrohttpd
pc_cflags = $(shell pkg-config --cflags $(1) 2>/dev/null)
pc_libs = $(shell pkg-config --libs $(1) 2>/dev/null)

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wformat=2 -Wwrite-strings -Wno-missing-field-initializers
ifeq ($(WERROR),1)
WARN += -Werror
endif

OPT ?= -O2
CSTD := -std=c11 -D_GNU_SOURCE
CFLAGS ?= $(OPT) -g
XCFLAGS := $(CSTD) $(WARN) -Iinclude -I. -MMD -MP -fno-strict-aliasing
XLDFLAGS :=
ifneq ($(SAN),)
XCFLAGS += -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
XLDFLAGS += -fsanitize=$(SAN)
endif

LIBDIR := $(BUILD)/lib
BINDIR := $(BUILD)/bin
OBJDIR := $(BUILD)/obj
TESTDIR := $(BUILD)/tests

# Filled in by the module.mk files.
BINS :=
TEST_SUITES :=
TEST_SCRIPTS :=
BENCHES :=
BENCH_SCRIPTS :=
FUZZERS :=
MAN_PAGES :=

# Library of one folder: $(call folder_lib,common) -> build/lib/libxflow-common.a
folder_lib = $(LIBDIR)/libxflow-$(1).a
# The folders a folder may use (F_USES in its module.mk, checked by
# tests/layout_check.sh), and theirs in turn.
uses_closure = $(sort $(1) $(foreach u,$($(1)_USES),$(call uses_closure,$(u))))
# What a program of folder F links: the libraries of F and of the folders
# it may use, users first, and nothing else.
libs_of = $(filter $(foreach u,$(call uses_closure,$(1)),$(call folder_lib,$(u))),$(FOLDER_LIBS))
objs_of = $(patsubst %.c,$(OBJDIR)/%.o,$(1))

# Folders in data-path order.  A folder's module.mk comes first; any other
# *.mk in the folder or in its sub-folders (its parts) adds rules to it.
FOLDERS := common weaver guestrt collectors export tui sim
# Every folder library, users first.  The tests link all of them; each
# program links those of its folder (libs_of).  The list is complete
# before any module.mk is read, because a rule's prerequisites are
# expanded when the rule is read: built up folder by folder, a binary of an
# early folder would link libraries it did not wait for (a -j race).
FOLDER_LIBS := $(foreach f,tui export collectors guestrt weaver common,\
	$(if $(wildcard $(f)/module.mk),$(call folder_lib,$(f))))
LINK_LIBS := $(FOLDER_LIBS)

# BPF objects (the kernel hook engine's program, guestrt/hook/kernel/, and
# the reader of Xen's time, common/xen_time/) are built with clang's BPF
# target against vmlinux.h, which bpftool writes from the build machine's
# BTF; bpftool then wraps each object in a skeleton header that embeds it in
# its loader.  Without BTF, bpftool, clang or libbpf they are not built
# (KERNEL_BPF=0): xflow-agent --backend kernel then says why, and the kernel
# tests skip with the reason.
KERNEL_BTF ?= /sys/kernel/btf/vmlinux
BPFTOOL ?= $(firstword $(wildcard /usr/sbin/bpftool /sbin/bpftool /usr/bin/bpftool) bpftool)
BPF_CLANG ?= clang
KERNEL_BPF_WHY := $(strip \
	$(if $(wildcard $(KERNEL_BTF)),,no kernel BTF at $(KERNEL_BTF)) \
	$(if $(shell command -v $(BPFTOOL) 2>/dev/null),,no bpftool) \
	$(if $(shell command -v $(BPF_CLANG) 2>/dev/null),,no clang) \
	$(if $(shell pkg-config --exists libbpf 2>/dev/null && echo y),,no libbpf (libbpf-dev)))
ifeq ($(KERNEL_BPF_WHY),)
KERNEL_BPF ?= 1
else
KERNEL_BPF ?= 0
endif
KBPF_DIR := $(BUILD)/kernel-bpf
# The weaver reads kernel BTF with libbpf (weaver/jp/kbtf.c) whether or not
# the BPF objects are built: scripts/deps.sh installs libbpf-dev.
PKGS += libbpf
# The architecture the programs run on, named as libbpf's headers name it
# (__TARGET_ARCH_x86): they are built for this machine's kernel (its
# vmlinux.h), and where its CPU keeps stores in order they take the
# cheaper claim of a numbering stream (guestrt/hook/kernel/bpf/xflow.bpf.c).
BPF_ARCH := $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(shell uname -m)))
# No sanitizer, no host flags: this is code for the kernel's verifier.
BPF_CFLAGS := -target bpf -O2 -g -mcpu=v3 -Wall -Werror -D__TARGET_ARCH_$(BPF_ARCH) -I$(KBPF_DIR) -I.

$(KBPF_DIR)/vmlinux.h:
	@mkdir -p $(@D)
	@$(if $(Q),echo "  BTF     $@")
	$(Q)$(BPFTOOL) btf dump file $(KERNEL_BTF) format c > $@.tmp && mv $@.tmp $@

$(foreach f,$(FOLDERS),$(eval -include $(f)/module.mk))
$(foreach f,$(FOLDERS),$(eval -include $(filter-out $(f)/module.mk,\
	$(sort $(wildcard $(f)/*.mk $(f)/*/*.mk $(f)/*/*/*.mk)))))
# The module files prepend their own library as well; link each once.
LINK_LIBS := $(FOLDER_LIBS)
include tests/module.mk

ALL_OBJS := $(sort $(ALL_OBJS))

$(OBJDIR)/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(XCFLAGS) $(CFLAGS) $(EXTRA_CFLAGS_$(firstword $(subst /, ,$<))) -c $< -o $@

$(LIBDIR)/%.a:
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AR      $@")
	$(Q)rm -f $@ && ar rcs $@ $^

.PHONY: all check bench fuzz run install clean help man-lint xen-check deb
all: $(BINS)

check: all $(TEST_SUITES) $(TEST_PROGS)
	$(Q)BUILD=$(BUILD) SAN=$(SAN) tests/run.sh $(TEST_SUITES) -- $(TEST_SCRIPTS)

bench: $(BENCHES) all $(TEST_PROGS)
	$(Q)failed=; for b in $(BENCHES) $(BENCH_SCRIPTS); do echo "== $$b"; \
		BUILD=$(BUILD) $$b || failed="$$failed $$b"; done; \
		[ -z "$$failed" ] || { echo "bench: a target missed or a check failed in:$$failed"; exit 1; }

man-lint:
	$(Q)for m in $(MAN_PAGES); do out=$$(groff -ww -z -man $$m 2>&1); \
		if [ -n "$$out" ]; then echo "$$out"; exit 1; fi; done

# The simulated host's programs stay together: xensim finds its domains
# (linux0, linuxU) beside itself, through the symlink too.
SIM_PROGS = $(filter $(BUILD)/sim/%,$(BINS)) $(filter %/xensim,$(BINS))

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/xflowtop/sim
	install -m 755 $(filter-out $(SIM_PROGS),$(BINS)) $(DESTDIR)$(PREFIX)/bin/
	$(if $(SIM_PROGS),install -m 755 $(SIM_PROGS) $(DESTDIR)$(PREFIX)/lib/xflowtop/sim/)
	$(if $(filter %/xensim,$(BINS)),ln -sf ../lib/xflowtop/sim/xensim $(DESTDIR)$(PREFIX)/bin/xensim)
	for m in $(MAN_PAGES); do s=$${m##*.}; install -d $(DESTDIR)$(PREFIX)/share/man/man$$s; \
		install -m 644 $$m $(DESTDIR)$(PREFIX)/share/man/man$$s/; done
	install -d $(DESTDIR)$(PREFIX)/share/xflowtop/flows
	install -m 644 flows/*.xml $(DESTDIR)$(PREFIX)/share/xflowtop/flows/
	install -d $(DESTDIR)$(PREFIX)/share/xflowtop/flows/kernel
	install -m 644 flows/kernel/*.xml $(DESTDIR)$(PREFIX)/share/xflowtop/flows/kernel/

# Debian packages, built by dpkg-buildpackage in a copy of the tree
# (scripts/deb.sh): the .deb files land in build/deb.
deb:
	$(Q)scripts/deb.sh

# Optional: real Xen in QEMU, images cached (scripts/xenlab/xen-check.sh).
xen-check: all $(TIMER_LATENESS)
	$(Q)MAKE="$(MAKE)" BUILD=$(BUILD) scripts/xenlab/xen-check.sh

clean:
	rm -rf build build-san build-fuzz build-bench

help:
	@sed -n '2,/^$$/s/^# \{0,1\}//p' Makefile

-include $(ALL_OBJS:.o=.d)
