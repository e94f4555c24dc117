#!/bin/sh
# Issue 26 item 1: a flow whose start and end arrive but that lost a
# record in between is partial, never finished, whichever backend lost it.
# A program of N requests (start, three steps, end: five records each,
# tests/guestrt/fixtures/agent_gaps.c) paces itself so that half its
# requests lose their last two steps and keep both ends: in the
# in-process backend's lanes of two records, and in the ptrace backend's
# ring of two records, which the agent fills itself while the program
# holds the monitor stopped over an odd request's steps (XFLOW_GAPS_STOP:
# a monitor too slow for the burst, every time, where a quick one often
# emptied the ring between the steps).  xflowtop watches
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
	watch "$name" $N "$T/gaps" $N "$@"
	# What arrived: the flows whose every record did, and those that kept
	# both ends and lost a middle.
	session_flows >"$T/truth" || fail "$name: cannot read the session"
	awk -v steps=$STEPS '$1 == "notes" { next } { n++ }
		$2 == 1 && $3 == steps && $4 == 1 { whole++ } $2 == 1 && $4 == 1 && $3 < steps { ends++ }
		END { print n + 0, whole + 0, ends + 0 }' "$T/truth" >"$T/counts"
	read seen whole ends <"$T/counts"
	echo "$name: session: $seen flows seen, $whole with every record, $ends with both ends and a middle lost"
	[ "$whole" -gt 0 ] || fail "$name: no request kept all its records: the fixture's pauses did not let the agent drain"
	# Whether the ptrace agent's ring fills is the machine's timing (a
	# quiet run can drain it every time): such a run checks nothing, and
	# the caller runs again rather than judge it.
	if [ "$ends" -eq 0 ]; then
		echo "$name: no request lost its middle alone: this run proves nothing"
		return 2
	fi

	started=$(snap flows_started)
	finished=$(snap flows_finished)
	partial=$(snap flows_partial)
	seen_lost=$(snap loss_records)
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
XFLOW_GAPS_STOP=$T/top.pid
export XFLOW_GAPS_STOP
run_until_lost ptrace --backend ptrace --ring-slots 2
echo "both backends: finished = the flows whose every record arrived; the others partial; every loss seen"
