#!/bin/sh
# domu-initrd.sh IMAGES INSTALL OUT: assemble the domU's initramfs (gzipped
# newc cpio) at OUT from the cached IMAGES/domu parts and this run's
# installed tree INSTALL (make install DESTDIR=INSTALL PREFIX=/usr).  Only
# the agent and the simulated host go in, with exactly the libraries they
# need out of the image's pool; the monitor (xflowtop, xflowc) stays in
# dom0.  Built at every run (well under a second), so fresh binaries never
# rebuild the cached images.
set -eu
dir=$(cd "$(dirname "$0")" && pwd)
img=$1 inst=$2 out=$3
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/usr/bin" "$stage/lib/modules" "$stage/lib/x86_64-linux-gnu" "$stage/lib64" \
	"$stage/usr/lib" "$stage/usr/share"
cp /bin/busybox "$stage/bin/busybox"
cp "$dir/domu-init" "$stage/init"
cp "$dir/domu-kernel-mode" "$stage/kernel-mode"
chmod 755 "$stage/init"
cp "$img"/domu/modules/*.ko "$stage/lib/modules/"
cp "$img/domu/modules.order" "$stage/modules.order"
cp "$img/domu/bin/xenstore" "$img/domu/bin/bpftool" "$stage/usr/bin/"
for t in read write ls list exists rm watch; do
	ln -s xenstore "$stage/usr/bin/xenstore-$t"
done
cp -a "$inst/usr/lib/xflowtop" "$stage/usr/lib/"
cp -a "$inst/usr/share/xflowtop" "$stage/usr/share/"
cp -a "$inst/usr/bin/xflow-agent" "$inst/usr/bin/xensim" "$stage/usr/bin/"
bins=$(find "$stage/usr/bin/xflow-agent" "$stage/usr/bin/xenstore" "$stage/usr/bin/bpftool" "$stage/usr/lib/xflowtop" \
	-type f -perm -u+x)
# shellcheck disable=SC2086
sonames=$("$dir/libdeps.sh" "$img/domu/lib" $bins)
for so in $sonames; do
	cp "$img/domu/lib/$so" "$stage/lib/x86_64-linux-gnu/"
done
ln -s ../lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 "$stage/lib64/ld-linux-x86-64.so.2"
(cd "$stage" && find . | cpio -o -H newc --quiet | gzip -1) >"$out"
