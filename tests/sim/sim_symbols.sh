#!/bin/sh
# The simulated kernels are built like the real ones: every stage function
# is a real out-of-line function under its Linux name, in the compilation
# unit that mirrors Linux's file, never inlined or cloned (a tracer must find
# it by name and by within_file), and nothing of xflowtop is linked in.
# (A .cold part split off a function is fine: callers still enter it by name.)
. "$(dirname "$0")/lib.sh"
need_binaries

check() {
	bin=$BUILD/sim/$1 fn=$2 file=$3
	nm "$bin" | grep -q -E " [Tt] $fn\$" || fail "$1: no function $fn"
	nm "$bin" | grep -q -E " [Tt] $fn\.(isra|part|constprop)" && fail "$1: $fn was cloned"
	# DW_AT_inline on a subprogram means some call of it was inlined.
	readelf --debug-dump=info "$bin" 2>/dev/null | awk -v fn="$fn" '
		/DW_TAG_/ { inl = 0; name = "" }
		/DW_AT_name/ { if ($NF == fn) name = fn }
		/DW_AT_inline/ { inl = 1 }
		name == fn && inl { found = 1 }
		END { exit found }' || fail "$1: $fn is inlined somewhere"
	gdb_file=$(objdump --dwarf=decodedline "$bin" 2>/dev/null | grep -c "$file" || true)
	[ "$gdb_file" -gt 0 ] || fail "$1: no line table for $file"
}

command -v nm >/dev/null && command -v readelf >/dev/null || { echo "binutils not installed"; exit 77; }

check linuxU alloc_skb_from_cache skbuff.c
check linuxU skb_clone skbuff.c
check linuxU __kfree_skb skbuff.c
check linuxU tcp_sendmsg tcp.c
check linuxU tcp_set_skb_tso_segs tcp_output.c
check linuxU dev_queue_xmit dev.c
check linuxU network_start_xmit netfront.c
check linuxU network_tx_buf_gc netfront.c
check linuxU tcp_clean_rtx_queue tcp_input.c
check linuxU submit_bio ll_rw_blk.c
check linuxU blkif_queue_request blkfront.c
check linux0 netbk_fill_frags netback.c
check linux0 netif_rx dev.c
check linux0 netif_receive_skb dev.c
check linux0 br_nf_pre_routing br_netfilter.c
check linux0 br_forward br_forward.c
check linux0 br_nf_post_routing br_netfilter.c
check linux0 br_dev_queue_push_xmit br_forward.c
check linux0 dev_queue_xmit dev.c
check linux0 SkGeXmit skge.c
check linux0 FreeTxDescriptors skge.c
check linux0 __kfree_skb skbuff.c
check linux0 dispatch_rw_block_io blkback.c
check linux0 __make_request ll_rw_blk.c
check linux0 do_simdisk_request simdisk.c
check linux0 end_block_io_op blkback.c
check linux0 make_response blkback.c

# The sources sit where Linux has them, as DWARF names them.
readelf --debug-dump=info "$BUILD/sim/linuxU" | grep -q 'sim/linux/drivers/xen/netfront/netfront.c' ||
	fail "linuxU: netfront.c is not at drivers/xen/netfront/"
readelf --debug-dump=info "$BUILD/sim/linux0" | grep -q 'sim/linux/drivers/xen/netback/netback.c' ||
	fail "linux0: netback.c is not at drivers/xen/netback/"
# struct sk_buff has the members the flows name.
for m in head data len next; do
	readelf --debug-dump=info "$BUILD/sim/linuxU" | grep -q -E "DW_AT_name.*: $m\$" ||
		fail "sk_buff.$m not in DWARF"
done
# No xflowtop code in the traced software.
for b in linuxU linux0; do
	nm "$BUILD/sim/$b" | grep -q -i -E ' xflow_| xf_' && fail "$b links xflowtop code"
done
echo ok
