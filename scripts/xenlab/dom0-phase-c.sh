# dom0-phase-c.sh: phase C of xen-check (issue 17), sourced by dom0-run.sh
# after phases A and B, whose helpers (mark, log, result, note, wait_for,
# xl_create, unit_start) it uses.  The kernel backend in both kernels at
# once: an agent in the domU weaves flows/kernel/xen_net.xml and
# xen_blk.xml into netfront and blkfront and sends its records over the
# transport over Xen, an agent here weaves the same files into netback,
# blkback and the bridge, and xflowtop here joins the two sides of every
# ring request into one flow.  Both agents are the xflow-agent package's,
# started as its unit starts them (unit-start; dom0's installed with dpkg,
# the domU's from the package's files, see domu-initrd.sh).  Run twice:
# phase C with the domU on dom0's kernel (bookworm's), phase D on the
# second kernel of the image (bookworm-backports'), the same flow files,
# planned from that kernel's BTF (build-images.sh); D's notes are D1, D2...
#
#   C1  pings from the domU to the bridge's address and O_DIRECT writes to
#       its disk: the monitor joins as many requests as the domU's disk
#       completed and (where the flow's dom0 side sees every request, see
#       below) its eth0 sent, within 1 % either way, and the path has hops
#       in both kernels.
#   C2  netem's 5 ms delay on the vif shows on the hop that ends at
#       netback's xenvif_start_xmit: its p50 is at least 5 ms more than
#       the same hop's in C1 (netem holds every packet 5 ms and never
#       delivers early), and at most that plus how late dom0's timers fire
#       under TCG (timer-lateness, measured beside the pings, at p90) and
#       10 % of the delay for the hop's own variation between C1 and C2
#       (every figure in a NOTE), while bpftrace counts on the same attach
#       points here: the per-hit cost of both from the kernel's BPF
#       statistics (figures, in a NOTE).
#   CP  the purge (issue 28): `dpkg --purge xflow-agent` here while the
#       monitor still has dom0's agent woven stops the agent (its prerm,
#       without systemd) and leaves none of its programs loaded, none of
#       its files, and the traced path working (the domU still pings
#       through netback); the next run installs it again.
#   C3  nothing stays loaded: bpftool's program list in both domains is
#       what it was before the agents, once they are stopped.
# Ping rates untraced (agents idle) and traced (C1) go in a NOTE too.
# Result lines: "C PASS|FAIL why" (one), NOTEs for the figures.

. "$X/dom0-split-cases.sh"

NETF=/usr/share/xflowtop/flows/kernel/xen_net.xml
BLKF=/usr/share/xflowtop/flows/kernel/xen_blk.xml
# dom0's agent: the unit's socket, named after the domain it is told it is.
KSOCK=/run/xflow/agent-linux0-0.sock
NPING=${XENLAB_PINGS:-200}
NWRITE=${XENLAB_WRITES:-200}
PLAN_MS=400000

# BPF programs loaded now: their count, and one line per program with its
# name and, when the kernel counts them, its run time and run count.
nprogs() { bpftool prog show 2>/dev/null | grep -c '^[0-9]*:'; }
# Of them, the agent's (its programs are all named xk_*).
nours() { bpftool prog show 2>/dev/null | grep -c '^[0-9]*: .* name xk_'; }
prog_stats() {
	bpftool prog show 2>/dev/null | awk '/^[0-9]+:/ {
		id = $1; n = t = c = ""
		for (i = 1; i <= NF; i++) {
			if ($i == "name") n = $(i + 1)
			if ($i == "run_time_ns") t = $(i + 1)
			if ($i == "run_cnt") c = $(i + 1)
		}
		print id, n, t + 0, c + 0 }'
}

# domu_cmd SECONDS COMMAND: run COMMAND in the domU (domu-kernel-mode's
# protocol); its output on stdout.  Fails when no answer comes in time.
# The command counter lives in a file: most calls run in a command
# substitution's subshell, where a variable's increment would be lost.
domu_cmd() {
	_t=$1
	shift
	cmdn=$(($(cat /run/xenlab-cmdn 2>/dev/null || echo 0) + 1))
	echo "$cmdn" >/run/xenlab-cmdn
	xenstore-write "$DHOME/data/xenlab-cmd" "$cmdn $*" || return 1
	_want="$cmdn "
	_end=$(($(cut -d. -f1 /proc/uptime) + _t))
	while :; do
		_d=$(timeout 10 xenstore-read "$DHOME/data/xenlab-done" 2>/dev/null)
		case $_d in "$_want"*) break ;; esac
		if [ "$(cut -d. -f1 /proc/uptime)" -ge "$_end" ]; then
			log "domU command $cmdn ($*): no answer in $_t s"
			return 2
		fi
		sleep 0.2
	done
	# Newlines came as spaces: the last one is no part of the answer.
	timeout 10 xenstore-read "$DHOME/data/xenlab-out" | sed 's/ *$//'
	[ "${_d#* }" = 0 ]
}

