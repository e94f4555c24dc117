#!/bin/sh
# Issue 7 end to end: xflowtop -b through the agent collector on the
# simulated host with --delay netif_receive_skb=2ms.  The top hop ends in
# dom0's netif_receive_skb (from netif_rx's backlog) with a p50 within 10%
# of 2 ms (when the host itself ran slow, other hops may outgrow it: then
# only what really happened is the measure), and within what the host says
# happened on that same stretch of the path:
#   - from __skb_unlink (the softirq took the frame off the backlog and
#     handed it to the delay line): the injected 2 ms plus the line's own
#     lateness (its #late line in the truth), as sim_delay.sh bounds it;
#   - from netif_rx or __skb_queue_tail: the truth's netif_rx ->
#     netif_receive_skb p50, within 10%.
# Comparing the first with the second is comparing two different stretches:
# under load the frame waits in the backlog before __skb_unlink, which the
# truth's hop counts and xflowtop's does not.
# The slowest flow's path lists the truth's stages in the truth's order.
. tests/e2e/lib.sh
. tests/sim/lib.sh
e2e_need "$BUILD/bin/xflowtop" "$BUILD/sim/truth-check"
# In the sim helpers' scratch directory, which they remove at exit.
OUT=$TMP/out

check() {
	# The hops table's first row, and the row of the delayed hop (into
	# netif_receive_skb from netif_rx's backlog), in microseconds.
	top=$(awk '/^HOPS$/ { getline; getline; print; exit }' "$OUT")
	delayed=$(awk '/^HOPS$/ { on = 1; getline; next } on && NF == 0 { exit }
		on && $2 == "linux0:netif_receive_skb" { print; exit }' "$OUT")
	echo "top hop: $top"
	echo "delayed hop: $delayed"
	us() { case $1 in *ms) echo "$1" | sed 's/ms$//' | awk '{ printf "%d", $1 * 1000 }' ;;
		*us) echo "$1" | sed 's/us$//' | awk '{ printf "%d", $1 }' ;;
		*) echo 0 ;; esac; }
	[ -n "$delayed" ] || { echo "no hop into netif_receive_skb"; return 1; }
	from=$(echo "$delayed" | awk '{ print $1 }')
	p50=$(us "$(echo "$delayed" | awk '{ print $4 }')")
	truth=$(awk -F'\t' '$3 == "0:netif_rx->0:netif_receive_skb" { printf "%d", $5 / 1000 }' "$OUT")
	echo "p50 ${p50}us, truth netif_rx -> netif_receive_skb p50 ${truth}us"
	case $from in linux0:netif_rx|linux0:__skb_unlink|linux0:__skb_queue_tail) ;;
		*) echo "the hop into netif_receive_skb does not start in netif_rx's backlog: $from"; return 1 ;; esac
	[ -n "$truth" ] || { echo "no netif_rx -> netif_receive_skb hop in the truth"; return 1; }
	# When the traced host itself ran slow (the truth says the hop took
	# more than 2 ms +-10%: two cores shared with other work), other hops
	# can outgrow the delayed one, and the monitor must still report what
	# happened: then only the truth is the measure.  Otherwise the delayed
	# hop is the top row, with a p50 of 2 ms +-10%.
	slow=$(awk -v t="$truth" 'BEGIN { print (t < 1800 || t > 2200) ? 1 : 0 }')
	if [ "$slow" = 1 ]; then
		echo "the host ran slow (truth p50 ${truth}us): comparing with the truth only"
	else
		[ "$top" = "$delayed" ] || { echo "the top hop does not end at netif_receive_skb"; return 1; }
		awk -v p="$p50" 'BEGIN { if (p < 1800 || p > 2200) { print "p50 " p "us is not 2 ms +-10%"; exit 1 } }' ||
			return 1
	fi
	if [ "$from" = linux0:__skb_unlink ]; then
		# The delay line's lateness at p90, the most it added to the
		# hop's middle sample (ns in the truth; us here).
		late=$(late_p90 "$OUT.truth" 0 netif_receive_skb)
		[ "$late" != none ] || { echo "dom0's netif_receive_skb line wrote no lateness"; return 1; }
		late=$((late / 1000))
		echo "the delay line released its frames late by ${late}us at p90"
		awk -v p="$p50" -v late="$late" 'BEGIN { hi = 2100 + late
			if (p < 1950 || p > hi) { print "p50 " p "us is not in [1950, " hi "]us: 2 ms, +5% and the line'"'"'s lateness"; exit 1 } }' ||
			return 1
	else
		awk -v p="$p50" -v t="$truth" 'BEGIN { d = p - t; if (d < 0) d = -d
			if (d > t / 10) { print "p50 " p "us is not within 10% of the truth " t "us"; exit 1 } }' || return 1
	fi
	# The slowest path, as (domain, function), against the truth's stage
	# order (from its hop list): the stages the path shows come in order.
	awk -F'\t' '$1 == "hop" && $2 == "net" && $3 != "end_to_end" {
		split($3, ft, "->"); print ft[1]; print ft[2] }' "$OUT" | awk '!seen[$0]++' > "$OUT.stages"
	awk '/^SLOWEST PATH/ { on = 1; getline; next } on && NF == 0 { exit }
		on { d = $2 == "linux0" ? "0" : "U"; print d ":" $(NF - ($NF ~ /s$/ ? 1 : 0)) }' "$OUT" > "$OUT.path"
	awk 'NR == FNR { pos[$0] = NR; next }
		($0 in pos) && !($0 in got) { got[$0] = 1; n++
			if (pos[$0] < last) { print "stage " $0 " out of the truth order"; bad = 1 }
			last = pos[$0] }
		END { print n " truth stages on the slowest path, in order: " (bad ? "no" : "yes")
			exit bad || n < 8 }' "$OUT.stages" "$OUT.path" || return 1
}

for attempt in 1 2; do
	rm -f "$OUT.truth"
	E2E_KEEP_TRUTH="$OUT.truth" timeout -s TERM 90 "$BUILD/tests/e2e/xflow-e2e" top "$BUILD/bin/xflowtop" --delay netif_receive_skb=2ms \
		--duration 4 > "$OUT" 2>&1
	rc=$?
	cat "$OUT"
	[ $rc -eq 0 ] || { echo "FAIL: the run failed (exit $rc)"; rm -f "$OUT.stages" "$OUT.path"; exit 1; }
	if check; then rm -f "$OUT.stages" "$OUT.path"; exit 0; fi
	# Two cores shared with other builds: one more run before failing.
	echo "attempt $attempt failed"
done
rm -f "$OUT.stages" "$OUT.path"
exit 1
