#!/bin/sh
# Issue 26 item 1, its remainder: records lost after a thread's last one.
# tests/guestrt/fixtures/agent_tail.c: in each round the main thread
# begins four requests, a worker steps each three times at once into a
# lane of four records (its last steps find the lane full; with the
# ptrace backend, the agent's ring of two, if the monitor is slower than
# the burst: that run is checked when it lost) and then idles, alive, while
# the main thread ends the requests.  Rounds are
# further apart than xflowtop's reorder window, so the worker's next
# record would show the gap too late: the agent's loss note must, at
# once.  xflowtop must then see every record the agent lost (counted in
# time, none late) and count no flow of a round that lost a record as
# finished; the flows of a round that lost none are finished.  The truth
# is read from the session xflowtop saved.
. tests/e2e/agent_lib.sh
command -v python3 >/dev/null || { echo "no python3 to read the session"; exit 77; }

ROUNDS=4
REQS=4  # the fixture's requests a round
STEPS=3 # the fixture's steps a request

# run NAME AGENT-ARGS...: one run, checked; 2 when nothing was lost.
run() {
	name=$1
	shift
	rm -f "$T/s.ses" "$T/snap.json"
	agent_start --domain app "$@" -- "$T/tail" $ROUNDS
	"$BUILD/bin/xflowtop" -b -d 0.25 -n 1000 --save-session "$T/s.ses" --snapshot-on-exit "$T/snap" \
		--collector "agent:socket=$T/s/a.sock,flows=$REQ_FLOW" >"$T/top.out" 2>"$T/top.err" &
	TOP=$!
	KILL=$TOP
	wait $AGENT
	rc=$?
	echo "== $name: the agent"
	cat "$T/agent.err"
	[ $rc -eq 0 ] || fail "$name: xflow-agent exited with $rc"
	grep -q "^$((ROUNDS * REQS)) requests" "$T/agent.out" || fail "$name: the program's own output: '$(cat "$T/agent.out")'"
	sleep 1
	kill -TERM $TOP
	wait $TOP
	rc=$?
	KILL=""
	[ $rc -eq 0 ] || { cat "$T/top.err"; fail "$name: xflowtop exited with $rc"; }

	# The truth (xflow/session.h: a 32-byte header, chunks of an 8-byte head;
	# a record chunk is its time and the 88-byte record).  Flows in the order
	# they began, REQS a round; a round whose every flow kept its START, its
	# STEPS steps and its QUIT lost nothing; the loss notes (flag bit 9, no
	# flow) are counted apart.
	python3 - "$T/s.ses" $REQS $STEPS >"$T/truth" <<'PY' || fail "$name: cannot read the session"
import struct, sys
data = open(sys.argv[1], 'rb').read()
reqs, steps = int(sys.argv[2]), int(sys.argv[3])
assert data[:8] == b'XFLOWSES', 'not a session'
flows, notes, at = {}, 0, 32
while at + 8 <= len(data):
    typ, ln = struct.unpack_from('<II', data, at)
    p = at + 8
    if typ == 1:
        t, = struct.unpack_from('<Q', data, p)
        flow_id, = struct.unpack_from('<Q', data, p + 8 + 8)
        flags, = struct.unpack_from('<H', data, p + 8 + 24)
        if flags & (1 << 9):
            notes += 1
        elif flow_id:
            f = flows.setdefault(flow_id, [0, 0, 0, t])
            f[0] += bool(flags & 1)
            f[1] += bool(flags & 2)
            f[2] += bool(flags & 4)
            if flags & 1:
                f[3] = t
    at = p + ln
order = sorted(flows.values(), key=lambda f: f[3])
ends = all(s == 1 and q == 1 for s, _, q, _ in order)
rounds = [order[i:i + reqs] for i in range(0, len(order), reqs)]
whole_rounds = sum(1 for r in rounds if len(r) == reqs and all(f[1] == steps for f in r))
lossy = sum(1 for f in order if f[1] < steps)
print(len(order), int(ends), whole_rounds * reqs, lossy, notes)
PY
	read seen ends expect lossy notes <"$T/truth"
	echo "$name: session: $seen flows, every one with both ends: $ends; $lossy lost a step; $expect in rounds that lost nothing; $notes loss notes"
	[ "$seen" -eq $((ROUNDS * REQS)) ] || fail "$name: $seen flows in the session, not $((ROUNDS * REQS))"
	# Whether the worker's records find the lane (or the ptrace agent's
	# ring) full, and the main thread's find room, is the machine's
	# timing: a run where they did not checks nothing.
	if [ "$ends" -ne 1 ] || [ "$lossy" -eq 0 ]; then
		echo "$name: a flow lost its start or its end, or no step was lost: this run proves nothing"
		return 2
	fi
	[ "$notes" -gt 0 ] || fail "$name: the agent wrote no loss note"

	j() { tr ',{}' '\n\n\n' <"$T/snap.json" | sed -n "s/^ *\"$1\": *\([0-9]*\)$/\1/p" | tail -1; }
	finished=$(j flows_finished)
	partial=$(j flows_partial)
	seen_lost=$(j loss_records)
	late=$(j loss_late)
	echo "$name: xflowtop: finished $finished, partial $partial, $seen_lost records seen lost, $late gaps late"
	[ -n "$finished" ] && [ -n "$partial" ] && [ -n "$seen_lost" ] || fail "$name: no flow or loss counts in the JSON"
	lost=$(sed -n 's/.*sent [0-9]* records; lost \([0-9]*\) .*/\1/p' "$T/agent.err")
	[ -n "$lost" ] && [ "$lost" -gt 0 ] || fail "$name: the agent says it lost '$lost' records"
	[ "$seen_lost" = "$lost" ] ||
		fail "$name: the agent lost $lost records, the monitor saw '$seen_lost' missing from the threads' numbers"
	[ "$late" = 0 ] || fail "$name: $late gaps were seen only after the flows in them were judged"
	[ "$finished" -eq "$expect" ] ||
		fail "$name: $finished flows finished, but $expect were in rounds that lost nothing ($lossy lost a step)"
	echo "$name: the worker's tail losses: every one seen in time, and no flow of a losing round finished"
}
run inproc --lane-slots $REQS || fail "inproc: the lanes did not fill as the fixture means: the test proves nothing"
run ptrace --backend ptrace --ring-slots 2 && ptrace=checked || ptrace="not checked (timing)"
echo "inproc checked, ptrace $ptrace: a loss after a thread's last record is seen, in time, by its agent's note"
