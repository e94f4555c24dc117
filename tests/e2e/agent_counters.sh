#!/bin/sh
# Issue 26 item 1: Prometheus counters only grow, even while losses turn
# flows counted started into partial ones.  The paced program of
# agent_gaps.sh (tests/guestrt/fixtures/agent_gaps.c, half its requests
# losing their middle in lanes of two records, each request 200 ms long so
# that the monitor publishes while a flow that will be found partial is
# live) runs under xflowtop --listen, which is scraped every 50 ms for
# the whole run: no series of a counter family may ever go down, and the
# run must have counted flows partial (else it proved nothing).
. tests/e2e/agent_lib.sh
command -v curl >/dev/null || { echo "no curl to scrape /metrics"; exit 77; }

N=16
agent_start --domain app --lane-slots 2 -- "$T/gaps" $N 100
"$BUILD/bin/xflowtop" -b -d 0.1 -n 100000 --listen 127.0.0.1:0 \
	--collector "agent:socket=$T/s/a.sock,flows=$REQ_FLOW" >"$T/top.out" 2>"$T/top.err" &
TOP=$!
KILL=$TOP
addr=""
for _ in $(seq 100); do
	addr=$(sed -n 's|.*serving http://\([0-9.]*:[0-9]*\)/metrics.*|\1|p' "$T/top.err")
	[ -n "$addr" ] && break
	sleep 0.1
done
[ -n "$addr" ] || { cat "$T/top.err"; fail "xflowtop serves no /metrics"; }
: >"$T/samples"
scrape() { curl -s "http://$addr/metrics" >>"$T/samples" && echo "# SAMPLE END" >>"$T/samples"; }
while kill -0 $AGENT 2>/dev/null; do
	scrape
	sleep 0.05
done
wait $AGENT
rc=$?
cat "$T/agent.err"
[ $rc -eq 0 ] || fail "xflow-agent exited with $rc"
grep -q "^$N requests" "$T/agent.out" || fail "the program did not finish"
# The monitor's window lets the last records go.
for _ in $(seq 10); do
	scrape
	sleep 0.05
done
kill -TERM $TOP
wait $TOP
KILL=""

# Every counter series against its previous sample.
awk '
/^# TYPE / { type[$3] = $4; next }
/^# SAMPLE END/ { samples++; next }
/^#/ { next }
{
	series = $1; v = $2 + 0
	fam = series; sub(/\{.*/, "", fam)
	if (type[fam] != "counter") next
	if ((series in last) && v < last[series]) {
		printf "FAIL: %s went down from %s to %s (sample %d)\n", series, last[series], v, samples + 1
		bad++
	}
	last[series] = v
}
END {
	printf "%d samples, %d counter series\n", samples, length(last)
	printf "partial %d\n", last["xflowtop_flows_partial_total{host=\"" host "\"}"] + 0
	exit bad ? 1 : 0
}' host="$(hostname)" "$T/samples" >"$T/verdict"
rc=$?
cat "$T/verdict"
[ $rc -eq 0 ] || fail "a counter went down"
samples=$(sed -n 's/^\([0-9]*\) samples.*/\1/p' "$T/verdict")
[ "${samples:-0}" -ge 20 ] || fail "only ${samples:-0} scrapes during the run"
partial=$(grep -h '^xflowtop_flows_partial_total' "$T/samples" | tail -1 | awk '{print $2}')
lost=$(sed -n 's/.*sent [0-9]* records; lost \([0-9]*\) .*/\1/p' "$T/agent.err")
echo "the agent lost ${lost:-?} records; xflowtop_flows_partial_total ${partial:-none} at the end"
[ "${partial:-0}" -gt 0 ] || fail "no flow counted partial: the run proved nothing"
seen=$(grep -h '^xflowtop_records_seen_lost_total' "$T/samples" | tail -1 | awk '{print $2}')
[ "$seen" = "$lost" ] || fail "xflowtop_records_seen_lost_total says '$seen', the agent lost $lost"
echo "every counter only grew over $samples scrapes, with flows found partial on the way"
