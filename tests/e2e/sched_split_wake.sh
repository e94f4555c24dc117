#!/bin/sh
# Issue 24 on the simulated host, --wake-delay 0=2ms: after each wake dom0's
# vCPU waits for its pCPU while a hog holds it.  xflowtop, joined live with
# the host's trace, must put that time of the hop from the guest into dom0
# in `wait`, naming the hog as culprit, with a p50 within 10% of the
# truth's (dom0's runnable intervals, which the model really made the
# domain wait), never under the delay, the other states near zero, and
# every sample's states adding up to it exactly.  From the same run:
#   - a replay of the saved session with the trace gives exactly the split
#     the model gives the same records (and the live one, as far as live
#     had split, within 2 points of each state's share);
#   - the trace placed 1.5 ms late is detected: the clock error measured
#     is most of the shift, and xflowtop's header says so;
#   - records lost for 200 ms: the samples inside are all '?', the others
#     unchanged;
#   - a trace of another time (an hour earlier): every sample 100% '?'.
. tests/e2e/lib.sh
. tests/sim/lib.sh
. tests/sim/sched_lib.sh
. tests/e2e/sched_lib.sh
D=2000000

sched_run --wake-delay 0=2ms
S=$TMP/run/splits
late=$(late_p90 "$TMP/run/truth" any wake-delay)
[ "$late" != none ] || fail "no #late line for the wake delay"
check_sums "$S" 400

# Wait: against the truth's runnable intervals of dom0 and the delay.
truth=$(awk -F'\t' '$1 == "#sched" && $2 == 0 && $4 == "runnable" { print $6 - $5 }' "$TMP/run/truth" | percentile 50)
wait=$(split_pct "$S" "$CROSS" 5 50)
echo "wait p50 $wait ns; truth: dom0 runnable p50 $truth ns; injected $D ns, late by $late ns at p90"
awk -v w="$wait" -v t="$truth" 'BEGIN { d = w - t; if (d < 0) d = -d; exit d > t / 10 }' ||
	fail "the wait's p50 $wait is not within 10% of the truth's $truth"
[ "$wait" -ge $((D - 1000)) ] && [ "$wait" -le $((D + D / 10 + late)) ] ||
	fail "the wait's p50 $wait is not the delay (+10% + lateness)"
# The others near zero: the backend's own start after its vCPU runs is a
# thread's wake-up on this loaded machine, bounded as the delay's lateness is.
check_others "$S" "$CROSS" "wait" $((D / 10 + late))
# The culprit of the injected waits (a sample's wait of half the delay or
# more) is the hog (domain guests + 1 = 2), as often as the truth says the
# hog held dom0's pCPU through such a wait, within 5 points: on a loaded
# machine another domain's vCPU can hold it first (538 of 600 waits, all
# sizes, were the hog's in one run at load 17).
tshare=$(awk -F'\t' -v d=$D '$1 == "#sched" && $2 == 0 && $4 == "runnable" && $6 - $5 >= d / 2 {
	n++; if ($7 == "d2v0") h++ } END { printf "%.3f", n ? h / n : 0 }' "$TMP/run/truth")
awk -F'\t' -v h="$CROSS" -v d=$D -v t="$tshare" '$1 == h && $5 >= d / 2 { n++; if ($12 == "d2v0@pcpu0" || $12 == "d2v0@pcpu1") hog++ }
	END { printf "%d of %d injected waits charged to the hog d2v0 (%.3f); the truth: %.3f of dom0'"'"'s runnable intervals of %d ns or more\n", hog, n, n ? hog / n : 0, t, d / 2
		exit !n || hog / n < t - 0.05 }' "$S" ||
	fail "the waits are not charged to the hog as the truth says"

# Live: joined, the clock error small, the hop's split mostly wait, its
# tail (the slowest 1 %) too, and the culprit the hog.
L=$TMP/run/live.json
json_last "$L" 'd["sched"]'
[ "$(json_last "$L" 'd["sched"]["joined"]')" = True ] || fail "live: the trace is not joined"
err=$(json_last "$L" 'd["sched"]["clock_error_ns"]')
[ "$err" != None ] && [ "$err" -le $((D / 10)) ] || fail "live: clock error $err ns"
json_last "$L" 'hop("network_start_xmit", "netbk_fill_frags")["split"]' > "$TMP/live.split"
cat "$TMP/live.split"
# Live, over all flows: the culprit is the hog, and the tail (the slowest
# 1 %) leaves out the hop's first 100 samples (TAIL_MIN in
# tui/aggregate.c: before them its p99 means nothing) and, when it holds
# any, holds samples slower than the mean on average.  Neither its size nor
# that it holds any is the machine's to promise: a sample joins it when it
# is at or above the hop's p99 as it stands when the sample is split (the
# middle of the histogram's bucket), so a burst of stalls on a loaded
# machine put 45 of 600 flows above the p99 of the moment once, and a run
# whose slowest samples were split before the p99 rose to them left it
# empty another time (fc42, beside two busy loops and a sanitized make
# check).  What enters it and when is the unit test's to check, on input it
# controls (aggregate's tail_after).  The wait's
# size is checked above against the truth, sample by sample; its share of
# the hop's time is not (the backend's own run grows with the machine's
# load, summed over the run); the live split is checked against the
# replay's below, and the replay's against the model's exactly.
json_last "$L" '(lambda h, s: s["all"]["culprit"]["domain_id"] == 2 and s["tail"]["flows"] <= h["count"] - 100 and (s["tail"]["flows"] == 0 or sum(s["tail"]["ns"].values()) / s["tail"]["flows"] >= sum(s["all"]["ns"].values()) / h["count"]))(hop("network_start_xmit", "netbk_fill_frags"), hop("network_start_xmit", "netbk_fill_frags")["split"])' |
	grep -qx True || fail "live: the hop's tail or culprit is wrong"

