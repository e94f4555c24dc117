#!/bin/sh
# The accesses the shipped flows name can be found the way the weaver finds
# join points: in the function, an instruction addressing
# [reg + offsetof(S, m)] where DWARF says the named variable is in reg at
# that pc.  (At -O2 this depends on how the code is written: a ring slot
# addressed as ring base + index, for instance, leaves no pointer to find.)
. "$(dirname "$0")/lib.sh"
need_binaries
command -v gdb >/dev/null || { echo "gdb not installed"; exit 77; }

# located PC VARIABLE: the variable has a location at pc (in $bin).
located() {
	gdb -q -batch "$bin" -ex "info scope *$1" 2>/dev/null | awk -v var="$2" -v pc="$1" '
		function strtonum(h,   i, c, v) {
			v = 0; h = tolower(h); sub(/^0x/, "", h)
			for (i = 1; i <= length(h); i++)
				v = v * 16 + index("0123456789abcdef", substr(h, i, 1)) - 1
			return v
		}
		/^Symbol / { cur = ($2 == var); if (cur && /optimized out/) exit 1
			     if (cur && /is a variable/) ok = 1 }
		cur && /Range 0x/ {
			split($2, r, "-"); sub(":", "", r[2])
			if (strtonum(pc) >= strtonum(r[1]) && strtonum(pc) < strtonum(r[2])) ok = 1
		}
		END { exit !ok }'
}

# check BINARY FUNCTION STRUCT MEMBER VARIABLE [OTHER]: OTHER (the variable
# a transit takes the id from or gives it to) must have a location there too.
check() {
	bin=$BUILD/sim/$1 fn=$2 st=$3 mem=$4 var=$5 other=${6:-}
	off=$(gdb -q -batch "$bin" -ex "print/x (long)&((struct $st *)0)->$mem" 2>/dev/null |
		sed -n 's/^\$1 = //p')
	[ -n "$off" ] || fail "$1: no struct $st member $mem in DWARF"
	[ "$off" = 0x0 ] && pat='[ ,]\(%r[a-z0-9]*\)' || pat="[ ,]$off\\(%r[a-z0-9]*\\)"
	objdump -d --no-show-raw-insn "--disassemble=$fn" "$bin" |
		grep -E "^ +[0-9a-f]+:.*$pat" | grep -v -E "\(%rsp\)|\(%rip\)" > "$TMP/insns"
	[ -s "$TMP/insns" ] || fail "$1: no instruction in $fn addresses $st.$mem"
	found=0
	while read -r line; do
		pc=0x$(echo "$line" | sed 's/^ *\([0-9a-f]*\):.*/\1/')
		reg=$(echo "$line" | grep -o -E "$pat" | head -1 | sed 's/.*(%\(r[a-z0-9]*\))/\1/')
		gdb -q -batch "$bin" -ex "info scope *$pc" 2>/dev/null |
			awk -v var="$var" -v pc="$pc" -v reg="\$$reg" '
				function strtonum(h,   i, c, v) {
					v = 0; h = tolower(h); sub(/^0x/, "", h)
					for (i = 1; i <= length(h); i++) {
						c = index("0123456789abcdef", substr(h, i, 1)) - 1
						v = v * 16 + c
					}
					return v
				}
				/^Symbol / { cur = ($2 == var) }
				cur && /Range 0x/ {
					split($2, r, "-"); sub(":", "", r[2])
					lo = strtonum(r[1]); hi = strtonum(r[2]); p = strtonum(pc)
					if (p >= lo && p < hi && $NF == reg) ok = 1
				}
				cur && /is a variable in/ && $NF == reg "." { ok = 1 }
				cur && /is a variable in/ && $NF == reg { ok = 1 }
				END { exit !ok }' && { found=1; break; }
	done < "$TMP/insns"
	[ $found -eq 1 ] || { cat "$TMP/insns"; fail "$1: in $fn, no access to $st.$mem has $var in its base register"; }
	if [ -n "$other" ]; then
		located "$pc" "$other" || fail "$1: in $fn at $pc ($st.$mem), $other has no location"
	fi
	echo "$1: $fn: $st.$mem through $var at $pc${other:+, $other located}"
}

# netfront writes the request's flags once: an id put in bits 4-15 right
# after that write is not wiped out by a second one (the "xin_move trap").
off=$(gdb -q -batch "$BUILD/sim/linuxU" -ex "print/x (long)&((struct netif_tx_request *)0)->flags" |
	sed -n 's/^\$1 = //p')
for fn in network_start_xmit xennet_tx_setup_grant; do
	n=$(objdump -d --no-show-raw-insn "--disassemble=$fn" "$BUILD/sim/linuxU" |
		grep -c -E "^ +[0-9a-f]+:.*,$off\(%r[a-z0-9]*\)$")
	want=1
	[ $fn = xennet_tx_setup_grant ] && want=0
	[ "$n" -eq $want ] || fail "$fn writes netif_tx_request.flags $n times, expected $want"
done

check linuxU alloc_skb_from_cache sk_buff data skb
check linuxU skb_clone sk_buff head skb n
check linuxU network_start_xmit netif_tx_request flags tx skb
check linuxU __kfree_skb sk_buff head skb
check linux0 netbk_fill_frags netif_tx_request flags txp skb
check linux0 __kfree_skb sk_buff head skb
check linuxU submit_bio bio bi_rw bio
check linuxU blkif_queue_request blkif_request id ring_req bio
check linux0 dispatch_rw_block_io blkif_request id req bio
check linuxU bio_put bio bi_cnt bio
check linux0 bio_put bio bi_cnt bio
echo ok
