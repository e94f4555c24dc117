#!/bin/sh
# The scheduler model without injected causes: the truth's intervals cover
# each vCPU's whole run, from the model's start to the host's stop, with no
# gap and no overlap, with one pCPU for three domains (so that they wait
# for it, each wait charged to a vCPU that held it) and with the default
# two; a stage delay (--delay) shows as dom0 blocked, not waiting for a
# pCPU; every trace reads without complaint; and without the model's knobs
# the truth has none of its lines.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sched_lib.sh"
need_binaries
need_xentrace_reader

# Each vCPU's intervals, in order: contiguous from the #xentrace line's
# start to one common end.
check_cover() {
	awk -F'\t' '$1 == "#xentrace" { start = $4 }
		$1 == "#sched" { print "d" $2 "v" $3, $5, $6, $4 }' "$1" | sort -k1,1 -k2,2n |
	awk -v start="$(awk -F'\t' '$1 == "#xentrace" { print $4 }' "$1")" '
		$1 != v { if (v != "") ends[v] = e
			  v = $1; n++
			  if ($2 != start) { print v " starts at " $2 ", not " start; bad++ } }
		$1 == v && k[v]++ && $2 != e { print v ": gap or overlap at " e " -> " $2; bad++ }
		{ if ($3 < $2) { print v ": interval ends before it starts"; bad++ }; e = $3; t[v, $4] += $3 - $2 }
		END { ends[v] = e
			for (x in ends) { if (end == "") end = ends[x]; if (ends[x] != end) { print x " ends at " ends[x] ", not " end; bad++ } }
			for (x in ends) printf "%s: running %.1f ms, runnable %.1f ms, blocked %.1f ms, offline %.1f ms of %.1f ms\n",
				x, t[x, "running"] / 1e6, t[x, "runnable"] / 1e6, t[x, "blocked"] / 1e6,
				t[x, "offline"] / 1e6, (end - start) / 1e6
			if (!n) { print "no #sched lines"; bad++ }
			exit bad > 0 }' || fail "the intervals of $1 do not cover the run"
}

"$XENSIM" --duration 1 --rate 300 --block-rate 30 --guests 2 --pcpus 1 \
	--xentrace "$TMP/one.trace" --truth "$TMP/one" > "$TMP/log" 2>&1 || { cat "$TMP/log"; fail "xensim --pcpus 1"; }
[ "$(grep -c '300 messages (300 segments) sent, 300 acknowledged; 30 block requests, 30 done' "$TMP/log")" -eq 2 ] ||
	{ cat "$TMP/log"; fail "the guests did not finish their work on one pCPU"; }
check_trace "$TMP/one.trace"
check_cover "$TMP/one"
# Waits for the one pCPU, each charged to a domain's vCPU (no hog here).
awk -F'\t' '$1 == "#sched" && $4 == "runnable" && $7 != "-" {
		n++; if ($7 !~ /^d[0-2]v0$/ || $7 == "d" $2 "v0") bad++ }
	END { print n + 0 " waits for the pCPU charged to the vCPU of another domain"; exit !n || bad }' "$TMP/one" ||
	fail "waits for the pCPU without a culprit, or charged to a wrong one"

"$XENSIM" --duration 1 --rate 500 --block-rate 50 --xentrace "$TMP/two.trace" --truth "$TMP/two" \
	> "$TMP/log" 2>&1 || { cat "$TMP/log"; fail "xensim"; }
check_trace "$TMP/two.trace"
check_cover "$TMP/two"
"$TRUTH_CHECK" --guests 1 --min-msgs 500 --min-blk 50 "$TMP/two" > /dev/null || fail "truth-check with the model"

# --delay: dom0 is blocked on a timer for the delay, not waiting for a pCPU.
"$XENSIM" --duration 1 --rate 500 --block-rate 0 --delay netif_receive_skb=2ms \
	--xentrace "$TMP/d.trace" --truth "$TMP/d" > "$TMP/log" 2>&1 || { cat "$TMP/log"; fail "xensim --delay"; }
