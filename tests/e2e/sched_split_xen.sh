#!/bin/sh
# Issue 24 on the simulated host, --xen-irq 300us: each run of a domain's
# vCPU begins with Xen handling an interrupt on its pCPU, the vCPU's
# threads held until it is over (sim/README).  The hop from the guest into
# dom0 holds two such runs: the guest's vCPU, woken for its evtchn_op,
# and dom0's, woken by that notification before netbk_fill_frags.  xflowtop,
# joined live with the host's trace, must put that time in `xen`, p50
# within 10% of the truth's (the "#xen" intervals inside each message's
# hop, as the model really made them, not the nominal 300us), the other
# states near zero, every sample's states adding up to it exactly, and the
# live split mostly `xen`; a replay of the saved session with the trace
# gives exactly the split the model gives the same records.
. tests/e2e/lib.sh
. tests/sim/lib.sh
. tests/sim/sched_lib.sh
. tests/e2e/sched_lib.sh
D=300000

sched_run --xen-irq 300us
S=$TMP/run/splits
T=$TMP/run/truth
late=$(late_p90 "$T" any xen-irq)
[ "$late" != none ] || fail "no #late line for the interrupts"
check_sums "$S" 400

# The truth: for each message's segment, the time of the "#xen" intervals
# between the guest's network_start_xmit and dom0's netbk_fill_frags.
awk -F'\t' '$1 == "#xen" { n++; xs[n] = $4; xe[n] = $5; next }
	$1 ~ /^#/ || $4 != "net" { next }
	$2 == 1 && $8 == "network_start_xmit" { t0[$3 "." $5 "." $6] = $1 }
	$2 == 0 && $8 == "netbk_fill_frags" { t1[$3 "." $5 "." $6] = $1 }
	END { for (k in t0) {
			if (!(k in t1))
				continue
			s = 0; c = 0
			for (i = 1; i <= n; i++) {
				a = xs[i] > t0[k] ? xs[i] : t0[k]; b = xe[i] < t1[k] ? xe[i] : t1[k]
				if (b > a) { s += b - a; c++ }
			}
			print s, c
		} }' "$T" > "$TMP/truth.xen"
[ -s "$TMP/truth.xen" ] || fail "no hop $CROSS_TRUTH in the truth"
truth=$(awk '{ print $1 }' "$TMP/truth.xen" | percentile 50)
per=$(awk '{ print $2 }' "$TMP/truth.xen" | percentile 50)
xen=$(split_pct "$S" "$CROSS" 10 50)
echo "xen p50 $xen ns; truth: the interrupts inside the hop p50 $truth ns ($per of them at p50);" \
	"injected $D ns each, late by $late ns at p90"
awk -v w="$xen" -v t="$truth" 'BEGIN { d = w - t; if (d < 0) d = -d; exit !(t > 0) || d > t / 10 }' ||
	fail "xen's p50 $xen is not within 10% of the truth's $truth"
# Never under one interrupt: the model ends none early but at the host's
# stop or a domain's exit.
[ "$xen" -ge $((D - 1000)) ] || fail "xen's p50 $xen is under one interrupt"
# The others near zero: dom0's thread runs once the interrupt is over (its
# wake-up on this loaded machine is in the interrupt's lateness, not here).
check_others "$S" "$CROSS" "xen" $((D / 10 + late))

# Live: joined, and the hop's time the trace explained mostly xen ('?',
# a hop split before a loaded machine's trace passed it, is printed with
# its reasons and left out, as in sched_split_notify.sh).
L=$TMP/run/live.json
[ "$(json_last "$L" 'd["sched"]["joined"]')" = True ] || fail "live: the trace is not joined"
json_last "$L" '(lambda s: "%s %s unknown %s" % (s["all"]["ns"]["xen"] / max(1, sum(s["all"]["ns"].values()) - s["all"]["ns"]["unknown"]), s["all"]["ns"], s["all"]["unknown_ns"]))(hop("network_start_xmit", "netbk_fill_frags")["split"])' |
	awk '{ print "live: xen is " $1 " of the time explained; the split " substr($0, length($1) + 2); exit !($1 > 0.5) }' ||
	fail "live: the hop's split is not mostly xen"

# Replay with the trace, read from its file: the same split as the model
# gives the records.
check_replay_is_model "$S"
echo ok
