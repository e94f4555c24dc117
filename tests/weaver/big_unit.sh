#!/bin/sh
# `xflowc check` of a 10,000-advice file must take under a second.
set -u
XFLOWC=${BUILD:-build}/bin/xflowc
[ -x "$XFLOWC" ] || { echo "no $XFLOWC"; exit 1; }
N=${N:-10000}
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
f=$dir/big.xml
awk -v n="$N" 'BEGIN {
	print "<flows>"
	print "<xflow name=\"netflow\">"
	print "<start><pointcut>access(sk_buff.data) AND within_function(alloc_skb_from_cache@linuxU)</pointcut></start>"
	print "<quit><pointcut>access(sk_buff.%) AND within_function(__kfree_skb)</pointcut></quit>"
	print "</xflow>"
	for (i = 0; i < n; i++) {
		print "<advice>"
		printf "<pointcut>access(sk_buff.len) AND within_function(f%d@linuxU) AND target(skb) AND xflow(netflow, skb, id)</pointcut>\n", i
		print "<before>"
		print "long long tsc;"
		print "DO_RDTSC(tsc);"
		printf "if (skb-&gt;len &gt; %d &amp;&amp; (id &amp; 1) == 0)\n", i
		print "  STORE_DATA3($pc$, tsc, id);"
		print "</before>"
		print "</advice>"
	}
	print "</flows>"
}' >"$f"
start=$(date +%s%N)
"$XFLOWC" check "$f" || { echo "check failed"; exit 1; }
end=$(date +%s%N)
ms=$(( (end - start) / 1000000 ))
echo "xflowc check: $N advices in $ms ms"
# Sanitizer builds are several times slower; the budget is for the plain build.
limit=1000
[ -n "${SAN:-}" ] && limit=10000
[ "$ms" -lt "$limit" ] || { echo "too slow: $ms ms >= $limit ms"; exit 1; }
