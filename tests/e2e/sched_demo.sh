#!/bin/sh
# Issue 24 on the demo: xflowtop --demo --xentrace sim runs the simulated
# host with its scheduler model and joins its trace, read live, with the
# flows.  The batch header says it is joined with a measured clock, the
# HOP SPLIT section splits the hop from the guest into dom0 (its states
# adding up, as far as it was split, to no more than the hop's time), and
# the run stops cleanly and soon (its FIFO's reader ends with xensim).
. tests/e2e/lib.sh
. tests/sim/lib.sh
XFLOWTOP=$BUILD/bin/xflowtop
e2e_need "$XFLOWTOP"
start=$(date +%s)
timeout -s TERM 90 "$XFLOWTOP" --demo --xentrace sim -b -n 4 -d 1 > "$TMP/out" 2> "$TMP/err" ||
	{ cat "$TMP/err"; fail "xflowtop --demo --xentrace sim"; }
took=$(($(date +%s) - start))
hdr=$(grep -E '^sched (joined|not joined)' "$TMP/out" | tail -1)
echo "header: $hdr (the run took ${took}s)"
# The clock: "±B µs" (the error proven at most B), "≥E µs off, not
# bounded" (seen at least E; on a loaded machine the agents' calibration
# of their clock can drift against the trace's), or not measured yet.
echo "$hdr" | awk '/^sched joined, clock not measured yet/ { exit 0 }
	/^sched joined, clock \302\261[0-9.]+ \302\265s;/ { exit 0 }
	/^sched joined, clock \342\211\245[0-9.]+ \302\265s off, not bounded;/ { exit 0 } { exit 1 }' ||
	fail "not joined, or no clock figure"
# The hop from the guest into dom0, and its split over all its flows:
# a bar and the states' shares, not "not split yet".
awk '/^HOP SPLIT/ { on = 1; next } on && NF == 0 { on = 0 }
	on && /^  linuxU:.* -> linux0:/ { hop = $0; getline; if ($1 == "all") last = hop " |" $0 }
	END { print last; exit last == "" }' "$TMP/out" > "$TMP/cross" || fail "no hop from the guest into dom0 split"
cat "$TMP/cross"
grep -q '%' "$TMP/cross" && ! grep -q 'not split yet' "$TMP/cross" || fail "the hop across was not split"
[ "$took" -lt 60 ] || fail "the demo took ${took}s to stop"
echo ok
