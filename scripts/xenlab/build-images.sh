#!/bin/sh
# build-images.sh OUT: build everything xen-check boots into the new
# directory OUT, from Debian's packages (the list in ./packages) fetched
# from the archive this machine's apt uses:
#   xen             the hypervisor, decompressed (QEMU's multiboot loader
#                   wants the ELF, not the .gz Debian ships)
#   vmlinuz         the kernel, for dom0 and the domU alike
#   dom0-initrd.gz  busybox + virtio/ext4 modules (dom0-initrd.sh)
#   dom0.ext4       dom0's root file system, trimmed, made with mkfs.ext4 -d
#                   (no loop mount), booted with snapshot=on; bookworm with
#                   its security and point updates (dom0's kernel held),
#                   and the second kernel's parts below
#   domu/           what a domU initramfs is assembled from at each run:
#                   modules/ (+ modules.order), lib/ (a flat pool of the
#                   image's runtime libraries, see libdeps.sh), bin/
#                   (xenstore, bpftool, setpriv)
#   domu-KVER2/     modules/ and modules.order of the second kernel
#   kver, versions  the kernel release; the main packages' versions
#   kver2           the second kernel's release: the newest linux-image-amd64
#                   of bookworm-backports, for phase C's second run (D).  In
#                   dom0's image: /boot/vmlinuz-KVER2 (the domU boots it),
#                   its BTF as /usr/lib/xenlab/vmlinux-KVER2.btf and the
#                   domU's modules decompressed in /lib/modules/KVER2, which
#                   the monitor plans that domU with.
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

# Updates, as a dom0 runs: the packages built on an up-to-date Debian 12
# depend on them (libxen 4.17.7 came with bookworm-security).  dom0's
# kernel is held at bookworm's release: the flows were written for it.
# Then the newest kernel of bookworm-backports, from its package: the
# second kernel phase C runs on (INITRD=No: no initramfs-tools image, the
# domU boots a busybox one).
sec=$("$XL_DIR/apt-mirror.sh" bookworm-security) || die "no source for bookworm-security in this machine's apt sources"
sec=${sec% *}
mount -t proc proc "$root/proc"
cat >"$root/etc/apt/sources.list" <<SRC
deb $uri bookworm main
deb $uri bookworm-updates main
deb $sec bookworm-security main
deb $uri bookworm-backports main
SRC
chroot "$root" apt-mark hold linux-image-amd64 "linux-image-$kver" >/dev/null
apt_in() { DEBIAN_FRONTEND=noninteractive INITRD=No timeout 900 chroot "$root" apt-get -q -y -o Dpkg::Use-Pty=0 "$@"; }
apt_in update >"$out/apt.log" 2>&1 || { tail -n 15 "$out/apt.log" >&2; die "apt-get update in the image failed"; }
apt_in upgrade >>"$out/apt.log" 2>&1 || { tail -n 15 "$out/apt.log" >&2; die "apt-get upgrade in the image failed"; }
kpkg2=$(chroot "$root" apt-cache show linux-image-amd64/bookworm-backports 2>/dev/null |
	sed -n 's/^Depends: \(linux-image-[^ ,]*\).*/\1/p' | head -n 1)
[ -n "$kpkg2" ] || die "bookworm-backports has no linux-image-amd64"
apt_in install --no-install-recommends -t bookworm-backports "$kpkg2" >>"$out/apt.log" 2>&1 ||
	{ tail -n 15 "$out/apt.log" >&2; die "installing $kpkg2 failed"; }
kver2=$(ls "$root/lib/modules" | grep -vx "$kver")
[ "$(echo "$kver2" | wc -l)" = 1 ] && [ -f "$root/boot/vmlinuz-$kver2" ] || die "no second kernel after installing $kpkg2 ($kver2)"
umount "$root/proc"
say "image: updates and $kpkg2 took $(elapsed "$t") s"
t=$(now)

[ -f "$root/boot/vmlinuz-$kver" ] || die "no kernel in the image"
xgz=$(ls "$root"/boot/xen-4.17*-amd64.gz 2>/dev/null | head -n 1)
[ -n "$xgz" ] || skip "no /boot/xen-4.17-amd64.gz in the image"
zcat "$xgz" >"$out/xen"
cp "$root/boot/vmlinuz-$kver" "$out/vmlinuz"
echo "$kver" >"$out/kver"
echo "$kver2" >"$out/kver2"
chroot "$root" dpkg-query -W -f '${Package} ${Version}\n' "linux-image-$kver" xen-hypervisor-4.17-amd64 \
	libxenmisc4.17 "$kpkg2" >"$out/versions"
"$XL_DIR/dom0-initrd.sh" "$root" "$kver" "$out/dom0-initrd.gz"

