# weaver/joinpoints.mk: extra rules for join-point resolution (issue 4).
#
# The join-point tests compile their fixtures (tests/weaver/fixtures/*.c)
# at run time into a temporary directory, with gcc and clang at -O0 and
# -O2, so nothing here builds them.
#
#   make jp-corpus   regenerate the seed corpus of the ELF/DWARF fuzz target
#                    (tests/fuzz/corpus/elf_dwarf/): small fixture binaries,
#                    gcc and clang, DWARF 4 and 5, with the sections the reader
#                    does not need removed.  The regress-* seeds are inputs the
#                    fuzzer found; they are kept as they are.

JP_CORPUS := tests/fuzz/corpus/elf_dwarf
JP_SEED_FLAGS := -fno-asynchronous-unwind-tables -Wl,--build-id=none \
	-Wl,-z,noseparate-code -Wl,-z,max-page-size=0x200
JP_SEED_STRIP := --remove-section=.comment --remove-section=.note.ABI-tag \
	--remove-section=.note.gnu.property --remove-section=.eh_frame_hdr

.PHONY: jp-corpus
jp-corpus:
	$(Q)mkdir -p $(JP_CORPUS)
	$(Q)set -e; f=tests/weaver/fixtures; o=$(JP_CORPUS); \
	gcc -g -Os $(JP_SEED_FLAGS) $$f/jp_shapes.c -o $$o/shapes-gcc-Os.elf; \
	gcc -gdwarf-4 -O2 $(JP_SEED_FLAGS) $$f/jp_shapes.c -o $$o/shapes-gcc-O2-dw4.elf; \
	gcc -g -O0 $(JP_SEED_FLAGS) $$f/jp_shapes.c -o $$o/shapes-gcc-O0.elf; \
	clang -g -O2 $(JP_SEED_FLAGS) $$f/jp_shapes.c -o $$o/shapes-clang-O2.elf; \
	clang -gdwarf-4 -O0 $(JP_SEED_FLAGS) $$f/jp_shapes.c -o $$o/shapes-clang-O0-dw4.elf; \
	clang -g -O1 $(JP_SEED_FLAGS) $$f/jp_netlike.c -o $$o/netlike-clang-O1.elf; \
	gcc -Os $(JP_SEED_FLAGS) $$f/jp_ring.c -o $$o/ring-nodwarf.elf; \
	for b in $$o/*.elf; do case $$b in */regress-*) ;; *) objcopy $(JP_SEED_STRIP) $$b;; esac; done; \
	head -c 3000 $$o/shapes-gcc-O0.elf > $$o/shapes-truncated.elf; \
	printf 'not an elf\n' > $$o/text.txt; chmod 644 $$o/*; du -sh $$o
