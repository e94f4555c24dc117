#!/bin/sh
# Issues 16 and 27's real-server figures: memcached built from Debian's
# source with -O2 -g, a request flow of at least 100 sites woven into it by
# xflow-agent's in-process backend while it serves, and its throughput
# while traced against untraced, the two alternating in one run
# (U T U T ...), measured by our own load client (tests/bench/mc_client.c;
# Debian's memcached source has none that stands alone).  Two flows, each
# measured in turn against its own target (issue 27):
#
#   tests/bench/memcached.xml       the request flow, 138 sites    >= 0.95
#   tests/bench/memcached_loop.xml  and the event loop, 287 sites  >= 0.90
#
# For each traced run the CPU each party spent is printed, to say where the
# nanoseconds go: memcached's per request (against the untraced runs'),
# and the agent's per record, which includes writing the session to
# /dev/shm (/proc/PID/task/*/schedstat, exact ns, over the client's run).
#
#   tests/bench/real_server.sh        (make bench runs it; root for apt)
#
# Knobs (environment): PAIRS (untraced/traced pairs, default 8), SECS (per
# run, default 4), CONNS (client connections, 16), DEPTH (requests in flight
# per connection, 1), THREADS (memcached's, 2), MEASURES (FILE=MIN_RATIO
# pairs, the two above), or FLOWS with MIN_RATIO (one flow file and its
# target, 0.90), REAL_SERVER_CACHE (build-bench/real_server),
# AGENT_OPTS (xflow-agent's, default --lanes 8 --lane-slots 262144
# --session-max 8G),
# AGENT_PREFIX (before the agent's command, e.g. "nice -n 10").
#
# The source is fetched once with `apt-get source` (tests/bench/server_lib.sh):
# the machine's apt configuration is not changed.  Build dependencies that
# are missing are installed with apt-get when run as root.  Whatever cannot
# be had (no archive, no apt, not root for a missing package, no ptrace)
# gives "SKIPPED: reason" and status 0.
#
# A traced run counts only when the agent put every site in, with jumps
# (breakpoints are counted and named), and its records show up: the saved
# session is played back and must hold about one finished flow per request
# served, and no record lost.  Each traced run is compared with the mean of
# the untraced runs on either side of it; the status is 1 when the median
# of these ratios is under a flow's target, or a check fails (after both
# flows are measured, unless a check failed).
set -u
BUILD=${BUILD:-build}
CACHE=${REAL_SERVER_CACHE:-build-bench/real_server}
PAIRS=${PAIRS:-8}
SECS=${SECS:-4}
CONNS=${CONNS:-16}
DEPTH=${DEPTH:-1}
THREADS=${THREADS:-2}
MEASURES=${MEASURES:-tests/bench/memcached.xml=0.95 tests/bench/memcached_loop.xml=0.90}
[ -n "${FLOWS:-}" ] && MEASURES="$FLOWS=${MIN_RATIO:-0.90}"
MIN_SITES=100
# A worker thread writes one to two million records a second here: the
# default lanes (4,096 records) fill while the agent waits for one of the
# two cores, so each gets 256 Ki, 150 ms of the loop's flow, as
# xflow-agent(8) sizes a heavy flow (8 lanes: memcached's threads that hit
# sites are its workers and its listener).  A traced run writes about
# 3.5 M records a second, 170 to 250 MB of session in SECS=4 at 11 to 15
# bytes a record (session version 9; 1.3 GB before): the session's bound
# (--session-max, 256 MB by default) is raised so that none is left out.
AGENT_OPTS=${AGENT_OPTS:---lanes 8 --lane-slots 262144 --session-max 8G}
AGENT_PREFIX=${AGENT_PREFIX:-}

NAME=real_server
. tests/bench/server_lib.sh
bench_need

# ---- the source, once ------------------------------------------------------
debsrc_fetch memcached "$CACHE" memcached.c
say "source: $SRC"

# ---- build dependencies and the build -------------------------------------
# Of Debian's Build-Depends, what the build below needs: libevent (SASL and
# TLS, which Debian also enables, are left off; the text protocol on a
# plain TCP port, the path measured, is the same code without them).
if ! pkg-config --exists libevent 2>/dev/null; then
	[ "$(id -u)" = 0 ] || skip "libevent-dev is missing; as root: apt-get install libevent-dev pkg-config"
	DEBIAN_FRONTEND=noninteractive apt-get -q -y install --no-install-recommends libevent-dev pkg-config \
		>"$CACHE/apt-install.log" 2>&1 || skip "apt-get install libevent-dev failed; see $CACHE/apt-install.log"
