#!/bin/sh
# Plan flows/kernel/xen_net.xml and xen_blk.xml against Debian 12's
# 6.1.0-50-amd64 as the Xen lab runs it, on any machine: vmlinux and
# dom0's modules from the lab's cached image, the domU's netfront and
# blkfront (trimmed from that image) from the kernel package, which this
# downloads (apt-get download) the first time.  guestrt/hook/kernel/NOTES.md says what
# it printed.  Usage: scripts/kernel/plan-debian61.sh [WORKDIR]
set -eu
KV=6.1.0-50-amd64
W=${1:-/tmp/xflow-k61}
X=${XFLOWC:-build/bin/xflowc}
IMG=$(ls -d "${XDG_CACHE_HOME:-$HOME/.cache}"/xflowtop-xenlab/img-* 2>/dev/null | head -1)
[ -n "$IMG" ] && [ -f "$IMG/dom0.ext4" ] || { echo "no Xen lab image in ~/.cache/xflowtop-xenlab (make xen-check builds it)"; exit 77; }
for t in debugfs xz python3 dpkg-deb apt-get; do
	command -v $t >/dev/null || { echo "no $t"; exit 77; }
done
mkdir -p "$W/dom0mod" "$W/u"
cd "$W"
if [ ! -s vmlinux ]; then
	debugfs -R "dump /boot/vmlinuz-$KV vmlinuz" "$IMG/dom0.ext4" 2>/dev/null
	# The bzImage's payload is xz: decompress from its magic on.
	off=$(python3 -c "import sys; d=open('vmlinuz','rb').read(); print(d.find(b'\xfd7zXZ\x00'))")
	[ "$off" -ge 0 ] || { echo "vmlinuz: no xz payload"; exit 1; }
	tail -c +$((off + 1)) vmlinuz | xz -dc >vmlinux 2>/dev/null || [ -s vmlinux ]
fi
M=/lib/modules/$KV
debugfs -R "dump $M/modules.dep dom0mod/modules.dep" "$IMG/dom0.ext4" 2>/dev/null
for f in kernel/drivers/net/xen-netback/xen-netback.ko kernel/drivers/block/xen-blkback/xen-blkback.ko \
	kernel/net/bridge/bridge.ko; do
	mkdir -p "dom0mod/$(dirname $f)"
	debugfs -R "dump $M/$f dom0mod/$f" "$IMG/dom0.ext4" 2>/dev/null
done
if [ ! -s u/xen-netfront.ko ]; then
	apt-get download "linux-image-$KV" >/dev/null 2>&1 || { echo "cannot download linux-image-$KV"; exit 77; }
	dpkg-deb -x "$(ls linux-image-"$KV"_*.deb | head -1)" img
	cp "img$M/kernel/drivers/net/xen-netfront.ko" "img$M/kernel/drivers/block/xen-blkfront.ko" u/
fi
cd - >/dev/null
echo "== xen_net.xml"
"$X" plan --domain "linuxU=kernel:$W/vmlinux+$W/u/xen-netfront.ko" \
	--domain "linux0=kernel:$W/vmlinux+$W/dom0mod+xen_netback+bridge" flows/kernel/xen_net.xml
echo "== xen_blk.xml"
"$X" plan --domain "linuxU=kernel:$W/vmlinux+$W/u/xen-blkfront.ko" \
	--domain "linux0=kernel:$W/vmlinux+$W/dom0mod+xen_blkback" flows/kernel/xen_blk.xml
