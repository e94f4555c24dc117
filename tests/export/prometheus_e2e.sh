#!/bin/sh
# Issue 18 end to end, with a real Prometheus (Debian's package, started
# here on loopback with a scrape configuration written here) scraping two
# xflowtop instances, each on its own simulated Xen host (xensim, one
# xflow-agent per domain, flows/netflow.xml):
#
#   hostA  --delay netif_receive_skb=2ms, xflowtop -b --json
#   hostB  no delay, xflowtop --headless --snapshot-on-exit
#
# After the traffic, through Prometheus's HTTP API:
#   - histogram_quantile(0.5, rate(xflowtop_hop_latency_seconds_bucket
#     [1m])) of the hop into dom0's netif_receive_skb (from netif_rx's
#     backlog) is 2 ms +-10 % on hostA, and not on hostB.  When hostA's
#     own figures say the machine ran too slow for that (its exact p50 is
#     outside 2 ms +-10 %: two cores shared with other work), the estimate
#     must instead be within the 22 % the man page states of the exact p50;
#   - sum by (host) (xflowtop_flows_finished_total) equals what each
#     xflowtop reports (A's last batch table, B's snapshot);
#   - promtool check metrics passes on a scrape of each;
#   - the recording rule and alert of xflowtop(1), loaded as the man page
#     prints them, pass promtool check rules, and the recorded hop p99 of
#     hostA's delayed hop is there and at least its p50.
# Exit 77 only when prometheus or promtool is missing and cannot be
# installed, or ptrace is not allowed.
set -u
. tests/export/lib.sh
E2E=$BUILD/tests/e2e/xflow-e2e
need "$E2E" "$BUILD/bin/xflowtop" "$BUILD/bin/xflow-agent" "$BUILD/bin/xensim"
if ! command -v prometheus >/dev/null || ! command -v promtool >/dev/null; then
	# scripts/deps.sh lists them; a fresh machine gets them from make.
	if [ "$(id -u)" -eq 0 ]; then
		scripts/deps.sh ensure >&2
	fi
	command -v prometheus >/dev/null && command -v promtool >/dev/null || {
		echo "skip: prometheus and promtool (Debian's prometheus package) are not installed and could not be" \
			"($( [ "$(id -u)" -eq 0 ] && echo "apt-get failed" || echo "not root: apt-get install prometheus"))"
		exit 77
	}
fi
command -v curl >/dev/null || { echo "skip: curl is not installed (apt-get install curl)"; exit 77; }
# The driver checks that ptrace is allowed before it reads its mode, and
# says why not with exit 77.
probe=$("$E2E" ptrace-probe 2>&1)
[ $? -eq 77 ] && { echo "skip: $probe"; exit 77; }
export E2E_BINDIR="$BUILD/bin"
# Sanitized domains are not the code the flows were written against: a
# sanitized build traces the plain build's domains (as xflowtop_delay.sh).
if [ "$BUILD" != build ]; then
	[ -x build/sim/linuxU ] && [ -x build/sim/linux0 ] ||
		{ echo "sanitized domains cannot be woven; build the plain tree first (make)"; exit 77; }
	export XENSIM_DIR="$(pwd)/build/sim"
fi


log() { echo "$(date +%T) $*"; }
fail() { echo "FAIL: $*"; return 1; }

# host NAME [DELAY] -- XFLOWTOP-ARGS: a simulated host and its xflowtop
# (listening on a free loopback port) in the background.
host() {
	name=$1
	shift
	delay=""
	if [ "$1" != -- ]; then delay="--delay $1"; shift; fi
	shift
	# shellcheck disable=SC2086
	"$E2E" serve "$BUILD/bin/xflowtop" $delay --duration 6 --go-when "$TMP/go" -- \
		--listen 127.0.0.1:0 --set host="$name" --set flow-expire=1 -d 0.5 "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err" &
	eval "PID_$name=$!"
	PIDS="$PIDS $!"
}

addr_of() { served_at "$TMP/$1.err"; }

PROM=""
q() { curl -sf --get --data-urlencode "query=$1" "http://$PROM/api/v1/query"; }
# The value for host=$1 in an instant vector (JSON on standard input).
val() { sed -n 's/.*"host":"'"$1"'"[^}]*},"value":\[[0-9.]*,"\([^"]*\)"\].*/\1/p' | head -1; }

# The rules of xflowtop(1)'s PROMETHEUS section, as the page prints them.
man_rules() {
	sed -n '/^\.\\" rules:begin/,/^\.\\" rules:end/p' man/man1/xflowtop.1 | sed '1d;$d' |
		sed -e 's/\\-/-/g' -e "s/\\\\(aq/'/g"
}

