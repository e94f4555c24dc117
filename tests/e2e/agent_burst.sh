#!/bin/sh
# Issue 26 item 1: a short-lived program started with `xflow-agent -- cmd`
# writes its records in one burst (3 x 2500, more than a lane holds) and
# exits at once.  Every record is either counted or said to be lost, in
# the batch header, the domain's row, the snapshot's JSON and Prometheus:
# records + drops = what the program wrote, and drops > 0 with lanes of 64
# records.  The agent must not go before its monitor has heard what the
# last moments lost (its answer to the next STATS).
. tests/e2e/agent_lib.sh
command -v curl >/dev/null || { echo "no curl to scrape /metrics"; exit 77; }

N=2500
WROTE=$((3 * N))
agent_start --domain burst --lane-slots 64 -v -- "$T/burst" $N
"$BUILD/bin/xflowtop" -b -d 0.25 -n 16 --listen 127.0.0.1:0 --snapshot-on-exit "$T/snap" \
	--collector "agent:socket=$T/s/a.sock,flows=$REQ_FLOW" >"$T/top.out" 2>"$T/top.err" &
TOP=$!
KILL=$TOP
wait $AGENT
rc=$?
cat "$T/agent.err"
[ $rc -eq 0 ] || fail "xflow-agent exited with $rc"
grep -q "^$N requests" "$T/agent.out" || fail "the program did not finish its burst"
# The agent is gone; the monitor has had a refresh to read its ring.
sleep 0.6
addr=$(sed -n 's|.*serving http://\([0-9.]*:[0-9]*\)/metrics.*|\1|p' "$T/top.err")
[ -n "$addr" ] || { cat "$T/top.err"; fail "xflowtop serves no /metrics"; }
curl -s "http://$addr/metrics" >"$T/metrics" || fail "cannot scrape http://$addr/metrics"
wait $TOP
rc=$?
KILL=""
[ $rc -eq 0 ] || { cat "$T/top.err"; fail "xflowtop exited with $rc"; }

! grep -q "match nothing" "$T/top.out" "$T/top.err" || fail "a weave with sites said it matches nothing"
head=$(grep '^uptime' "$T/top.out" | tail -1)
echo "$head"
records=$(echo "$head" | sed -n 's/.* records \([0-9]*\) .*/\1/p')
drops=$(echo "$head" | sed -n 's/.* drops \([0-9]*\),.*/\1/p')
[ -n "$records" ] && [ -n "$drops" ] || fail "no records or drops in the header"
# The agent's loss notes (xflow/record.h, "Losses") are records the
# program did not write: the agent says how many it sent.
notes=$(sed -n 's/.*; \([0-9]*\) loss notes among the records sent.*/\1/p' "$T/agent.err")
notes=${notes:-0}
[ $((records - notes + drops)) -eq $WROTE ] ||
	fail "header: $records records ($notes of them loss notes) + $drops drops, the program wrote $WROTE"
[ "$drops" -gt 0 ] || fail "lanes of 64 records lost nothing in a burst of $WROTE"
# Every record lost is one the monitor saw missing: the last ones came
# after the program's last record kept, and only the agent's loss note
# says them (a process gone is drained once, its full lane whole).
seen=$(echo "$head" | sed -n 's/.*, seen lost \([0-9]*\) in .*/\1/p')
[ "$seen" = "$drops" ] || fail "the monitor saw '$seen' records missing, the agent dropped $drops"

row=$(grep -A1 '^  ID NAME ' "$T/top.out" | grep -E '^ +[0-9]+ burst ' | tail -1)
echo "$row"
row_drops=$(echo "$row" | awk '{print $7}')
[ "$row_drops" = "$drops" ] || fail "the domain's row says $row_drops drops, the header $drops"

echo "$row" | grep -q "$drops records lost in the targets' lanes (full: xflow-agent --lane-slots" ||
	fail "the domain's row does not say its lanes were full"
grep -q "lanes of 64 records (--lane-slots)" "$T/agent.err" || fail "the agent did not say its lanes' size"

json_drops=$(tr ',{}' '\n\n\n' <"$T/snap.json" | sed -n 's/^ *"drops": *\([0-9]*\)$/\1/p' | head -1)
[ "$json_drops" = "$drops" ] || fail "the snapshot's JSON says $json_drops drops, the header $drops"

prom=$(sed -n 's/^xflowtop_domain_records_dropped_total{.*domain="burst".*} \([0-9]*\)$/\1/p' "$T/metrics")
[ "$prom" = "$drops" ] || { grep dropped "$T/metrics"; fail "Prometheus says '$prom' drops of domain burst, the header $drops"; }
echo "records $records - loss notes $notes + drops $drops = $WROTE written; the domain, the JSON and Prometheus agree"
