#!/bin/sh
# Issue 26 item 1: a flow whose start and end arrive but that lost a
# record in between is partial, never finished.  A program of N requests
# (start, three steps, end: five records each) runs under `xflow-agent
# --plan` with lanes of two records, pacing itself so that half its
# requests lose their last two steps and keep both ends
# (tests/guestrt/fixtures/agent_gaps.c).  The saved session is what
# arrived; from it, the flows whose five records all arrived are counted,
# and `xflowtop --replay` must finish exactly those and count every other
# flow it saw as partial.
BUILD=${BUILD:-build}
for b in "$BUILD/bin/xflowc" "$BUILD/bin/xflow-agent" "$BUILD/bin/xflowtop"; do
	[ -x "$b" ] || { echo "missing $b"; exit 77; }
done
command -v cc >/dev/null || { echo "no C compiler for the fixture"; exit 77; }
command -v python3 >/dev/null || { echo "no python3 to read the session"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/xflow-gaps.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

N=40
STEPS=3 # the fixture's steps per request: START + STEPS transits + QUIT
cc -g -O1 -o "$T/gaps" tests/guestrt/fixtures/agent_gaps.c || fail "cannot build the fixture"
cat > "$T/f.xml" <<'XML'
<flows>
<xflow name="req">
  <start><pointcut>access(req.state) AND within_function(req_begin)</pointcut></start>
  <transit>
    <pointcut>access(req.sum) AND within_function(req_step)</pointcut>
    <select local_var="r"/>
  </transit>
  <quit><pointcut>access(req.state) AND within_function(req_end)</pointcut></quit>
</xflow>
</flows>
XML
"$BUILD/bin/xflowc" plan -q --domain app="$T/gaps" -o "$T/p.plan" "$T/f.xml" || fail "xflowc plan -o"

out=$(timeout -s TERM 120 "$BUILD/bin/xflow-agent" --domain app --plan "$T/p.plan" --save-session "$T/s.ses" \
	--lane-slots 2 -- "$T/gaps" $N 2>"$T/agent.err")
rc=$?
if grep -q "Operation not permitted" "$T/agent.err"; then
	echo "ptrace not permitted here"
	exit 77
fi
cat "$T/agent.err"
[ $rc -eq 0 ] || fail "xflow-agent --plan exited with $rc"
echo "$out" | grep -q "^$N requests" || fail "the program's own output: '$out'"

# The truth, from what arrived (xflow/session.h: 32-byte header, chunks of
# an 8-byte head; a record chunk is its time and the 88-byte record).
python3 - "$T/s.ses" $STEPS >"$T/truth" <<'PY' || fail "cannot read the session"
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
echo "session: $seen flows seen, $whole with every record, $ends with both ends and a middle lost"
[ "$whole" -gt 0 ] || fail "no request kept all its records: the fixture's pauses did not let the agent drain"
[ "$ends" -gt 0 ] || fail "no request lost its middle alone: the test proves nothing"

"$BUILD/bin/xflowtop" -b -n 1 --replay "$T/s.ses" --speed max >"$T/top.out" 2>&1 || {
	cat "$T/top.out"; fail "xflowtop --replay"; }
line=$(grep '^flows: started' "$T/top.out" | tail -1)
echo "$line"
started=$(echo "$line" | sed -n 's/^flows: started \([0-9]*\),.*/\1/p')
finished=$(echo "$line" | sed -n 's/.* finished \([0-9]*\),.*/\1/p')
partial=$(echo "$line" | sed -n 's/.* partial \([0-9]*\),.*/\1/p')
[ -n "$started" ] && [ -n "$finished" ] && [ -n "$partial" ] || fail "no flow counts in the batch text"
[ "$finished" -eq "$whole" ] ||
	fail "$finished flows finished, but $whole kept every record ($ends lost their middle alone)"
[ $((started + partial)) -eq "$seen" ] ||
	fail "started $started + partial $partial is not the $seen flows seen"
# Every record the lanes lost left a gap the monitor saw: none was lost
# after its thread's last record (each request ends with a record that
# finds room).
lost=$(sed -n 's/.*saved [0-9]* records; lost \([0-9]*\) .*/\1/p' "$T/agent.err")
"$BUILD/bin/xflowtop" -b -n 1 --json --replay "$T/s.ses" --speed max >"$T/top.json" 2>"$T/top.err" || {
	cat "$T/top.err"; fail "xflowtop --json --replay"; }
seen_lost=$(tr ',{}' '\n\n\n' <"$T/top.json" | sed -n 's/^ *"loss_records": *\([0-9]*\)$/\1/p' | tail -1)
[ -n "$lost" ] && [ "$seen_lost" = "$lost" ] ||
	fail "the agent lost '$lost' records, the monitor saw '$seen_lost' missing from the threads' numbers"
echo "finished $finished = the flows whose every record arrived; the $partial others partial; $seen_lost records lost, all seen"