fi
MC="$SRC/memcached"
if [ ! -x "$MC" ] || [ ! -f "$SRC/.xflow-built" ]; then
	# Debian's own flags (dpkg-buildflags, with the package's
	# hardening=+all): -g -O2, the stack protector, fortify, relro, PIE.
	(cd "$SRC" && FLAGS=$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --export=sh 2>/dev/null ||
		echo "export CFLAGS='-g -O2'") && eval "$FLAGS" && echo "CFLAGS=$CFLAGS" && ./configure -q &&
		make -j2 memcached) >"$CACHE/build.log" 2>&1 || fail "memcached did not build; see $CACHE/build.log"
	touch "$SRC/.xflow-built"
fi
say "server: $MC ($(sed -n 's/^CFLAGS=//p' "$CACHE/build.log" | head -1))"
CF=" $(sed -n 's/^CFLAGS=//p' "$CACHE/build.log" | head -1) "
case "$CF" in *" -O2 "*) ;; *) fail "memcached was not built with -O2; see $CACHE/build.log" ;; esac
case "$CF" in *" -g "*) ;; *) fail "memcached was not built with -g; see $CACHE/build.log" ;; esac

CLIENT="$CACHE/mc_client"
if [ ! -x "$CLIENT" ] || [ tests/bench/mc_client.c -nt "$CLIENT" ]; then
	cc -std=c11 -D_GNU_SOURCE -O2 -g -Wall -Wextra -o "$CLIENT" tests/bench/mc_client.c ||
		fail "mc_client did not build"
fi

