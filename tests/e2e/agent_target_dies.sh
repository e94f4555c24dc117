#!/bin/sh
# Issue 30 items 2 and 7: a target that dies in the middle of the agent's
# work on it (killed at each step of the injection, the plan's loading and
# the detach, by the hook's XFLOW_HOOK_DIE_WHO=target) is reported, and the
# agent goes on or exits: it never hangs and never crashes.  And a target
# whose seccomp filter would kill it at a call of the injection is refused
# with the reason, before anything is injected, and runs on.
BUILD=${BUILD:-build}
for b in "$BUILD/bin/xflowc" "$BUILD/bin/xflow-agent"; do
	[ -x "$b" ] || { echo "missing $b"; exit 77; }
done
command -v cc >/dev/null || { echo "no C compiler for the fixtures"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/xflow-dies.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

. tests/e2e/pkt.sh
pkt_setup "$T" || fail "cannot build the fixture"
cc -g -O1 -pthread -o "$T/sc_fx" tests/guestrt/fixtures/sc_fx.c || fail "cannot build the seccomp fixture"
"$BUILD/bin/xflowc" plan -q --domain app="$T/pkt" -o "$T/p.plan" "$T/f.xml" || fail "xflowc plan -o"

n=1 reported=0
while :; do
	XFLOW_HOOK_DIE_WHO=target XFLOW_HOOK_DIE_AT=$n timeout -s KILL 30 "$BUILD/bin/xflow-agent" --domain app \
		--plan "$T/p.plan" --save-session "$T/s.ses" -- "$T/pkt" 40 >"$T/out" 2>"$T/err"
	rc=$?
	if grep -q "Operation not permitted" "$T/err"; then
		echo "ptrace not permitted here"
		exit 77
	fi
	[ $rc -ne 137 ] || { cat "$T/err"; fail "step $n: the agent hung (killed after 30 s)"; }
	[ $rc -lt 128 ] || { cat "$T/err"; fail "step $n: the agent died of signal $((rc - 128))"; }
	grep -q "test: the target killed at step" "$T/err" || break # past the last step
	grep -Eq "died while the runtime was being mapped in \(killed by signal 9\)|target [0-9]+ killed by signal 9" \
		"$T/err" || { cat "$T/err"; fail "step $n: the target's death is not reported"; }
	reported=$((reported + 1))
	n=$((n + 1))
	[ $n -lt 1000 ] || fail "more than 1000 steps"
done
[ $rc -eq 0 ] && grep -q "done 40 780" "$T/out" || { cat "$T/err"; fail "past the last step the agent failed"; }
[ $reported -gt 20 ] || fail "only $reported steps"
echo "the target killed at each of $reported steps: reported each time, the agent never hung"

# A filter that kills at memfd_create: refused, and the target runs on.
mkfifo "$T/in"
"$T/sc_fx" memfd kill <"$T/in" >"$T/sc.out" &
sc=$!
exec 3>"$T/in"
for i in $(seq 100); do grep -q ready "$T/sc.out" && break; sleep 0.05; done
timeout -s KILL 30 "$BUILD/bin/xflow-agent" --domain app --pid $sc --socket "$T/sock/a.sock" 2>"$T/err"
rc=$?
echo go >&3
exec 3>&-
wait $sc
st=$?
cat "$T/err"
[ $rc -eq 1 ] || fail "the agent on a target under a seccomp filter exited with $rc"
grep -q "seccomp filter would kill the process at memfd_create: the runtime is not mapped in" "$T/err" ||
	fail "the refusal does not say why"
[ $st -eq 0 ] && grep -q "out: 8999991" "$T/sc.out" || fail "the target under a seccomp filter ended with $st"
echo "PASS"
