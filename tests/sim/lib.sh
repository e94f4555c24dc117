# Helpers for the sim tests (sourced; not a test itself).
BUILD=${BUILD:-build}
XENSIM=$BUILD/bin/xensim
TRUTH_CHECK=$BUILD/sim/truth-check

need_binaries() {
	for b in "$XENSIM" "$TRUTH_CHECK" "$BUILD/sim/linux0" "$BUILD/sim/linuxU"; do
		[ -x "$b" ] || { echo "missing $b (run make sim)"; exit 77; }
	done
}

TMP=$(mktemp -d "${TMPDIR:-/tmp}/simtest.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

# The pids xensim -v printed: "xensim: dom0 (linux0) pid N, dom1 (linuxU) pid M; process group G"
domain_pids() {
	sed -n 's/^xensim: dom0 .*; process group.*$/&/p' "$1" | grep -o 'pid [0-9]*' | awk '{print $2}'
}

process_group() {
	sed -n 's/^xensim: dom0 .*; process group \([0-9]*\)$/\1/p' "$1"
}

# Asserts that nothing of the host started by the run logged in $1 is left:
# no process of its group, none of its pids, no memfd of any of them, and
# nothing new in /dev/shm (compared with the listing in $2).
assert_nothing_left() {
	log=$1 shm_before=$2
	pg=$(process_group "$log")
	[ -n "$pg" ] || fail "no process group in the xensim log"
	# Zombies do not count: a domain orphaned by a killed launcher is
	# reaped by whatever init this machine (or container) has.
	for p in $(domain_pids "$log"); do
		if [ "$(ps -o pgid=,stat= -p "$p" 2>/dev/null | awk '$2 !~ /^Z/ {print $1}')" = "$pg" ]; then
			fail "domain process $p is still running"
		fi
	done
	left=$(ps -e -o pgid=,pid=,stat=,comm= | awk -v pg="$pg" '$1 == pg && $3 !~ /^Z/')
	[ -z "$left" ] || fail "processes left in group $pg: $left"
	for fd in /proc/[0-9]*/fd/*; do
		t=$(readlink "$fd" 2>/dev/null) || continue
		case $t in
		*memfd:xensim-dom*)
			pid=${fd#/proc/}; pid=${pid%%/*}
			[ "$(ps -o pgid= -p "$pid" 2>/dev/null | tr -d ' ')" = "$pg" ] &&
				fail "process $pid still holds $t"
			;;
		esac
	done
	ls /dev/shm > "$TMP/shm.after" 2>/dev/null
	if ! diff -q "$shm_before" "$TMP/shm.after" >/dev/null; then
		new=$(comm -13 "$shm_before" "$TMP/shm.after" | grep -i -E 'xen|sim' || true)
		[ -z "$new" ] || fail "left in /dev/shm: $new"
	fi
	return 0
}

shm_snapshot() {
	ls /dev/shm > "$1" 2>/dev/null || : > "$1"
}

# The lateness p90 (ns) a delay the truth $1 calls WHAT ($3) was released
# with, in domain $2, or the largest over domains with "any"; "none" when
# the truth has no such "#late" line (sim/README).
late_p90() {
	awk -F'\t' -v dom="$2" -v what="$3" '$1 == "#late" && (dom == "any" || $2 == dom) && $3 == what {
		if (!n || $6 > m) m = $6; n++ }
		END { print n ? m : "none" }' "$1"
}