# Replay with the trace: the same split as the model gives the records.
check_replay_is_model "$S"
[ "$(json_last "$TMP/replay.json" 'sum(hop("network_start_xmit", "netbk_fill_frags")["split"]["all"]["ns"].values()) == hop("network_start_xmit", "netbk_fill_frags")["total_ns"]')" = True ] ||
	fail "the replay's split does not add up to the hop's total"
python3 - "$L" "$TMP/replay.json" <<'EOF' || fail "the live split is not the replay's"
import json, sys
def last(p):
    d = None
    for line in open(p):
        if line.strip():
            d = json.loads(line)
    for h in d["hops"]:
        if h["from"]["function"] == "network_start_xmit" and h["to"]["function"] == "netbk_fill_frags":
            return h["split"]["all"]["ns"]
a, b = last(sys.argv[1]), last(sys.argv[2])
ta, tb = sum(a.values()), sum(b.values())
bad = [k for k in a if abs(a[k] / ta - b[k] / tb) > 0.02]
print("live vs replay shares:", " ".join("%s %.3f/%.3f" % (k, a[k] / ta, b[k] / tb) for k in a if a[k] or b[k]))
sys.exit(1 if bad else 0)
EOF

# The trace 1.5 ms late: detected, and said in the header.
"$SCHED_SPLITS" "$TMP/run/session" "$TMP/run/x.trace" --offset 1500000 > "$TMP/shifted"
shifted=$(awk -F'\t' '$1 == "#sched" { print $3 }' "$TMP/shifted")
echo "trace shifted by 1500000 ns: clock error measured $shifted ns"
[ "$shifted" != - ] && [ "$shifted" -ge 1000000 ] && [ "$shifted" -le 3000000 ] ||
	fail "a 1.5 ms shift measured as $shifted ns"
"$XFLOWTOP" --replay "$TMP/run/session" --collector "xentrace:file=$TMP/run/x.trace,cpu-hz=2.4G,clock-offset=1500000" \
	-b -d 0.2 > "$TMP/shifted.txt" 2>&1 || fail "xflowtop with a shifted trace"
hdr=$(grep '^sched joined, clock' "$TMP/shifted.txt" | tail -1)
echo "header: $hdr"
# "±B µs" when the checks prove a bound, "≥E µs off, not bounded" when
# not: either way the shift is the figure.
echo "$hdr" | awk '{ v = $4; sub(/^(\302\261|\342\211\245)/, "", v); exit !(v + 0 >= 1000 && v + 0 <= 3000) }' ||
	fail "the header does not show the clock error"

# Records lost from 1 s to 1.2 s into the trace.
first=$(awk -F'\t' '$1 == h { print $2; exit }' h="$CROSS" "$S")
a=$((first + 1000000000)) b=$((first + 1200000000))
"$SCHED_SPLITS" "$TMP/run/session" "$TMP/run/x.trace" --lose "$a:$b" > "$TMP/lost"
# (Their states, that is: the culprit of a wait that was still going on
# when the records were lost is not known, its switch being among them.)
awk -F'\t' -v a="$a" -v b="$b" 'function states(  i, x) { x = ""; for (i = 4; i <= 11; i++) x = x " " $i; return x }
	FNR == NR { if ($1 !~ /^#/) base[$1, $2, $3] = states(); next }
	$1 ~ /^#/ { next }
	$2 >= a && $3 < b { inside++; if ($11 != $3 - $2) bad++; next }
	$3 < a { before++; if (base[$1, $2, $3] != states()) changed++ }
	END { print inside + 0 " samples inside the loss, " bad + 0 " of them not all ?; " before + 0 " before it, " changed + 0 " changed"
		exit bad || changed || inside < 10 }' "$S" "$TMP/lost" || fail "lost records are not '?'"

# A trace of another time: nothing of it covers the flows.
"$SCHED_SPLITS" "$TMP/run/session" "$TMP/run/x.trace" --offset -3600000000000 |
	awk -F'\t' '$1 !~ /^#/ { n++; if ($11 != $3 - $2) bad++ }
		END { print n " samples against a trace of an hour before: " bad + 0 " not 100% ?"; exit bad || !n }' ||
	fail "without a trace of their time, samples are not all '?'"
echo ok
