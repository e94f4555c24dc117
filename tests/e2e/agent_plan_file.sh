#!/bin/sh
# Issue 19 item 7b: a plan written by `xflowc plan -o` is what
# `xflow-agent --plan` loads, tracing without a monitor, and the records it
# saves with --save-session play back in `xflowtop --replay`: a small
# program's 40 packets are 40 flows from pkt_alloc through pkt_fill to
# pkt_free.  And the agent refuses what cannot work: --plan without
# --save-session, a plan that is not one, a plan without the domain.
BUILD=${BUILD:-build}
for b in "$BUILD/bin/xflowc" "$BUILD/bin/xflow-agent" "$BUILD/bin/xflowtop"; do
	[ -x "$b" ] || { echo "missing $b"; exit 77; }
done
command -v cc >/dev/null || { echo "no C compiler for the fixture"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/xflow-planfile.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

cc -g -O1 -o "$T/pkt" tests/guestrt/fixtures/agent_pkt.c || fail "cannot build the fixture"
cat > "$T/f.xml" <<'XML'
<flows>
<xflow name="pktflow">
  <start><pointcut>access(pkt.data) AND within_function(pkt_alloc)</pointcut></start>
  <quit><pointcut>access(pkt.%) AND within_function(pkt_free)</pointcut></quit>
</xflow>
<advice>
  <pointcut>access(pkt.flags) AND target(p) AND within_function(pkt_fill) AND xflow(pktflow, p, id)</pointcut>
  <before>STORE_DATA2($pc$, id);</before>
</advice>
</flows>
XML
# Two domains: the agent takes the one its --domain names.
"$BUILD/bin/xflowc" plan -q --domain spare="$T/pkt" --domain app="$T/pkt" -o "$T/p.plan" "$T/f.xml" ||
	fail "xflowc plan -o"

# Tracing needs ptrace on the fixture.
out=$(timeout -s TERM 60 "$BUILD/bin/xflow-agent" --domain app --plan "$T/p.plan" --save-session "$T/s.ses" \
	-- "$T/pkt" 40 2>"$T/agent.err")
rc=$?
if grep -q "Operation not permitted" "$T/agent.err"; then
	echo "ptrace not permitted here"
	exit 77
fi
cat "$T/agent.err"
[ $rc -eq 0 ] || fail "xflow-agent --plan exited with $rc"
[ "$out" = "done 40 780" ] || fail "the target's own output: '$out'"
grep -q "3 of 3 placements installed" "$T/agent.err" || fail "not every site installed"
# What the session cannot hold is said when the agent stops: nothing lost.
grep -Eq "saved [1-9][0-9]* records; lost 0 \(0\.0% of the [1-9][0-9]* written\): " "$T/agent.err" ||
	fail "no summary of the records saved and lost"
[ -s "$T/s.ses" ] && [ ! -e "$T/s.ses.tmp" ] || fail "no session, or its temporary file left"

"$BUILD/bin/xflowtop" -b -n 1 --replay "$T/s.ses" --speed max >"$T/top.out" 2>&1 || {
	cat "$T/top.out"; fail "xflowtop --replay"; }
cat "$T/top.out"
grep -q "flows: started 40, finished 40, partial 0, expired 0" "$T/top.out" || fail "not 40 whole flows"
grep -Eq "^app:pkt_alloc +app:pkt_fill +40 " "$T/top.out" || fail "no hop pkt_alloc -> pkt_fill of 40"
grep -Eq "^app:pkt_fill +app:pkt_free +40 " "$T/top.out" || fail "no hop pkt_fill -> pkt_free of 40"

# Refusals, each naming what is wrong.
expect() { # status, message, agent arguments...
	want=$1 msg=$2
	shift 2
	timeout -s TERM 20 "$BUILD/bin/xflow-agent" "$@" >/dev/null 2>"$T/err"
	got=$?
	[ $got -eq "$want" ] || { cat "$T/err"; fail "xflow-agent $*: status $got, not $want"; }
	grep -q -- "$msg" "$T/err" || { cat "$T/err"; fail "xflow-agent $*: no '$msg'"; }
}
expect 2 "--plan needs --save-session FILE" --domain app --plan "$T/p.plan" -- "$T/pkt" 1
expect 2 "--save-session needs --plan" --domain app --save-session "$T/x.ses" -- "$T/pkt" 1
expect 2 "--plan serves no monitor" --domain app --plan "$T/p.plan" --save-session "$T/x.ses" \
	--socket "$T/a.sock" -- "$T/pkt" 1
expect 1 "--plan: $T/f.xml: plan: not a weave plan" --domain app --plan "$T/f.xml" --save-session "$T/x.ses" \
	-- "$T/pkt" 1
expect 1 "the plan has no domain 'other'" --domain other --plan "$T/p.plan" --save-session "$T/x.ses" \
	-- "$T/pkt" 1
expect 2 "--session-max: '12Q' is not a size" --domain app --plan "$T/p.plan" --save-session "$T/x.ses" \
	--session-max 12Q -- "$T/pkt" 1
expect 2 "--session-max bounds --save-session's file" --domain app --session-max 1M -- "$T/pkt" 1
[ ! -e "$T/x.ses" ] && [ ! -e "$T/x.ses.tmp" ] || fail "a refused run left a session"

# Issue 30 item 3: the session is bounded on disk.  With --session-max 512
# the 120 records of 40 packets (a start, a fill, a quit each; about 10
# bytes each in a RECORDS chunk, and the sites' names) do not fit: the
# file stops near 512 bytes, the agent says when it reached the bound, and
# its summary counts the rest as lost past the limit, as a share of all
# written; the session still plays.
out=$(timeout -s TERM 60 "$BUILD/bin/xflow-agent" --domain app --plan "$T/p.plan" --save-session "$T/b.ses" \
	--session-max 512 -- "$T/pkt" 40 2>"$T/agent.err")
rc=$?
cat "$T/agent.err"
[ $rc -eq 0 ] && [ "$out" = "done 40 780" ] || fail "a bounded session: status $rc, output '$out'"
grep -q "the session reached --session-max (512 bytes)" "$T/agent.err" || fail "the bound reached is not said"
line=$(grep -E "saved [0-9]+ records; lost" "$T/agent.err")
saved=$(echo "$line" | sed -n 's/.*saved \([0-9]*\) records.*/\1/p')
past=$(echo "$line" | sed -n 's/.* \([0-9]*\) past the session.s size limit.*/\1/p')
total=$(echo "$line" | sed -n 's/.*of the \([0-9]*\) written.*/\1/p')
[ -n "$saved" ] && [ -n "$past" ] && [ "$past" -gt 0 ] && [ $((saved + past)) -eq "$total" ] && [ "$total" -eq 120 ] ||
	fail "the summary does not count the records past the limit: $line"
size=$(wc -c <"$T/b.ses")
# The bound, one record chunk over it at most, and the end.
[ "$size" -le $((512 + 1024)) ] || fail "the session has $size bytes, over its bound of 512"
"$BUILD/bin/xflowtop" -b -n 1 --replay "$T/b.ses" --speed max >"$T/top.out" 2>&1 || {
	cat "$T/top.out"; fail "xflowtop --replay of the bounded session"; }
# Issue 30 item 3b: a plan made for another build of the same path is
# refused, naming both build ids, and the target runs untouched (on main
# the plan's addresses patched the other build's bytes: SIGSEGV).
want=$(readelf -n "$T/pkt" | sed -n 's/.*Build ID: *//p')
cc -g -O2 -o "$T/pkt" tests/guestrt/fixtures/agent_pkt.c || fail "cannot rebuild the fixture"
now=$(readelf -n "$T/pkt" | sed -n 's/.*Build ID: *//p')
if [ -n "$want" ] && [ -n "$now" ] && [ "$want" != "$now" ]; then
	out=$(timeout -s TERM 60 "$BUILD/bin/xflow-agent" --domain app --plan "$T/p.plan" --save-session "$T/o.ses" \
		-- "$T/pkt" 40 2>"$T/agent.err")
	rc=$?
	cat "$T/agent.err"
	[ $rc -eq 1 ] || fail "a plan for another build: status $rc"
	grep -q "runs $T/pkt with build id $now, the plan was made for build id $want" "$T/agent.err" ||
		fail "the refusal does not name both builds"
	[ "$out" = "done 40 780" ] || fail "the other build did not run untouched: '$out'"
else
	echo "SKIPPED the build check: the compiler gave no build ids ('$want', '$now')"
fi

# Item 3b without a build id: the plan records the file's size and a hash
# of the bytes at its sites, and the agent compares both with the file the
# target maps.  A rebuild of another size is refused naming both sizes; a
# file of the same size whose code at a site differs, naming both hashes.
cc -g -O1 -Wl,--build-id=none -o "$T/nb" tests/guestrt/fixtures/agent_pkt.c || fail "cannot build without a build id"
[ -z "$(readelf -n "$T/nb" | sed -n 's/.*Build ID: *//p')" ] || fail "--build-id=none gave a build id"
"$BUILD/bin/xflowc" plan -q --domain app="$T/nb" -o "$T/nb.plan" "$T/f.xml" || fail "xflowc plan -o (no build id)"
"$BUILD/bin/xflowc" plan --domain app="$T/nb" "$T/f.xml" >"$T/nb.dump" 2>&1 || fail "xflowc plan (no build id)"
planned=$(wc -c <"$T/nb")
grep -q "binary 0 $T/nb (relocatable) size $planned code-hash " "$T/nb.dump" ||
	{ cat "$T/nb.dump"; fail "the plan does not record the file's size and code hash"; }
# The same build still loads.
out=$(timeout -s TERM 60 "$BUILD/bin/xflow-agent" --domain app --plan "$T/nb.plan" --save-session "$T/nb.ses" \
	-- "$T/nb" 40 2>"$T/agent.err")
[ $? -eq 0 ] && [ "$out" = "done 40 780" ] || { cat "$T/agent.err"; fail "the planned build without a build id: '$out'"; }
grep -q "3 of 3 placements installed" "$T/agent.err" || { cat "$T/agent.err"; fail "its sites were not installed"; }
cp "$T/nb" "$T/nb.planned"
cc -g -O2 -Wl,--build-id=none -o "$T/nb" tests/guestrt/fixtures/agent_pkt.c || fail "cannot rebuild without a build id"
now=$(wc -c <"$T/nb")
if [ "$now" != "$planned" ]; then
	out=$(timeout -s TERM 60 "$BUILD/bin/xflow-agent" --domain app --plan "$T/nb.plan" --save-session "$T/o.ses" \
		-- "$T/nb" 40 2>"$T/agent.err")
	rc=$?
	cat "$T/agent.err"
	[ $rc -eq 1 ] || fail "a plan for another build without a build id: status $rc"
	grep -q "runs $T/nb of $now bytes without a build id, the plan was made for one of $planned bytes" \
		"$T/agent.err" || fail "the refusal does not name both sizes"
	[ "$out" = "done 40 780" ] || fail "the other build did not run untouched: '$out'"
else
	echo "SKIPPED the size check: -O1 and -O2 gave files of one size"
fi
# Same size, other code: the planned file with the second byte of its
# first site's instruction changed, found through the plan's address and
# the file's segments.
cp "$T/nb.planned" "$T/nb"
site=$(sed -n 's/^  site 0 \(0x[0-9a-f]*\) .*/\1/p' "$T/nb.dump")
off=$(readelf -lW "$T/nb" | while read -r kind o v p f rest; do
	[ "$kind" = LOAD ] && [ $((site)) -ge $((v)) ] && [ $((site)) -lt $((v + f)) ] &&
		{ echo $((site - v + o)); break; }
done)
[ -n "$off" ] || fail "no segment holds site 0 at $site"
printf '\377' | dd of="$T/nb" bs=1 seek=$((off + 1)) conv=notrunc 2>/dev/null || fail "cannot change a byte"
[ "$(wc -c <"$T/nb")" = "$planned" ] || fail "the changed file changed size"
timeout -s TERM 60 "$BUILD/bin/xflow-agent" --domain app --plan "$T/nb.plan" --save-session "$T/o.ses" \
	-- "$T/nb" 40 >/dev/null 2>"$T/agent.err"
cat "$T/agent.err"
grep -Eq "runs $T/nb without a build id, whose code at the plan's sites hashes to [0-9a-f]{16}, the plan was made for code hashing to [0-9a-f]{16}: another build of the same size" \
	"$T/agent.err" || fail "the refusal does not name both hashes"
echo "ok: xflowc plan -o, xflow-agent --plan --save-session, xflowtop --replay"
