#!/bin/sh
# Issue 18: xflowtop's /metrics server under load, on the synthetic
# collector kept busy (20,000 flows/s, about 320,000 records/s).
#
#  1. 1,000 connections at once, first idle, then each sending GET
#     /metrics: every one is served or refused at once (none hangs once
#     the burst is over), no more than metrics-max-connections are ever
#     held, a scrape works afterwards, and xflowtop's resident memory grows
#     by less than 4 MiB (8 under the sanitizers).
#  2. The loop's refresh intervals (batch JSON's uptime_s, 0.1 s apart)
#     while four threads scrape 100 times a second in all (a Prometheus
#     scrapes once every 15 s by default), against a run without scrapes:
#     the 90th percentile may grow by at most half plus 20 ms.  The
#     figures are printed.  As fast as the scrapers can, they take the CPU
#     of two shared cores from the loop: that measures the machine.
set -u
. tests/export/lib.sh
XFT=$BUILD/bin/xflowtop
FLOOD=$BUILD/tests/export/xfx-flood
need "$XFT" "$FLOOD"
MAX_CONN=32
GROWTH_KIB=4096
# Under ASan every freed block waits in its quarantine (256 MB by default)
# before it is reused: a thousand connections each given a slot, even for
# a moment, would count there as growth.  A small quarantine keeps the
# measure about the exporter.
# The idle connections are held 4 s (under the 5 s request deadline, so
# that those the server keeps are still there) before they are sorted,
# and those still waiting for the kernel to take their SYN then (pending:
# the backlog overflowed, its SYN is retried after 1, 3, 7 s) must be
# none.  Each one past the limits now displaces the longest-waiting
# connection, set up and torn down, where it was closed before anything
# was allocated: on a loaded machine (load 8 on 2 cores) up to 143 of the
# thousand were still in the accept queue after 2 s, taken for held.
# Sanitized, from 8 to 380 after 2 to 8 s: there the counts are printed,
# not checked.  The sanitized run is about memory errors under this load;
# the plain one checks the limits.
HOLD_MS=4000
STRICT=1
if [ "$BUILD" != build ]; then
	GROWTH_KIB=8192
	STRICT=0
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
fi

# start NAME ARGS...: xflowtop in the background; sets ADDR from the line
# it prints when it listens.
start() {
	name=$1
	shift
	"$XFT" --collector synthetic:rate=20000 --listen 127.0.0.1:0 --set metrics-max-connections=$MAX_CONN \
		"$@" >"$TMP/$name.out" 2>"$TMP/$name.err" &
	PID=$!
	PIDS="$PIDS $PID"
	wait_for 10 grep -q "serving http://" "$TMP/$name.err" && ADDR=$(served_at "$TMP/$name.err") && return 0
	echo "FAIL: xflowtop did not start listening:"
	cat "$TMP/$name.err"
	exit 1
}

rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# --- 1. a thousand connections --------------------------------------------
start mem --headless -d 0.2
sleep 1 # the model's pages touched, the first publishes done
"$FLOOD" "$ADDR" scrape 1 0.5 >/dev/null # and a scrape's buffers
before=$(rss_kib "$PID")
"$FLOOD" "$ADDR" conns 1000 --hold $HOLD_MS >"$TMP/idle.txt" &
FL=$!
sleep 1
during=$(rss_kib "$PID")
# The connections the kernel has set up but the server has not yet taken
# (its listening socket's accept queue): open for the flood, yet held by
# no one but the kernel.  Read just before the flood sorts its
# connections: the queue only shrinks meanwhile (every connection was
# opened at the start; those whose SYN is retried are "pending").
sleep "$(awk -v h=$HOLD_MS 'BEGIN { printf "%.1f", h / 1000 - 1.3 }')"
queued=$(ss -ltnH "sport = :${ADDR##*:}" 2>/dev/null | awk '{ q += $2 } END { print q + 0 }')
wait "$FL"
idle=$(cat "$TMP/idle.txt")
"$FLOOD" "$ADDR" conns 1000 --get --hold 5000 >"$TMP/get.txt"
get=$(cat "$TMP/get.txt")
after=$(rss_kib "$PID")
echo "idle: $idle"
echo "GET:  $get"
echo "resident memory: ${before} KiB before, ${during} KiB with 1,000 idle connections, ${after} KiB after 1,000 GETs"
fail=0
held=$(echo "$idle" | sed -n 's/.*held \([0-9]*\).*/\1/p')
echo "accept queue 0.3 s before the flood sorted its connections: $queued"
# What the flood sees open is not what the server holds: a newcomer past
# the limits is taken, then sheds the longest-waiting connection, one at a
# time on the server's thread, so 4 s after a burst of 1,000 the flood
# has found 8 to 123 still open with nothing queued (a quiet run: 52).
# The limits themselves are the server's accounting, checked exactly in
# tests/export/test_server.c (a full server makes room for a newcomer, an
# address past its limit gives way to itself); here the count is printed,
# and memory, failures and the backlog are what is checked.
echo "open after the burst, as the flood sees them: $held (limit $MAX_CONN, queued $queued)"
for r in "$idle" "$get"; do
	case $r in *", failed 0,"*) ;; *) echo "FAIL: connections neither served nor refused: $r"; fail=1 ;; esac
	[ $STRICT = 0 ] && continue
	case $r in *", pending 0") ;; *) echo "FAIL: connections never taken from the backlog: $r"; fail=1 ;; esac
done
case $get in *"held 0,"*) ;; *) echo "FAIL: GETs left hanging: $get"; fail=1 ;; esac
served=$(echo "$get" | sed -n 's/.*served \([0-9]*\),.*/\1/p')
[ "$served" -ge 1 ] || { echo "FAIL: no GET was served"; fail=1; }
for m in "$during" "$after"; do
	[ $((m - before)) -lt $GROWTH_KIB ] ||
		{ echo "FAIL: resident memory grew by $((m - before)) KiB (limit $GROWTH_KIB)"; fail=1; }
done
"$FLOOD" "$ADDR" scrape 1 0.3 | grep -q 'failed 0' || { echo "FAIL: no scrape after the burst"; fail=1; }
kill "$PID"
[ $fail -eq 0 ] || exit 1

# --- 2. refreshes while scraped --------------------------------------------
# gaps NAME: the refresh intervals of run NAME in ms, one a line, sorted.
gaps() {
	sed -n 's/.*"uptime_s":\([0-9.]*\).*/\1/p' "$TMP/$1.out" |
		awk 'NR > 1 { printf "%.1f\n", ($1 - prev) * 1000 } { prev = $1 }' | sort -n
}
pct() { awk -v p="$1" '{ v[NR] = $1 } END { i = int(NR * p + 0.999); if (i < 1) i = 1; print v[i] }'; }

measure() {
	start quiet --json -d 0.1 -n 40
	wait "$PID"
	start scraped --json -d 0.1 -n 40
	"$FLOOD" "$ADDR" scrape 4 4.2 100 >"$TMP/scrapes.txt"
	wait "$PID"
	q50=$(gaps quiet | pct 0.5) q90=$(gaps quiet | pct 0.9) qmax=$(gaps quiet | pct 1)
	s50=$(gaps scraped | pct 0.5) s90=$(gaps scraped | pct 0.9) smax=$(gaps scraped | pct 1)
	echo "refresh intervals, ms (p50 / p90 / max): without scrapes $q50 / $q90 / $qmax;" \
		"with $(cat "$TMP/scrapes.txt" | sed 's/,.*//') $s50 / $s90 / $smax"
	awk -v q="$q90" -v s="$s90" 'BEGIN { exit !(s <= q * 1.5 + 20) }'
}
# Two cores shared with other builds: a burst of their load can land on
# either run; a loop that waits for scrapes falls behind in every one.
for attempt in 1 2 3; do
	measure && exit 0
	echo "attempt $attempt: the refresh fell behind while scraped"
done
echo "FAIL: scrapes stalled the refresh"
exit 1
