#!/bin/sh
# The Hypervisor view under tmux at 80x24, on the real capture of
# ../shared/traces/xen-4.17.5-pv-ping-disk: `xflowtop --xentrace x.trace
# --cpu-hz 2.4G`, key 7 opens the view, every domain has its vcpu rows
# (d0 v0 with 248 wakes, as xenalyze counts them), Enter moves to the
# events table, > sorts it, Tab cycles through the seven views, q quits
# with status 0.  Without a xentrace collector the tab is not shown and 7
# says why.  Read from a pipe, the keys come from the terminal.  Exit 0 pass, 77 skip (with the reason), anything else fail.
set -u
BUILD=${BUILD:-build}
BIN=$BUILD/bin/xflowtop
CAP=${XFLOW_CAPTURE:-../shared/traces/xen-4.17.5-pv-ping-disk}
command -v tmux >/dev/null 2>&1 || { echo "skip: tmux is not installed"; exit 77; }
[ -x "$BIN" ] || { echo "skip: $BIN is not built"; exit 77; }
[ -r "$CAP/x.trace" ] || { echo "skip: the real capture $CAP is absent"; exit 77; }
case $CAP in /*) ;; *) CAP=$(pwd)/$CAP ;; esac

work=$(mktemp -d /tmp/xflowtop-tmux-xt.XXXXXX)
SOCK=xflowtop-xt-$$
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
	echo "--- screen:"
	cat "$screen"
	echo "---"
	echo "stderr: $(cat "$work/stderr" 2>/dev/null)"
	exit 1
}
wait_for() {
	i=0
	while [ $i -lt 50 ]; do
		cap
		grep -qF -- "$1" "$screen" && return 0
		sleep 0.1
		i=$((i + 1))
	done
	fail "timed out waiting for '$1'"
}
keys() { $T send-keys -t xft "$@"; }
step() { echo "== $*"; }

cat >"$work/run.sh" <<EOS
"$BIN" --xentrace "$CAP/x.trace" --cpu-hz 2.4G -d 0.3 2>"$work/stderr"
echo \$? >"$work/rc"
sleep 60
EOS
step "start at 80x24 on the capture"
$T new-session -d -s xft -x 80 -y 24 "env LANG=C.UTF-8 LC_ALL=C.UTF-8 sh $work/run.sh" ||
	{ echo "skip: tmux cannot start a session here"; exit 77; }
wait_for "F10Quit"
wait_for "7 Hypervisor"

step "the Hypervisor view"
keys 7
wait_for "WAKE50"
wait_for "complete"
for d in d0 d1 idle; do
	grep -q "^$d  *v0 " "$screen" || fail "no $d v0 row"
done
grep -q "^d0  *v0 .* 248 " "$screen" || fail "d0 v0 does not show 248 wakes"
grep -q "^d1  *pv  *page_fault  *303 " "$screen" || grep -q "^d0  *pv " "$screen" || fail "no PV events"
[ "$(wc -l <"$screen")" -le 24 ] || fail "more than 24 lines"
awk 'length($0) > 80 { exit 1 }' "$screen" || fail "a line wider than 80 columns"

step "focus and sort"
keys Enter; wait_for "events table"
keys '>'; wait_for "sorted by KIND"
keys '>'; wait_for "sorted by EVENT"
keys '>'; wait_for "sorted by COUNT"
sed -n 13,24p "$screen" | grep -q "^d1  *hcall  *mmu_update  *2463" || fail "the biggest count is not first"
keys Enter; wait_for "vcpus table"

step "tabs and quit"
keys Tab; wait_for "TIME%"
keys 7; wait_for "WAKE50"
keys q
i=0
while [ ! -s "$work/rc" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$work/rc" 2>/dev/null)" = 0 ] || fail "exit status $(cat "$work/rc" 2>/dev/null)"

step "from a pipe (keys from the terminal)"
$T kill-session -t xft
rm -f "$work/rc"
cat >"$work/run3.sh" <<EOS
cat "$CAP/x.trace" | "$BIN" --xentrace - --cpu-hz 2.4G -d 0.3 2>"$work/stderr"
echo \$? >"$work/rc"
sleep 60
EOS
$T new-session -d -s xft -x 80 -y 24 "env LANG=C.UTF-8 LC_ALL=C.UTF-8 sh $work/run3.sh"
wait_for "F10Quit"
keys 7; wait_for "WAKE50"; wait_for "complete"
grep -q "^d1  *v0 " "$screen" || fail "pipe: no d1 v0 row"
keys q
i=0
while [ ! -s "$work/rc" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ "$(cat "$work/rc" 2>/dev/null)" = 0 ] || fail "pipe: exit status $(cat "$work/rc" 2>/dev/null)"

step "no xentrace: no tab"
$T kill-session -t xft
cat >"$work/run2.sh" <<EOS
"$BIN" --collector synthetic:rate=200 -d 0.3 2>"$work/stderr"
sleep 60
EOS
$T new-session -d -s xft -x 80 -y 24 "env LANG=C.UTF-8 LC_ALL=C.UTF-8 sh $work/run2.sh"
wait_for "F10Quit"
grep -q "Hypervisor" "$screen" && fail "a Hypervisor tab without a xentrace collector"
keys 7; wait_for "needs a collector that sees Xen"
keys q
echo "PASS: Hypervisor view at 80x24 on the real capture"
