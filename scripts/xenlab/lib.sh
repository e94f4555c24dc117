# Shared by the xenlab scripts (sourced, not run): messages, exit codes,
# the cache's place and key.  POSIX sh.

# Exit codes the driver understands: a script that cannot run here says
# so with 77 (the automake convention), which the driver turns into SKIPPED.
XL_SKIP=77

XL_DIR=$(cd "$(dirname "$0")" && pwd)

say() { printf 'xen-check: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }
skip() { say "cannot run: $*"; exit "$XL_SKIP"; }

# Seconds since the epoch with tenths, for phase times.
now() { date +%s.%N | cut -c1-12; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

# The cache of built images: kept between runs, one directory per key.
xl_cache_root() {
	echo "${XENLAB_CACHE:-${XDG_CACHE_HOME:-${HOME:-/var/tmp}/.cache}/xflowtop-xenlab}"
}

# The files that shape the cached images.  Editing any of them (or the
# package list) changes the key, so the next run rebuilds; the per-run test
# scripts are not among them, as they travel through the share.
XL_IMAGE_INPUTS="packages build-images.sh dom0-initrd.sh dom0-init initrd-init libdeps.sh"

xl_cache_key() {
	(cd "$XL_DIR" && cat $XL_IMAGE_INPUTS) | sha256sum | cut -c1-16
}
