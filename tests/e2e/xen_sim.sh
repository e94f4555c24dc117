#!/bin/sh
# Issue 9 without Xen: the Xen transport end to end on the simulated
# toolstack (sim/xenlibs: libxenstore, libxenevtchn, libxengnttab stand-ins
# under the real libxenvchan).  A "domain" 5 named linuxU runs the simulated
# host's programs and an xflow-agent that, finding xenstore, takes the Xen
# transport by itself; xflowtop -b in "dom0" finds it through xenstore and
# shows linuxU's hops.  Then the domain is destroyed (its processes killed,
# then simxen domain-destroy): the monitor says linuxU is gone and goes on;
# a new domain 6, also linuxU, with a new agent is followed by the same
# monitor, whose flow count grows again.
BUILD=${BUILD:-build}
SIMXEN=$BUILD/sim/xenlibs/simxen
SIMDIR=${XENSIM_DIR:-$BUILD/sim}
for b in "$SIMXEN" "$BUILD/bin/xflow-agent" "$BUILD/bin/xflowtop" "$BUILD/bin/xensim"; do
	[ -x "$b" ] || { echo "missing $b"; exit 77; }
done
# Sanitized domains are not the code the flows were written against: a
# sanitized build traces the plain build's domains (as agent_flows.sh).
if [ "$BUILD" != build ]; then
	[ -x build/sim/linuxU ] && [ -x build/bin/xensim ] ||
		{ echo "sanitized domains cannot be woven; build the plain tree first (make)"; exit 77; }
	XENSIM=build/bin/xensim
	export XENSIM_DIR="$(pwd)/build/sim"
else
	XENSIM=$BUILD/bin/xensim
fi

T=$(mktemp -d "${TMPDIR:-/tmp}/xen-sim.XXXXXX")
PIDS=""
cleanup() {
	for p in $PIDS; do kill -KILL "$p" 2>/dev/null; done
	[ -n "$SIM1" ] && kill -TERM "$SIM1" 2>/dev/null
	[ -n "$SIM2" ] && kill -TERM "$SIM2" 2>/dev/null
	wait 2>/dev/null
	[ -n "$KEEP" ] && echo "kept $T" || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() {
	echo "FAIL: $*"
	for f in "$T"/*.log "$T"/top.err; do [ -s "$f" ] && { echo "--- $f"; tail -15 "$f"; }; done
	exit 1
}

export XFLOW_SIMXEN_DIR="$T/xen"
export LD_LIBRARY_PATH="$BUILD/sim/xenlibs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$SIMXEN" "$XFLOW_SIMXEN_DIR" init >/dev/null || fail "simxen init"

# One guest domain: the simulated host's programs and an agent on linuxU.
guest_up() { # DOMID LOGNAME
	"$SIMXEN" "$XFLOW_SIMXEN_DIR" domain-create "$1" linuxU >/dev/null || fail "domain-create $1"
	"$XENSIM" --domains "$T/doms$1" --guests 1 --duration 120 >"$T/xensim$1.log" 2>&1 &
	sim=$!
	i=0
	until pid=$(awk -F'\t' '$2 == "linuxU" {print $3}' "$T/doms$1" 2>/dev/null) && [ -n "$pid" ]; do
		i=$((i + 1)); [ $i -lt 150 ] || fail "xensim did not list its domains"
		sleep 0.1
	done
	env XFLOW_SIMXEN_DOMID="$1" ${AGENT_ENV:-} "$BUILD/bin/xflow-agent" --pid "$pid" -v 2>"$T/agent$1.log" &
	PIDS="$PIDS $!"
	LAST_AGENT=$!
	LAST_SIM=$sim
}

guest_up 5
SIM1=$LAST_SIM AGENT1=$LAST_AGENT
XFLOW_SIMXEN_DOMID=0 timeout -s TERM 200 "$BUILD/bin/xflowtop" -b -d 1 -n 150 \
	--collector "agent:xen,flows=flows/netflow.xml" >"$T/top.out" 2>"$T/top.err" &
TOP=$!
PIDS="$PIDS $TOP"

# Wait for iteration N of the batch output.
iteration() {
	i=0
	until grep -q "iteration $1\b" "$T/top.out" 2>/dev/null; do
		kill -0 "$TOP" 2>/dev/null || fail "xflowtop stopped before iteration $1"
		i=$((i + 1)); [ $i -lt 300 ] || fail "no iteration $1 within 30 s"
		sleep 0.1
	done
}
# The lines of iteration N's SECTION table.
table() { # N SECTION
	awk -v it="iteration $1" -v sec="$2" '
		index($0, "xflowtop - ") == 1 { on = index($0, it " ") || substr($0, length($0) - length(it) + 1) == it }
		on && $0 == sec { t = 1; next }
		on && t && $0 == "" { t = 0 }
		on && t { print }' "$T/top.out"
}
flows_started() { # N
	awk -v it="iteration $1" 'index($0, "xflowtop - ") == 1 { on = index($0, it " ") || substr($0, length($0) - length(it) + 1) == it }
		on && /^flows: started/ { sub(/^flows: started /, ""); sub(/,.*/, ""); print; exit }' "$T/top.out"
}