# ---- the run ---------------------------------------------------------------
T=$(mktemp -d "${TMPDIR:-/tmp}/xflow-rs.XXXXXX") || fail "mktemp"
# Sessions are large (about 100 MB a second): in memory when we can.
SES_DIR=$T
[ -d /dev/shm ] && [ -w /dev/shm ] && SES_DIR=$(mktemp -d /dev/shm/xflow-rs.XXXXXX)
MP= AP=
cleanup() {
	[ -n "$AP" ] && kill -INT "$AP" 2>/dev/null && wait "$AP" 2>/dev/null
	[ -n "$MP" ] && kill "$MP" 2>/dev/null && wait "$MP" 2>/dev/null
	rm -rf "$T" "$SES_DIR"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

USER_OPT=
[ "$(id -u)" = 0 ] && USER_OPT="-u root"
PORT=
for try in 1 2 3 4 5; do
	p=$((20000 + ($$ * 7 + try * 131) % 20000))
	# shellcheck disable=SC2086
	"$MC" $USER_OPT -l 127.0.0.1 -p $p -U 0 -t "$THREADS" -m 256 -c 4096 >"$T/mc.log" 2>&1 &
	MP=$!
	sleep 0.5
	if kill -0 "$MP" 2>/dev/null && "$CLIENT" -p $p -l 2>/dev/null; then
		PORT=$p
		break
	fi
	kill "$MP" 2>/dev/null
	wait "$MP" 2>/dev/null
	MP=
done
[ -n "$PORT" ] || { cat "$T/mc.log"; fail "memcached did not start"; }
say "memcached pid $MP on 127.0.0.1:$PORT, $THREADS threads; client: $CONNS connections, $DEPTH in flight each, 90% get / 10% set, ${SECS}s a run"

# The CPU a process has run, in ns (all its threads).
cpu() { cat /proc/"$1"/task/*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%.0f\n", s }'; }

# One client run: its requests/s on stdout.
client() {
	"$CLIENT" -p "$PORT" -c "$CONNS" -P "$DEPTH" -d "$1" >"$T/client.out" 2>&1 ||
		{ cat "$T/client.out"; fail "the client failed (a wrong answer or a connection lost)"; }
	sed -n 's/.* rps \([0-9]*\) .*/\1/p' "$T/client.out"
}

client 2 >/dev/null # warm-up, not counted

# ---- one flow, measured ----------------------------------------------------
# measure FLOWFILE MIN_RATIO: plan the flow, then PAIRS of an untraced and a
# traced run and a closing untraced one; sets MISSED when the target is.
MISSED=
measure() {
	flows=$1 min=$2
	PLAN="$CACHE/mc.plan"
	"$BUILD/bin/xflowc" plan -q --strict --domain mc="$MC" -o "$PLAN" "$flows" || fail "xflowc plan $flows"
	SITES=$("$BUILD/bin/xflowc" plan --domain mc="$MC" "$flows" 2>/dev/null |
		sed -n 's/^domain mc: .* \([0-9]*\) sites.*/\1/p')
	[ -n "$SITES" ] || fail "cannot count the plan's sites"
	say "== $flows: $SITES sites, target traced/untraced >= $min"
	[ "$SITES" -ge $MIN_SITES ] || fail "$SITES sites, fewer than $MIN_SITES"

	U_ALL= T_ALL= RECORDS=0 DROPS=0 FLOWS_DONE=0 REQS_T=0 JUMPS= TRAPS=
	MC_U= MC_T= AG_T=
	for i in $(seq "$PAIRS"); do
		untraced_run
		traced_run "$i"
	done
	untraced_run
	say "closing untraced run: $u req/s"

	MU=$(median $U_ALL)
	MT=$(median $T_ALL)
	PAIR_RATIOS=$(pair_ratios)
	RATIO=$(median $PAIR_RATIOS)
	say "sites in plan: $SITES ($JUMPS by jump, $TRAPS by breakpoint fallback)"
	say "untraced req/s:$U_ALL (median $MU)"
	say "traced   req/s:$T_ALL (median $MT)"
	say "traced/untraced: each traced run against its two neighbours: $PAIR_RATIOS; medians' ratio $(awk -v t="$MT" -v u="$MU" 'BEGIN {printf "%.3f", t / u}')"
	say "records: $RECORDS saved, $DROPS lost; flows finished $FLOWS_DONE for $REQS_T requests served while traced ($(awk -v r="$RECORDS" -v q="$REQS_T" 'BEGIN {printf "%.1f", q ? r / q : 0}') records a request)"
	say "CPU (medians): memcached $(median $MC_U) ns a request untraced, $(median $MC_T) traced; the agent $(median $AG_T) ns a record"
	# Every request served while traced is a flow that finishes.
	awk -v f="$FLOWS_DONE" -v r="$REQS_T" 'BEGIN {exit !(f >= 0.97 * r)}' ||
		fail "only $FLOWS_DONE flows finished for $REQS_T requests: records are missing"
	if awk -v r="$RATIO" -v m="$min" 'BEGIN {exit !(r >= m)}'; then
		say "$flows: traced/untraced (median of the runs' ratios): $RATIO (target >= $min: met)"
	else
		say "$flows: traced/untraced (median of the runs' ratios): $RATIO (target >= $min: MISSED)"
		MISSED="$MISSED $flows"
	fi
}

# An untraced run: u, and memcached's CPU a request into MC_U.
untraced_run() {
	c0=$(cpu "$MP")
	u=$(client "$SECS")
	c1=$(cpu "$MP")
	U_ALL="$U_ALL $u"
	reqs=$(sed -n 's/^requests \([0-9]*\) .*/\1/p' "$T/client.out")
	[ "${reqs:-0}" -gt 0 ] || fail "a client run served no request"
	MC_U="$MC_U $(((c1 - c0) / reqs))"
}

# Traced run $1: the agent in, the client, the agent out, its session
# played back and checked.
traced_run() {
	i=$1
	ses="$SES_DIR/run$i.ses"
	# shellcheck disable=SC2086
	$AGENT_PREFIX "$BUILD/bin/xflow-agent" --domain mc --plan "$PLAN" --save-session "$ses" --pid "$MP" $AGENT_OPTS -v \
		2>"$T/agent$i.log" &
	AP=$!
	n=0
	until grep -qs "tracing 1 target" "$T/agent$i.log"; do
		kill -0 "$AP" 2>/dev/null || break
		n=$((n + 1))
		[ $n -gt 300 ] && break
		sleep 0.1
	done
	if ! grep -q "tracing 1 target" "$T/agent$i.log"; then
		cat "$T/agent$i.log"
		grep -q "Operation not permitted" "$T/agent$i.log" && skip "ptrace not permitted here"
		fail "the agent did not start tracing"
	fi
	loaded=$(grep "plan loaded" "$T/agent$i.log")
	inst=$(echo "$loaded" | sed -n 's/.* \([0-9]*\) of \([0-9]*\) placements installed.*/\1/p')
	traps=$(sed -n 's/.* \([0-9]*\) site(s) by a breakpoint.*/\1/p' "$T/agent$i.log")
	traps=${traps:-0}
	[ "$inst" = "$SITES" ] || { cat "$T/agent$i.log"; fail "$inst of $SITES sites installed"; }
	JUMPS=$((inst - traps)) TRAPS=$traps
	[ "$JUMPS" -gt 0 ] || fail "no site took a jump: every one is a breakpoint"

	c0=$(cpu "$MP") a0=$(cpu "$AP")
	t=$(client "$SECS")
	c1=$(cpu "$MP") a1=$(cpu "$AP")
	T_ALL="$T_ALL $t"
	reqs=$(sed -n 's/^requests \([0-9]*\) .*/\1/p' "$T/client.out")
	[ "${reqs:-0}" -gt 0 ] || fail "a client run served no request"
	MC_T="$MC_T $(((c1 - c0) / reqs))"

	kill -INT "$AP"
	wait "$AP"
	rc=$?
	AP=
	[ $rc -eq 0 ] || [ $rc -eq 130 ] || { cat "$T/agent$i.log"; fail "the agent ended with status $rc"; }
	grep -q "every target detached" "$T/agent$i.log" || { cat "$T/agent$i.log"; fail "the agent did not detach"; }
	saved=$(sed -n 's/.* saved \([0-9]*\) records; lost \([0-9]*\)[ :].*/\1/p' "$T/agent$i.log")
	lost=$(sed -n 's/.* saved \([0-9]*\) records; lost \([0-9]*\)[ :].*/\2/p' "$T/agent$i.log")
	[ -n "$saved" ] && [ -n "$lost" ] || { cat "$T/agent$i.log"; fail "the agent did not say what it saved"; }
	kill -0 "$MP" 2>/dev/null || fail "memcached died while traced"
	[ "$lost" = 0 ] || say "pair $i: $(grep ' saved [0-9]* records; lost' "$T/agent$i.log")"

	# The records: the session played back whole.
	[ -s "$ses" ] || fail "no session from the traced run $i"
	"$BUILD/bin/xflowtop" -b -d 1 -n 100000 --replay "$ses" --speed max >"$T/replay$i.out" 2>&1 ||
		{ tail -20 "$T/replay$i.out"; fail "xflowtop --replay of run $i"; }
	rm -f "$ses"
	last=$(grep "^uptime" "$T/replay$i.out" | tail -1)
	fl=$(grep "^flows:" "$T/replay$i.out" | tail -1)
	rec=$(echo "$last" | sed -n 's/.* records \([0-9]*\) .*/\1/p')
	drp=$(echo "$last" | sed -n 's/.* drops \([0-9]*\),.*/\1/p')
	fin=$(echo "$fl" | sed -n 's/.* finished \([0-9]*\),.*/\1/p')
	[ -n "$rec" ] && [ -n "$fin" ] || { tail -20 "$T/replay$i.out"; fail "cannot read the replay of run $i"; }
	[ "$rec" -gt 0 ] || fail "traced run $i: no record arrived"
	[ "$rec" = "$saved" ] || fail "traced run $i: the agent saved $saved records, the replay read $rec"
	RECORDS=$((RECORDS + rec)) DROPS=$((DROPS + ${drp:-0} + lost)) FLOWS_DONE=$((FLOWS_DONE + fin))
	REQS_T=$((REQS_T + reqs))
	AG_T="$AG_T $(((a1 - a0) / (rec > 0 ? rec : 1)))"
	say "pair $i: untraced $u req/s, traced $t req/s; traced run: $reqs requests, $fin flows finished, $rec records, $((${drp:-0} + lost)) lost; CPU: memcached $(((c1 - c0) / reqs)) ns a request, the agent $(((a1 - a0) / (rec > 0 ? rec : 1))) ns a record"
}

for m in $MEASURES; do
	measure "${m%=*}" "${m##*=}"
done
[ -z "$MISSED" ] || { say "target MISSED:$MISSED"; exit 1; }