# The latest complete table of a monitor's batch output: one line per hop,
# "FROM TO COUNT P50_US", and the keyed handoff counts as a line in
# the monitor's words: "keyed joined N, unmatched out N, ...".
last_table() {
	awk '
	function us(v) {
		if (v ~ /ns$/) return v * 0.001
		if (v ~ /us$/) return v + 0
		if (v ~ /ms$/) return v * 1000
		if (v ~ /s$/) return v * 1000000
		return -1
	}
	/^xflowtop - / { n = 0; kl = ""; sect = ""; next }
	/^handoffs:/ {
		s = $0; sub(/.*keyed: /, "", s); kl = "keyed " s
		next
	}
	/^HOPS/ { sect = "hops"; hdr = 1; next }
	/^[ \t]*$/ { if (sect == "hops") { done_n = n; for (i = 1; i <= n; i++) done[i] = row[i]; done_k = kl } sect = ""; next }
	sect == "hops" && hdr { hdr = 0; next }
	sect == "hops" && $3 ~ /^[0-9]+$/ { row[++n] = $1 " " $2 " " $3 " " us($4) }
	END {
		if (sect == "hops") { done_n = n; for (i = 1; i <= n; i++) done[i] = row[i]; done_k = kl }
		for (i = 1; i <= done_n; i++) print done[i]
		if (done_k != "") print done_k
	}' "$1"
}
# hop TABLE FROM TO: "COUNT P50_US" of that hop, or "0 -1".
hop() { awk -v f="$2" -v t="$3" '$1 == f && $2 == t { print $3, $4; found = 1 } END { if (!found) print 0, -1 }' "$1"; }

