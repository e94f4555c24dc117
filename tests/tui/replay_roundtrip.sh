#!/bin/sh
# A session saved by `xflowtop --save-session` and played back with
# --replay: the replay's hops (counts and percentiles) equal those of the
# saved run's final iteration; speed=1 takes the recorded time, speed=max
# much less; a broken session is refused with its offset; the saved file
# appears only complete (FILE.tmp while running, FILE after).
# Exit 0 pass, 77 skip (with the reason), anything else fail.
set -u
BUILD=${BUILD:-build}
BIN=$BUILD/bin/xflowtop
[ -x "$BIN" ] || { echo "skip: $BIN not built"; exit 77; }
command -v jq >/dev/null || { echo "skip: jq is not installed"; exit 77; }
out=$(mktemp -d /tmp/xflowtop-replay.XXXXXX)
trap 'rm -rf "$out"' EXIT INT TERM
fail() { echo "FAIL: $*"; for f in "$out"/*.json "$out"/*.err; do [ -f "$f" ] && { echo "--- $f"; head -c 2000 "$f"; echo; }; done; exit 1; }

# The window is 0 so that the saved run's last frame holds every record it
# saved (a window holds the newest back; a replay's end releases all).
"$BIN" -b -n 3 -d 0.3 --set reorder-window=0 --collector synthetic:rate=2000,seed=3 \
	--save-session "$out/s.ses" --json >"$out/saved.json" 2>"$out/saved.err" || fail "saving run exited $?"
[ -s "$out/s.ses" ] || fail "no session file"
[ ! -e "$out/s.ses.tmp" ] || fail "the temporary file was left"

hops='[.hops[] | {f: (.from.domain + ":" + .from.function), t: (.to.domain + ":" + .to.function),
	count, p50_ns, p90_ns, p99_ns, max_ns}] | sort_by(.f, .t)'
tail -n 1 "$out/saved.json" | jq -S "$hops" >"$out/want" || fail "saved JSON does not parse"
[ "$(jq length "$out/want")" -gt 10 ] || fail "the saved run has too few hops"

t0=$(date +%s.%N)
"$BIN" --replay "$out/s.ses" --speed max -b --json -d 0.2 >"$out/max.json" 2>"$out/max.err" ||
	fail "replay at max exited $?"
t1=$(date +%s.%N)
tail -n 1 "$out/max.json" | jq -S "$hops" >"$out/got" || fail "replay JSON does not parse"
cmp -s "$out/want" "$out/got" || { diff "$out/want" "$out/got" | head -20; fail "replayed hops differ"; }
jq -e '.sources[0].ended and .sources[0].error == "end of input" and .stats.flows_expired == 0' \
	"$out/max.json" >/dev/null || fail "the replay did not end cleanly"
jq -e '[.domains[].name] | sort == ["linux0", "linuxU"]' "$out/max.json" >/dev/null ||
	fail "domain names not replayed"

# The recorded span (first to last record) and the time speed=1 takes.
"$BIN" -b -n 1000 -d 0.1 --set reorder-window=0 --collector synthetic:rate=500,seed=5 \
	--save-session "$out/one.ses" >/dev/null 2>&1 &
pid=$!
sleep 1.2
kill -INT $pid
wait $pid
[ -s "$out/one.ses" ] || fail "the interrupted run did not save"
t2=$(date +%s.%N)
"$BIN" --replay "$out/one.ses" -b --json -d 0.1 >"$out/one.json" 2>"$out/one.err" || fail "replay at 1 exited $?"
t3=$(date +%s.%N)
t4=$(date +%s.%N)
"$BIN" --replay "$out/one.ses" --speed max -b --json -d 0.1 >"$out/onemax.json" 2>&1 || fail "replay at max exited $?"
t5=$(date +%s.%N)
awk -v a="$t2" -v b="$t3" -v c="$t4" -v d="$t5" -v m0="$t0" -v m1="$t1" 'BEGIN {
	one = b - a; max = d - c
	printf "speed=1 took %.2fs, speed=max %.2fs (first replay %.2fs)\n", one, max, m1 - m0
	exit !(one > 0.8 && max < one / 2) }' || fail "replay pace"
# Paced, it takes the recorded span at least; how much longer is the
# machine's (2.65 s for 1.2 s under the sanitizers beside two busy loops),
# so the bound above is the one a machine can promise: not faster than
# the recording, and far slower than speed=max.

# Broken sessions: refused at start, the offset and the reason named.
head -c 1000 "$out/s.ses" >"$out/cut.ses"
"$BIN" --replay "$out/cut.ses" -b -n 1 >/dev/null 2>"$out/cut.err" && fail "a cut session was accepted"
grep -q 'cut.ses: offset [0-9]*: the file ends' "$out/cut.err" || fail "cut: $(cat "$out/cut.err")"
printf 'not a session at all' >"$out/junk.ses"
"$BIN" --replay "$out/junk.ses" -b -n 1 >/dev/null 2>"$out/junk.err" && fail "junk was accepted"
grep -q 'junk.ses: offset 0: ' "$out/junk.err" || fail "junk: $(cat "$out/junk.err")"
"$BIN" --replay "$out/s.ses" --speed fast -b -n 1 >/dev/null 2>"$out/speed.err" && fail "--speed fast accepted"
grep -q -- '--speed' "$out/speed.err" || fail "speed: $(cat "$out/speed.err")"
"$BIN" -b -n 1 --collector synthetic --save-session "$out/no/such/dir/x.ses" >/dev/null 2>"$out/dir.err" &&
	fail "an unwritable session path was accepted"
grep -q 'x.ses.tmp' "$out/dir.err" || fail "unwritable: $(cat "$out/dir.err")"
# A write error mid-run (a full disk: the temporary file is /dev/full):
# reported, saving stops, monitoring goes on to its last report.
if [ -w /dev/full ]; then
	ln -s /dev/full "$out/full.ses.tmp"
	"$BIN" -b -n 3 -d 0.2 --collector synthetic:rate=2000 --save-session "$out/full.ses" \
		>"$out/full.out" 2>"$out/full.err" || fail "a full disk stopped monitoring (exit $?)"
	[ "$(grep -c '^xflowtop - ' "$out/full.out")" -eq 3 ] || fail "not every report was printed"
	[ "$(grep -c 'No space left on device' "$out/full.err")" -eq 1 ] ||
		fail "full disk not reported once: $(cat "$out/full.err")"
	[ ! -e "$out/full.ses" ] || fail "a failed session was put in place"
fi
echo "ok: replayed hops equal the saved run's"
exit 0
