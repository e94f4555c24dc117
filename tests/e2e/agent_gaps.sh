#!/bin/sh
# Issue 26 item 1: a flow whose start and end arrive but that lost a
# record in between is partial, never finished, whichever backend lost it.
# A program of N requests (start, three steps, end: five records each,
# tests/guestrt/fixtures/agent_gaps.c) paces itself so that half its
# requests lose their last two steps and keep both ends: in the
# in-process backend's lanes of two records, and in the ptrace backend's
# ring of two records, which the agent fills itself.  xflowtop watches
# live and saves what arrived; from that session the flows whose five
# records all arrived are counted, and xflowtop must have finished exactly
# those, counted every other flow it saw as partial, and seen in the
# threads' numbers every record the agent says it lost.
. tests/e2e/agent_lib.sh
command -v python3 >/dev/null || { echo "no python3 to read the session"; exit 77; }

N=40
STEPS=3 # the fixture's steps per request: START + STEPS transits + QUIT

# run NAME AGENT-ARGS...: one run, checked.
run() {
	name=$1
	shift
	rm -f "$T/s.ses" "$T/snap.json"
	agent_start --domain app "$@" -- "$T/gaps" $N
	"$BUILD/bin/xflowtop" -b -d 0.25 -n 1000 --save-session "$T/s.ses" --snapshot-on-exit "$T/snap" \
		--collector "agent:socket=$T/s/a.sock,flows=$REQ_FLOW" >"$T/top.out" 2>"$T/top.err" &
	TOP=$!
	KILL=$TOP
	wait $AGENT
	rc=$?
	echo "== $name: the agent"
	cat "$T/agent.err"
	[ $rc -eq 0 ] || fail "$name: xflow-agent exited with $rc"
	grep -q "^$N requests" "$T/agent.out" || fail "$name: the program's own output: '$(cat "$T/agent.out")'"
	# The agent is gone; a second lets the monitor read the rest and
	# its window let the last records go.
	sleep 1
	kill -TERM $TOP
	wait $TOP
	rc=$?
	KILL=""
	[ $rc -eq 0 ] || { cat "$T/top.err"; fail "$name: xflowtop exited with $rc"; }

	# The truth, from what arrived (xflow/session.h: 32-byte header,
	# chunks of an 8-byte head; a record chunk is its time and the
	# 88-byte record).
	python3 - "$T/s.ses" $STEPS >"$T/truth" <<'PY' || fail "$name: cannot read the session"
import struct, sys
data = open(sys.argv[1], 'rb').read()
steps = int(sys.argv[2])
assert data[:8] == b'XFLOWSES', 'not a session'
flows = {}
at = 32
while at + 8 <= len(data):
    typ, ln = struct.unpack_from('<II', data, at)
    p = at + 8
    if typ == 1:
        flow_id, = struct.unpack_from('<Q', data, p + 8 + 8)
        flags, = struct.unpack_from('<H', data, p + 8 + 24)
        if flags & (1 << 9):
            at = p + ln
            continue  # a loss note: no flow's (xflow/record.h, "Losses")
        f = flows.setdefault(flow_id, [0, 0, 0])
        f[0] += bool(flags & 1)
        f[1] += bool(flags & 2)
        f[2] += bool(flags & 4)
    at = p + ln
whole = sum(1 for s, t, q in flows.values() if s == 1 and t == steps and q == 1)
ends = sum(1 for s, t, q in flows.values() if s == 1 and q == 1 and t < steps)
print(len(flows), whole, ends)
PY
	read seen whole ends <"$T/truth"
	echo "$name: session: $seen flows seen, $whole with every record, $ends with both ends and a middle lost"
	[ "$whole" -gt 0 ] || fail "$name: no request kept all its records: the fixture's pauses did not let the agent drain"
	# Whether the ptrace agent's ring fills is the machine's timing (a
	# quiet run can drain it every time): such a run checks nothing, and
	# the caller runs again rather than judge it.
	if [ "$ends" -eq 0 ]; then
		echo "$name: no request lost its middle alone: this run proves nothing"
		return 2
	fi

	j() { tr ',{}' '\n\n\n' <"$T/snap.json" | sed -n "s/^ *\"$1\": *\([0-9]*\)$/\1/p" | tail -1; }
	started=$(j flows_started)
	finished=$(j flows_finished)
	partial=$(j flows_partial)
	seen_lost=$(j loss_records)
	echo "$name: xflowtop: started $started, finished $finished, partial $partial, $seen_lost records seen lost"
	[ -n "$started" ] && [ -n "$finished" ] && [ -n "$partial" ] || fail "$name: no flow counts in the JSON"
	[ "$finished" -eq "$whole" ] ||
		fail "$name: $finished flows finished, but $whole kept every record ($ends lost their middle alone)"
	[ $((started + partial)) -eq "$seen" ] ||
		fail "$name: started $started + partial $partial is not the $seen flows seen"
	# Every record lost left a gap the monitor saw: none was lost after
	# its thread's last record (each request ends with a record that
	# finds room).
	lost=$(sed -n 's/.*sent [0-9]* records; lost \([0-9]*\) .*/\1/p' "$T/agent.err")
	[ -n "$lost" ] && [ "$lost" -gt 0 ] || fail "$name: the agent says it lost '$lost' records"
	[ "$seen_lost" = "$lost" ] ||
		fail "$name: the agent lost $lost records, the monitor saw '$seen_lost' missing from the threads' numbers"
	head=$(grep '^uptime' "$T/top.out" | tail -1)
	echo "$head"
	echo "$head" | grep -q ", seen lost $seen_lost in [0-9]* gaps" ||
		fail "$name: the batch header does not say the $seen_lost records seen lost"
}

# run_until_lost NAME AGENT-ARGS...: up to three runs, until one lost a
# middle to check.
run_until_lost() {
	for attempt in 1 2 3; do
		run "$@"
		[ $? -eq 2 ] || return 0
	done
	fail "$1: no request lost its middle alone in three runs: the test proves nothing"
}
run_until_lost inproc --lane-slots 2
run_until_lost ptrace --backend ptrace --ring-slots 2
echo "both backends: finished = the flows whose every record arrived; the others partial; every loss seen"