# The monitor: both agents, the flow files given; batch output to $1.
start_top() {
	_out=$1
	shift
	_fl=
	for f in "$@"; do _fl="$_fl,flows=$f"; done
	# The agents answer a plan once the verifier has passed every program,
	# which under TCG takes minutes, not the default 30 s.
	# The session too, for the postmortem: xflowtop --replay and
	# tests/e2e/session_keyed read it back.
	# On the second kernel, the domU is planned from that kernel's BTF
	# (the monitor refuses to take its own for another release's).
	# kernel:BTF+DIR+MODULE... is split at each "+" (weaver/jp/kbtf.c),
	# and Debian's backports releases have one (6.12.95+deb12-amd64):
	# the BTF and the module directory are named through links without.
	_bin=
	if [ "$PH" = D ]; then
		ln -sfn "/lib/modules/$(cat "$X/kver2")" /run/xenlab-k2-modules
		ln -sfn "/usr/lib/xenlab/vmlinux-$(cat "$X/kver2").btf" /run/xenlab-k2.btf
		_bin=",bin=linuxU:kernel:/run/xenlab-k2.btf+/run/xenlab-k2-modules"
	fi
	# The trace's collector first: the agents' are opened in turn, each
	# waiting for its plan to load (minutes under TCG), and a FIFO not yet
	# opened stalls xentrace until Xen loses records (390 k once).
	xflowtop -b -d 2 -n 100000 $TOP_TRACE --collector "agent:socket=$KSOCK$_fl,timeout=$PLAN_MS" \
		--collector "agent:xen$_fl$_bin,timeout=$PLAN_MS" --save-session "$_out.session" \
		>"$_out" 2>"$_out.err" &
	toppid=$!
}
stop_top() {
	kill -INT "$toppid" 2>/dev/null
	wait_for 15 eval '! kill -0 $toppid 2>/dev/null' || kill -KILL "$toppid" 2>/dev/null
	cp "$1" "$1.err" "$OUT/" 2>/dev/null
}
# The scheduler split on real Xen (issue 24), S in XENLAB_PHASES (in the
# default): Xen's scheduler, PV and hardware records, live from xentrace
# through a FIFO into C2's monitor (and C4's, dom0-split-cases.sh), which
# places their TSC on dom0's clock by dom0's own anchors
# (clock-offset=auto); a copy in a file for xenalyze.
# xentrace's output is named /proc/self/fd/1, not /dev/stdout: this dom0
# has no udev, so /dev (devtmpfs) has no stdout link, and xentrace's
# open(O_CREAT) made a regular file of that name and wrote the trace into
# it, leaving the pipe empty (found with a probe: the same capture gave
# 243 KiB into a file and 0 bytes into a pipe).
split_start() {
	TOP_TRACE=
	want S || return 0
	rm -f /tmp/e.fifo /tmp/e.trace
	mkfifo /tmp/e.fifo || { note "${PH}S mkfifo failed"; return 0; }
	hz=$(timeout 20 xl info | awk '$1 == "cpu_mhz" { printf "%.0f", $3 * 1e6 }')
	TOP_TRACE="--collector xentrace:file=/tmp/e.fifo,cpu-hz=${hz:-2400000000},clock-offset=auto"
}
# After the monitor has started (its open of the FIFO waits for xentrace):
# xentrace started first filled its pipe before anyone read it, and Xen
# lost 411 k records in the trace's first 5 s (the monitor's start-up
# makes most of a PV dom0's hypercalls).
split_go() {
	[ -n "$TOP_TRACE" ] || return 0
	# The classes the split reads: TRC_GEN (lost records), TRC_SCHED
	# (runstates, switches), TRC_PV (hypercalls: evtchn_op) and TRC_HW
	# (TRC_HW_IRQ_HANDLED: Xen's own time, the split's `xen`); -e all
	# adds the memory class too.  Xen matches the mask's subclass bits
	# against every class, so HW cannot be narrowed to its IRQ subclass
	# without losing sched's and pv's: its power records come along.
	# Its output file is a required argument (it prints its usage else).
	(xentrace -D -e 0x00a3f000 -S 256 /proc/self/fd/1 2>/tmp/xentrace.err | tee /tmp/e.trace >/tmp/e.fifo) &
	note "${PH}S xentrace -e 0x00a3f000 (gen, sched, pv, hw) into C2's monitor, cpu-hz ${hz:-? (2.4G assumed)}"
}
# What xentrace said and wrote so far (its messages go to a file of their
# own, copied with the phase's logs).
split_say() {
	[ -n "$TOP_TRACE" ] || return 0
	note "${PH}S $1: xentrace $(pgrep -x xentrace >/dev/null && echo running || echo not running), $(wc -c </tmp/e.trace 2>/dev/null || echo no) bytes written; it said: $(head -c 300 /tmp/xentrace.err 2>/dev/null | tr '\n' ' ')"
}
split_stop() {
	[ -n "$TOP_TRACE" ] || return 0
	pkill -INT -x xentrace
	wait_for 60 eval '! pgrep -x xentrace >/dev/null' || { note "${PH}S xentrace did not stop: killed"; pkill -KILL -x xentrace; }
}
# split_report: what C2's monitor said of the split, beside xenalyze's
# runnable time of the domU's vCPU on the same trace; sets sok.
split_report() {
	sok=1
	[ -n "$TOP_TRACE" ] || return 0
	sok=0
	# The batch's status line ("sched joined, clock ...", or "sched not
	# joined"), not the HOP SPLIT section's summary, which also starts
	# with "sched".
	sl=$(grep -E '^sched (joined|not joined)' /tmp/c2.out | tail -n 1)
	note "${PH}S ${sl:-no sched line in the batch output}"
	awk '/^HOP SPLIT/ { on = 1; n = 0; next } on && /^[ \t]*$/ { on = 0 }
		on { b[++n] = $0 } END { for (i = 1; i <= n; i++) print b[i] }' /tmp/c2.out >/tmp/c2.split
	cp /tmp/c2.split "$OUT/$PH-c2.split" 2>/dev/null
	for h in "$qfrom -> linux0:xenvif_start_xmit" "linuxU:xennet_tx_setup_grant -> linux0:xenvif_idx_release"; do
		blk=$(awk -v h="  $h" '$0 == h { on = 1; next } on && /^  [^ ]/ { on = 0 } on { sub(/^ +/, ""); print }' /tmp/c2.split |
			tr '\n' ';')
		note "${PH}S $h: ${blk:-not split}"
	done
	cp /tmp/xentrace.err "$OUT/$PH-xentrace.err" 2>/dev/null
	timeout 300 xenalyze --summary /tmp/e.trace >/tmp/e.xenalyze 2>&1
	cp /tmp/e.xenalyze "$OUT/$PH-e.xenalyze" 2>/dev/null
	run=$(awk -v d="|-- Domain $id --|" '$0 == d { on = 1; next } on && /^\|-- Domain/ { on = 0 }
		on && $1 == "runnable:" { print $2 " times, " $3; exit }' /tmp/e.xenalyze)
	# The same figure from the monitor's Hypervisor table, read live from
	# the FIFO: the vCPU's WAIT% (runnable) of the trace's total time,
	# which the monitor counts at Xen's cpu_mhz and xenalyze, not told, at
	# 2.4 GHz: in xenalyze's seconds.
	ours=$(awk -v d="d$id" -v hz="${hz:-2400000000}" '$1 == d && $2 == "v0" { w = $4 } /^Total time:/ { t = $3 }
		END { if (w != "" && t != "") { sub(/%/, "", w); printf "%.2f", w * t / 100 * hz / 2.4e9 } }' /tmp/c2.out)
	xs=$(echo "$run" | sed -n 's/.*, \([0-9.]*\)s.*/\1/p')
	note "${PH}S xenalyze on the same trace ($(($(wc -c </tmp/e.trace) / 1024)) KiB): linuxU's v0 runnable ${run:-?}; the monitor's live Hypervisor view: ${ours:-?}s"
	split=$(echo "$sl" | sed -n 's/.*hops split \([0-9]*\).*/\1/p')
	case $sl in "sched joined"*) num "$split" && [ "$split" -gt 0 ] && sok=1 ;; esac
	# Issue 24's baseline: the hop across explained, '?' under 10 %, but
	# for the '?' the monitor says is the machine's: records Xen lost, and
	# state changes within the clock error of a boundary.  Under TCG on a
	# loaded host that error is measured at hundreds of microseconds
	# (xc3's phase D: "≥482.7 µs off, not bounded", and 11 % of the hop
	# '?' for it), and a measuring tool says so rather than guess; the
	# others (no trace, too old, split early) would be the join's fault.
	xb=$(split_block /tmp/c2.out "$CROSS_HOP")
	xq=$(state_pct "$xb" unknown)
	xo=$(awk -v q="$xq" -v c="$(reason_pct "$xb" clock)" -v l="$(reason_pct "$xb" lost)" 'BEGIN { print q - c - l }')
	note "${PH}S the hop across: ${xq}% '?', ${xo}% of it not for the clock's error or lost records"
	[ -n "$xb" ] && awk -v q="$xo" 'BEGIN { exit !(q < 10) }' ||
		{ sok=0; note "${PH}S the hop across is ${xq}% '?' (${xb:-not split}), ${xo}% of it for neither the clock nor lost records: not under 10%"; }
	# Within 5 % (the two stop at slightly different records).
	awk -v a="$ours" -v b="$xs" 'BEGIN { exit !(a != "" && b > 0 && (a - b) / b < 0.05 && (b - a) / b < 0.05) }' ||
		{ sok=0; note "${PH}S the live runnable time ${ours:-?}s is not xenalyze's ${xs:-?}s within 5%"; }
}

# Both agents report their placements for the session numbered $1 (the
# dom0 agent logs one line per plan, the domU's on its console).
# The domU's console log is appended to by every domain named linuxU,
# phase B's among them: its lines before phase C's domain do not count.
placed() {
	[ "$(grep -c 'placements installed' /tmp/k0.log)" -ge "$1" ] &&
		[ "$(grep -c 'placements installed' "$CON")" -ge $((con_placed + $1)) ]
}
placements() {
	echo "dom0: $(grep -o '[0-9]* of [0-9]* placements installed' /tmp/k0.log | tail -n 1);" \
		"domU: $(grep -o '[0-9]* of [0-9]* placements installed' "$CON" | tail -n 1)"
}

num() { case $1 in '' | *[!0-9]*) return 1 ;; esac; }

