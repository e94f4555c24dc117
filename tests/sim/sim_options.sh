#!/bin/sh
# Every bad option value gets a clear error naming the option, and exit 2.
. "$(dirname "$0")/lib.sh"
need_binaries

bad() {
	opt=$1
	shift
	out=$("$XENSIM" "$@" 2>&1)
	rc=$?
	[ $rc -eq 2 ] || fail "xensim $*: exit $rc, expected 2 ($out)"
	echo "$out" | grep -q -- "$opt" || fail "xensim $*: the error does not name $opt: $out"
	echo "xensim $* -> $out" | head -1
}

bad --rate --rate abc
bad --rate --rate -5
bad --size --size 0
bad --size --size 99999999
bad --size --size 12x
bad --guests --guests 0
bad --guests --guests 65
bad --delay --delay netif_receive_skb
bad --delay --delay no_such_stage=1ms
bad --delay --delay alloc_skb_from_cache=1ms
bad --delay --delay netif_receive_skb=2
bad --delay --delay netif_receive_skb=-1ms
bad --delay --delay dev_queue_xmit=1ms
bad --jitter --jitter 101
bad --seed --seed -1
bad --seed --seed x
bad --duration --duration 0
bad --duration --duration forever
bad --block-rate --block-rate many
bad --block-service --block-service 5
bad --truth --truth ""
bad --domains --domains ""
bad --xentrace --xentrace ""
bad --xentrace --xentrace /nonexistent/dir/x.trace --duration 0.1
bad --pcpus --pcpus 0
bad --pcpus --pcpus 17
bad --pcpus --pcpus two
bad --wake-delay --wake-delay 2ms
bad --wake-delay --wake-delay =2ms
bad --wake-delay --wake-delay x=2ms
bad --wake-delay --wake-delay 0=2
bad --wake-delay --wake-delay 0=-1ms
bad --wake-delay --wake-delay 0=2s
bad --wake-delay --wake-delay 65=1ms
bad --wake-delay --wake-delay 2=1ms --guests 1
bad --notify-delay --notify-delay 1
bad --notify-delay --notify-delay soon
bad --xen-irq --xen-irq 300
bad --xen-irq --xen-irq -1us
bad --xen-irq --xen-irq 101ms
bad unexpected --rate 10 extra
out=$("$XENSIM" --no-such-option 2>&1); [ $? -eq 2 ] || fail "an unknown option is not exit 2"

"$XENSIM" --help | grep -q -- '--delay STAGE=DUR' || fail "--help does not describe --delay"
for o in '--xentrace FILE' '--pcpus N' '--wake-delay DOM=DUR' '--notify-delay DUR' '--xen-irq DUR'; do
	"$XENSIM" --help | grep -q -- "$o" || fail "--help does not describe $o"
done
# The accepted spellings.
"$XENSIM" --duration 0.3 --rate 100 --size 3000 --delay dom0:dev_queue_xmit=100us \
	--delay domU:dev_queue_xmit=50us --delay FreeTxDescriptors=1ms --jitter 10 \
	--seed 0x10 --block-rate 50 --block-service 1ms --truth "$TMP/t" > "$TMP/log" 2>&1 ||
	{ cat "$TMP/log"; fail "valid options refused"; }
"$TRUTH_CHECK" --guests 1 --min-msgs 30 "$TMP/t" | tail -1 || fail "truth-check"
# Domains refuse to run on their own.
"$BUILD/sim/linuxU" 2>&1 | grep -q 'start it with xensim' || fail "linuxU ran without xensim"
echo ok
