#!/bin/sh
# domu-initrd.sh IMAGES KVER ROOT OUT: assemble the domU's initramfs
# (gzipped newc cpio) at OUT for kernel KVER (IMAGES/kver's or kver2's)
# from the cached IMAGES parts and ROOT, the guest's files as this run's
# packages hold them (dpkg-deb -x of xflow-agent and xflowtop-sim, the
# simulated host the domU runs as its workload: xen-check.sh).  The
# package's files go in whole, byte for byte, with exactly the libraries
# their programs need out of the image's pool; the monitor (xflowtop,
# xflowc) stays in dom0.  Built at every run (well under a second), so
# fresh packages never rebuild the cached images.
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
img=$1 kver=$2 root=$3 out=$4
parts=$img/domu
[ "$kver" = "$(cat "$img/kver")" ] || parts=$img/domu-$kver
[ -f "$parts/modules.order" ] || { echo "domu-initrd: no modules for kernel $kver in $img" >&2; exit 1; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/usr/bin" "$stage/lib/modules/$kver" "$stage/lib/x86_64-linux-gnu" "$stage/lib64" \
	"$stage/usr/lib" "$stage/usr/share"
cp /bin/busybox "$stage/bin/busybox"
cp "$dir/domu-init" "$stage/init"
cp "$dir/domu-kernel-mode" "$stage/kernel-mode"
cp "$dir/unit-start" "$stage/unit-start"
chmod 755 "$stage/init"
cp "$parts"/modules/*.ko "$stage/lib/modules/$kver/"
cp "$parts/modules.order" "$stage/modules.order"
cp "$img/domu/bin/xenstore" "$img/domu/bin/bpftool" "$img/domu/bin/setpriv" "$stage/usr/bin/"
for t in read write ls list exists rm watch; do
	ln -s xenstore "$stage/usr/bin/xenstore-$t"
done
# The packages' tree; its /usr/bin beside the image's tools.
cp -a "$root/." "$stage/"
bins=$(find "$stage/usr" -type f -perm -u+x -exec sh -c 'head -c 4 "$1" | grep -q ELF' sh {} \; -print)
# shellcheck disable=SC2086
sonames=$("$dir/libdeps.sh" "$img/domu/lib" $bins)
for so in $sonames; do
	cp "$img/domu/lib/$so" "$stage/lib/x86_64-linux-gnu/"
done
ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$stage/lib64/ld-linux-x86-64.so.2"
(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) >"$out"
