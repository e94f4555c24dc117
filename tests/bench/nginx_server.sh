#!/bin/sh
# Issue 26's real server: nginx built from Debian's source with Debian's
# flags (-g -O2 and the hardening), serving a small file, traced live as a
# user would: xflow-agent attached to its PID, xflowtop -b through the agent
# collector weaving tests/bench/nginx.xml (a request from its request line
# to the free of its struct, through call()s of its handler and its
# finalizer, by the typedef ngx_http_request_t), and our own load client
# (tests/bench/http_client.c).  Untraced and traced runs alternate
# (U T U T ... U); for each traced run:
#   - flows finished = requests served: the client's count, up to the
#     requests still in flight when it stopped counting (one a connection),
#     less at most one flow for each record lost;
#   - drops reported = drops counted: the monitor's (its exit snapshot's
#     "drops") is what the agent says it lost when it detaches, also in a
#     last traced run with lanes of 16 records, which must lose some;
# and the traced/untraced throughput of each traced run against the mean
# of its two neighbours is printed, with their median.
#
#   tests/bench/nginx_server.sh        (make bench runs it)
#
# Knobs (environment): PAIRS (3), SECS (per run, 3), CONNS (4), MIN_RATIO
# (0: printed, not checked), NGINX_CACHE (build-bench/nginx), AGENT_OPTS.
# Whatever cannot be had (no archive, no apt, no ptrace) gives
# "SKIPPED: reason" and status 0.
set -u
BUILD=${BUILD:-build}
CACHE=${NGINX_CACHE:-build-bench/nginx}
PAIRS=${PAIRS:-3}
SECS=${SECS:-3}
CONNS=${CONNS:-4}
MIN_RATIO=${MIN_RATIO:-0}
AGENT_OPTS=${AGENT_OPTS:-}
FLOWS=tests/bench/nginx.xml

NAME=nginx_server
. tests/bench/server_lib.sh
bench_need

# ---- the source, once, and the build ----------------------------------------
debsrc_fetch nginx "$CACHE" src/core/nginx.c
say "source: $SRC"
NGX="$SRC/objs/nginx"
if [ ! -x "$NGX" ] || [ ! -f "$SRC/.xflow-built" ]; then
	# Debian's flags (dpkg-buildflags, hardening=+all as the package asks);
	# of its modules, the defaults: the path measured, a static file over
	# plain HTTP, is the same code.  Needs PCRE2, zlib (Build-Depends).
	(cd "$SRC" && FLAGS=$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --export=sh 2>/dev/null ||
		echo "export CFLAGS='-g -O2'") && eval "$FLAGS" && echo "CFLAGS=$CFLAGS" &&
		./configure --prefix="$CACHE/run" --with-cc-opt="$CFLAGS ${CPPFLAGS:-}" --with-ld-opt="${LDFLAGS:-}" &&
		make -j2) >"$CACHE/build.log" 2>&1 ||
		skip "nginx did not build (its Build-Depends: libpcre2-dev zlib1g-dev); see $CACHE/build.log"
	touch "$SRC/.xflow-built"
fi
CF=" $(sed -n 's/^CFLAGS=//p' "$CACHE/build.log" | head -1) "
case "$CF" in *" -O2 "*) ;; *) fail "nginx was not built with -O2; see $CACHE/build.log" ;; esac
case "$CF" in *" -g "*) ;; *) fail "nginx was not built with -g; see $CACHE/build.log" ;; esac
say "server: $NGX ($(echo $CF))"

CLIENT="$CACHE/http_client"
if [ ! -x "$CLIENT" ] || [ tests/bench/http_client.c -nt "$CLIENT" ]; then
	cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -o "$CLIENT" tests/bench/http_client.c ||
		fail "http_client did not build"
fi

# ---- the plan: every pointcut matches ----------------------------------------
SITES=$("$BUILD/bin/xflowc" plan --strict --domain web="$NGX" "$FLOWS" 2>"$CACHE/plan.err" |
	sed -n 's/^domain web: .* \([0-9]*\) sites.*/\1/p')
[ -n "$SITES" ] || { cat "$CACHE/plan.err"; fail "xflowc plan --strict $FLOWS"; }
say "plan: $SITES sites from $FLOWS"

