#!/bin/sh
# SIGINT and SIGTERM stop the whole host promptly and cleanly, and a launcher
# killed outright takes its domains with it.
. "$(dirname "$0")/lib.sh"
need_binaries
shm_snapshot "$TMP/shm.before"

for sig in INT TERM; do
	"$XENSIM" -v --guests 2 --duration 600 --rate 2000 > "$TMP/log" 2>&1 &
	xs=$!
	sleep 1
	t0=$(date +%s)
	kill -$sig "$xs"
	wait "$xs"
	rc=$?
	cat "$TMP/log"
	[ $rc -eq 0 ] || fail "SIG$sig: xensim exited $rc"
	[ $(( $(date +%s) - t0 )) -le 3 ] || fail "SIG$sig: the host took too long to stop"
	grep -q 'linux0: stopped' "$TMP/log" || fail "SIG$sig: dom0 did not stop cleanly"
	assert_nothing_left "$TMP/log" "$TMP/shm.before"
done

"$XENSIM" -v --duration 600 --rate 1000 > "$TMP/log" 2>&1 &
xs=$!
sleep 1
kill -KILL "$xs"
wait "$xs" 2>/dev/null
sleep 1 # PR_SET_PDEATHSIG: the domains get SIGTERM and shut down
cat "$TMP/log"
assert_nothing_left "$TMP/log" "$TMP/shm.before"
echo ok
