# The in-process runtime (guestrt/hook/inproc/rt/): a position-independent image with
# no C library that xflow-agent maps into each traced process, embedded in
# the agent as bytes (guestrt/hook/inproc/rt_blob.S).
#
# It runs on the program's threads, so it is built apart from everything
# else: never with the sanitizers (their runtime is not in the target),
# always with gcc (the flags below are gcc's), -mgeneral-regs-only (the
# trampolines save no vector register), no stack protector (the canary
# would be the program's), hidden visibility (no GOT).  The image is linked
# twice, at 0 and at another base: the two must be equal byte for byte, or
# an absolute address slipped in.
RT_CC ?= gcc
RT_DIR := $(BUILD)/guestrt/hook/inproc/rt
RT_C_SRCS := $(wildcard guestrt/hook/inproc/rt/*.c) guestrt/interp/interp.c common/flowid.c common/ring_producer.c
RT_OBJS := $(patsubst %.c,$(RT_DIR)/obj/%.o,$(RT_C_SRCS)) $(RT_DIR)/obj/guestrt/hook/inproc/rt/rt_head.o
RT_CFLAGS := -std=c11 -D_GNU_SOURCE -O2 -g -Iinclude -I. $(WARN) -fno-strict-aliasing \
	-fPIE -fvisibility=hidden -ffreestanding -fno-stack-protector -fcf-protection=none \
	-mgeneral-regs-only -mno-red-zone -fno-asynchronous-unwind-tables -fno-unwind-tables \
	-fno-tree-loop-distribute-patterns -fno-exceptions -MMD -MP
RT_LDFLAGS := -nostdlib -static -Wl,-T,guestrt/hook/inproc/rt/rt.lds -Wl,--build-id=none -Wl,-z,noexecstack \
	-Wl,-z,norelro

$(RT_DIR)/obj/%.o: %.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  RTCC    $<")
	$(Q)$(RT_CC) $(RT_CFLAGS) -c $< -o $@

$(RT_DIR)/obj/%.o: %.S
	@mkdir -p $(@D)
	@$(if $(Q),echo "  RTAS    $<")
	$(Q)$(RT_CC) $(RT_CFLAGS) -c $< -o $@

$(RT_DIR)/rt.bin: $(RT_OBJS) guestrt/hook/inproc/rt/rt.lds
	@$(if $(Q),echo "  RTLD    $@")
	$(Q)$(RT_CC) $(RT_LDFLAGS) -Wl,--defsym=RT_BASE=0 -o $(RT_DIR)/rt.elf $(RT_OBJS)
	$(Q)$(RT_CC) $(RT_LDFLAGS) -Wl,--defsym=RT_BASE=0x7f0000000 -o $(RT_DIR)/rt-moved.elf $(RT_OBJS)
	$(Q)objcopy -O binary $(RT_DIR)/rt.elf $@.tmp
	$(Q)objcopy -O binary $(RT_DIR)/rt-moved.elf $(RT_DIR)/rt-moved.bin
	$(Q)cmp -s $@.tmp $(RT_DIR)/rt-moved.bin || \
		{ echo "guestrt/hook/inproc/rt: the image is not position-independent (rt.elf and rt-moved.elf differ)"; \
		  rm -f $@.tmp; exit 1; }
	$(Q)mv $@.tmp $@

-include $(patsubst %.o,%.d,$(RT_OBJS))

# The agent's copy of the image.
$(OBJDIR)/guestrt/hook/inproc/rt_blob.o: guestrt/hook/inproc/rt_blob.S $(RT_DIR)/rt.bin
	@mkdir -p $(@D)
	@$(if $(Q),echo "  AS      $<")
	$(Q)$(CC) -c -DRT_BIN='"$(RT_DIR)/rt.bin"' $< -o $@
$(call folder_lib,guestrt): $(OBJDIR)/guestrt/hook/inproc/rt_blob.o
