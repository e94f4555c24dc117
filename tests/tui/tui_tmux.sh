#!/bin/sh
# The TUI under tmux: start `xflowtop --demo` (the simulated Xen host with an
# xflow-agent per domain) at 80x24 in a detached session on a private
# server, drive it with send-keys and read it with capture-pane: every view,
# sort, filter, the slowest flow's path in Table 2's order (as the simulated
# host's Linux code runs it), an aspect off (its hits stop) and on, a
# snapshot (three files that parse, the JSON against the schema), resizes to
# 200x60 and back, quit; then no xflowtop, agent or simulated domain of this
# demo is left, and the terminal modes are as before.
# Exit 0 pass, 77 skip (with the reason), anything else fail; on failure
# the screen goes to the log.
set -u
BUILD=${BUILD:-build}
BIN=$BUILD/bin/xflowtop
CHECK=$BUILD/tests/tui-jsoncheck
SCHEMA=tui/snapshot-schema.json

command -v tmux >/dev/null 2>&1 || { echo "skip: tmux is not installed"; exit 77; }
[ -x "$BIN" ] || { echo "skip: $BIN is not built"; exit 77; }
[ -x "$CHECK" ] || { echo "skip: $CHECK is not built"; exit 77; }

work=$(mktemp -d /tmp/xflowtop-tmux.XXXXXX)
SOCK=xflowtop-test-$$
T="tmux -L $SOCK -f /dev/null"
cleanup() {
	$T kill-server >/dev/null 2>&1
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

screen=$work/screen
cap() { $T capture-pane -p -t xft >"$screen" 2>/dev/null; }
fail() {
	echo "FAIL: $*"
	cap
	echo "--- screen ($(wc -l <"$screen") lines):"
	cat "$screen"
	echo "---"
	echo "stderr: $(cat "$work/stderr" 2>/dev/null)"
	pgrep -a -f -- "--snapshot-dir $work/snaps" || true
	exit 1
}
# Wait (up to about 5 s, or $2 tenths of a second) until the screen shows $1.
wait_for() {
	i=0
	while [ $i -lt "${2:-50}" ]; do
		cap
		grep -qF -- "$1" "$screen" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	fail "timed out waiting for '$1'"
}
wait_gone() {
	i=0
	while [ $i -lt 50 ]; do
		cap
		grep -qF -- "$1" "$screen" || return 0
		sleep 0.1
		i=$((i + 1))
	done
	fail "'$1' did not go away"
}
keys() { $T send-keys -t xft "$@"; }
step() { echo "== $*"; }

mkdir -p "$work/snaps"
# The pane runs a shell that records the terminal modes before and after
# (and, like an interactive shell, outlives a Ctrl-C meant for xflowtop).
cat >"$work/run.sh" <<EOS
trap : INT
stty -a >"$work/stty.before"
"$BIN" --demo -d 0.3 --snapshot-dir "$work/snaps" 2>"$work/stderr"
echo \$? >"$work/rc"
stty -a >"$work/stty.after"
echo "shell-after-xflowtop"
sleep 60
EOS
step "start at 80x24"
$T new-session -d -s xft -x 80 -y 24 "env LANG=C.UTF-8 LC_ALL=C.UTF-8 sh $work/run.sh" ||
	{ echo "skip: tmux cannot start a session here"; exit 77; }
# The host boots and the agents weave their plans before the first screen.
wait_for "F10Quit" 200
wait_for "linuxU:" 100
grep -qF "demo: the simulated Xen host" "$screen" || fail "no demo note in the header"
grep -qF "Domains: linux0[0] linuxU[1] via agent" "$screen" || fail "no domains in the header"
# This demo's host and agents, to check that quitting leaves none behind.
demodir=$(sed -n 's|.*via agent:dir=\(/tmp/xflow-demo-[A-Za-z0-9]*\)/.*|\1|p' "$screen" | head -1)
[ -n "$demodir" ] || fail "no demo directory in the header"
# Issue 24: the header says whether Xen's scheduler trace is joined; the
# hops view shows where the selected hop's time went, or says once that
# it cannot.
head -1 "$screen" | grep -qE "sched(: not joined|: joined, clock not yet measured| clock )" ||
	fail "no scheduler join status in the header"
if grep -qF "sched: not joined" "$screen"; then
	[ "$(grep -cF "no scheduler trace is joined" "$screen")" -eq 1 ] || fail "not said once that no trace is joined"
else
	wait_for "where the time went"
fi
# Rows are sorted by total time: the bottleneck is on top (hop rows only,
# not the split's lines under them).
sorted_by_time() {
	awk 'NR >= 7 && $1 ~ /:/ && $NF ~ /%$/ { v = $NF + 0; if (n++ && v > last + 0.05) bad = 1; last = v }
	     END { exit bad || n < 3 }' "$screen"
}
sorted_by_time || fail "the hops are not sorted by TIME%"
[ "$(wc -l <"$screen")" -le 24 ] || fail "more than 24 lines"

step "views"
keys 2; wait_for "ORIGIN"; grep -q "alloc_skb_from" "$screen" || fail "no slowest flows"
keys 3; wait_for "ELAPSED"
keys 4; wait_for "p99.9"; wait_for "(log scale"
keys 5; wait_for "HITS/S"; grep -qF "xflow netflow" "$screen" || fail "no aspects"
keys 6; wait_for "TARGETS"; grep -q "linuxU" "$screen" || fail "no domains view"
keys Tab; wait_for "TIME%"
keys h; wait_for "Press any key to return"; keys x; wait_for "F10Quit"

step "sort"
keys '>'; wait_for "sorted by FROM"
keys '<'; wait_for "sorted by TIME%"
cap; sorted_by_time || fail "back to total, the hops are not sorted by TIME%"

step "filter"
keys '\' ; wait_for "Filter:"
keys -l "file:sk98lin"; keys Enter
wait_gone "linuxU:"
wait_for "filter: file:sk98"
grep -q "SkGeXmit" "$screen" || fail "the filter hid the sk98lin hops"
keys Escape; wait_for "linuxU:"

step "drill into the slowest flow"
keys 2; wait_for "ORIGIN"
keys Enter; wait_for "ELAPSED"
# The path of a slow flow can be longer than the 17 rows of an 80x24
# screen (a loaded host makes flows with more points), so read it as a
# person would: page down until the last row stops changing, keeping every
# path row once and in order.
path=$work/path
path_rows() { awk '/^ *[0-9]+\.[0-9] linux/' "$screen"; }
cap; path_rows >"$path"
pages=0
while [ $pages -lt 8 ]; do
	last=$(path_rows | tail -1)
	keys NPage
	i=0
	while [ $i -lt 10 ]; do
		sleep 0.1; cap
		[ "$(path_rows | tail -1)" != "$last" ] && break
		i=$((i + 1))
	done
	[ "$(path_rows | tail -1)" = "$last" ] && break
	path_rows >>"$path"
	pages=$((pages + 1))
done
awk '!seen[$0]++' "$path" >"$path.once"
prev=0
# Table 2's functions as the simulated host's Linux TCP runs them (the clone
# before dev_queue_xmit, see sim/README).
for fn in alloc_skb_from_cache tcp_sendmsg tcp_set_skb_tso_segs skb_clone dev_queue_xmit \
	network_start_xmit netbk_fill_frags; do
	n=$(awk -v fn="$fn" -v after="$prev" 'NR > after && index($0, " " fn) { print NR; exit }' "$path.once")
	[ -n "$n" ] || { cat "$path.once"; fail "path view: $fn missing or out of Table 2's order"; }
	prev=$n
done
head -1 "$path.once" | grep -q "^ *0\.0 linuxU" || fail "the path does not start at 0.0 in linuxU"
keys Home

step "aspect off and on"
hits() { cap; awk '/^(on|off) +xflow netflow/ { print $(NF - 2); exit }' "$screen"; }
keys 5; wait_for "xflow netflow"
keys Home; keys Space; wait_for "off xflow netflow"
sleep 0.7; h1=$(hits); sleep 0.7; h2=$(hits)
[ -n "$h1" ] && [ "$h1" = "$h2" ] || fail "hits kept rising with the aspect off ($h1 -> $h2)"
keys Space; wait_for "on  xflow netflow"
sleep 0.7; h3=$(hits)
[ "$h3" -gt "$h2" ] || fail "hits did not resume ($h2 -> $h3)"

step "snapshot"
keys s; wait_for "snapshot:"
txt=$(ls "$work"/snaps/*.txt 2>/dev/null | head -1)
[ -n "$txt" ] || fail "no text snapshot"
base=${txt%.txt}
[ -s "$base.json" ] && [ -s "$base.trace.json" ] || fail "snapshot files missing: $(ls "$work/snaps")"
grep -q "== Slowest flows" "$txt" || fail "the text report has no slowest flows"
"$CHECK" -s "$SCHEMA" "$base.json" || fail "the JSON snapshot does not match the schema"
"$CHECK" -c traceEvents=32 "$base.trace.json" || fail "the trace does not parse"
ls "$work"/snaps | grep -q tmp && fail "a temporary file was left"
pid=$(pgrep -f -- "--snapshot-dir $work/snaps" | head -1)
[ -n "$pid" ] || fail "cannot find the xflowtop process"
kill -USR1 "$pid"
i=0
while [ "$(ls "$work"/snaps/*.trace.json | wc -l)" -lt 2 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(ls "$work"/snaps/*.trace.json | wc -l)" -ge 2 ] || fail "SIGUSR1 wrote no snapshot"

step "resize"
keys 1
$T resize-window -t xft -x 200 -y 60 || fail "resize-window"
wait_for "P90"
[ "$(wc -l <"$screen")" -ge 59 ] || fail "the screen did not grow"
awk 'length($0) > 100 { found = 1 } END { exit !found }' "$screen" || fail "no line wider than 100 at 200 columns"
$T resize-window -t xft -x 80 -y 24
# tmux crops the old screen at once (P90 goes with it), before xflowtop
# has painted the new one: wait for the repaint, the title on the top
# line and the key bar on the bottom one.
i=0
until cap; [ "$(wc -l <"$screen")" -le 24 ] && head -1 "$screen" | grep -q "^xflowtop" &&
	sed -n 24p "$screen" | grep -q "F10Quit"; do
	i=$((i + 1))
	[ $i -ge 50 ] && fail "the key bar is not at the bottom after shrinking"
	sleep 0.1
done
grep -qF "P90" "$screen" && fail "the 200-column layout is still shown at 80 columns"

step "quit"
keys q
i=0
while [ ! -s "$work/rc" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ -s "$work/rc" ] || fail "xflowtop did not quit"
[ "$(cat "$work/rc")" = 0 ] || { cat "$work/stderr"; fail "xflowtop exited with $(cat "$work/rc")"; }
wait_for "shell-after-xflowtop"
grep -qF "F10Quit" "$screen" && fail "the xflowtop screen is still shown after quitting"
# The size is the window's, not a mode: compare the rest.
for f in before after; do sed 's/rows [0-9]*; columns [0-9]*;//' "$work/stty.$f" >"$work/modes.$f"; done
cmp -s "$work/modes.before" "$work/modes.after" || { diff "$work/modes.before" "$work/modes.after"; fail "terminal modes not restored"; }
if pgrep -f -- "--snapshot-dir $work/snaps" >/dev/null 2>&1; then
	fail "an xflowtop process is left"
fi
# The agents (started with sockets in the demo's directory) and the host
# go with xflowtop, and the directory with them.
i=0
while pgrep -f -- "$demodir" >/dev/null 2>&1 && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
pgrep -a -f -- "$demodir" && fail "agents or the simulated host left behind"
[ -e "$demodir" ] && fail "the demo's directory $demodir was left behind"
step "Ctrl-C quits cleanly too"
rm -f "$work/rc" "$work/stty.after"
$T respawn-pane -k -t xft "env LANG=C.UTF-8 LC_ALL=C.UTF-8 sh $work/run.sh" || fail "respawn-pane"
wait_for "F10Quit" 200
keys C-c
i=0
while [ ! -s "$work/rc" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$work/rc" 2>/dev/null)" = 0 ] || fail "xflowtop did not quit cleanly on Ctrl-C (exit $(cat "$work/rc" 2>/dev/null))"
wait_for "shell-after-xflowtop"
for f in before after; do sed 's/rows [0-9]*; columns [0-9]*;//' "$work/stty.$f" >"$work/modes.$f"; done
cmp -s "$work/modes.before" "$work/modes.after" || fail "terminal modes not restored after Ctrl-C"
if pgrep -f -- "--snapshot-dir $work/snaps" >/dev/null 2>&1; then
	fail "an xflowtop process is left after Ctrl-C"
fi
echo "PASS: views, sort, filter, path, aspects, snapshot, SIGUSR1, resize, quit, Ctrl-C"
exit 0
