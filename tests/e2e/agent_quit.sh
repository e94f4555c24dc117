#!/bin/sh
# The monitor quits while its agent's target still writes
# (tests/guestrt/fixtures/agent_steady.c, bursts every 500 us): on DETACH
# the agent moves what its targets' lanes hold into its ring and answers,
# and xflowtop must read those records before its exit snapshot and the
# end of its saved session.  The truth is the agent's own count of the
# records it sent (its last log line, written once it has let the target
# go): the session must hold exactly that many, and the exit snapshot
# must have taken them all.  Both backends.
. tests/e2e/agent_lib.sh

# run NAME AGENT-ARGS...
run() {
	name=$1
	shift
	rm -f "$T/s.ses" "$T/snap.json"
	agent_start --domain app "$@" -- "$T/steady" 20
	top_start
	KILL="$TOP $AGENT"
	records_arrive "$name"
	sleep 1
	kill -TERM $TOP
	wait $TOP
	rc=$?
	[ $rc -eq 0 ] || { cat "$T/top.err"; fail "$name: xflowtop exited with $rc"; }
	# The agent leaves once it has let the target go (not --stay).
	wait $AGENT
	KILL=""
	echo "== $name: the agent"
	cat "$T/agent.err"
	sent=$(sed -n 's/.*sent \([0-9]*\) records; lost \([0-9]*\) .*/\1/p' "$T/agent.err" | tail -1)
	[ -n "$sent" ] && [ "$sent" -gt 0 ] || fail "$name: the agent does not say how many records it sent"
	session_flows >"$T/truth" || fail "$name: cannot read the session"
	kept=$(awk '$1 == "notes" { print $4 }' "$T/truth")
	took=$(snap records)
	echo "$name: the agent sent $sent records; the session holds $kept, the exit snapshot counts $took"
	[ "$kept" = "$sent" ] || fail "$name: the agent sent $sent records, the session holds $kept"
	[ "$took" = "$sent" ] || fail "$name: the agent sent $sent records, the exit snapshot counts ${took:-none}"
}

run inproc
run ptrace --backend ptrace
echo "both backends: every record the agent sent before it let go is in the session and the exit snapshot"
