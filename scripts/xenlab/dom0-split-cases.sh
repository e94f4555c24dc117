# dom0-split-cases.sh: issue 24's causes on real Xen, sourced by
# dom0-phase-c.sh and run in phase C when S is asked for, after C2 (whose
# monitor already split the baseline and netem's hop, split_report).  One
# more monitor session with Xen's trace live, in two windows:
#
#   C4  hog: dom0's two vCPUs pinned to pCPU0 with a busy loop on each
#       (at nice 19, so dom0's own programs still run), the domU alone on
#       pCPU1.  dom0's vCPUs then never block, and the one netback's event
#       wakes must wait while the other runs: the hop across (linuxU's
#       xennet_tx_setup_grant -> linux0's xenvif_idx_release) shows
#       `wait`, and the holder named is a dom0 vCPU.  In C2, unpinned, the
#       holder was the domU's own vCPU (xc6, xc7); which vCPU is named is
#       what this case checks, since under TCG dom0 waits a lot anyway.
#   C5  cap: a busy loop inside the domU and a cap of 10 % on it: Xen
#       parks its vCPU most of the time, and its hops show `offline`,
#       which nothing before the cap showed (the hog window's output).
#
# The model's counts are the session's totals: the hog window's are read
# from the batch output as it stood when the window ended, the cap's from
# the end, where only the cap can have put time in `offline`.
# Sets cok=1 when both hold, else cwhy.

CROSS_HOP="linuxU:xennet_tx_setup_grant -> linux0:xenvif_idx_release"

# split_block FILE HOP: the lines of HOP's split in the last complete HOP
# SPLIT section of the batch output FILE (its "all", "p99+" and culprit
# lines, leading blanks dropped).
split_block() {
	awk -v h="  $2" '
		/^HOP SPLIT/ { on = 1; n = 0; next }
		on && /^[ \t]*$/ { on = 0; m = n; for (i = 1; i <= n; i++) last[i] = cur[i]; next }
		on { cur[++n] = $0 }
		END { for (i = 1; i <= m; i++) {
				if (last[i] == h) { in_h = 1; continue }
				if (in_h && last[i] ~ /^  [^ ]/) break
				if (in_h) { s = last[i]; sub(/^ +/, "", s); print s }
			} }' "$1"
}

# state_pct BLOCK STATE: STATE's share in percent on the block's "all"
# line; "<1%" counts as 0.5, absent as 0.
state_pct() {
	echo "$1" | awk -v s="$2" '$1 == "all" {
		for (i = 2; i < NF; i++) {
			t = $i; sub(/^[=#~+.*?-]/, "", t)
			if (t == s) { v = $(i + 1); if (v ~ /^</) { print 0.5; exit } sub(/%.*/, "", v); print v + 0; exit }
		}
		print 0; exit }'
}

# reason_pct BLOCK REASON: the share of the hop in percent that the "all"
# line's '?' gives REASON, from its "(clock 11%, lost 2%)"; 0 when absent.
reason_pct() {
	echo "$1" | awk -v s="$2" '$1 == "all" {
		for (i = 2; i < NF; i++) {
			t = $i; gsub(/[(),]/, "", t)
			if (t == s && $(i - 1) ~ /%,?$|^\?unknown$|%$/) { v = $(i + 1); if (v ~ /^</) { print 0.5; exit } sub(/%.*/, "", v); print v + 0; exit }
		}
		print 0; exit }'
}

# Placed again: dom0's agent (its log is new) and the domU's (its console
# counts on from $conp).
placed_again() {
	[ "$(grep -c 'placements installed' /tmp/k0.log)" -ge 1 ] &&
		[ "$(grep -c 'placements installed' "$CON")" -gt "$conp" ]
}

unpin() {
	timeout 60 xl vcpu-pin 0 all all >>"$OUT/dom0.log" 2>&1
	timeout 60 xl vcpu-pin linuxU all all >>"$OUT/dom0.log" 2>&1
}

