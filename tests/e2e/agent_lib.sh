# Helpers for the end-to-end scripts that trace a program of their own with
# one agent on this host (sourced; not a test itself): agent_burst.sh,
# agent_gaps.sh, agent_nothing.sh, agent_tail.sh.  Sourcing it checks the
# programs and the C compiler (else the script is skipped, status 77), makes
# the scratch directory T (removed on exit, with the pids KILL names) and
# builds the fixtures tests/guestrt/fixtures/agent_burst.c as $T/burst,
# agent_gaps.c as $T/gaps and agent_tail.c as $T/tail; their request's flow
# is tests/e2e/req.xml (REQ_FLOW).
BUILD=${BUILD:-build}
for b in "$BUILD/bin/xflow-agent" "$BUILD/bin/xflowtop"; do
	[ -x "$b" ] || { echo "missing $b"; exit 77; }
done
command -v cc >/dev/null || { echo "no C compiler for the fixture"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/xflow-agent-e2e.XXXXXX")
KILL=""
trap 'for p in $KILL; do kill $p 2>/dev/null; done; rm -rf "$T"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }
for f in burst gaps tail; do
	cc -g -O1 -pthread -o "$T/$f" tests/guestrt/fixtures/agent_$f.c || fail "cannot build the fixture agent_$f.c"
done
REQ_FLOW=tests/e2e/req.xml
mkdir -m 0700 "$T/s"

# agent_start ARGS...: xflow-agent ARGS with the socket $T/s/a.sock (its
# own: the default folder is shared), its output in $T/agent.out and
# $T/agent.err; AGENT is its pid once the socket is there.  Skips (77)
# where ptrace is not permitted.
agent_start() {
	rm -f "$T/s/a.sock"
	"$BUILD/bin/xflow-agent" --socket "$T/s/a.sock" "$@" >"$T/agent.out" 2>"$T/agent.err" &
	AGENT=$!
	for _ in $(seq 50); do [ -S "$T/s/a.sock" ] && break; sleep 0.1; done
	if grep -q "Operation not permitted" "$T/agent.err"; then
		echo "ptrace not permitted here"
		exit 77
	fi
	[ -S "$T/s/a.sock" ] || { cat "$T/agent.err"; fail "the agent made no socket"; }
}
