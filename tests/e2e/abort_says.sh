#!/bin/sh
# Issue 30 item 5: an abort is never silent.  xflowtop (batch, on its demo
# source) and xflow-agent (waiting for a monitor, holding a target), each
# sent SIGABRT as libc's abort() would, say on standard error which signal,
# where and their stack, and still die of it; the agent lets its target go
# first, and the target runs on.
BUILD=${BUILD:-build}
for b in "$BUILD/bin/xflowtop" "$BUILD/bin/xflow-agent"; do
	[ -x "$b" ] || { echo "missing $b"; exit 77; }
done
T=$(mktemp -d "${TMPDIR:-/tmp}/xflow-abort.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

"$BUILD/bin/xflowtop" -b --demo -d 0.1 -n 100000 >/dev/null 2>"$T/top.err" &
top=$!
sleep 1
kill -ABRT $top
wait $top
st=$?
cat "$T/top.err"
[ $st -eq $((128 + 6)) ] || fail "xflowtop ended with status $st, not of SIGABRT"
grep -q "^xflowtop: fatal signal 6 (SIGABRT, aborted: a failed check, said above if it was), instruction pointer 0x[0-9a-f]*, pid $top; the stack:" \
	"$T/top.err" || fail "xflowtop died of SIGABRT without saying so"

# A target for the agent: it sleeps, then says it is done.
sh -c 'sleep 2; echo target-done' >"$T/target.out" &
target=$!
sleep 0.2
"$BUILD/bin/xflow-agent" --domain d --pid $target --socket "$T/s/a.sock" 2>"$T/agent.err" &
agent=$!
for i in $(seq 100); do grep -q "serving 1 target" "$T/agent.err" && break; sleep 0.05; done
grep -q "serving 1 target" "$T/agent.err" || { cat "$T/agent.err"; fail "the agent did not start"; }
kill -ABRT $agent
wait $agent
st=$?
cat "$T/agent.err"
[ $st -eq $((128 + 6)) ] || fail "xflow-agent ended with status $st, not of SIGABRT"
grep -q "^xflow-agent: fatal signal 6 (SIGABRT" "$T/agent.err" || fail "xflow-agent died of SIGABRT without saying so"
wait $target
st=$?
[ $st -eq 0 ] && grep -q target-done "$T/target.out" || fail "the agent's target ended with $st"
echo PASS
