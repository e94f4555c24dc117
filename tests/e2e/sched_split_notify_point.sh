#!/bin/sh
# Issue 24 on the simulated host, with a notify point: netflow.xml's xin in
# netfront written notify="yes" (the request's flags are its last store
# before the ring is pushed and the backend notified).  The hop from the
# guest into dom0 must then cross at the point's record, not at the
# guest's evtchn_op: dom0, blocked on its event channel, is charged from
# the point to its wake (the truth's blocked interval ended by the guest's
# notification), and the guest its part before, the point's distance from
# the hop's start.  With the evtchn_op, `notify` is only the wake's own
# latency: each sample's must be the point's instead, within 1 us.  The
# ordered pair each notification gives must not call the clocks apart.
. tests/e2e/lib.sh
. tests/sim/lib.sh
. tests/sim/sched_lib.sh
. tests/e2e/sched_lib.sh

# The shipped flow with the one attribute: the truth's stages are its.
awk '/<transit>/ { t = NR } t && NR == t + 3 && /netfront\.c@linuxU/ { sub(/<transit>/, "<transit notify=\"yes\">", line[t]); done = 1 }
	{ line[NR] = $0 } END { for (i = 1; i <= NR; i++) print line[i]; exit !done }' flows/netflow.xml > "$TMP/notify.xml" ||
	fail "netflow.xml has no xin transit in netfront.c to make a notify point"
"$BUILD/bin/xflowc" plan --domain linuxU="${XENSIM_DIR:-$BUILD/sim}/linuxU" "$TMP/notify.xml" 2>&1 |
	grep -q 'transit of netflow .* notifies the next domain' || fail "xflowc plan does not place the notify point"

sched_run --flows "$TMP/notify.xml"
S=$TMP/run/splits
check_sums "$S" 400
awk -F'\t' '$1 == "#sched" { exit !($3 != "-" && $3 <= 1000) }' "$S" || fail "the clocks called apart: $(grep '^#sched' "$S")"
# Per sample of the hop across: tn is the guest's first record at the
# notify point in [t0, t1] (sched-splits' #notify lines, in time order as
# the guest sends one segment at a time), the wake dom0's blocked interval
# holding tn ended by the guest's notification, h that notification's
# evtchn_op (the truth's #sched lines).
awk -F'\t' -v h="$CROSS" '
	FNR == NR { if ($1 == "#sched" && $2 == 0 && $4 == "blocked" && $7 == "d1v0" && $9 != "-") {
			bs[++nb] = $5; be[nb] = $6; bh[nb] = $9 }
		next }
	$1 == "#notify" && $2 == 1 { tn[++nn] = $3; next }
	$1 == h { s[++m] = $2; e[m] = $3; sender[m] = $4 + $8 + $9; notify[m] = $6 }
	END {
		k = 1; b = 1
		for (i = 1; i <= m; i++) {
			while (k <= nn && tn[k] < s[i]) k++
			if (k > nn || tn[k] > e[i]) { none++; continue }
			while (b <= nb && be[b] < tn[k]) b++
			if (b > nb || bs[b] > tn[k] || be[b] > e[i]) { awake++; continue }
			n++
			want = be[b] - tn[k]; d = notify[i] - want
			if (d < -1000 || d > 1000) { if (bad++ < 3) print "sample " s[i] ": notify " notify[i] " ns, the point to the wake " want " ns" }
			print tn[k] - s[i], sender[i], want, be[b] - bh[b], bh[b] - tn[k] > "/dev/stderr"
		}
		printf "%d samples of the hop across, %d with the point and dom0 asleep at it (%d without a point, %d dom0 awake); %d not charged from the point\n",
			m, n, none, awake, bad
		exit !(n >= m * 0.9 && bad <= n / 100)
	}' "$TMP/run/truth" "$S" 2> "$TMP/pairs" || fail "dom0 is not charged from the notify point"
# Columns of $TMP/pairs: the point's distance from t0, the guest's part
# (run + blocked + offline: the sim blocks a guest's vCPU between its
# hypercalls), dom0's part from the point to its wake, the same from the
# evtchn_op, and the evtchn_op's distance after the point.
dist=$(awk '{ print $1 }' "$TMP/pairs" | percentile 50)
guest=$(awk '{ print $2 }' "$TMP/pairs" | percentile 50)
point=$(awk '{ print $3 }' "$TMP/pairs" | percentile 50)
hc=$(awk '{ print $4 }' "$TMP/pairs" | percentile 50)
after=$(awk '{ print $5 }' "$TMP/pairs" | percentile 0)
echo "p50: the point $dist ns into the hop, the guest's part $guest ns; dom0 asleep $point ns from the point, $hc ns from the evtchn_op"
awk -v g="$guest" -v d="$dist" 'BEGIN { x = g - d; if (x < 0) x = -x; exit x > d / 10 }' ||
	fail "the guest's part ($guest ns at p50) is not the point's distance ($dist ns)"
[ "$after" -ge 0 ] || fail "an evtchn_op $after ns before its notify point in the truth"
[ "$point" -gt "$hc" ] || fail "dom0 is charged no more from the point than from the evtchn_op"
echo ok
