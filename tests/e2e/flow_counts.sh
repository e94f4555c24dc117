#!/bin/sh
# Issue 19 items 1, 2 and 5 end to end: xflowtop -b through the agent
# collector on the simulated host at its default rate, weaving
# tests/e2e/counts.xml (a start that matches seven accesses on one path, a
# split matched twice, a quit matched many times) with each domain's
# executable named a second and a third time (bin= by its path and through
# a symbolic link).  The flows xflowtop counted must be exactly the truth
# file's: started = segments + clones = finished, nothing expired,
# evicted, partial or left live.
# Then again with room for 16 live flows (the least it takes) and 2 ms
# added before dom0's netif_receive_skb: at 1000 messages/s flows outlive
# 16 newer ones, are evicted and come back partial, and none of those is
# ranked among the slowest.  (Without the delay, whether any flow waits
# long enough was up to the machine's timing: under the sanitizers none
# did.)  Then with lanes of 2 records, so that the targets' lanes overflow
# at once: the records lost there are in the header's and the domains'
# drops, and every flow that did not finish whole is one of those losses.
# The checks are in tests/e2e/xflow_e2e.c (mode counts): where the monitor
# says records were lost (a loaded machine can starve the agent until its
# targets' lanes fill), each flow not finished whole must be explained by
# one of them; where it says none were, the counts are the truth's exactly.
. tests/e2e/lib.sh
e2e_need "$BUILD/bin/xflowtop"
echo "== every flow counted once"
timeout -s TERM 90 "$BUILD/tests/e2e/xflow-e2e" counts "$BUILD/bin/xflowtop" tests/e2e/counts.xml \
	--size 3000 --duration 3 || exit 1
echo "== lanes of 2 records: their losses are said, in the drops"
timeout -s TERM 90 "$BUILD/tests/e2e/xflow-e2e" counts "$BUILD/bin/xflowtop" tests/e2e/counts.xml \
	--size 3000 --duration 1 --lane-slots 2 >"${TMPDIR:-/tmp}/flow_counts.$$" 2>&1
rc=$?
cat "${TMPDIR:-/tmp}/flow_counts.$$"
grep -q '^records were lost' "${TMPDIR:-/tmp}/flow_counts.$$" ||
	{ rm -f "${TMPDIR:-/tmp}/flow_counts.$$"; echo "FAIL: lanes of 2 records lost nothing that the monitor said"; exit 1; }
rm -f "${TMPDIR:-/tmp}/flow_counts.$$"
[ $rc -eq 0 ] || exit 1
echo "== max-flows=16: evicted flows come back partial, never ranked"
exec timeout -s TERM 90 "$BUILD/tests/e2e/xflow-e2e" counts "$BUILD/bin/xflowtop" tests/e2e/counts.xml \
	--size 3000 --duration 3 --max-flows 16 --delay dom0:netif_receive_skb=2ms
