#!/bin/sh
# --wake-delay 0=2ms: after each wake dom0's vCPU is runnable for the
# injected time (a CPU hog, the hog domain's vCPU 0, holds its pCPU: the
# switch that ends each wait names it), the guest's vCPU does not wait,
# the hop into dom0 takes the delay, and the truth's intervals are the
# trace's.  The trace reads without complaint (and as xenalyze reads it).
#
# Bounds: a wait is never shorter than the delay (the hog is released when
# it is due, never before), and its p50 is at most the delay plus 10% plus
# how late this run's releases really came at p90, which the model measures
# and writes to the truth ("#late 0 wake-delay"), as sim_delay.sh does for
# the delay lines: on a loaded machine a thread's wake-up is late by
# anything up to milliseconds.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sched_lib.sh"
need_binaries
need_xentrace_reader
D=2000000

sched_run --wake-delay 0=2ms
late=$(late_p90 "$TMP/truth" any wake-delay)
[ "$late" != none ] || fail "no #late line for the wake delay"
hog=$(awk -F'\t' '$1 == "#xentrace" { print $6 }' "$TMP/truth")
[ "$hog" = 2 ] || fail "the hog domain is '$hog', not 2 (guests + 1)"

# dom0's waits in the trace: from blocked->runnable to runnable->running,
# with the switch that ended each (on the same pCPU, just before).
awk '$3 == "switch" { sw[$2] = $4 "." $5 " " $6 "." $7 }
	$3 == "rs" && $4 == 0 && $5 == 0 && $6 == 2 && $7 == 1 { s = $1 }
	$3 == "rs" && $4 == 0 && $5 == 0 && $6 == 1 && $7 == 0 && s { print s, $1 - s, sw[$2]; s = 0 }' \
	"$TMP/ev" > "$TMP/waits"
check_waits "$TMP/waits" 2 $D "$late" 200 "wake-to-run waits of dom0"
bad=$(awk -v h="$hog" '$3 != h ".0" || $4 != "0.0" { n++ } END { print n + 0 }' "$TMP/waits")
[ "$bad" -eq 0 ] || { head -3 "$TMP/waits"; fail "$bad of dom0's waits not ended by a switch from the hog d${hog}v0"; }
echo "each wait ended with a switch from d${hog}v0 to d0v0"

# The guest is not delayed: its waits are the model's own few microseconds.
g50=$(wake_to_run_p50 "$TMP/ev" 1)
echo "d1v0: wake-to-run p50 $g50 ns"
[ "$g50" != none ] && [ "$g50" -lt $((D / 10)) ] || fail "the guest waited $g50 ns at p50"

# The truth has the same waits, to the microsecond, and names the hog.
awk -F'\t' '$1 == "#sched" && $2 == 0 && $4 == "runnable" { print $5, $6 - $5, $7 }' "$TMP/truth" |
	sort -n > "$TMP/twaits"
[ "$(wc -l < "$TMP/twaits")" -eq "$n" ] || fail "the truth has $(wc -l < "$TMP/twaits") waits of dom0, the trace $n"
paste -d' ' "$TMP/waits" "$TMP/twaits" | awk -v h="$hog" '
	{ d = $1 - $5; if (d < 0) d = -d; e = $2 - $6; if (e < 0) e = -e
	  if (d > 1000 || e > 1000 || $7 != "d" h "v0") {
		if (bad++ < 5) print "trace " $1 " +" $2 " ns, truth " $5 " +" $6 " ns, culprit " $7 } }
	END { exit bad > 0 }' || fail "the truth's waits of dom0 are not the trace's"
echo "the truth's $n waits of dom0 are the trace's, each charged to d${hog}v0"

# The hop into dom0 carries the wait: the vCPU's threads really waited.
hop=$(hop_p50 "$TMP/truth" "U:network_start_xmit->0:netbk_fill_frags" 400)
echo "network_start_xmit->netbk_fill_frags: p50 $hop ns"
[ -n "$hop" ] && [ "$hop" -ge "$D" ] && [ "$hop" -le $((D + D / 10 + late + 100000)) ] ||
	fail "the hop into dom0 does not carry the wait"
echo ok