check_trace "$TMP/d.trace"
check_cover "$TMP/d"
trace_events "$TMP/d.trace" "$TMP/d" "$TMP/dev"
w=$(wake_to_run_p50 "$TMP/dev" 0)
echo "with --delay netif_receive_skb=2ms: dom0 wake-to-run p50 $w ns"
[ "$w" != none ] && [ "$w" -lt 100000 ] || fail "dom0 waited $w ns for a pCPU at p50 under a stage delay"
hop=$(hop_p50 "$TMP/d" "0:netif_rx->0:netif_receive_skb" 500)
[ -n "$hop" ] && [ "$hop" -ge 2000000 ] || fail "the delayed hop took $hop ns"
echo "netif_rx->netif_receive_skb: p50 $hop ns, while dom0 was blocked or running"

# --xen-irq: the "#xen" interrupts leave the "#sched" intervals covering
# the run, each lies in a run of its vCPU on its pCPU, from the run's
# start, and lasts the interrupt at least (but the few the host's stop or a
# domain's exit cut short); the trace's records say the same: each the
# interrupt's length to the nanosecond, written just after its end (as Xen
# writes it: the exit's TSC read, then the record's own; two reads of the
# clock apart, but a domain preempted between them on a loaded machine
# writes it later: up to 10 ms is allowed).
"$XENSIM" --duration 1 --rate 500 --block-rate 50 --xen-irq 300us \
	--xentrace "$TMP/x.trace" --truth "$TMP/x" > "$TMP/log" 2>&1 || { cat "$TMP/log"; fail "xensim --xen-irq"; }
check_trace "$TMP/x.trace"
check_cover "$TMP/x"
trace_events "$TMP/x.trace" "$TMP/x" "$TMP/xev"
# (An interrupt ends before its run: two passes.)
awk -F'\t' 'FNR == NR { if ($1 == "#sched" && $4 == "running") run[$2 "." $3 "." $8 "." $5] = $6; next }
	$1 == "#xen" { n++; k = $2 "." $3 "." $6 "." $4
		if (!(k in run) || run[k] < $5) { if (bad++ < 3) print "#xen " $0 " is not inside a run begun with it" }
		if ($5 - $4 < 299999) short++ }
	END { print n + 0 " interrupts, each inside its vCPU'"'"'s run, from its start; " short + 0 " shorter than 300 us"
		exit !n || bad || short > 4 }' "$TMP/x" "$TMP/x" || fail "the interrupts of the truth do not lie in runs"
{ awk -F'\t' '$1 == "#xen" { print "t", $5, $5 - $4 }' "$TMP/x"; awk '$3 == "irq" { print "r", $1, $5 }' "$TMP/xev"; } |
	sort -k2,2n | awk '$1 == "t" { te[++nt] = $2; td[nt] = $3 } $1 == "r" { re[++nr] = $2; rd[nr] = $3 }
	END { for (i = 1; i <= nt || i <= nr; i++) {
			e = re[i] - te[i]; d = rd[i] - td[i]
			if (e < -1 || e > 10000000 || d < -1 || d > 1) { if (bad++ < 3) print "truth " te[i] " (" td[i] " ns) vs record " re[i] " (" rd[i] " ns)" } }
		print nr + 0 " records for " nt + 0 " interrupts of the truth, " bad + 0 " apart"; exit bad || nr != nt }' ||
	fail "the trace's interrupts are not the truth's"

# The default host has no model: none of its lines in the truth.
"$XENSIM" --duration 0.3 --rate 100 --truth "$TMP/plain" > "$TMP/log" 2>&1 || { cat "$TMP/log"; fail "xensim"; }
! grep -q -E '^#(sched|xen)|wake-delay|notify-delay|xen-irq' "$TMP/plain" || fail "scheduler lines without the model"
echo ok
