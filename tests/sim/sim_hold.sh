#!/bin/sh
# --hold: the host boots and waits, with nothing sent, until SIGUSR1 to
# xensim (time for tracers to attach); --domains lists the domains' pids
# meanwhile.  A go sent at once, before the guests are up, is not lost.
. "$(dirname "$0")/lib.sh"
need_binaries

"$XENSIM" --hold --guests 2 --duration 1 --rate 500 --block-rate 50 \
	--domains "$TMP/domains" --truth "$TMP/truth" > "$TMP/log" 2>&1 &
xs=$!
i=0
while [ ! -f "$TMP/domains" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -f "$TMP/domains" ] || fail "no domains file"
cat "$TMP/domains"
[ "$(grep -c -E '^[0-9]+	linux(0|U)	[0-9]+$' "$TMP/domains")" -eq 3 ] || fail "bad domains file"
for pid in $(awk 'NR > 1 {print $3}' "$TMP/domains"); do
	kill -0 "$pid" || fail "domain pid $pid is not running"
done
sleep 1
for d in 1 2; do
	[ ! -s "$TMP/truth.$d" ] || fail "guest $d sent before the go"
done
kill -USR1 "$xs"
wait "$xs" || { cat "$TMP/log"; fail "xensim failed"; }
cat "$TMP/log"
[ ! -e "$TMP/domains" ] || fail "the domains file outlived the host"
"$TRUTH_CHECK" --guests 2 --min-msgs 500 --min-blk 50 "$TMP/truth" | tail -1
"$TRUTH_CHECK" --guests 2 --min-msgs 500 --min-blk 50 "$TMP/truth" >/dev/null || fail "truth-check"

# The domains file lists domains that run their own programs: a tracer
# that attached to a pid between its fork and its exec wove xensim's image,
# which the exec threw away (a loaded machine stretches that window; the
# test stretches it to 300 ms).
rm -f "$TMP/domains"
XENSIM_EXEC_DELAY_MS=300 "$XENSIM" --hold --duration 0.2 --rate 100 --domains "$TMP/domains" > "$TMP/log3" 2>&1 &
xs=$!
i=0
while [ ! -f "$TMP/domains" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
[ -f "$TMP/domains" ] || fail "no domains file with exec delayed"
awk 'NR > 1 { print $2, $3 }' "$TMP/domains" | while read -r name pid; do
	exe=$(readlink "/proc/$pid/exe")
	[ "$(basename "$exe")" = "$name" ] || { kill "$xs"; fail "domain $name (pid $pid) listed while it still runs $exe"; }
done || exit 1
kill -USR1 "$xs"
wait "$xs" || { cat "$TMP/log3"; fail "xensim with exec delayed"; }

# The go as soon as the domains exist, likely before the guests have booted.
rm -f "$TMP/domains"
"$XENSIM" --hold --duration 0.5 --rate 200 --domains "$TMP/domains" > "$TMP/log2" 2>&1 &
xs=$!
i=0
while [ ! -f "$TMP/domains" ] && [ $i -lt 500 ]; do sleep 0.01; i=$((i + 1)); done
kill -USR1 "$xs"
wait "$xs" || { cat "$TMP/log2"; fail "an early go broke the host"; }
grep -q 'linuxU\[1\]: 100 messages' "$TMP/log2" || { cat "$TMP/log2"; fail "the early go was lost"; }
echo ok
