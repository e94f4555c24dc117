#!/bin/sh
# The host's side of xen-check: QEMU to boot Xen, debootstrap to build the
# images, busybox-static for the small initrds, cpio to pack them,
# e2fsprogs for mkfs.ext4 -d (no loop mounts), binutils' readelf to find
# the libraries the project's binaries need (and objcopy, the second
# kernel's BTF out of its vmlinux), zstd and xz-utils to unpack that
# kernel and its modules.  Kept out of scripts/deps.sh
# so that `make check` never depends on them.
#
# Installs what is missing when run as root; otherwise prints the exact
# apt-get line and exits 77 (cannot run here).
set -u
. "$(dirname "$0")/lib.sh"

PKGS="qemu-system-x86 debootstrap busybox-static cpio e2fsprogs binutils zstd xz-utils"

missing() {
	for p in $PKGS; do
		s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
		[ "$s" = installed ] || printf '%s ' "$p"
	done
}

command -v dpkg-query >/dev/null 2>&1 || skip "not a Debian host: need $PKGS"
m=$(missing)
[ -z "$m" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
	say "missing host packages; run as root:"
	say "  apt-get install -y --no-install-recommends $m"
	exit "$XL_SKIP"
fi
say "installing host packages: $m"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine's package lists may be empty: an archive that cannot be
# reached means xen-check cannot run here, which is not a test failure.
apt-get update -q >&2 || skip "apt-get update failed (no archive reachable?)"
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $m >&2 || skip "apt-get install $m failed"
m=$(missing)
[ -z "$m" ] || skip "still missing after apt-get: $m"
