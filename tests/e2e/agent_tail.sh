#!/bin/sh
# Issue 26 item 1, its remainder: records lost after a thread's last one.
# tests/guestrt/fixtures/agent_tail.c: in each round the main thread
# begins four requests, a worker steps each three times at once into a
# lane of four records (its last steps find the lane full; with the
# ptrace backend, the agent's ring of two, the monitor stopped over the
# burst by the fixture: XFLOW_TAIL_STOP) and then idles, alive, while
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
	watch "$name" $((ROUNDS * REQS)) "$T/tail" $ROUNDS "$@"
	# What arrived: flows in the order they began, REQS a round; a round
	# whose every flow kept its START, its STEPS steps and its QUIT lost
	# nothing; the loss notes are counted apart.
	session_flows >"$T/truth" || fail "$name: cannot read the session"
	awk -v reqs=$REQS -v steps=$STEPS '$1 == "notes" { notes = $2; next }
		{ n++; if ($2 != 1 || $4 != 1) bad = 1; if ($3 < steps) { lossy++; lost[int((n - 1) / reqs)] = 1 } }
		END { for (r = 0; r * reqs + reqs <= n; r++) if (!(r in lost)) whole += reqs
			print n + 0, !bad, whole + 0, lossy + 0, notes + 0 }' "$T/truth" >"$T/counts"
	read seen ends expect lossy notes <"$T/counts"
	echo "$name: session: $seen flows, every one with both ends: $ends; $lossy lost a step; $expect in rounds that lost nothing; $notes loss notes"
	# Whether the worker's records find the lane (or the ptrace agent's
	# ring) full, and the main thread's find room, is the machine's
	# timing: a run where they did not checks nothing.  A flow whose every
	# record was lost is not in the session at all (the ptrace agent's
	# ring of two, beside a slow monitor, lost 27 of 80 records once,
	# starts among them): that run checks nothing either.
	if [ "$seen" -ne $((ROUNDS * REQS)) ] || [ "$ends" -ne 1 ] || [ "$lossy" -eq 0 ]; then
		echo "$name: a flow lost its start or its end, or all its records, or no step was lost: this run proves nothing"
		return 2
	fi

	finished=$(snap flows_finished)
	partial=$(snap flows_partial)
	seen_lost=$(snap loss_records)
	late=$(snap loss_late)
	echo "$name: xflowtop: finished $finished, partial $partial, $seen_lost records seen lost, $late gaps late"
	[ -n "$finished" ] && [ -n "$partial" ] && [ -n "$seen_lost" ] || fail "$name: no flow or loss counts in the JSON"
	lost=$(sed -n 's/.*sent [0-9]* records; lost \([0-9]*\) .*/\1/p' "$T/agent.err")
	[ -n "$lost" ] && [ "$lost" -gt 0 ] || fail "$name: the agent says it lost '$lost' records"
	[ "$seen_lost" = "$lost" ] ||
		fail "$name: the agent lost $lost records, the monitor saw '$seen_lost' missing from the threads' numbers"
	[ "$late" = 0 ] || fail "$name: $late gaps were seen only after the flows in them were judged"
	# Every loss seen, and no note: each lost record had a kept one of its
	# thread after it, so no tail was lost.  The ptrace agent's ring of two
	# drops where the monitor's timing says (a sanitized run lost 21, all
	# followed by kept records); the lanes of four lose the tail of every
	# burst, so for inproc the caller fails on it.
	if [ "$notes" -eq 0 ]; then
		echo "$name: no loss after the worker's last record, so no note owed: this run proves nothing"
		return 2
	fi
	[ "$finished" -eq "$expect" ] ||
		fail "$name: $finished flows finished, but $expect were in rounds that lost nothing ($lossy lost a step)"
	echo "$name: the worker's tail losses: every one seen in time, and no flow of a losing round finished"
}
run inproc --lane-slots $REQS || fail "inproc: the lanes did not fill as the fixture means: the test proves nothing"
XFLOW_TAIL_STOP=$T/top.pid
export XFLOW_TAIL_STOP
run ptrace --backend ptrace --ring-slots 2 ||
	fail "ptrace: the monitor stopped over the worker's burst, and its ring of two did not lose the burst's tail: the test proves nothing"
echo "both backends: a loss after a thread's last record is seen, in time, by its agent's note"
