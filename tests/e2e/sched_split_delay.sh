#!/bin/sh
# Issue 24 on the simulated host, --delay netif_receive_skb=2ms: a delay
# line in dom0 holds each packet between netif_rx's backlog and
# netif_receive_skb while dom0's vCPU has nothing to run.  The hop into
# netif_receive_skb must show that time as `blocked`, p50 within 10% of the
# truth's hop, never under the delay, with no wait or notification in it,
# and every sample adding up exactly.
. tests/e2e/lib.sh
. tests/sim/lib.sh
. tests/sim/sched_lib.sh
. tests/e2e/sched_lib.sh
D=2000000

sched_run --delay netif_receive_skb=2ms
S=$TMP/run/splits
check_sums "$S" 400
late=$(late_p90 "$TMP/run/truth" 0 netif_receive_skb)
[ "$late" != none ] || late=$(late_p90 "$TMP/run/truth" any any)
[ "$late" != none ] || fail "no #late line for the delay"
H=$(awk -F'\t' '$1 ~ /^0:.*->0:netif_receive_skb$/ { n[$1]++ } END { for (h in n) if (n[h] > m) { m = n[h]; b = h } print b }' "$S")
[ -n "$H" ] || fail "no hop into netif_receive_skb"
truth=$(hop_p50 "$TMP/run/truth" "0:netif_rx->0:netif_receive_skb" 400)
blocked=$(split_pct "$S" "$H" 8 50)
echo "$H: blocked p50 $blocked ns; truth: netif_rx -> netif_receive_skb p50 $truth ns; late by $late ns at p90"
[ -n "$truth" ] || fail "no netif_rx -> netif_receive_skb hop in the truth"
awk -v w="$blocked" -v t="$truth" 'BEGIN { d = w - t; if (d < 0) d = -d; exit d > t / 10 }' ||
	fail "blocked's p50 $blocked is not within 10% of the truth's $truth"
[ "$blocked" -ge $((D - 1000)) ] || fail "blocked's p50 $blocked is under the delay"
check_others "$S" "$H" "blocked" $((D / 10 + late))
echo ok
