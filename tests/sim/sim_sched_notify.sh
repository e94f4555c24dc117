#!/bin/sh
# --notify-delay 1ms: every wake that a notification causes comes the delay
# after the sender's evtchn_op hypercall (Xen 4.17 has no event channel
# record: the sender's hypercall, then the receiver's WAKE), the receiver
# stays blocked meanwhile rather than runnable, and the hop across the
# ring carries the delay.  Which wakes are notifications, and whose, the
# truth says (the culprit of a blocked interval, and when its evtchn_op
# was), and the trace must have that evtchn_op.  Bounds as in
# sim_sched_wake.sh: never early, p50 at most 10% more plus the measured
# lateness of the receivers' sleeps ("#late N notify-delay").
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/sched_lib.sh"
need_binaries
need_xentrace_reader
D=1000000

sched_run --notify-delay 1ms
late=$(late_p90 "$TMP/truth" any notify-delay)
[ "$late" != none ] || fail "no #late line for the notification delay"

# Blocked intervals ended by a notification: end, receiver, sender, and
# when the truth says the sender's evtchn_op was.
awk -F'\t' '$1 == "#sched" && $4 == "blocked" && $7 ~ /^d[0-9]+v0$/ {
	n = $7; sub(/^d/, "", n); sub(/v0$/, "", n); print $6, $2, n, $9 }' "$TMP/truth" | sort -n -k4 > "$TMP/nwakes"
# Each one in the trace: the sender's evtchn_op at that time (to the
# microsecond), the gap from it to the receiver's wake (the runstate change
# that ends the interval), and whether the WAKE is on the op's pCPU.
awk 'FNR == NR {
		if ($3 == "hc" && $4 == 32) { k = ++nop[$5]; op[$5, k] = $1; opcpu[$5, k] = $2 }
		if ($3 == "wake") lastwake[$4] = $2
		# By microsecond (the dump and the truth round the ns apart), as a
		# string: awk would write a large number as 3.19e+12.
		if ($3 == "rs" && $6 == 2 && $7 == 1) wakecpu[$4, sprintf("%.0f", int($1 / 1000))] = lastwake[$4]
		next
	}
	{
		e = $1; r = $2; n = $3; sent = $4
		if (!(n in p)) p[n] = 1
		while (p[n] < nop[n] && op[n, p[n]] < sent - 1000) p[n]++
		d = op[n, p[n]] - sent
		if (p[n] > nop[n] || d > 1000 || d < -1000) { nomatch++; next }
		k = sprintf("%.0f", int((e - 2) / 1000))
		if (!((r, k) in wakecpu))
			k = sprintf("%.0f", int((e + 2) / 1000))
		c = wakecpu[r, k]
		print e - op[n, p[n]], c == opcpu[n, p[n]] ? "same" : "other", r
	}
	END { if (nomatch) print nomatch " notification wakes whose evtchn_op is not in the trace" > "/dev/stderr"
		exit nomatch > 0 }' \
	"$TMP/ev" "$TMP/nwakes" > "$TMP/gaps" || fail "the truth's notifications are not the trace's"
check_waits "$TMP/gaps" 1 $D "$late" 200 "notifications' evtchn_op to WAKE"
other=$(awk '$2 != "same"' "$TMP/gaps" | wc -l)
[ "$other" -eq 0 ] || fail "$other wakes not logged on the notifier's pCPU"
echo "each WAKE is logged on the pCPU of the notifier's evtchn_op"

# Waiting for the notification is blocked time, not runnable time.
for d in 0 1; do
	w=$(wake_to_run_p50 "$TMP/ev" $d)
	echo "d${d}v0: wake-to-run p50 $w ns"
	[ "$w" != none ] && [ "$w" -lt $((D / 10)) ] || fail "d${d}v0 waited $w ns for a pCPU at p50"
done

hop=$(hop_p50 "$TMP/truth" "U:network_start_xmit->0:netbk_fill_frags" 400)
echo "network_start_xmit->netbk_fill_frags: p50 $hop ns"
[ -n "$hop" ] && [ "$hop" -ge "$D" ] && [ "$hop" -le $((D + D / 10 + late + 100000)) ] ||
	fail "the hop into dom0 does not carry the notification delay"
echo ok
