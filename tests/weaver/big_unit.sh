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
# CPU time of the children so far, in ms.  `times` must run in this shell,
# not in a $(...) subshell, so it writes to a file: the shell's line, then
# its children's ("0m0.52s 0m0.03s").
child_cpu_ms() {
	times >"$dir/times"
	awk 'NR == 2 {
		split($1, u, "m"); split($2, s, "m"); sub("s", "", u[2]); sub("s", "", s[2])
		printf "%d\n", (u[1] * 60 + u[2] + s[1] * 60 + s[2]) * 1000 }' "$dir/times"
}
child_cpu_ms >"$dir/cpu0"
start=$(date +%s%N)
"$XFLOWC" check "$f" || { echo "check failed"; exit 1; }
end=$(date +%s%N)
child_cpu_ms >"$dir/cpu1"
cpu=$(( $(cat "$dir/cpu1") - $(cat "$dir/cpu0") ))
ms=$(( (end - start) / 1000000 ))
echo "xflowc check: $N advices in $ms ms ($cpu ms of CPU)"
# The budget is judged on CPU time, so a busy machine does not fail the
# test; sanitizer builds are several times slower.
limit=1000
[ -n "${SAN:-}" ] && limit=10000
[ "$cpu" -lt "$limit" ] || { echo "too slow: $cpu ms of CPU >= $limit ms"; exit 1; }
