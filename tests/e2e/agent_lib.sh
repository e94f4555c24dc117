# Helpers for the end-to-end scripts that trace a program of their own with
# one agent on this host (sourced; not a test itself): agent_burst.sh,
# agent_gaps.sh, agent_nothing.sh, agent_quit.sh, agent_tail.sh.  Sourcing
# it checks the programs and the C compiler (else the script is skipped,
# status 77), makes the scratch directory T (removed on exit, with the pids
# KILL names) and builds the fixtures tests/guestrt/fixtures/agent_NAME.c
# as $T/NAME (burst, gaps, tail, steady); their request's flow is
# tests/e2e/req.xml (REQ_FLOW).  watch, session_flows and snap (below) run
# a fixture under the agent and xflowtop and read back what arrived.
BUILD=${BUILD:-build}
for b in "$BUILD/bin/xflow-agent" "$BUILD/bin/xflowtop"; do
	[ -x "$b" ] || { echo "missing $b"; exit 77; }
done
command -v cc >/dev/null || { echo "no C compiler for the fixture"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/xflow-agent-e2e.XXXXXX")
KILL=""
trap 'for p in $KILL; do kill $p 2>/dev/null; kill -CONT $p 2>/dev/null; done; rm -rf "$T"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
for f in burst gaps tail steady; do
	cc -g -O1 -pthread -o "$T/$f" tests/guestrt/fixtures/agent_$f.c || fail "cannot build the fixture agent_$f.c"
done
REQ_FLOW=tests/e2e/req.xml
mkdir -m 0700 "$T/s"

# agent_start ARGS...: xflow-agent ARGS with the socket $T/s/a.sock (its
# own: the default folder is shared), its output in $T/agent.out and
# $T/agent.err; AGENT is its pid once the socket is there.  Skips (77)
# where ptrace is not permitted.
agent_start() {
	rm -f "$T/s/a.sock"
	"$BUILD/bin/xflow-agent" --socket "$T/s/a.sock" "$@" >"$T/agent.out" 2>"$T/agent.err" &
	AGENT=$!
	for _ in $(seq 50); do [ -S "$T/s/a.sock" ] && break; sleep 0.1; done
	if grep -q "Operation not permitted" "$T/agent.err"; then
		echo "ptrace not permitted here"
		exit 77
	fi
	[ -S "$T/s/a.sock" ] || { cat "$T/agent.err"; fail "the agent made no socket"; }
}

# top_start: xflowtop watching the agent live (batch output $T/top.out),
# saving the session to $T/s.ses and its exit snapshot to $T/snap.json;
# TOP is its pid, also in KILL and in $T/top.pid.
top_start() {
	"$BUILD/bin/xflowtop" -b -d 0.25 -n 1000 --save-session "$T/s.ses" --snapshot-on-exit "$T/snap" \
		--collector "agent:socket=$T/s/a.sock,flows=$REQ_FLOW" >"$T/top.out" 2>"$T/top.err" &
	TOP=$!
	KILL=$TOP
	echo $TOP >"$T/top.pid"
}

# records_arrive WHAT: wait (10 s at most) until xflowtop's batch header
# counts records, the agent placed and writing; else fail naming WHAT.
records_arrive() {
	for _ in $(seq 100); do
		grep -q '^uptime .*records [1-9]' "$T/top.out" 2>/dev/null && return 0
		sleep 0.1
	done
	cat "$T/top.err" "$T/agent.err"
	fail "$1: no record arrived"
}
# watch NAME REQUESTS PROGRAM ARG AGENT-ARGS...: the agent runs PROGRAM ARG
# (which prints "REQUESTS requests ...") with AGENT-ARGS, xflowtop watches
# it live (batch output $T/top.out), saves the session to $T/s.ses and its
# exit snapshot to $T/snap.json; returns once both are gone, failing on
# any error of theirs.
watch() {
	_name=$1 _reqs=$2 _prog=$3 _arg=$4
	shift 4
	rm -f "$T/s.ses" "$T/snap.json" "$T/top.pid"
	agent_start --domain app "$@" -- "$_prog" "$_arg"
	top_start
	wait $AGENT
	_rc=$?
	echo "== $_name: the agent"
	cat "$T/agent.err"
	[ $_rc -eq 0 ] || fail "$_name: xflow-agent exited with $_rc"
	grep -q "^$_reqs requests" "$T/agent.out" || fail "$_name: the program's own output: '$(cat "$T/agent.out")'"
	# The agent is gone; a second lets the monitor read the rest and its
	# window let the last records go.
	sleep 1
	kill -TERM $TOP
	wait $TOP
	_rc=$?
	KILL=""
	[ $_rc -eq 0 ] || { cat "$T/top.err"; fail "$_name: xflowtop exited with $_rc"; }
}

# session_flows: the truth of what arrived, from the session $T/s.ses, as
# tests/e2e/session_records.py reads it apart from the C reader.  One line
# per flow, in the order they began: "START_NS STARTS TRANSITS QUITS" (the
# time of its START, else of its first record); then "notes N records M":
# the loss notes (flag bit 9, no flow's: xflow/record.h, "Losses") and
# every record the session holds, notes included.
session_flows() {
	python3 - "$T/s.ses" <<'PY'
import sys
sys.path.insert(0, 'tests/e2e')
from session_records import records
flows, notes, n = {}, 0, 0
for t, r in records(sys.argv[1]):
    n += 1
    flags, flow_id = r['flags'], r['flow_id']
    if flags & (1 << 9):
        notes += 1
    elif flow_id:
        f = flows.setdefault(flow_id, [t, 0, 0, 0])
        f[1] += bool(flags & 1)
        f[2] += bool(flags & 2)
        f[3] += bool(flags & 4)
        if flags & 1:
            f[0] = t
for f in sorted(flows.values()):
    print(*f)
print('notes', notes, 'records', n)
PY
}

# snap KEY: the last number named KEY in the exit snapshot $T/snap.json.
snap() { tr ',{}' '\n\n\n' <"$T/snap.json" | sed -n "s/^ *\"$1\": *\([0-9]*\)$/\1/p" | tail -1; }
