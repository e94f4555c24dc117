#!/bin/sh
# Per-hit cost of the kernel backend's programs against bpftrace counting
# on the same tracepoints, from the kernel's own BPF statistics
# (kernel.bpf_stats_enabled, switched on for the run and off after), under a
# ping flood across a veth pair; and the flood's rate untraced, traced by
# the agent and its monitor, and traced by bpftrace.  Root; bpftrace is
# optional (Debian's 0.17 needs tracefs, mounted in a private mount
# namespace here so that the host is left as it is).  Not part of make
# check: guestrt/hook/kernel/NOTES.md has its figures.
#   tests/bench/kernel_cost.sh [BUILD [SECONDS]]
cd "$(dirname "$0")/../.." || exit 1
B=${1:-build}; T=${2:-3}
NA=xfm$$a NB=xfm$$b
D=$(mktemp -d /tmp/xflow-kcost.XXXXXX)
trap 'ip netns del $NA 2>/dev/null; ip netns del $NB 2>/dev/null; sysctl -qw kernel.bpf_stats_enabled=0; rm -rf "$D"' EXIT
ip netns add $NA; ip netns add $NB
ip link add vxa netns $NA type veth peer name vxb netns $NB
for n in a b; do ns=$NA; [ $n = b ] && ns=$NB; ip netns exec $ns sysctl -qw net.ipv6.conf.all.disable_ipv6=1; ip netns exec $ns ethtool -K vx$n tso off gso off gro on >/dev/null; done
ip -n $NA addr add 10.178.0.1/24 dev vxa; ip -n $NB addr add 10.178.0.2/24 dev vxb; ip -n $NA link set vxa up; ip -n $NB link set vxb up
ip netns exec $NA ping -c1 -q 10.178.0.2 >/dev/null
stats() { bpftool prog show | awk '/run_time_ns/ { for (i=1;i<=NF;i++) { if ($i=="name") n=$(i+1); if ($i=="run_time_ns") t=$(i+1); if ($i=="run_cnt") c=$(i+1) } if (c>0) printf "  %-28s %10d runs %7.0f ns/run\n", n, c, t/c }'; }
flood() { ip netns exec $NA timeout -s INT $T ping -f -q 10.178.0.2 | grep transmitted; }
sysctl -qw kernel.bpf_stats_enabled=1
echo "== untraced"; flood
echo "== xflow-agent --backend kernel, flows/kernel/net_tp.xml"
$B/bin/xflow-agent --backend kernel --domain k --socket $D/agent.sock >/dev/null 2>&1 & A=$!
while [ ! -S $D/agent.sock ]; do sleep 0.1; done
timeout $((T + 4)) $B/bin/xflowtop -b -n 1 -d $((T + 2)) --collector agent:socket=$D/agent.sock,flows=flows/kernel/net_tp.xml > $D/top.out 2>&1 & M=$!
sleep 1; flood; stats; wait $M; wait $A
sed -n 2,3p $D/top.out
command -v bpftrace >/dev/null || { echo "(no bpftrace: its figures left out)"; exit 0; }
echo "== bpftrace: a count per tracepoint, the same tracepoints"
unshare -m sh -c 'mount -t tracefs nodev /sys/kernel/tracing && exec bpftrace -e "$0"' 'tracepoint:net:net_dev_queue, tracepoint:net:net_dev_start_xmit, tracepoint:net:netif_rx, tracepoint:net:napi_gro_receive_entry, tracepoint:net:netif_receive_skb, tracepoint:skb:consume_skb, tracepoint:skb:kfree_skb { @[probe] = count(); }' > $D/bt.out 2>&1 & P=$!
sleep 3; flood; stats; kill -INT $P; wait $P
