#!/bin/sh
# Make sure the Debian packages the build needs are present.
#
#   scripts/deps.sh ensure   install what is missing when run as root,
#                            otherwise print the exact apt-get line and fail
#   scripts/deps.sh list     print the package list
#   scripts/deps.sh ensure deb, list deb
#                            the same for the packaging tools (make deb)
#
# It checks first and does nothing (quietly, in a few milliseconds) when
# everything is installed, so the Makefile can call it on every run.
set -u

# Each package and why: the libraries the code links, the test and fuzz
# toolchain, and the tools the tests drive (tmux for the TUI, groff to lint
# man pages, gdb to poke the simulated host). glib and uthash are only benchmark baselines.
# libmicrohttpd serves /metrics; prometheus (with promtool) and curl are what
# the exporter's end-to-end test scrapes and queries it with.
# libbpf-dev and bpftool are the kernel backend's: libbpf loads its BPF
# object, bpftool writes vmlinux.h from the kernel's BTF and the skeleton at
# build time; iproute2, iputils-ping and ethtool make the veth pair (in NAPI
# mode), and the traffic, of its end-to-end test.
PKGS="gcc make pkg-config
libncurses-dev libxml2-dev libelf-dev libdwarf-dev libuv1-dev libcapstone-dev
libxen-dev
libcriterion-dev
clang libclang-rt-14-dev llvm
libglib2.0-dev uthash-dev
tmux groff-base procps gdb
libmicrohttpd-dev prometheus curl
libbpf-dev bpftool iproute2 iputils-ping ethtool"

# `make deb` and its test (tests/deb/lintian.sh) only: debhelper and
# dpkg-dev build the Debian packages, lintian checks them.  Not installed
# by every build: lintian alone brings some 60 Perl packages.
if [ "${2:-}" = deb ]; then
	PKGS="debhelper dpkg-dev lintian"
fi

missing() {
	for p in $PKGS; do
		s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
		[ "$s" = installed ] || printf '%s ' "$p"
	done
}

case "${1:-ensure}" in
list)
	echo $PKGS
	;;
ensure)
	if ! command -v dpkg-query >/dev/null 2>&1; then
		echo "deps: not a Debian system; install the equivalents of: $(echo $PKGS)" >&2
		exit 0
	fi
	m=$(missing)
	[ -z "$m" ] && exit 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "deps: missing Debian packages; run as root:" >&2
		echo "  apt-get install -y $m" >&2
		exit 1
	fi
	echo "deps: installing $m" >&2
	export DEBIAN_FRONTEND=noninteractive
	# The package lists of a fresh machine may be empty or stale.
	apt-get update -q >&2 || exit 1
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $m >&2 || exit 1
	m=$(missing)
	if [ -n "$m" ]; then
		echo "deps: still missing after apt-get: $m" >&2
		exit 1
	fi
	;;
*)
	echo "usage: scripts/deps.sh [ensure|list] [deb]" >&2
	exit 2
	;;
esac
