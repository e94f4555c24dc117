#!/bin/sh
# build-images.sh OUT: build everything xen-check boots into the new
# directory OUT, from Debian's packages (the list in ./packages) fetched
# from the archive this machine's apt uses:
#   xen             the hypervisor, decompressed (QEMU's multiboot loader
#                   wants the ELF, not the .gz Debian ships)
#   vmlinuz         the kernel, for dom0 and the domU alike
#   dom0-initrd.gz  busybox + virtio/ext4 modules (dom0-initrd.sh)
#   dom0.ext4       dom0's root file system, trimmed, made with mkfs.ext4 -d
#                   (no loop mount), booted with snapshot=on
#   domu/           what a domU initramfs is assembled from at each run:
#                   modules/ (+ modules.order), lib/ (a flat pool of the
#                   image's runtime libraries, see libdeps.sh), bin/xenstore
#   kver, versions  the kernel release; the main packages' versions
# Exits 77 when it cannot run here (not root, no archive), 1 on a failure.
set -eu
. "$(dirname "$0")/lib.sh"
out=$1
[ "$(id -u)" -eq 0 ] || skip "building the images needs root (debootstrap, chroot)"
mkdir -p "$out"
root=$out/rootfs
# The rootfs tree is only a step: removed at the end, and on failure or a
# signal, after whatever debootstrap or chroot left mounted inside it.
dbpid=
cleanup() {
	[ -n "$dbpid" ] && kill "$dbpid" 2>/dev/null && wait "$dbpid"
	awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
		umount -l "$m"
	done
	rm -rf --one-file-system "$root"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

src=$("$XL_DIR/apt-mirror.sh" bookworm) || skip "no Debian archive in this machine's apt sources"
uri=${src% *}
key=${src#* }
pkgs=$(sed 's/#.*//' "$XL_DIR/packages" | tr -s ' \t\n' '\n' | grep . | paste -sd, -)
say "image: debootstrap bookworm from $uri"
t=$(now)
set -- --variant=minbase --components=main --include="$pkgs"
[ "$key" != - ] && [ -f "$key" ] && set -- "$@" --keyring="$key"
timeout 900 debootstrap "$@" bookworm "$root" "$uri" >"$out/debootstrap.log" 2>&1 &
dbpid=$!
wait $dbpid
rc=$?
dbpid=
if [ $rc -ne 0 ]; then
	tail -n 15 "$out/debootstrap.log" >&2
	# An archive that cannot be reached means xen-check cannot run here;
	# anything else (a package that does not exist...) is a real failure.
	if grep -qE "Failed getting release file|Couldn't download|Temporary failure resolving|Connection refused|timed out" \
		"$out/debootstrap.log"; then
		skip "debootstrap could not reach $uri"
	fi
	die "debootstrap failed (log above)"
fi
say "image: debootstrap took $(elapsed "$t") s"
t=$(now)

kver=$(ls "$root/lib/modules")
[ -f "$root/boot/vmlinuz-$kver" ] || die "no kernel in the image"
xgz=$(ls "$root"/boot/xen-4.17*-amd64.gz 2>/dev/null | head -n 1)
[ -n "$xgz" ] || skip "no /boot/xen-4.17-amd64.gz in the image"
zcat "$xgz" >"$out/xen"
cp "$root/boot/vmlinuz-$kver" "$out/vmlinuz"
echo "$kver" >"$out/kver"
chroot "$root" dpkg-query -W -f '${Package} ${Version}\n' linux-image-amd64 xen-hypervisor-4.17-amd64 \
	>"$out/versions"
"$XL_DIR/dom0-initrd.sh" "$root" "$kver" "$out/dom0-initrd.gz"

# The domU's parts.  Modules for event channels and grant sharing from user
# space (/dev/xen/evtchn, gntdev, gntalloc) and xenfs, and the PV network
# and disk fronts phase C traces, as load order.
mkdir -p "$out/domu/modules" "$out/domu/lib" "$out/domu/bin"
for m in xen-evtchn xen-gntdev xen-gntalloc xenfs xen-netfront xen-blkfront; do
	chroot "$root" modprobe -S "$kver" --show-depends "$m"
done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r ko; do
	cp "$root$ko" "$out/domu/modules/"
	echo "${ko##*/}" >>"$out/domu/modules.order"
done
# The library pool: every shared library of the runtime packages in
# ./packages and, through ldd run inside the image, all they need, under
# their sonames.  Copies, not links: the domU's initramfs takes what each
# run's binaries need from here (libdeps.sh).
cp "$root/usr/bin/xenstore" "$out/domu/bin/xenstore"
cp "$root/usr/sbin/bpftool" "$out/domu/bin/bpftool"
libpkgs=$(sed 's/#.*//' "$XL_DIR/packages" | tr -s ' \t\n' '\n' | grep '^lib')
# shellcheck disable=SC2086
files=$(chroot "$root" dpkg -L $libpkgs | grep '^/usr/lib/x86_64-linux-gnu/[^/]*\.so\.')
# shellcheck disable=SC2086
libs=$(chroot "$root" ldd /usr/bin/xenstore /usr/sbin/bpftool $files |
	awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(/ { print $1 }' | sort -u)
for f in $files $libs; do
	real=$root$(chroot "$root" readlink -f "$f")
	so=$(readelf -d "$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
	cp "$real" "$out/domu/lib/${so:-${f##*/}}"
done

# Trim what a dom0 that boots once and runs a test never reads: the apt
# caches, documentation, locales, the kernel's initramfs-tools image (ours
# is dom0-initrd.gz) and every module but those Xen, virtio, 9p and ext4
# need (about 400 MB of the 900).  Phase C keeps netfront and blkfront too
# (the monitor in dom0 plans the domU's kernel from their BTF), netem (the
# delay it injects) and loop (the domU's disk).
rm -rf "$root"/var/cache/apt/* "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
	"$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
	"$root"/boot/initrd.img-* "$root"/boot/System.map-* "$root"/boot/xen-*.efi "$root"/boot/xen-*.gz \
	"$root"/var/cache/debconf/*-old "$root"/var/log/*.log
for m in virtio_pci virtio_blk ext4 9pnet_virtio 9p xenfs xen-evtchn xen-gntdev xen-gntalloc \
	xen-privcmd xen-acpi-processor xen-netback xen-blkback bridge \
	xen-netfront xen-blkfront sch_netem loop; do
	chroot "$root" modprobe -S "$kver" --show-depends "$m"
done | awk '$1 == "insmod" { sub(/^\//, "", $2); print $2 }' | sort -u >"$out/keep"
(cd "$root" && find "lib/modules/$kver/kernel" -name '*.ko*' | sort | comm -23 - "$out/keep" | xargs rm -f)
rm -f "$out/keep"
find "$root/lib/modules/$kver/kernel" -type d -empty -delete
chroot "$root" depmod "$kver"

# Configure the image: our init, a name, and xenconsoled logging the
# guests' consoles to files, where the test reads what the domU printed.
install -m 755 "$XL_DIR/dom0-init" "$root/sbin/xenlab-init"
echo dom0 >"$root/etc/hostname"
echo 'XENCONSOLED_ARGS="--log=guest --log-dir=/var/log/xen/console"' >>"$root/etc/default/xen"

# The ext4 image: the tree's size plus room for what dom0 writes while it
# runs (its writes go to QEMU's snapshot, but need free blocks all the same).
kb=$(du -sk "$root" | cut -f1)
rm -f "$out/dom0.ext4"
truncate -s "$((kb * 5 / 4 / 1024 + 256))M" "$out/dom0.ext4"
mkfs.ext4 -q -F -L xenlab-dom0 -O ^has_journal -m 0 -d "$root" "$out/dom0.ext4" ||
	die "mkfs.ext4 -d failed"
say "image: trim, initrds and ext4 image took $(elapsed "$t") s ($(du -sh "$root" | cut -f1) tree)"
