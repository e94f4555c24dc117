#!/bin/sh
# Issue 30 item 4: the exporter serves its scraper whatever other clients
# do.  64 slowloris connections, each sending its request head one byte
# every 4 s (well inside the idle timeout) and opened again when closed,
# while a scraper asks for /metrics twice a second: every scrape must be
# answered in full within 2 s.  Twice: the attackers on four other
# addresses (127.0.0.2-5), then all on the scraper's own address (where
# most scrapes, not all, must be answered: see attack).  Then six
# that fit within the limits, a byte a second: each is closed at the
# request deadline.  With xflowtop's defaults (metrics-max-connections,
# the per-address limit, the request deadline), as a host would run it.
set -u
. tests/export/lib.sh
XFT=$BUILD/bin/xflowtop
FLOOD=$BUILD/tests/export/xfx-flood
need "$XFT" "$FLOOD"

: >"$TMP/xft.err"
"$XFT" --collector synthetic:rate=2000 --headless --listen 127.0.0.1:0 -d 0.2 \
	>"$TMP/xft.out" 2>"$TMP/xft.err" &
PID=$!
PIDS="$PIDS $PID"
wait_for 10 grep -q "serving http://" "$TMP/xft.err" || { echo "FAIL: xflowtop did not listen"; cat "$TMP/xft.err"; exit 1; }
ADDR=$(served_at "$TMP/xft.err")

fail=0
# attack NAME FROM [N SECONDS EVERY_MS]: N (64) drippers from the
# addresses FROM for SECONDS (8), a byte every EVERY_MS (4000), scraped.
attack() {
	"$FLOOD" "$ADDR" slowloris "${3:-64}" "${4:-8}" --from "$2" --every "${5:-4000}" --scrape 500 --limit 2000 \
		>"$TMP/$1.txt"
	r=$(cat "$TMP/$1.txt")
	echo "$1: $r"
	case $r in
	*"open errors 0;"*) ;;
	*) echo "FAIL: $1: the attack could not open its connections"; fail=1 ;;
	esac
	# From the attackers' own address the scraper is one of them to the
	# limits: their churn (a shed dripper reopens and sheds the next) can
	# take its place before its request is read.  There it must be served
	# most of the time (three in four, below), not every time; a scrape
	# from any other address must never be late.
	case $r in
	*"late or failed 0;"*) ;;
	*) if [ "${6:-strict}" = strict ]; then echo "FAIL: $1: a scrape was not answered within 2 s"; fail=1
	   else echo "$1: a scrape lost to the attackers' churn on its own address (allowed)"; fi ;;
	esac
	# The scraper asks twice a second, but on a loaded machine (the
	# sanitizers beside two busy loops) its own loop, beside 64 drippers,
	# asked 7 times in 8 s, and 2 in 7: what is judged is what it asked,
	# at least 2 of them.
	ok=$(echo "$r" | sed -n 's/.*ok \([0-9]*\),.*/\1/p')
	asked=$(echo "$r" | sed -n 's/.*scrapes \([0-9]*\):.*/\1/p')
	[ "${asked:-0}" -ge 2 ] || { echo "FAIL: $1: the scraper asked ${asked:-0} times"; fail=1; }
	[ $((4 * ${ok:-0})) -ge $((3 * ${asked:-0})) ] || { echo "FAIL: $1: only ${ok:-0} of ${asked:-0} scrapes answered"; fail=1; }
}
attack "other addresses" 127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5
attack "the scraper's address" 127.0.0.1 64 8 4000 shared
# Few enough that no newcomer needs their places: only the request
# deadline (5 s by default) closes them, though they send a byte a second.
attack "six under the limits" 127.0.0.6 6 7 1000
# What the exporter says it did.
"$FLOOD" "$ADDR" get /metrics | grep '^xflowtop_exporter_connections' >"$TMP/conns.txt"
cat "$TMP/conns.txt"
late=$(sed -n 's/.*reason="request_timeout"} \([0-9]*\)$/\1/p' "$TMP/conns.txt")
[ "${late:-0}" -ge 6 ] || { echo "FAIL: only ${late:-0} trickling requests closed at their deadline"; fail=1; }
kill -0 "$PID" 2>/dev/null || { echo "FAIL: xflowtop died"; cat "$TMP/xft.err"; fail=1; }
exit $fail
