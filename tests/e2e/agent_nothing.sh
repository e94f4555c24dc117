#!/bin/sh
# Issue 26 item 5: a weave that matches nothing (a call() of a function
# the program does not have) still runs, with empty tables; xflowtop says
# so in the header of each batch frame (text and the JSON's note) and once
# on standard error, not only as "sites": 0 in the JSON.
BUILD=${BUILD:-build}
for b in "$BUILD/bin/xflow-agent" "$BUILD/bin/xflowtop"; do
	[ -x "$b" ] || { echo "missing $b"; exit 77; }
done
command -v cc >/dev/null || { echo "no C compiler for the fixture"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/xflow-nothing.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

cc -g -O1 -o "$T/burst" tests/guestrt/fixtures/agent_burst.c || fail "cannot build the fixture"
cat > "$T/f.xml" <<'XML'
<flows>
<advice>
  <pointcut>call(no_such_function)</pointcut>
  <before>STORE_DATA1($pc$);</before>
</advice>
</flows>
XML
mkdir -m 0700 "$T/s"
said="the flows match nothing"
for mode in text json; do
	rm -f "$T/s/a.sock"
	"$BUILD/bin/xflow-agent" --domain burst --socket "$T/s/a.sock" -- "$T/burst" 10 \
		>"$T/agent.out" 2>"$T/agent.err" &
	agent=$!
	for _ in $(seq 50); do [ -S "$T/s/a.sock" ] && break; sleep 0.1; done
	if grep -q "Operation not permitted" "$T/agent.err"; then
		echo "ptrace not permitted here"
		exit 77
	fi
	[ -S "$T/s/a.sock" ] || { cat "$T/agent.err"; fail "the agent made no socket"; }
	json=""
	[ $mode = json ] && json=--json
	timeout -s TERM 30 "$BUILD/bin/xflowtop" -b $json -d 0.2 -n 3 \
		--collector "agent:socket=$T/s/a.sock,flows=$T/f.xml" >"$T/top.out" 2>"$T/top.err"
	rc=$?
	wait $agent
	echo "== $mode: standard error"
	cat "$T/top.err"
	[ $rc -eq 0 ] || fail "xflowtop exited with $rc"
	[ "$(grep -c "$said" "$T/top.err")" -eq 1 ] || fail "$mode: not said once on standard error"
	if [ $mode = text ]; then
		head -1 "$T/top.out"
		[ "$(grep -c "^xflowtop - .*iteration [0-9]* - $said" "$T/top.out")" -eq 3 ] ||
			fail "not in the header of each of the 3 frames"
	else
		[ "$(grep -c "\"note\":\"$said" "$T/top.out")" -eq 3 ] ||
			fail "not in the note of each of the 3 JSON objects"
		grep -q '"sites":0' "$T/top.out" || fail "the JSON's aspect has sites"
	fi
done
echo "said in the header, the JSON's note and once on standard error"
