#!/bin/sh
# An injected pipeline delay shows up in the truth, on that hop only, at the
# injected value +-5%, and does not cost throughput.  The peer's ACKs also
# pass dom0's netif_receive_skb, so the hop that ends with the guest freeing
# the ACKed original (tcp_clean_rtx_queue) and the end-to-end time grow too.
. "$(dirname "$0")/lib.sh"
need_binaries

"$XENSIM" --duration 3 --rate 2000 --block-rate 0 --delay netif_receive_skb=2ms \
	--truth "$TMP/truth" > "$TMP/log" 2>&1 || { cat "$TMP/log"; fail "xensim"; }
cat "$TMP/log"
grep -q '6000 messages (6000 segments) sent, 6000 acknowledged' "$TMP/log" ||
	fail "the delay cost messages"
"$TRUTH_CHECK" --tsv --guests 1 --min-msgs 6000 "$TMP/truth" > "$TMP/hops" || { cat "$TMP/hops"; fail "truth-check"; }
cat "$TMP/hops"
awk -F'\t' '
	$3 == "0:netif_rx->0:netif_receive_skb" {
		found = 1
		if ($5 < 1900000 || $5 > 2100000) { print "p50 " $5 " ns is not 2 ms +-5%"; bad = 1 }
	}
	$2 == "net" && $3 != "0:netif_rx->0:netif_receive_skb" && $3 != "end_to_end" &&
	$3 != "0:FreeTxDescriptors->U:tcp_clean_rtx_queue" && $5 > 1000000 {
		print "hop " $3 " took " $5 " ns at p50: the delay leaked into it"; bad = 1
	}
	END { if (!found) print "no netif_rx->netif_receive_skb hop"; exit !found || bad }
' "$TMP/hops" || fail "delay not where it was injected"
echo ok
