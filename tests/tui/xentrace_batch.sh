#!/bin/sh
# xflowtop's xentrace collector in batch mode on the real capture of
# ../shared/traces/xen-4.17.5-pv-ping-disk: `xflowtop -b -n 1 --xentrace
# x.trace --cpu-hz 2.4G` must print, for every domain and vcpu, the
# runstate lines of `xenalyze --summary` (xenalyze-summary.txt) with the
# same counts and times (the {5%|50%|95%} percentiles aside: xenalyze's come
# from a sample, ours from a histogram).  Then: --json validates against the
# schema with a "hypervisor" object; a truncated file and a file of garbage
# give a clear message and a non-zero exit; --cpu-hz is required.
# Exit 0 pass, 77 skip (with the reason), anything else fail.
set -u
BUILD=${BUILD:-build}
BIN=$BUILD/bin/xflowtop
CHECK=$BUILD/tests/tui-jsoncheck
CAP=${XFLOW_CAPTURE:-../shared/traces/xen-4.17.5-pv-ping-disk}
[ -x "$BIN" ] && [ -x "$CHECK" ] || { echo "skip: $BIN or $CHECK not built"; exit 77; }
[ -r "$CAP/x.trace" ] && [ -r "$CAP/xenalyze-summary.txt" ] ||
	{ echo "skip: the real capture $CAP is absent (x.trace, xenalyze-summary.txt)"; exit 77; }
out=$(mktemp -d /tmp/xflowtop-xentrace.XXXXXX)
trap 'rm -rf "$out"' EXIT INT TERM
fail() { echo "FAIL: $*"; for f in "$out"/*; do echo "--- $f"; head -40 "$f"; done; exit 1; }

"$BIN" -b -n 1 -d 0.1 --xentrace "$CAP/x.trace" --cpu-hz 2.4G >"$out/batch" 2>"$out/err" ||
	fail "batch run exited $?"
grep -q '^HYPERVISOR$' "$out/batch" || fail "no HYPERVISOR section"
grep -q '^hypervisor via xentrace:file=.*complete' "$out/batch" || fail "the trace was not read to its end"

# The runstate lines of each domain and vcpu, named by the section they are
# in, without the percentiles: "d0 v0 running: 270 0.25s 2220251".
runstates() {
	awk '
	/^\|-- Domain [0-9]+ --\|/ { dom = $3; vcpu = "all"; next }
	/^-- v[0-9]+ --/ { vcpu = $2; next }
	/^ Runstates:/ { in_rs = 1; next }
	/^ [A-Za-z]/ || /^[A-Za-z]/ { in_rs = 0 }
	in_rs && /:/ {
		line = $0; sub(/ *\{.*/, "", line); gsub(/  +/, " ", line); sub(/^ /, "", line)
		print "d" dom, vcpu, line
	}' "$1"
}
runstates "$CAP/xenalyze-summary.txt" >"$out/want"
sed -n '/^HYPERVISOR$/,$p' "$out/batch" >"$out/hv"
runstates "$out/hv" >"$out/got"
[ "$(wc -l <"$out/want")" -ge 20 ] || fail "only $(wc -l <"$out/want") runstate lines in xenalyze-summary.txt"
for d in $(awk '{ print $1 }' "$out/want" | sort -u); do
	grep -q "^$d " "$out/got" || fail "domain $d has no runstate lines"
done
diff "$out/want" "$out/got" >"$out/diff" || fail "runstate lines differ from xenalyze --summary: $(head -5 "$out/diff")"
n=$(wc -l <"$out/want")

"$BIN" --json -n 1 -d 0.1 --xentrace "$CAP/x.trace" --cpu-hz 2.4G >"$out/json" 2>"$out/err" || fail "json run exited $?"
"$CHECK" -l -s tui/snapshot-schema.json "$out/json" || fail "the JSON does not match the schema"
grep -q '"hypervisor":{' "$out/json" || fail "no hypervisor object in the JSON"

# A text snapshot includes the summary.
"$BIN" -b -n 1 -d 0.1 --xentrace "$CAP/x.trace" --cpu-hz 2.4G --snapshot-on-exit "$out/snap" >/dev/null 2>"$out/err" ||
	fail "snapshot run exited $?"
grep -q '^== Hypervisor' "$out/snap.txt" && grep -q '^|-- Domain 1 --|' "$out/snap.txt" || fail "no hypervisor in the text snapshot"
"$CHECK" -s tui/snapshot-schema.json "$out/snap.json" || fail "snapshot JSON"

# Broken input: a clear message, a non-zero exit.
head -c 100001 "$CAP/x.trace" >"$out/trunc.trace"
"$BIN" -b -d 0.1 --xentrace "$out/trunc.trace" --cpu-hz 2.4G >"$out/trunc.out" 2>"$out/trunc.err"; rc=$?
[ $rc -ne 0 ] || fail "a truncated trace exits 0"
grep -q "trunc.trace: offset [0-9]*: truncated" "$out/trunc.err" || fail "truncated: no clear message: $(cat "$out/trunc.err")"
head -c 4096 /dev/urandom | tr -d '\000' >"$out/junk.trace"
"$BIN" -b -d 0.1 --xentrace "$out/junk.trace" --cpu-hz 2.4G >/dev/null 2>"$out/junk.err"; rc=$?
[ $rc -ne 0 ] && grep -q "junk.trace" "$out/junk.err" || fail "garbage: exit $rc: $(cat "$out/junk.err")"
"$BIN" -b --xentrace "$CAP/x.trace" >/dev/null 2>"$out/hz.err"; rc=$?
[ $rc = 2 ] && grep -q "cpu-hz" "$out/hz.err" || fail "no --cpu-hz: exit $rc: $(cat "$out/hz.err")"

# Live from a pipe, as from `xentrace ... /dev/stdout`.
"$BIN" -b -d 0.2 --xentrace - --cpu-hz 2.4G <"$CAP/x.trace" >"$out/pipe" 2>"$out/err" || fail "pipe run exited $?"
sed -n '/^HYPERVISOR$/,$p' "$out/pipe" | tail -n +1 >"$out/pipe.hv"
runstates "$out/pipe.hv" | awk '!seen[$0]++' >"$out/pipe.got"
grep -q "^d1 v0 running" "$out/pipe.got" || fail "the pipe run shows no d1 v0"

echo "PASS: $n runstate lines agree with xenalyze --summary; JSON, snapshot, broken files, pipe"
