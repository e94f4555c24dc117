#!/bin/sh
# Issue 30 item 5's scenario (make stress; RUNS=N runs, 1 by default):
# six xflowtop -b, each on an agent of its own, three of the agents killed
# with SIGKILL while the monitors run.  KIND=kernel: kernel agents, as in
# the issue (root and BTF needed), weaving flows/kernel/net_tp.xml; else
# in-process agents on packet programs, which any host can run.  Every
# monitor ends by itself with status 0 (or 2, saying so, when its agent
# was killed as it started), never by a signal and with no
# sanitizer report (BUILD=build-san for an ASan/UBSan build); every target
# finishes its own work, its agent killed or not.
set -u
BUILD=${BUILD:-build}
RUNS=${RUNS:-1}
KIND=${KIND:-inproc}
if [ "$KIND" = kernel ]; then
	[ "$(id -u)" = 0 ] && [ -r /sys/kernel/btf/vmlinux ] || { echo "kernel agents need root and BTF"; exit 77; }
fi
for b in "$BUILD/bin/xflowtop" "$BUILD/bin/xflow-agent"; do
	[ -x "$b" ] || { echo "missing $b"; exit 77; }
done
command -v cc >/dev/null || { echo "no C compiler for the fixture"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/xflow-six.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
fail() { echo "FAIL (run $run): $*"; exit 1; }
# No sanitizer report nor fatal signal said in the stderr file $1 of $2.
clean() {
	! grep -Eq "AddressSanitizer|LeakSanitizer|runtime error|fatal signal" "$1" || { cat "$1"; fail "$2: a report"; }
}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}

. tests/e2e/pkt.sh
pkt_setup "$T" || { echo "cannot build the fixture"; exit 1; }
# Each packet fills 64 + i bytes: a few seconds of work in all.
PKTS=200000
run=0
while [ $run -lt "$RUNS" ]; do
	run=$((run + 1))
	rm -rf "$T/r" && mkdir -m 700 "$T/r"
	agents="" tops=""
	flows=$T/f.xml
	for i in 1 2 3 4 5 6; do
		if [ "$KIND" = kernel ]; then
			flows=flows/kernel/net_tp.xml
			"$BUILD/bin/xflow-agent" --backend kernel --domain k$i --socket "$T/r/a$i.sock" 2>"$T/r/a$i.err" &
		else
			"$BUILD/bin/xflow-agent" --domain d$i --socket "$T/r/a$i.sock" -- "$T/pkt" $PKTS \
				>"$T/r/t$i.out" 2>"$T/r/a$i.err" &
		fi
		agents="$agents $!"
	done
	for i in 1 2 3 4 5 6; do
		for k in $(seq 100); do [ -S "$T/r/a$i.sock" ] && break; sleep 0.05; done
		"$BUILD/bin/xflowtop" -b -n 4 -d 0.5 --collector "agent:socket=$T/r/a$i.sock,flows=$flows" \
			>"$T/r/top$i.out" 2>"$T/r/top$i.err" &
		tops="$tops $!"
	done
	sleep 1
	i=0
	for a in $agents; do
		i=$((i + 1))
		[ $((i % 2)) -eq 1 ] && kill -KILL "$a"
	done
	i=0
	for p in $tops; do
		i=$((i + 1))
		wait "$p"
		st=$?
		# One whose agent was killed while it started says so and
		# ends with 2 (its collector could not be opened).
		[ $st -eq 0 ] || { [ $st -eq 2 ] && [ $((i % 2)) -eq 1 ] && grep -q "^xflowtop: collector 'agent:" \
			"$T/r/top$i.err"; } || { cat "$T/r/top$i.err"; fail "xflowtop $i ended with status $st"; }
		clean "$T/r/top$i.err" "xflowtop $i"
	done
	i=0
	for a in $agents; do
		i=$((i + 1))
		wait "$a"
		st=$?
		[ $((i % 2)) -eq 1 ] || [ $st -eq 0 ] || { cat "$T/r/a$i.err"; fail "agent $i ended with status $st"; }
		clean "$T/r/a$i.err" "agent $i"
	done
	[ "$KIND" = kernel ] && continue
	# The targets of the killed agents run on to their end: wait for them.
	for k in $(seq 600); do
		n=0
		for i in 1 2 3 4 5 6; do grep -q "^done $PKTS " "$T/r/t$i.out" && n=$((n + 1)); done
		[ $n -eq 6 ] && break
		sleep 0.1
	done
	[ $n -eq 6 ] || fail "only $n of 6 targets finished their work"
done
echo "PASS: $RUNS runs of six monitors on $KIND agents, three of the agents killed each time"
