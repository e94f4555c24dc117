#!/bin/sh
# A guest killed mid-run: dom0 and the other guests carry on and finish every
# message; afterwards no process and no shared memory is left.
. "$(dirname "$0")/lib.sh"
need_binaries
shm_snapshot "$TMP/shm.before"

"$XENSIM" -v --guests 3 --duration 4 --rate 1000 --block-rate 100 \
	--truth "$TMP/truth" > "$TMP/log" 2>&1 &
xs=$!
i=0
while ! grep -q 'process group' "$TMP/log" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
pid2=$(sed -n 's/.*dom2 (linuxU) pid \([0-9]*\).*/\1/p' "$TMP/log")
[ -n "$pid2" ] || { kill "$xs"; fail "no pid for dom2"; }
sleep 1.5
kill -KILL "$pid2"
wait "$xs"
rc=$?
cat "$TMP/log"
[ $rc -eq 1 ] || fail "xensim exited $rc, expected 1 (a guest died)"
grep -q 'dom2 (pid '"$pid2"') killed by signal 9' "$TMP/log" || fail "the kill was not reported"
grep -q 'netback: vif2.0: frontend gone' "$TMP/log" || fail "dom0 did not notice guest 2 go"
for g in 1 3; do
	grep -q "linuxU\[$g\]: 4000 messages (4000 segments) sent, 4000 acknowledged; 400 block requests, 400 done" "$TMP/log" ||
		fail "guest $g did not finish"
done
"$TRUTH_CHECK" --guests 3 --exclude-guest 2 --min-msgs 4000 --min-blk 400 "$TMP/truth" | tail -1 ||
	fail "truth-check"
"$TRUTH_CHECK" --guests 3 --exclude-guest 2 --min-msgs 4000 --min-blk 400 "$TMP/truth" > /dev/null ||
	fail "truth-check"
assert_nothing_left "$TMP/log" "$TMP/shm.before"
echo ok