start_prometheus() {
	man_rules >"$TMP/rules.yml"
	promtool check rules "$TMP/rules.yml" >"$TMP/rules.check" 2>&1 && grep -q "SUCCESS: 2 rules found" "$TMP/rules.check" ||
		{ cat "$TMP/rules.yml" "$TMP/rules.check"; fail "promtool refuses xflowtop(1)'s rules"; return 1; }
	cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: ['$TMP/rules.yml']
scrape_configs:
  - job_name: xflowtop
    static_configs:
      - targets: ['$1', '$2']
EOF
	promtool check config "$TMP/prometheus.yml" >/dev/null || { fail "promtool refuses the configuration"; return 1; }
	for try in 1 2 3 4 5; do
		port=$(awk -v s="$$$try" 'BEGIN { srand(s); printf "%d", 20000 + rand() * 40000 }')
		PROM=127.0.0.1:$port
		prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/data.$try" \
			--web.listen-address="$PROM" --log.level=warn >"$TMP/prometheus.log" 2>&1 &
		PP=$!
		PIDS="$PIDS $PP"
		if wait_for 30 curl -sf "http://$PROM/-/ready" -o /dev/null; then
			log "prometheus $(prometheus --version 2>&1 | head -1 | awk '{ print $3 }') ready on $PROM"
			return 0
		fi
		kill "$PP" 2>/dev/null
		grep -q "address already in use" "$TMP/prometheus.log" || break
	done
	cat "$TMP/prometheus.log"
	fail "prometheus did not start"
}

# The hop into dom0's netif_receive_skb from netif_rx's backlog.
HOP='to="linux0:netif_receive_skb",from=~"linux0:(netif_rx|__skb_unlink|__skb_queue_tail)"'

