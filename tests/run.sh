#!/bin/sh
# Run the test programs of `make check` and print one closing summary line.
#
#   tests/run.sh SUITE... -- SCRIPT...
#
# SUITEs are Criterion runners (*.test) and fuzz replay programs (replay_*,
# run over tests/fuzz/corpus/<name>/).  SCRIPTs are end-to-end tests: exit 0
# passes, 77 skips (with the reason on its output), anything else fails.
# Exit status is non-zero when anything failed.
set -u
# A hung test must fail the run, not stall it: every program gets at most
# TEST_TIMEOUT seconds (timeout(1) signals its whole process group, so the
# fixtures a test started go too).
limit=${TEST_TIMEOUT:-900}
passed=0 failed=0 skipped=0
failures=""
log_dir=${BUILD:-build}/test-logs
# Sanitized runs: stop at the first error, and ignore the test framework's
# own allocations (tests/lsan.supp).
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$(pwd)/tests/lsan.supp:print_suppressions=0}
mkdir -p "$log_dir"

note_fail() { failed=$((failed + ${2:-1})); failures="$failures $1"; }

run_suite() {
	t=$1 name=$(basename "$1")
	log="$log_dir/$name.log"
	case $name in
	replay_*)
		corpus=tests/fuzz/corpus/${name#replay_}
		if timeout -k 10 "$limit" "$t" "$corpus" >"$log" 2>&1; then
			passed=$((passed + 1)); echo "PASS  $name ($(tail -1 "$log"))"
		else
			note_fail "$name"; echo "FAIL  $name"; tail -20 "$log"
		fi
		return ;;
	esac
	timeout -k 10 "$limit" "$t" --jobs=2 >"$log" 2>&1
	rc=$?
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		note_fail "$name"; echo "FAIL  $name (hung: killed after ${limit}s)"; tail -30 "$log"
		return
	fi
	syn=$(grep -a 'Synthesis:' "$log" | tail -1)
	tested=$(echo "$syn" | sed -n 's/.*Tested: \([0-9]*\).*/\1/p')
	pass=$(echo "$syn" | sed -n 's/.*Passing: \([0-9]*\).*/\1/p')
	if [ -z "$tested" ]; then
		note_fail "$name"; echo "FAIL  $name (no Criterion summary, exit $rc)"; tail -30 "$log"
		return
	fi
	passed=$((passed + pass))
	bad=$((tested - pass))
	if [ "$bad" -ne 0 ] || [ "$rc" -ne 0 ]; then
		[ "$bad" -eq 0 ] && bad=1
		note_fail "$name" "$bad"
		grep -a -E '\[FAIL\]|\[----\]|CRASH|ERROR' "$log" | head -40
		echo "FAIL  $name: $syn"
	else
		echo "PASS  $name: $syn"
	fi
}

run_script() {
	s=$1 name=$(basename "$1" .sh)
	log="$log_dir/$name.log"
	start=$(date +%s)
	timeout -k 10 "$limit" "$s" >"$log" 2>&1
	rc=$?
	secs=$(( $(date +%s) - start ))
	case $rc in
	124|137) note_fail "$name"; echo "FAIL  $name (hung: killed after ${limit}s)"; tail -30 "$log" ;;
	0) passed=$((passed + 1)); echo "PASS  $name (${secs}s)" ;;
	77) skipped=$((skipped + 1)); echo "SKIP  $name: $(tail -1 "$log")" ;;
	*) note_fail "$name"; echo "FAIL  $name (exit $rc, ${secs}s)"; tail -30 "$log" ;;
	esac
}

mode=suite
for a in "$@"; do
	if [ "$a" = "--" ]; then mode=script; continue; fi
	if [ $mode = suite ]; then run_suite "$a"; else run_script "$a"; fi
done

[ -n "$failures" ] && echo "failed:$failures (logs in $log_dir/)"
echo "check: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
