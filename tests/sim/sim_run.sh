#!/bin/sh
# 10 s at 5,000 messages/s with block I/O: every message and request goes
# end to end, nothing is lost (the truth file proves it), nothing is left.
. "$(dirname "$0")/lib.sh"
need_binaries
shm_snapshot "$TMP/shm.before"

start=$(date +%s)
"$XENSIM" -v --duration 10 --rate 5000 --size 1000 --block-rate 200 --seed 7 \
	--truth "$TMP/truth" > "$TMP/log" 2>&1
rc=$?
cat "$TMP/log"
[ $rc -eq 0 ] || fail "xensim exited $rc"
echo "ran $(( $(date +%s) - start )) s"
grep -q '50000 messages (50000 segments) sent, 50000 acknowledged; 2000 block requests, 2000 done, 0 failed' "$TMP/log" ||
	fail "the guest did not report every message and request done"
"$TRUTH_CHECK" --guests 1 --min-msgs 50000 --min-blk 2000 "$TMP/truth" || fail "truth-check"
# The header, a line per unit and stage; the delay lines' "#late" comments
# (the NIC's wire time and the disk's service time here) are not records,
# nor would the scheduler model's "#sched" and "#xentrace" lines be.
[ "$(grep -c -v -E '^#(late|sched|xentrace)' "$TMP/truth")" -eq $((1 + 50000 * 18 + 2000 * 8)) ] || fail "unexpected number of truth lines"
grep -q '^#late	0	FreeTxDescriptors	50000	' "$TMP/truth" ||
	fail "the NIC's delay line did not say how late it released its 50000 segments"
assert_nothing_left "$TMP/log" "$TMP/shm.before"
echo ok
