#!/bin/sh
# dom0-initrd.sh ROOT KVER OUT: write dom0's initrd (gzipped newc cpio) to
# OUT: the host's static busybox, initrd-init as /init, and the modules that
# mounting /dev/vda needs, with their dependencies in load order as the
# image's own modprobe reports them.
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
root=$1 kver=$2 out=$3
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib/modules"
cp /bin/busybox "$stage/bin/busybox"
cp "$dir/initrd-init" "$stage/init"
chmod 755 "$stage/init"
for m in virtio_pci virtio_blk ext4; do
	chroot "$root" modprobe -S "$kver" --show-depends "$m"
done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r ko; do
	cp "$root$ko" "$stage/lib/modules/"
	echo "${ko##*/}" >>"$stage/modules.order"
done
(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) >"$out"
