#!/bin/sh
# Issue 26 item 5: a weave that matches nothing (a call() of a function
# the program does not have) still runs, with empty tables; xflowtop says
# so in the header of each batch frame (text and the JSON's note) and once
# on standard error, not only as "sites": 0 in the JSON.
. tests/e2e/agent_lib.sh
cat > "$T/f.xml" <<'XML'
<flows>
<advice>
  <pointcut>call(no_such_function)</pointcut>
  <before>STORE_DATA1($pc$);</before>
</advice>
</flows>
XML
said="the flows match nothing"
for mode in text json; do
	agent_start --domain burst -- "$T/burst" 10
	json=""
	[ $mode = json ] && json=--json
	timeout -s TERM 30 "$BUILD/bin/xflowtop" -b $json -d 0.2 -n 3 \
		--collector "agent:socket=$T/s/a.sock,flows=$T/f.xml" >"$T/top.out" 2>"$T/top.err"
	rc=$?
	wait $AGENT
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
