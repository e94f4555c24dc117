# Helpers for the exporter's test scripts (sourced; not a test itself).
BUILD=${BUILD:-build}

# need FILE...: skip (77) unless each is an executable.
need() {
	for b; do
		[ -x "$b" ] || { echo "missing $b (make first)"; exit 77; }
	done
}

# A scratch directory, and the background processes (PIDS) stopped, with
# it removed, on exit.
new_tmp() {
	TMP=$(mktemp -d "${TMPDIR:-/tmp}/xflowtop-export.XXXXXX")
	PIDS=""
}
cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}
new_tmp
trap cleanup EXIT
trap 'exit 1' INT TERM

# served_at FILE: the address an xflowtop serves /metrics on, from the line
# it printed on the standard error kept in FILE.
served_at() { sed -n 's|.*serving http://\([0-9.]*:[0-9]*\)/metrics.*|\1|p' "$1"; }

# wait_for SECONDS COMMAND...: until COMMAND succeeds; 1 if it never did.
wait_for() {
	t=$1
	shift
	for _ in $(seq 1 $((t * 5))); do
		"$@" && return 0
		sleep 0.2
	done
	return 1
}