# rate OUTPUT: pings per second from "elapsed A B" and ping's summary.
ping_rate() {
	echo "$1" | awk '{
		for (i = 1; i <= NF; i++) {
			if ($i == "elapsed") { a = $(i + 1); b = $(i + 2) }
			if ($i == "received,") r = $(i - 2)
			if ($i ~ /^min\/avg\/max/) rtt = $(i + 2)
		}
		if (b > a) printf "%d pings in %.2f s = %.0f/s, rtt min/avg/max %s ms", r, b - a, r / (b - a), rtt
		else printf "no rate (%s)", $0 }'
}
timed_ping() {
	domu_cmd 300 "a=\$(cut -d' ' -f1 /proc/uptime); ping -A -q -c $1 10.99.0.1; b=\$(cut -d' ' -f1 /proc/uptime); echo elapsed \$a \$b"
}

# dom0's agent: the package's (installed again after a purge), as its
# unit starts it; the drop-in names the domain the flows call dom0 and
# asks for -v.  Sets kpid; on failure agent0_why, and returns 1.
agent0_start() {
	if ! dpkg-query -W -f '${db:Status-Status}' xflow-agent 2>/dev/null | grep -qx installed; then
		timeout 300 dpkg -i "$X"/debs/xflow-agent_*.deb >/tmp/dpkg-agent.log 2>&1 ||
			{ agent0_why="dpkg -i xflow-agent failed: $(tail -n 2 /tmp/dpkg-agent.log | tr '\n' ' ')"; return 1; }
	fi
	# A socket left by the agent the purge stopped would pass for the
	# new one's.
	rm -f "$KSOCK"
	mkdir -p /etc/systemd/system/xflow-agent.service.d
	printf '[Service]\nEnvironment="XFLOW_AGENT_ARGS=--backend kernel -v" "XFLOW_AGENT_DOMAIN=linux0"\n' \
		>/etc/systemd/system/xflow-agent.service.d/xenlab.conf
	(unit_start xflow-agent.service) >/tmp/k0.log 2>&1 &
	kpid=$!
	wait_for 30 test -S "$KSOCK" || { agent0_why="dom0's kernel agent did not start: $(tail -n 2 /tmp/k0.log | tr '\n' ' ')"; return 1; }
	log "dom0's agent, pid $kpid: $(tr '\0' ' ' </proc/$kpid/cmdline); $(grep ^Cap /proc/$kpid/status | tr '\n\t' '  ')"
}

phase_c_setup() {
	[ -f /run/linuxK.cfg ] && return 0
	# The backends (/etc/init.d/xen loads neither), netem, loop.
	for m in xen-netback xen-blkback sch_netem loop; do
		modprobe $m 2>>"$OUT/dom0.log" || log "modprobe $m failed"
	done
	# The monitor plans the domU's kernel (same release) from this one's
	# BTF and the modules its agent names, read from their .ko files here:
	# the image keeps netfront's and blkfront's; they are not loaded.
	mkdir -p /sys/kernel/tracing
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null
	echo 1 >/proc/sys/net/ipv6/conf/all/disable_ipv6
	echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6
	ip link add name xenbr0 type bridge stp_state 0 forward_delay 0 &&
		ip addr add 10.99.0.1/24 dev xenbr0 && ip link set xenbr0 up || return 1
	truncate -s 64M /tmp/xvda.img
	loopdev=$(losetup -f --show /tmp/xvda.img) || return 1
	# Hotplug scripts of our own: Debian's block script timed out (libxl
	# kills it) under TCG before it had written the device, and these
	# need only the steps its phy and vif-bridge cases take here.
	cat >/run/xenlab-block <<'SH'
#!/bin/sh
# libxl runs this for phase C's disk: the loop device's numbers for blkback.
[ "$1" = add ] || exit 0
dev=$(xenstore-read "$XENBUS_PATH/params") || exit 1
mm=$(stat -L -c %t:%T "$dev") || exit 1
xenstore-write "$XENBUS_PATH/physical-device" "$mm" "$XENBUS_PATH/physical-device-path" "$dev" \
	"$XENBUS_PATH/hotplug-status" connected
SH
	cat >/run/xenlab-vif <<'SH'
#!/bin/sh
# libxl runs this for phase C's vif: onto the bridge, up.
case $1 in
add | online)
	ip link set dev "$vif" master xenbr0 && ip link set dev "$vif" up || exit 1
	xenstore-write "$XENBUS_PATH/hotplug-status" connected
	;;
esac
exit 0
SH
	chmod 755 /run/xenlab-block /run/xenlab-vif
	cat >/run/linuxK.cfg <<CFG
# Phase C's PV domU: netfront on dom0's bridge, blkfront on a loop device.
name = "linuxU"
type = "pv"
kernel = "$kernel"
ramdisk = "$X/domu.cpio.gz"
extra = "console=hvc0 loglevel=4 xenlab=kernel"
memory = 384
vcpus = 1
vif = [ "bridge=xenbr0,mac=00:16:3e:0a:63:02,script=/run/xenlab-vif" ]
disk = [ "format=raw,vdev=xvda,access=rw,backendtype=phy,script=/run/xenlab-block,target=$loopdev" ]
on_crash = "preserve"
CFG
	# Phase D's domU: the same on the second kernel.
	sed "s|^# Phase C's PV domU:.*|# Phase D's PV domU: as phase C's, on the second kernel.|;
		s|^kernel = .*|kernel = \"/boot/vmlinuz-$(cat "$X/kver2")\"|; s|domu.cpio.gz|domu2.cpio.gz|" \
		/run/linuxK.cfg >/run/linuxK2.cfg
}