split_cases() {
	cok=1
	want S && [ "$PH" = C ] || return 0
	cok=0 capok=0 cw=
	cwhy="not run to its end"
	# C2 purged dom0's agent: installed and started again.
	agent0_start || { cwhy=$agent0_why; return; }
	conp=$(grep -c 'placements installed' "$CON")
	split_start
	start_top /tmp/c4.out "$NETF"
	split_go
	wait_for 420 placed_again || { cwhy="the agents did not install their placements ($(placements))"; return; }
	split_say "C4 placed"

	# C4: the hog.
	timeout 60 xl vcpu-pin 0 all 0 >>"$OUT/dom0.log" 2>&1 && timeout 60 xl vcpu-pin linuxU all 1 >>"$OUT/dom0.log" 2>&1 ||
		{ cwhy="xl vcpu-pin failed (dom0.log)"; unpin; return; }
	hogs=
	for c in 0 1; do
		nice -n 19 taskset -c $c sh -c 'while :; do :; done' &
		hogs="$hogs $!"
	done
	hogping=$(ping_rate "$(timed_ping 100)")
	kill $hogs 2>/dev/null
	unpin
	note "${PH}4 ping -A from linuxU, dom0's vCPUs pinned to pCPU0 with a busy loop on each, linuxU on pCPU1: $hogping"
	# Two of the batch's intervals, so that its output holds the window.
	sleep 5
	cp /tmp/c4.out /tmp/c4-hog.out

	# C5: the cap.
	sched=$(timeout 20 xl info | awk '$1 == "xen_scheduler" { print $3 }')
	domu_cmd 60 "(while :; do :; done) </dev/null >/dev/null 2>&1 & echo \$! >/tmp/burn.pid" >/dev/null ||
		{ cwhy="no busy loop in the domU"; return; }
	case $sched in
	credit2) capcmd="xl sched-credit2 -d linuxU -c" ;;
	*) capcmd="xl sched-credit -d linuxU -c" ;;
	esac
	timeout 60 $capcmd 10 >>"$OUT/dom0.log" 2>&1 || cw="$cw $capcmd 10 failed (scheduler ${sched:-?});"
	capping=$(ping_rate "$(timed_ping 50)")
	timeout 60 $capcmd 0 >>"$OUT/dom0.log" 2>&1
	domu_cmd 120 "kill \$(cat /tmp/burn.pid)" >/dev/null
	note "${PH}5 ping -A from linuxU with a busy loop inside, capped at 10 % ($sched): $capping"
	sleep 5
	split_say "before its stop"
	split_stop
	stop_top /tmp/c4.out

	# The hog window: the hop across waited, for a dom0 vCPU.
	hb=$(split_block /tmp/c4-hog.out "$CROSS_HOP")
	note "${PH}4 $CROSS_HOP with the hog: $(echo "$hb" | tr '\n' ';')"
	hw=$(state_pct "$hb" wait)
	holder=$(echo "$hb" | sed -n 's/^waited for pCPU[0-9]*, which ran \(d[0-9]*v[0-9]*\).*/\1/p' | head -n 1)
	awk -v w="$hw" 'BEGIN { exit !(w >= 1) }' || cw="$cw wait is ${hw}% of the hop, not 1 % or more;"
	case $holder in d0v*) ;; *) cw="$cw the holder named is '${holder:-none}', not a dom0 vCPU;" ;; esac
	# The cap: `offline` on the domU's hops now, on none before it.
	off=
	for h in $(awk '/^HOP SPLIT/ { on = 1; next } on && /^[ \t]*$/ { on = 0 } on && /^  linuxU:/ { print $1 "|" $3 }' /tmp/c4.out | sort -u); do
		hop="${h%|*} -> ${h#*|}"
		o1=$(state_pct "$(split_block /tmp/c4.out "$hop")" offline)
		o0=$(state_pct "$(split_block /tmp/c4-hog.out "$hop")" offline)
		off="$off $hop: offline ${o0}% -> ${o1}%;"
		awk -v a="$o0" -v b="$o1" 'BEGIN { exit !(b >= 1 && a < 1) }' && capok=1
	done
	note "${PH}5 hops from linuxU, before and after the cap:${off:- none split}"
	[ "$capok" = 1 ] || cw="$cw no hop from linuxU went from no offline time to 1 % or more under the cap;"
	cwhy=$cw
	[ -z "$cw" ] && cok=1
}