# The domU's parts.  Modules for event channels and grant sharing from user
# space (/dev/xen/evtchn, gntdev, gntalloc) and xenfs, and the PV network
# and disk fronts phase C traces, as load order.
# The second kernel's ship compressed (.ko.xz): decompressed, for busybox's
# insmod and for the monitor (weaver/jp/kbtf.c reads plain .ko files).
DOMU_MODS="xen-evtchn xen-gntdev xen-gntalloc xenfs xen-netfront xen-blkfront"
domu_modules() { # KVER DIR
	mkdir -p "$2/modules"
	for m in $DOMU_MODS; do
		chroot "$root" modprobe -S "$1" --show-depends "$m"
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r ko; do
		case $ko in
		*.ko) cp "$root$ko" "$2/modules/" ;;
		*.ko.xz) xz -dc "$root$ko" >"$2/modules/$(basename "$ko" .xz)" ;;
		*) die "$ko: a module compressed other than by xz" ;;
		esac
		basename "$ko" .xz >>"$2/modules.order"
	done
}
mkdir -p "$out/domu/lib" "$out/domu/bin"
domu_modules "$kver" "$out/domu"
domu_modules "$kver2" "$out/domu-$kver2"
# The library pool: every shared library of the runtime packages in
# ./packages and, through ldd run inside the image, all they need, under
# their sonames.  Copies, not links: the domU's initramfs takes what each
# run's binaries need from here (libdeps.sh).
cp "$root/usr/bin/xenstore" "$out/domu/bin/xenstore"
cp "$root/usr/sbin/bpftool" "$out/domu/bin/bpftool"
# util-linux's setpriv: the domU's init applies the agent unit's
# CapabilityBoundingSet with it (unit-start), as systemd would.
cp "$root/usr/bin/setpriv" "$out/domu/bin/setpriv"
libpkgs=$(sed 's/#.*//' "$XL_DIR/packages" | tr -s ' \t\n' '\n' | grep '^lib')
# shellcheck disable=SC2086
files=$(chroot "$root" dpkg -L $libpkgs | grep '^/usr/lib/x86_64-linux-gnu/[^/]*\.so\.')
# shellcheck disable=SC2086
libs=$(chroot "$root" ldd /usr/bin/xenstore /usr/sbin/bpftool /usr/bin/setpriv $files |
	awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// && $2 ~ /^\(/ { print $1 }' | sort -u)
for f in $files $libs; do
	real=$root$(chroot "$root" readlink -f "$f")
	so=$(readelf -d "$real" | sed -n 's/.*(SONAME).*\[\(.*\)\]$/\1/p')
	cp "$real" "$out/domu/lib/${so:-${f##*/}}"
done

# vmlinux_btf VMLINUZ TMP OUT: the kernel's BTF (its .BTF section, raw) at
# OUT, from the ELF vmlinux inside the bzImage VMLINUZ, found as the first
# compressed stream (zstd, xz or gzip) that unpacks to an ELF.
vmlinux_btf() {
	for magic in '\x28\xb5\x2f\xfd:zstd -dcq' '\xfd\x37\x7a\x58\x5a\x00:xz -dcq' '\x1f\x8b\x08:gzip -dcq'; do
		for off in $(LC_ALL=C grep -aboP "${magic%%:*}" "$1" | cut -d: -f1 | head -n 5); do
			# The stream is followed by the rest of the bzImage, which
			# the decompressor calls garbage: its status says nothing.
			tail -c +$((off + 1)) "$1" | ${magic#*:} >"$2" 2>/dev/null || :
			[ "$(head -c 4 "$2" | od -An -c | tr -d ' ')" = '177ELF' ] || continue
			mkdir -p "$(dirname "$3")"
			objcopy --dump-section ".BTF=$3" "$2" "$2.o" && rm -f "$2.o" && return 0
		done
	done
	die "no vmlinux with a .BTF section inside $1"
}

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
# The second kernel: dom0 never runs it; the monitor plans the domU that
# does from its BTF (vmlinux's, taken out of the compressed vmlinuz, and
# the domU's modules', plain .ko files).  Nothing else of it is kept.
vmlinux_btf "$root/boot/vmlinuz-$kver2" "$out/vmlinux2" "$root/usr/lib/xenlab/vmlinux-$kver2.btf"
rm -f "$out/vmlinux2"
rm -rf "$root/lib/modules/$kver2/kernel" "$root/usr/lib/linux-image-$kver2"
mkdir -p "$root/lib/modules/$kver2/kernel/xenlab"
cp "$out/domu-$kver2"/modules/*.ko "$root/lib/modules/$kver2/kernel/xenlab/"
chroot "$root" depmod "$kver2"

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