phase_c_run() {
	bpf0=$(nprogs)
	phase_c_setup || { result "$PH FAIL cannot set up the bridge or the loop device (dom0.log)"; return; }
	timeout 60 xl destroy linuxU >/dev/null 2>&1
	mark "phase $PH: creating linuxU with a vif and a disk"
	ncon=$(cat "$CON" 2>/dev/null | grep -c 'kernel agent started')
	con_placed=$(cat "$CON" 2>/dev/null | grep -c 'placements installed')
	cfg=/run/linuxK.cfg
	[ "$PH" = D ] && cfg=/run/linuxK2.cfg
	if ! xl_create $cfg; then
		dmesg | tail -n 30 >"$OUT/dmesg.txt"
		result "$PH FAIL xl create with a vif and a disk failed three times"
		return
	fi
	domu_started() { [ "$(grep -c 'kernel agent started' "$CON" 2>/dev/null)" -gt "$ncon" ]; }
	# 300 s: at a host load of 15 (other builds beside QEMU) the domU took
	# more than 120 s from its network to its agent.
	wait_for 300 domu_started || { result "$PH FAIL the domU's kernel agent did not start (domu-console.log)"; return; }
	id=$(timeout 20 xl domid linuxU)
	DHOME=/local/domain/$id
	vif=vif$id.0
	grep 'kernel mode' "$CON" | tail -n 1 | sed 's/^/domU: /' >>"$OUT/dom0.log"
	domu_kernel=$(grep 'kernel mode: eth0' "$CON" | tail -n 1 | sed -n 's/.* sectors, \([^,]*\), BPF programs.*/\1/p')
	note "$PH linuxU runs Linux ${domu_kernel:-?}; dom0 $(uname -r)"
	bpfu0=$(sed -n 's/.*BPF programs before the agent: \([0-9]*\).*/\1/p' "$CON" | tail -n 1)
	domu_cmd 60 "ping -c 2 -W 20 10.99.0.1" >/tmp/c-warm.out ||
		{ result "$PH FAIL the domU cannot ping dom0's bridge: $(cat /tmp/c-warm.out)"; return; }
	mark "phase $PH: linuxU ($id) pings the bridge over $vif"

	agent0_start || { result "$PH FAIL $agent0_why"; return; }

	# Untraced: both agents idle, no monitor.
	untraced=$(ping_rate "$(timed_ping "$NPING")")
	note "$PH ping -A from linuxU untraced: $untraced"

	# C1: one session with both flow files.
	start_top /tmp/c1.out "$NETF" "$BLKF"
	if ! wait_for 420 placed 1; then
		result "$PH FAIL the agents did not install their placements within 420 s ($(placements); xflowtop: $(tail -n 2 /tmp/c1.out.err | tr '\n' ' '))"
		stop_top /tmp/c1.out
		return
	fi
	mark "phase ${PH}1: placed, $(placements)"
	# The domU is slow to answer while both kernels are traced under TCG:
	# every command has minutes, and a missing answer fails the phase.
	tx0=$(domu_cmd 120 cat /sys/class/net/eth0/statistics/tx_packets) &&
		io0=$(domu_cmd 120 cat /sys/block/xvda/stat) &&
		traced=$(timed_ping "$NPING") &&
		dd=$(domu_cmd 400 "dd if=/dev/zero of=/dev/xvda bs=4096 count=$NWRITE oflag=direct 2>&1") &&
		sleep 6 &&
		tx1=$(domu_cmd 120 cat /sys/class/net/eth0/statistics/tx_packets) &&
		io1=$(domu_cmd 120 cat /sys/block/xvda/stat) && num "$tx0" && num "$tx1"
	rc=$?
	if [ $rc != 0 ]; then
		result "$PH FAIL a command in the domU failed or did not answer during C1 (dom0.log, domu-console.log)"
		stop_top /tmp/c1.out
		return
	fi
	note "$PH ping -A from linuxU traced (C1): $(ping_rate "$traced")"
	log "dd: $dd"
	stop_top /tmp/c1.out
	last_table /tmp/c1.out >/tmp/c1.tab
	cp /tmp/c1.tab "$OUT/"
	sent=$((tx1 - tx0))
	# Requests the disk completed: reads, writes, discards and flushes,
	# fields 1, 5, 12 and 16 of the block device's stat.
	ios=$(($(echo "$io1" | awk '{ print $1 + $5 + $12 + $16 }') - $(echo "$io0" | awk '{ print $1 + $5 + $12 + $16 }')))
	# dom0's side of the network join: make_tx_response answers only
	# failed requests in Debian's current 6.1 (since the XSA-448 fix the
	# normal answer is the inlined _make_tx_response), so it joins no
	# ping; xenvif_idx_release sees every request.  Which one the flow
	# names says how many network joins to expect.
	netin=make_tx_response netexp=0
	grep -q 'xenvif_idx_release@linux0' "$NETF" && netin=xenvif_idx_release netexp=$sent
	set -- $(hop /tmp/c1.tab linuxU:xennet_tx_setup_grant linux0:$netin)
	netj=$1 netp50=$2
	set -- $(hop /tmp/c1.tab linuxU:blkif_queue_rq linux0:end_block_io_op)
	blkj=$1 blkp50=$2
	keyed=$(grep '^keyed' /tmp/c1.tab)
	joined=$(echo "$keyed" | sed -n 's/.*joined \([0-9]*\).*/\1/p')
	neg=$(echo "$keyed" | sed -n 's/.*negative hops \([0-9]*\).*/\1/p')
	c1="linuxU sent $sent packets and completed $ios disk requests; $netin joins expected $netexp; handoffs $keyed; cross-domain hops recorded: xennet_tx_setup_grant -> $netin $netj (p50 ${netp50} us), blkif_queue_rq -> end_block_io_op $blkj (p50 ${blkp50} us)"
	note "${PH}1 $c1"
	# How linuxU's clock was placed on dom0's decides the cross-domain
	# hops' times (xflowtop(1), DOMAINS).
	note "${PH}1 linuxU's clock: $(grep 'linuxU .* via vchan' /tmp/c1.out | tail -1 | sed 's/.*via vchan from domain [0-9]*, //')"
	[ "$netexp" = 0 ] && note "${PH}1 no network join expected: the flow's dom0 side is make_tx_response, which this kernel calls for failed requests only"
	missing=
	for h in "linuxU:__dev_queue_xmit linuxU:xennet_start_xmit" "linuxU:xennet_start_xmit linuxU:xennet_tx_setup_grant" \
		"linux0:netif_receive_skb linux0:br_handle_frame_finish" "linux0:br_dev_queue_push_xmit linux0:xenvif_start_xmit" \
		"linux0:xenvif_start_xmit linux0:xenvif_rx_queue_tail" "linuxU:submit_bio linuxU:blkif_queue_rq"; do
		awk -v h="$h" 'BEGIN { split(h, p, " ") } $1 == p[1] && $2 == p[2] && $3 > 0 { f = 1 } END { exit !f }' \
			/tmp/c1.tab || missing="$missing [$h]"
	done
	# Each join makes one sample of the hop across, from the sender's
	# last point applied (the OUT, xennet_tx_setup_grant or
	# blkif_queue_rq, unless a later point of the domU came first) to the
	# IN: recorded, or counted as negative when the IN's time is before it
	# (the two clocks' placement error, which the Domains row bounds,
	# against a hop of a few hundred microseconds).  So the hops recorded
	# into the IN points and the negative ones make the joins, at least;
	# fewer means joins that left no sample.
	across=$(awk -v n="linux0:$netin" '$1 ~ /^linuxU:/ && ($2 == n || $2 == "linux0:end_block_io_op") { k += $3 }
		END { print k + 0 }' /tmp/c1.tab)
	note "${PH}1 hops across: $across recorded + ${neg:-?} negative for ${joined:-?} joins (one each expected: the negative ones are the clocks' error, see the NOTE above)"
	num "$neg" && num "$joined" && [ $((across + neg)) -ge "$joined" ] || missing="$missing [hops across: $across recorded + ${neg:-?} negative < ${joined:-?} joined]"
	# The requests joined: what the domU sent and completed, within 1 %
	# (2 at least) either way.  Fewer: a block request that found
	# blkfront's ring busy was keyed by an id it did not get
	# (guestrt/hook/kernel/NOTES.md); the lab saw one in 200 at most.  More: the
	# counters are read around the traffic, the monitor runs a little
	# longer, and an ARP the test does not send can fall outside the
	# counters' window and inside the monitor's (402 joined for 200 + 200
	# once).  Where a join's hop is recorded or counted negative is the
	# domains' clocks' business (the NOTE above gives both).
	want=$((netexp + ios))
	slack=$((want / 100))
	[ $slack -lt 2 ] && slack=2
	c1ok=1
	num "$joined" && [ "$ios" -ge "$NWRITE" ] && [ "$joined" -le $((want + slack)) ] && [ "$joined" -ge $((want - slack)) ] ||
		c1ok=0
	[ -z "$missing" ] || c1ok=0
	# Nothing is lost at C1's rates (hundreds of records a second, rings
	# and lanes of thousands): a loss there is a bug, as when every start
	# on a live object in dom0's 6.1 lost its record's number
	# (guestrt/hook/kernel/NOTES.md, "Map operations' errors on 6.1").
	lost1=$(grep '^uptime' /tmp/c1.out | tail -n 1 | sed -n 's/.* drops \([0-9]*\),.*/\1/p')
	note "${PH}1 records lost: ${lost1:-?}, by the monitor's last count"
	num "$lost1" && [ "$lost1" = 0 ] || c1ok=0

	# C2: netem on the vif (the reply's way to the domU), bpftrace on
	# dom0's attach points of the same flow, the BPF statistics on.
	tc qdisc add dev "$vif" root netem delay 5ms 2>>"$OUT/dom0.log" || note "${PH}2 tc qdisc add on $vif failed"
	echo 1 >/proc/sys/kernel/bpf_stats_enabled
	split_start
	start_top /tmp/c2.out "$NETF"
	split_go
	wait_for 420 placed 2 || note "${PH}2 the agents did not install their placements ($(placements))"
	split_say "placed"
	bt='kfunc:xen_netback:xenvif_idx_release, kretfunc:xen_netback:xenvif_idx_release, kfunc:xen_netback:xenvif_start_xmit, kfunc:xen_netback:xenvif_rx_queue_tail, kfunc:bridge:br_handle_frame_finish, kfunc:bridge:br_pass_frame_up, kfunc:bridge:br_dev_xmit, kfunc:bridge:br_dev_queue_push_xmit, kfunc:vmlinux:netif_receive_skb, kfunc:vmlinux:__dev_queue_xmit, kfunc:vmlinux:ip_rcv, tracepoint:skb:consume_skb, tracepoint:skb:kfree_skb { @[probe] = count(); }'
	prog_stats | awk '{ print $1 }' >/tmp/ids.before-bt
	# bpftrace itself, not under timeout(1): a KILL after a slow exit
	# must reach the process that holds the programs (phase_c's cleanup
	# and the dom0 watchdog bound its life).
	bpftrace -e "$bt" >/tmp/bt.out 2>&1 &
	btpid=$!
	# bpftrace compiles with LLVM, slow under TCG: attached when its
	# programs appear.
	bt_up() { [ "$(nprogs)" -gt "$(wc -l </tmp/ids.before-bt)" ] || ! kill -0 $btpid 2>/dev/null; }
	wait_for 240 bt_up
	kill -0 $btpid 2>/dev/null || note "${PH}2 bpftrace did not run: $(head -c 300 /tmp/bt.out | tr '\n' ' ')"
	prog_stats >/tmp/stats0
	# How late dom0's timers fire while the pings cross netem: the
	# emulator's lateness is that of the moment, so it is measured beside
	# the traffic it bounds.
	"$X/timer-lateness" --sleep 5000 --count 200 >/tmp/lateness.out 2>&1 &
	latepid=$!
	netem=$(ping_rate "$(timed_ping 100)")
	wait $latepid
	prog_stats >/tmp/stats1
	note "${PH}2 ping -A with netem 5ms on $vif: $netem"
	note "${PH}2 dom0's timers beside the pings: $(cat /tmp/lateness.out)"
	late90=$(sed -n 's/.* p90 \([0-9]*\) .*/\1/p' /tmp/lateness.out)
	sleep 5
	# bpftrace prints its counts, then detaches 13 programs: under TCG
	# that has taken more than 20 s.
	btstop=$(cut -d' ' -f1 /proc/uptime)
	kill -INT $btpid 2>/dev/null
	if wait_for 180 eval '! kill -0 $btpid 2>/dev/null'; then
		note "${PH}2 bpftrace left $(awk -v a="$btstop" '{ printf "%.1f", $1 - a }' /proc/uptime) s after its SIGINT"
	else
		note "${PH}2 bpftrace still there 180 s after its SIGINT: killed"
		kill -KILL $btpid 2>/dev/null
	fi
	echo 0 >/proc/sys/kernel/bpf_stats_enabled
	purge
	split_say "before its stop"
	split_stop
	stop_top /tmp/c2.out
	tc qdisc del dev "$vif" root 2>/dev/null
	cp /tmp/bt.out /tmp/stats0 /tmp/stats1 "$OUT/" 2>/dev/null
	last_table /tmp/c2.out >/tmp/c2.tab
	cp /tmp/c2.tab "$OUT/"
	# The hop into xenvif_start_xmit with the most samples is the qdisc's.
	set -- $(awk '$2 == "linux0:xenvif_start_xmit" && $3 > n { n = $3; r = $1 " " $3 " " $4 } END { print r }' /tmp/c2.tab)
	qfrom=${1:-none} qn=${2:-0} qp50=${3:--1}
	set -- $(awk '$2 == "linux0:xenvif_start_xmit" && $3 > n { n = $3; r = $1 " " $3 " " $4 } END { print r }' /tmp/c1.tab)
	base50=${3:--1}
	# netem holds each packet 5 ms on a timer that fires late, never
	# early: the hop is C1's plus 5 ms plus that lateness.  Both ends are
	# in dom0, on one clock.  Without a baseline or a lateness figure
	# there is no bound to check: that fails too.
	# (The table's times are in us, fractions where it printed ns or us.)
	set -- $(awk -v p="$qp50" -v b="$base50" -v l="${late90:--1}" 'BEGIN {
		if (p < 0 || b < 0 || l < 0) { print "? ? 0"; exit }
		lo = b + 5000; hi = lo + l + 500
		printf "%.0f %.0f %d\n", lo, hi, (p >= lo && p <= hi) }')
	c2lo=$1 c2hi=$2 c2ok=$3
	note "${PH}2 $qfrom -> linux0:xenvif_start_xmit: p50 $qp50 us over $qn with netem 5ms; without (C1) $base50 us; timers late by ${late90:-?} us at p90; bound [$c2lo, $c2hi] us"
	# Per hit, from the statistics' growth over the pings: ours are the
	# agent's programs (xk_*), bpftrace's the ones it added.
	cost=$(awk -v ids=/tmp/ids.before-bt '
		BEGIN { while ((getline l < ids) > 0) old[l] = 1 }
		FILENAME ~ /stats0/ { t0[$1] = $3; c0[$1] = $4; next }
		{ dt = $3 - t0[$1]; dc = $4 - c0[$1]
		  if ($2 ~ /^xk_/) { ot += dt; oc += dc } else if (!($1 in old)) { bt += dt; bc += dc } }
		END { printf "ours %s, bpftrace %s",
			oc ? sprintf("%.0f ns/hit over %d hits", ot / oc, oc) : "no hits",
			bc ? sprintf("%.0f ns/hit over %d hits", bt / bc, bc) : "no hits" }' /tmp/stats0 /tmp/stats1)
	note "${PH}2 per-hit cost on dom0's attach points of xen_net.xml, same run: $cost"
	split_report
	split_cases

	# C3: everything unloaded.  The monitor has left: the agents took
	# their programs out; then they are stopped.
	# A program goes from the list when its last reference does, which
	# for a process that exits is soon after; a leak stays.
	wait_for 30 eval '[ "$(nprogs)" -le "$bpf0" ]'
	left0=$(nprogs) ours0=$(nours)
	leftu=$(domu_cmd 120 "bpftool prog show | grep -c '^[0-9]*:'")
	kill -INT "$kpid" 2>/dev/null
	wait_for 20 eval '! kill -0 $kpid 2>/dev/null' || kill -KILL "$kpid" 2>/dev/null
	domu_cmd 120 "kill -INT \$AGENT_PID; n=0; while kill -0 \$AGENT_PID 2>/dev/null && [ \$n -lt 150 ]; do sleep 0.2; n=\$((n+1)); done; kill -0 \$AGENT_PID 2>/dev/null && echo still running" >/tmp/c3.out
	end0=$(nprogs)
	endu=$(domu_cmd 120 "bpftool prog show | grep -c '^[0-9]*:'")
	c3="BPF programs dom0 $bpf0 before, $left0 after the monitor left ($ours0 of them the agent's), $end0 after the agent stopped; linuxU ${bpfu0:-?} / ${leftu:-?} / ${endu:-?} $(cat /tmp/c3.out)"
	[ "$left0" = "$bpf0" ] || c3="$c3; dom0's list: $(prog_stats | awk '{ printf "%s %s, ", $1, $2 }')"
	note "${PH}3 $c3"
	c3ok=0
	[ "$left0" = "$bpf0" ] && [ "$end0" = "$bpf0" ] && [ "$leftu" = "$bpfu0" ] && [ "$endu" = "$bpfu0" ] && c3ok=1

	why=
	[ $c1ok = 1 ] || why="$why C1:$c1${missing:+; hops missing:$missing}; records lost: ${lost1:-?}."
	[ "$c2ok" = 1 ] || why="$why C2: the netem hop's p50 is $qp50 us, not within [$c2lo, $c2hi] us (C1's $base50 us + 5 ms, + dom0's timer lateness ${late90:-?} us at p90 + 500 us)."
	[ $c3ok = 1 ] || why="$why C3: $c3."
	[ "$pok" = 1 ] || why="$why purge: $pwhy."
	[ "$sok" = 1 ] || why="$why split: the scheduler trace was not joined, or no hop was split (${sl:-no sched line})."
	[ "$cok" = 1 ] || why="$why split's causes (C4, C5, C6):$cwhy"
	if [ -z "$why" ]; then
		result "$PH PASS joined across linuxU (on $domu_kernel) and linux0: $joined of $want requests (network $netexp, disk $ios; $neg with a negative hop), hops in both kernels, netem 5ms seen as ${qp50} us, purged while woven, nothing left loaded"
	else
		result "$PH FAIL$why"
	fi
}

# purge: the guest package purged in dom0 while its agent is woven there
# (the monitor still connected, and holding its own program: the clock by
# Xen's system time); sets pok=1 when the agent stopped, the programs
# loaded are those before less the agent's, none of its files stayed,
# the domU still pings through netback and the monitor still runs, else
# pwhy.  The prerm stops the agent without systemd
# (debian/xflow-agent.prerm).
purge() {
	pok=0
	kp0=$(nours) all0=$(nprogs)
	pa=$(cut -d' ' -f1 /proc/uptime)
	timeout 300 dpkg --purge xflow-agent >/tmp/purge.log 2>&1
	prc=$?
	pt=$(awk -v a="$pa" '{ printf "%.1f", $1 - a }' /proc/uptime)
	wait_for 60 eval '! kill -0 $kpid 2>/dev/null'
	alive=no
	kill -0 "$kpid" 2>/dev/null && alive=yes
	wait_for 30 eval '[ "$(nours)" = 0 ] && [ "$(nprogs)" -le $((all0 - kp0)) ]'
	kp1=$(nours) all1=$(nprogs)
	st=$(dpkg-query -W -f '${db:Status-Status}' xflow-agent 2>/dev/null)
	left=
	for f in /usr/bin/xflow-agent /usr/libexec/xflow-agent /lib/systemd/system/xflow-agent.service \
		/usr/share/man/man8/xflow-agent.8.gz /usr/share/doc/xflow-agent; do
		[ -e "$f" ] && left="$left $f"
	done
	pings=$(domu_cmd 120 "ping -c 3 -W 10 10.99.0.1 | tail -n 2 | head -n 1")
	prc2=$?
	topok=no
	kill -0 "$toppid" 2>/dev/null && topok=yes
	pnote="dpkg --purge xflow-agent: exit $prc in $pt s$(grep -i 'xflow-agent:' /tmp/purge.log | tr '\n' ' ' | sed 's/^./ (&/; s/.$/&)/'); agent $kpid still running: $alive; its programs $kp0 before, $kp1 after; dom0's $all0 before, $all1 after ($bpf0 before any agent and monitor: $(prog_stats | awk '{ printf "%s %s, ", $1, $2 }')); package state '${st:-gone}'; files left:${left:- none}; linuxU pings after: $pings; xflowtop running: $topok"
	note "${PH}P $pnote"
	pwhy=$pnote
	[ $prc = 0 ] && [ $alive = no ] && [ "$kp0" -gt 0 ] && [ "$kp1" = 0 ] && [ "$all1" -le $((all0 - kp0)) ] &&
		{ [ -z "$st" ] || [ "$st" = not-installed ]; } && [ -z "$left" ] && [ $prc2 = 0 ] && [ $topok = yes ] && pok=1
}

# phase_c: the run, then its logs kept and whatever it left running
# stopped, however it ended.
phase_c() {
	PH=$1
	toppid= kpid= btpid= pok=0 pwhy="not run" sok=1 cok=1 cwhy= TOP_TRACE=
	phase_c_run
	for p in $toppid $btpid $kpid; do kill -INT "$p" 2>/dev/null; done
	sleep 1
	for p in $toppid $btpid $kpid; do kill -KILL "$p" 2>/dev/null; done
	echo 0 >/proc/sys/kernel/bpf_stats_enabled
	cp /tmp/k0.log "$OUT/kagent0-$PH.log" 2>/dev/null
	cp "$CON" "$OUT/domu-console.log" 2>/dev/null
	want S && { unpin; isolate_undo; }
	for f in c1.out c1.out.err c1.out.session c1.tab c2.out c2.out.err c2.tab c4.out c4.out.err c4-hog.out \
		c6.out c6.out.err c6.tab bt.out purge.log; do
		[ -f "/tmp/$f" ] && mv "/tmp/$f" "$OUT/$PH-$f"
	done
	rm -f "$OUT"/c1.* "$OUT"/c2.* "$OUT"/c4.* "$OUT"/c6.*
}
