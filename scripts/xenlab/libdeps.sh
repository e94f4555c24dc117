#!/bin/sh
# libdeps.sh POOL FILE...: print the sonames FILEs need, directly or
# through each other, one a line (the ELF interpreter too), each found in
# POOL: a flat directory of the dom0 image's runtime libraries, built once
# with the image.  A library missing from POOL is named on stderr and makes
# the exit status 1: the project then needs a runtime package that
# scripts/xenlab/packages does not list.
#
# readelf rather than ldd: the files were built on the host and are checked
# against the image's libraries, not the host's.
set -u
pool=$1
shift
seen=" "
todo=""
for f in "$@"; do
	todo="$todo $f"
	interp=$(readelf -l "$f" 2>/dev/null | sed -n 's/.*interpreter: \(.*\)]$/\1/p')
	interp=${interp##*/}
	case "$seen" in *" $interp "*) continue ;; esac
	if [ -n "$interp" ]; then
		todo="$todo $pool/$interp"
		seen="$seen$interp "
	fi
done
rc=0
while [ -n "${todo# }" ]; do
	set -- $todo
	f=$1
	shift
	todo="$*"
	[ -f "$f" ] || { echo "libdeps: $f: not found" >&2; rc=1; continue; }
	for so in $(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]$/\1/p'); do
		case "$seen" in *" $so "*) continue ;; esac
		seen="$seen$so "
		if [ -f "$pool/$so" ]; then
			todo="$todo $pool/$so"
		else
			echo "libdeps: $so (needed by ${f##*/}) is not in the image" >&2
			rc=1
		fi
	done
done
for so in $seen; do echo "$so"; done
exit $rc