# ---- the server ---------------------------------------------------------------
T=$(mktemp -d "${TMPDIR:-/tmp}/xflow-ngx.XXXXXX") || fail "mktemp"
NP= AP= TP=
cleanup() {
	[ -n "$TP" ] && kill "$TP" 2>/dev/null && wait "$TP" 2>/dev/null
	[ -n "$AP" ] && kill -INT "$AP" 2>/dev/null && wait "$AP" 2>/dev/null
	[ -n "$NP" ] && kill "$NP" 2>/dev/null && wait "$NP" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -p "$T/html" "$T/logs" && mkdir -m 0700 "$T/sock" || fail "mkdir"
echo "hello from nginx under xflowtop" >"$T/html/index.html"
PORT=
for try in 1 2 3 4 5; do
	p=$((20000 + ($$ * 7 + try * 131) % 20000))
	# One process (no master): the agent follows the one that serves.
	cat >"$T/nginx.conf" <<CONF
daemon off;
master_process off;
worker_processes 1;
error_log $T/logs/error.log;
pid $T/logs/nginx.pid;
events { worker_connections 1024; }
http {
    access_log off;
    keepalive_requests 1000000;
    server { listen 127.0.0.1:$p; location / { root $T/html; } }
}
CONF
	"$NGX" -p "$T" -c "$T/nginx.conf" >"$T/nginx.out" 2>&1 &
	NP=$!
	sleep 0.5
	if kill -0 "$NP" 2>/dev/null && "$CLIENT" -p $p -c 1 -d 0.2 >/dev/null 2>&1; then
		PORT=$p
		break
	fi
	kill "$NP" 2>/dev/null
	wait "$NP" 2>/dev/null
	NP=
done
[ -n "$PORT" ] || { cat "$T/nginx.out" "$T/logs/error.log"; fail "nginx did not start"; }
say "nginx pid $NP on 127.0.0.1:$PORT; client: $CONNS connections, one request in flight each, ${SECS}s a run"

# One client run: its requests/s on stdout, its requests in $T/client.out.
client() {
	"$CLIENT" -p "$PORT" -c "$CONNS" -d "$1" >"$T/client.out" 2>&1 ||
		{ cat "$T/client.out"; fail "the client failed (a wrong answer or a connection lost)"; }
	sed -n 's/.* rps \([0-9]*\) .*/\1/p' "$T/client.out"
}
# A number from the exit snapshot's JSON: key $1 of the first object holding it.
snap_num() { tr ',{}' '\n\n\n' <"$T/snap.json" | sed -n "s/^ *\"$1\": *\([0-9]*\)\$/\1/p" | head -1; }

client 1 >/dev/null # warm-up, not counted

# One traced run, $1 its name, $2 more agent options: its requests/s on
# stdout (the rest on stderr), its checks made.
traced() {
	rm -f "$T/sock/a.sock" "$T/snap.json"
	# shellcheck disable=SC2086
	"$BUILD/bin/xflow-agent" --domain web --pid "$NP" --socket "$T/sock/a.sock" $AGENT_OPTS $2 -v \
		2>"$T/agent$1.log" &
	AP=$!
	n=0
	until [ -S "$T/sock/a.sock" ] || ! kill -0 "$AP" 2>/dev/null || [ $n -gt 100 ]; do
		n=$((n + 1))
		sleep 0.1
	done
	if [ ! -S "$T/sock/a.sock" ]; then
		cat "$T/agent$1.log" >&2
		grep -q "Operation not permitted" "$T/agent$1.log" && skip "ptrace not permitted here"
		fail "the agent made no socket"
	fi
	"$BUILD/bin/xflowtop" -b -d 0.5 -n 100000 --snapshot-on-exit "$T/snap" \
		--collector "agent:socket=$T/sock/a.sock,flows=$FLOWS" >"$T/top$1.out" 2>"$T/top$1.err" &
	TP=$!
	n=0
	until grep -qs "plan loaded" "$T/agent$1.log" || [ $n -gt 300 ]; do
		n=$((n + 1))
		sleep 0.1
	done
	grep -q "$SITES of $SITES placements installed" "$T/agent$1.log" ||
		{ cat "$T/agent$1.log" "$T/top$1.err" >&2; fail "not every site installed"; }

	t=$(client "$SECS")
	reqs=$(sed -n 's/^requests \([0-9]*\) .*/\1/p' "$T/client.out")
	# The last records and statistics reach the monitor, then it quits.
	sleep 1.5
	kill -TERM "$TP"
	wait "$TP"
	TP=
	wait "$AP"
	AP=
	kill -0 "$NP" 2>/dev/null || fail "nginx died while traced"
	[ -s "$T/snap.json" ] || { cat "$T/top$1.err" >&2; fail "no exit snapshot from the traced run $1"; }
	fin=$(snap_num flows_finished)
	reported=$(snap_num drops)
	counted=$(sed -n 's/.* sent [0-9]* records; lost \([0-9]*\)[ :].*/\1/p' "$T/agent$1.log")
	[ -n "$fin" ] && [ -n "$reported" ] && [ -n "$counted" ] ||
		{ cat "$T/agent$1.log" >&2; fail "run $1: cannot read the flows, the drops or the agent's count"; }
	say "traced run $1: $t req/s, $reqs requests served, $fin flows finished, drops $reported reported, $counted counted by the agent" >&2
	[ "$reported" = "$counted" ] || fail "run $1: the monitor reports $reported drops, the agent counted $counted"
	[ "$fin" -le $((reqs + CONNS)) ] || fail "run $1: $fin flows finished for $reqs requests served"
	[ "$fin" -ge $((reqs - reported)) ] ||
		fail "run $1: $fin flows finished for $reqs requests served and $reported records lost"
	echo "$t"
}

U_ALL= T_ALL=
for i in $(seq "$PAIRS"); do
	u=$(client "$SECS")
	U_ALL="$U_ALL $u"
	t=$(traced "$i" "") || exit 1
	T_ALL="$T_ALL $t"
	say "pair $i: untraced $u req/s, traced $t req/s"
done
u=$(client "$SECS")
U_ALL="$U_ALL $u"
say "closing untraced run: $u req/s"

PAIR_RATIOS=$(pair_ratios)
RATIO=$(median $PAIR_RATIOS)
say "untraced req/s:$U_ALL (median $(median $U_ALL))"
say "traced   req/s:$T_ALL (median $(median $T_ALL))"
say "traced/untraced, each traced run against its two neighbours: $PAIR_RATIOS; median $RATIO"
awk -v r="$RATIO" -v m="$MIN_RATIO" 'BEGIN {exit !(r >= m)}' ||
	fail "traced/untraced $RATIO under MIN_RATIO $MIN_RATIO"
# Lanes of 16 records lose records at once: the monitor must still report
# exactly what the agent counted, and no more flows finish than requests
# were served.
traced lossy "--lane-slots 16" >/dev/null || exit 1
drops=$(snap_num drops)
[ "${drops:-0}" -gt 0 ] || fail "lanes of 16 records lost nothing"
say "flows finished = requests served and drops reported = drops counted in every traced run"
