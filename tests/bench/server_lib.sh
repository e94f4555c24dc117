# What the real-server benchmarks share (sourced, not run:
# tests/bench/real_server.sh, tests/bench/nginx_server.sh).  The sourcing
# script sets NAME (its word on each line), BUILD and CACHE first.

skip() { echo "SKIPPED: $*"; exit 0; }
fail() { echo "FAIL: $*"; exit 1; }
say() { echo "$NAME: $*"; }

# The programs built, a C compiler, and CACHE made absolute.
bench_need() {
	for b in xflowc xflow-agent xflowtop; do
		[ -x "$BUILD/bin/$b" ] || fail "missing $BUILD/bin/$b (make first)"
	done
	command -v cc >/dev/null || skip "no C compiler"
	mkdir -p "$CACHE" || fail "cannot create $CACHE"
	CACHE=$(cd "$CACHE" && pwd)
}

median() { echo "$@" | tr ' ' '\n' | grep . | sort -n | awk '{v[NR]=$1} END {print NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

# Each traced run (T_ALL) against the mean of the untraced runs (U_ALL,
# one more) on either side of it: the machine's other load drifts during
# a run, and a neighbour shares more of it than the runs' median does.
pair_ratios() {
	echo "$U_ALL" "|" "$T_ALL" | awk '{
		for (i = 1; $i != "|"; i++) u[i] = $i
		for (k = i + 1; k <= NF; k++) { j = k - i; printf "%.3f ", $k / ((u[j] + u[j + 1]) / 2) } }'
}

# Debian's source of a package:
#
#   debsrc_fetch PACKAGE CACHE MARKER
#
# sets SRC to the unpacked tree under CACHE/src (the directory
# PACKAGE-*/ that holds MARKER), fetching it once with `apt-get source`
# through a deb-src list of our own, derived from the machine's apt
# sources, in private directories: the machine's apt configuration is not
# changed.  When the newest version's files are not in the archive (a
# mirror behind its index), the older versions it lists are tried, newest
# first.  What cannot be had calls skip.

debsrc_dir() { # PACKAGE CACHE MARKER
	for d in "$2"/src/"$1"-*/; do [ -f "$d/$3" ] && { echo "${d%/}"; return; }; done
}

debsrc_fetch() {
	SRC=$(debsrc_dir "$1" "$2" "$3")
	[ -n "$SRC" ] && return 0
	command -v apt-get >/dev/null && command -v dpkg-source >/dev/null ||
		skip "no apt-get or dpkg-source to fetch $1's source"
	A="$2/apt"
	rm -rf "$A" && mkdir -p "$A/lists/partial" "$A/parts" "$2/src" || fail "cannot create $A"
	# deb-src twins of the machine's deb entries, one-line and deb822 forms.
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] && sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f"
	done >"$A/parts/src.list"
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] && sed 's/^Types:.*/Types: deb-src/' "$f" && echo
	done >"$A/parts/src.sources"
	[ -s "$A/parts/src.list" ] || rm -f "$A/parts/src.list"
	[ -s "$A/parts/src.sources" ] || rm -f "$A/parts/src.sources"
	APT="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$A/parts -o Dir::State::Lists=$A/lists
	     -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root"
	# A source that answers no deb-src only warns; what matters is below.
	# shellcheck disable=SC2086
	apt-get -q $APT update >"$2/apt-update.log" 2>&1
	# shellcheck disable=SC2086
	versions=$(apt-cache $APT showsrc "$1" 2>/dev/null | sed -n 's/^Version: //p' | sort -rV | uniq)
	[ -n "$versions" ] || skip "no deb-src lists $1 (none reachable?); see $2/apt-update.log"
	: >"$2/apt-source.log"
	for v in $versions; do
		# shellcheck disable=SC2086
		(cd "$2/src" && apt-get -q $APT source "$1=$v") >>"$2/apt-source.log" 2>&1 && break
	done
	SRC=$(debsrc_dir "$1" "$2" "$3")
	[ -n "$SRC" ] || skip "apt-get source $1 gave no tree (tried $(echo $versions)); see $2/apt-source.log"
}
