#!/bin/sh
# timer-lateness, the Xen lab's measure of how late timers fire: its
# quantiles are ordered and no sleep is early, it rounds up, and a bad
# argument is refused with exit 2 and the argument named.
BUILD=${BUILD:-build}
T=$BUILD/tests/xen/timer-lateness
[ -x "$T" ] || { echo "missing $T"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

out=$("$T" --sleep 1000 --count 50) || fail "exit $?: $out"
echo "$out"
echo "$out" | awk '
	/^timer-lateness: 50 sleeps of 1000 us: late p50 [0-9]+ p90 [0-9]+ p99 [0-9]+ max [0-9]+ us$/ {
		ok = $9 <= $11 && $11 <= $13 && $13 <= $15
	}
	END { exit !ok }' || fail "not 50 sleeps of 1000 us with ordered quantiles: $out"
# A sleep that cannot be early: rounded up, every figure is at least 1 us.
echo "$out" | awk '{ exit !($9 >= 1) }' || fail "a lateness below 1 us after rounding up: $out"

for bad in "--sleep 0" "--count x" "--count 2000000" "--bogus"; do
	# shellcheck disable=SC2086
	msg=$("$T" $bad 2>&1)
	rc=$?
	[ $rc -eq 2 ] || fail "'$bad': exit $rc, not 2"
	case $msg in *"${bad#--* }"* | *"${bad%% *}"*) ;; *) fail "'$bad': the message does not name it: $msg" ;; esac
done
echo ok
