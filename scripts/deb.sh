#!/bin/sh
# Build the Debian packages (debian/) from a copy of this tree, so that
# dpkg-buildpackage's clean, its build tree and its ../ outputs stay out of
# the working tree.
#
#   scripts/deb.sh [OUT]   the .deb files, .buildinfo, .changes and the
#                          build's log in OUT (default build/deb, whatever
#                          $BUILD: the packages are never sanitized)
#
# The copy holds the files git knows of (tracked, and untracked ones not
# ignored), or, outside git, every file but the build trees.  A build whose
# inputs (those files' contents, DEB_BUILD_OPTIONS) have not changed since
# the last one is not redone: it says "up to date".  DEB_BUILD_OPTIONS
# defaults to nocheck: `make check` is the test suite (debian/rules).
set -eu
out=${1:-build/deb}
scripts/deps.sh ensure deb || exit 1

opts=${DEB_BUILD_OPTIONS:-nocheck}
case " $opts " in *" parallel="*) ;; *) opts="$opts parallel=$(nproc 2>/dev/null || echo 1)" ;; esac

files() {
	if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
		git ls-files --cached --others --exclude-standard
	else
		find . \( -name 'build*' -o -name .git \) -prune -o -type f -print | sed 's|^\./||'
	fi | while IFS= read -r f; do
		# A tracked file deleted in the working tree is not copied.
		[ -f "$f" ] && printf '%s\n' "$f"
	done | LC_ALL=C sort
}

key=$( { echo "$opts"; files | tr '\n' '\0' | xargs -0 sha256sum; } | sha256sum | cut -d' ' -f1)
if [ -f "$out/.key" ] && [ "$(cat "$out/.key")" = "$key" ] && ls "$out"/*.deb >/dev/null 2>&1; then
	echo "deb: up to date in $out"
	ls -l "$out"/*.deb
	exit 0
fi

ver=$(dpkg-parsechangelog -S Version)
rm -rf "$out"
src="$out/src/xflowtop-$ver"
mkdir -p "$src"
files | tar -cf - -T - | tar -xf - -C "$src"

# The packages are built by their own make, not by the one that ran us,
# and never sanitized: `make SAN=... check` runs the lintian test with SAN
# in the environment, where the Makefile would take it (and the key above
# would then call sanitized packages up to date for make xen-check).
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES BUILD XFLOW_DEPS_DONE SAN
echo "deb: building in $src (DEB_BUILD_OPTIONS=$opts; log in $out/build.log)"
start=$(date +%s)
if ! (cd "$src" && DEB_BUILD_OPTIONS="$opts" dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1; then
	tail -40 "$out/build.log"
	echo "deb: dpkg-buildpackage failed (the whole log: $out/build.log)" >&2
	exit 1
fi
mv "$out"/src/*.deb "$out"/src/*.buildinfo "$out"/src/*.changes "$out"/
rm -rf "$out/src"
echo "$key" >"$out/.key"
echo "deb: built in $(( $(date +%s) - start ))s:"
ls -l "$out"/*.deb