run() {
	rm -rf "$TMP"/*
	host hostA netif_receive_skb=2ms -- --json
	host hostB -- --headless --snapshot-on-exit "$TMP/hostB"
	wait_for 60 sh -c "[ -n \"\$(sed -n 's|.*serving http://||p' '$TMP/hostA.err')\" ] &&
		[ -n \"\$(sed -n 's|.*serving http://||p' '$TMP/hostB.err')\" ]" ||
		{ cat "$TMP"/*.err; fail "xflowtop did not start listening"; return 1; }
	A=$(addr_of hostA) B=$(addr_of hostB)
	log "hostA's xflowtop on $A, hostB's on $B"
	start_prometheus "$A" "$B" || return 1
	wait_for 20 sh -c "curl -sf --get --data-urlencode 'query=count(up{job=\"xflowtop\"} == 1) == 2' \
		'http://$PROM/api/v1/query' | grep -q '\"value\"'" || { fail "prometheus does not scrape both"; return 1; }
	log "prometheus scrapes both: the traffic may start"
	touch "$TMP/go"
	wait_for 60 sh -c "grep -q 'host finished' '$TMP/hostA.err' && grep -q 'host finished' '$TMP/hostB.err'" ||
		{ cat "$TMP"/*.err; fail "the simulated hosts did not finish"; return 1; }
	log "the traffic is over"
	# Settled: no live flow, and the finished counts unchanged over three
	# scrapes in a row.
	prev="" same=0
	for _ in $(seq 1 40); do
		now=$(q 'sum by (host) (xflowtop_flows_finished_total)' | sed 's/"value":\[[0-9.]*,/"value":[/g')
		live=$(q 'sum(xflowtop_flows_live)' | sed -n 's/.*"value":\[[0-9.]*,"\([^"]*\)"\].*/\1/p')
		if [ "$live" = 0 ] && [ -n "$now" ] && [ "$now" = "$prev" ]; then
			same=$((same + 1))
			[ $same -ge 3 ] && break
		else
			same=0
		fi
		prev=$now
		sleep 1
	done
	[ $same -ge 3 ] || { fail "the figures did not settle: $now, live $live"; return 1; }
	for h in hostA hostB; do
		a=$(addr_of $h)
		curl -sf "http://$a/metrics" >"$TMP/$h.metrics" || { fail "cannot scrape $h"; return 1; }
		promtool check metrics <"$TMP/$h.metrics" >"$TMP/$h.promtool" 2>&1 ||
			{ cat "$TMP/$h.promtool"; fail "promtool check metrics refuses $h's figures"; return 1; }
	done
	log "promtool check metrics passes on both scrapes ($(wc -c <"$TMP/hostA.metrics") and" \
		"$(wc -c <"$TMP/hostB.metrics") bytes)"
	p50=$(q "histogram_quantile(0.5, sum by (host, le) (rate(xflowtop_hop_latency_seconds_bucket{$HOP}[1m])))")
	finished=$(q 'sum by (host) (xflowtop_flows_finished_total)')
	pa=$(echo "$p50" | val hostA) pb=$(echo "$p50" | val hostB)
	p99=$(q "max by (host) (xflowtop:hop_latency_seconds:p99_5m{$HOP})" | val hostA)
	fa=$(echo "$finished" | val hostA) fb=$(echo "$finished" | val hostB)

	# Now what each xflowtop says of itself: stop them (B writes its snapshot).
	kill "$PID_hostA" "$PID_hostB"
	wait "$PID_hostA" "$PID_hostB"
	last=$(grep '^{' "$TMP/hostA.out" | tail -1)
	ra=$(echo "$last" | sed -n 's/.*"flows_finished":\([0-9]*\).*/\1/p')
	rb=$(sed -n 's/.*"flows_finished": *\([0-9]*\).*/\1/p' "$TMP/hostB.json" 2>/dev/null)
	# hostA's exact p50 of the busiest hop into netif_receive_skb.
	exact=$(echo "$last" | sed 's/},{"from"/}\n{"from"/g' |
		grep '"to":{"domain_id":0,"domain":"linux0","function":"netif_receive_skb"' |
		grep -E '"from":\{[^}]*"function":"(netif_rx|__skb_unlink|__skb_queue_tail)"' |
		sed -n 's/.*"count":\([0-9]*\).*"p50_ns":\([0-9]*\).*/\1 \2/p' | sort -n | tail -1 | awk '{ print $2 }')
	log "hop into netif_receive_skb, p50 from Prometheus: hostA ${pa:-none} s, hostB ${pb:-none} s;" \
		"hostA's own exact p50 ${exact:-none} ns"
	log "recorded hop p99 (xflowtop(1)'s rule) on hostA: ${p99:-none} s"
	log "flows finished, Prometheus / xflowtop: hostA ${fa:-none} / ${ra:-none}, hostB ${fb:-none} / ${rb:-none}"
	ok=0
	[ -n "$fa" ] && [ "$fa" = "$ra" ] || { fail "hostA: Prometheus says ${fa:-nothing}, xflowtop ${ra:-nothing}"; ok=1; }
	[ -n "$fb" ] && [ "$fb" = "$rb" ] || { fail "hostB: Prometheus says ${fb:-nothing}, xflowtop ${rb:-nothing}"; ok=1; }
	[ "${fa:-0}" -gt 50 ] 2>/dev/null || { fail "hostA finished too few flows (${fa:-0}) to tell"; ok=1; }
	[ -n "$pa" ] && [ -n "$pb" ] && [ -n "$exact" ] || { fail "no figure for the hop"; return 1; }
	awk -v p="${p99:-0}" -v a="$pa" 'BEGIN { exit !(p >= a && p > 0) }' ||
		{ fail "the recorded hop p99 (${p99:-none}) is missing or below the p50 ($pa)"; ok=1; }
	awk -v b="$pb" 'BEGIN { exit !(b < 0.0018 || b > 0.0022) }' ||
		{ fail "hostB, without the delay, has a p50 of $pb s, within 2 ms +-10 %"; ok=1; }
	if awk -v e="$exact" 'BEGIN { exit !(e >= 1800000 && e <= 2200000) }'; then
		awk -v a="$pa" 'BEGIN { exit !(a >= 0.0018 && a <= 0.0022) }' ||
			{ fail "hostA's p50 from Prometheus, $pa s, is not 2 ms +-10 %"; ok=1; }
	else
		log "hostA ran slow (its exact p50 is ${exact} ns): comparing with that, within the stated 22 %"
		awk -v a="$pa" -v e="$exact" 'BEGIN { d = a * 1e9 - e; if (d < 0) d = -d; exit !(d <= 0.22 * e) }' ||
			{ fail "hostA's p50 from Prometheus, $pa s, is not within 22 % of its exact $exact ns"; ok=1; }
	fi
	return $ok
}

for attempt in 1 2; do
	run && exit 0
	echo "attempt $attempt failed; logs:"
	tail -5 "$TMP"/*.err "$TMP/prometheus.log" 2>/dev/null
	cleanup
	new_tmp
done
exit 1