# The first iteration from FROM on, at most UNTIL, for which the shell
# test CHECK (given the iteration in $k) holds, in $k; a failure naming
# WHAT if none does.  A loaded machine (two busy loops beside make check)
# starts an agent in more than the 5 s a fixed iteration gave it.
first_with() { # FROM UNTIL CHECK WHAT
	k=$1
	while [ "$k" -le "$2" ]; do
		iteration "$k"
		eval "$3" && return 0
		k=$((k + 1))
	done
	k=$2
	fail "$4 by iteration $2: $(table "$2" DOMAINS)"
}
linux_hops() { table "$1" HOPS | awk '$1 ~ /^linuxU:/ && $2 ~ /^linuxU:/ && $3 > 0' | wc -l; }
first_with 5 60 'table $k DOMAINS | grep -Eq "^ +5 linuxU +live" && [ "$(linux_hops $k)" -ge 3 ]' \
	"linuxU (domain 5) live with 3 hops"
grep -q "transport xen" "$T/agent5.log" || fail "the agent did not choose the Xen transport by itself"
hops=$(linux_hops $k)
echo "domain 5 live with $hops hops at iteration $k"
grep -q "via vchan" "$T/top.out" || fail "the domain is not reached via vchan"
echo "domain 5: $hops linuxU hops over vchan"

# The domain dies: nothing in it runs any more, then the toolstack forgets it.
kill -KILL "$AGENT1" 2>/dev/null
kill -TERM "$SIM1" 2>/dev/null
"$SIMXEN" "$XFLOW_SIMXEN_DIR" domain-destroy 5 >/dev/null || fail "domain-destroy 5"
destroyed_at=$(grep -c "^xflowtop - " "$T/top.out")
first_with $((destroyed_at + 1)) $((destroyed_at + 30)) 'table $k DOMAINS | grep -Eq "^ +5 linuxU +gone"' \
	"domain 5 reported gone"
n=$k
kill -0 "$TOP" 2>/dev/null || fail "xflowtop stopped when the domain went"
before=$(flows_started $n)
echo "domain 5 gone at iteration $n with $before flows started"

# It comes back as domain 6, with a new agent; the same monitor follows.
# This one counts CLOCK_MONOTONIC, which the monitor places by the
# greeting's round trip, then by each shorter STATS round trip (which of
# the two is shorter here is up to the machine; tests/xen checks that a
# slow greeting is bettered).
AGENT_ENV=XFLOW_CLOCK=monotonic guest_up 6
SIM2=$LAST_SIM
first_with $((n + 1)) $((n + 60)) 'table $k DOMAINS | grep -Eq "^ +6 linuxU +live" && [ "$(flows_started $k)" -gt "$before" ]' \
	"domain 6 live with new flows"
m=$k
table $m DOMAINS | grep -Eq '^ +5 linuxU +gone' || fail "iteration $m: domain 5 no longer listed gone"
table $m DOMAINS | grep -Eq '^ +6 linuxU .*clock by (HELLO )?round trip, within [0-9.]+ms' ||
	fail "iteration $m: domain 6's clock not placed by a round trip: $(table $m DOMAINS)"
echo "domain 6: $(table $m DOMAINS | grep -Eo 'clock by (HELLO )?round trip, within [0-9.]*ms')"
after=$(flows_started $m)
[ "$after" -gt "$before" ] || fail "no new flows from domain 6 ($before then $after)"
echo "domain 6 followed: $after flows started by iteration $m"
kill -INT "$TOP"
wait "$TOP"
rc=$?
[ $rc -eq 0 ] || fail "xflowtop exited with $rc"
echo "PASS"
