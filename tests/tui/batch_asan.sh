#!/bin/sh
# xflowtop in batch mode for a fixed number of iterations, as htop's CI runs
# `htop -n 5` under sanitizers: text and JSON output are checked, and the
# sanitized binary (this tree's when it is a SAN build, else build-san's if
# it was built) must run clean.  Exit 0 pass, 77 skip, else fail.
set -u
BUILD=${BUILD:-build}
BIN=$BUILD/bin/xflowtop
CHECK=$BUILD/tests/tui-jsoncheck
[ -x "$BIN" ] && [ -x "$CHECK" ] || { echo "skip: $BIN or $CHECK not built"; exit 77; }
out=$(mktemp -d /tmp/xflowtop-batch.XXXXXX)
trap 'rm -rf "$out"' EXIT INT TERM
fail() { echo "FAIL: $*"; for f in "$out"/*; do echo "--- $f"; head -60 "$f"; done; exit 1; }

"$BIN" -b -n 5 -d 0.2 --collector synthetic:rate=5000 >"$out/text" 2>"$out/err" || fail "batch text exited $?"
[ "$(grep -c '^HOPS$' "$out/text")" = 5 ] || fail "not 5 iterations of the hops table"
[ "$(grep -c '^SLOWEST FLOWS$' "$out/text")" = 5 ] || fail "not 5 slowest-flow tables"
awk '/^HOPS$/ { getline; getline; print; exit }' "$out/text" | grep -q "netif_rx.*netif_receive_skb" ||
	fail "the top hop is not netif_rx -> netif_receive_skb"

"$BIN" --json -n 3 -d 0.2 --collector synthetic:rate=5000 >"$out/json" 2>"$out/err" || fail "batch json exited $?"
[ "$(wc -l <"$out/json")" = 3 ] || fail "not one JSON line per iteration"
"$CHECK" -l -s tui/snapshot-schema.json "$out/json" || fail "batch JSON does not match the schema"

"$BIN" -b -n 1 -d 0.3 --demo --snapshot-on-exit "$out/exit.txt" >/dev/null 2>"$out/err" || fail "snapshot-on-exit run failed"
"$CHECK" -s tui/snapshot-schema.json "$out/exit.json" || fail "exit snapshot JSON"
"$CHECK" -c traceEvents=16 "$out/exit.trace.json" || fail "exit snapshot trace"

# Bad input is refused with the place named, and never crashes.
printf 'refresh = 1\nmax-hops = 3\n' >"$out/bad.conf"
"$BIN" -b -c "$out/bad.conf" >/dev/null 2>"$out/err"; rc=$?
[ $rc = 2 ] && grep -q "bad.conf:2: bad value '3' for 'max-hops'" "$out/err" || fail "bad config: exit $rc"
"$BIN" -b --collector nope >/dev/null 2>"$out/err"; [ $? = 2 ] || fail "unknown collector accepted"

# The sanitized binary, 5 iterations.
san_bin=
if [ -n "${SAN:-}" ]; then
	san_bin=$BIN
elif [ -x build-san/bin/xflowtop ]; then
	san_bin=build-san/bin/xflowtop
fi
if [ -z "$san_bin" ]; then
	echo "skip: no sanitized build to run (make SAN=address,undefined check runs this under ASan)"
	exit 77
fi
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "$san_bin" -b -n 5 -d 0.2 --demo >"$out/san" 2>"$out/san.err" ||
	fail "$san_bin -b -n 5 exited $? under the sanitizers"
grep -q "ERROR: \(Address\|Leak\)Sanitizer\|runtime error" "$out/san.err" && fail "sanitizer report"
[ "$(grep -c '^HOPS$' "$out/san")" = 5 ] || fail "the sanitized run did not print 5 iterations"
echo "PASS: batch text, JSON, exit snapshot, bad input; $san_bin clean under the sanitizers"
