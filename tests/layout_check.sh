#!/bin/sh
# The folder rule (../shared/CONVENTIONS.md practice 15, HACKING.md): a
# folder may use only the folders its module.mk lists.  Each top-level
# folder F with a module.mk says, on one line each:
#   F_USES := G H ...   the folders F's files may include from (besides F
#                       itself and include/'s ABI headers, "xflow/...");
#   F_PUBLIC := F/x.h   when given, the only headers of F that other
#                       folders may include (its other headers are F's own).
# Every #include "G/..." in F's .c, .h and .S files, sub-folders included,
# must name F itself, or a G in F_USES (and a header in G_PUBLIC when G has
# one).  tests/ may include anything.  Headers keep one include-guard
# style (below).  Each violation is printed with the
# file, the line, the include and the rule it breaks; the exit status is 1
# when there is any.
#
#   tests/layout_check.sh            check this tree, then --self-test
#                                    (what `make check` runs)
#   tests/layout_check.sh ROOT       check the tree at ROOT
#   tests/layout_check.sh --self-test
#                                    check a copy of this tree with
#                                    cross-boundary includes planted in it:
#                                    the check must fail and name each
set -u

mk_var() { # folder, variable suffix: the value on its one line in module.mk
	sed -n "s/^$1_$2[[:space:]]*:\{0,1\}=[[:space:]]*//p" "$root/$1/module.mk" | head -1
}

check() {
	root=$1
	folders=$(cd "$root" && for m in */module.mk; do [ "${m%/module.mk}" = tests ] || echo "${m%/module.mk}"; done)
	bad=0
	for f in $folders; do
		uses=$(mk_var "$f" USES)
		out=$(cd "$root" && find "$f" -type f \( -name '*.c' -o -name '*.h' -o -name '*.S' \) -print |
			sort | xargs grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/' /dev/null |
			sed 's/^\([^:]*\):\([0-9]*\):[^"]*"\([^"]*\)".*/\1 \2 \3/')
		[ -n "$out" ] || continue
		while read -r file line inc; do
			g=${inc%%/*}
			[ "$g" = xflow ] && continue
			[ "$g" = "$f" ] && continue
			# Not a folder of this tree: a path under an -iquote directory
			# (sim/'s "linux/...") or a generated header's.
			[ -d "$root/$g" ] || continue
			case " $uses " in
			*" $g "*)
				if [ -f "$root/$g/module.mk" ]; then
					public=$(mk_var "$g" PUBLIC)
					if [ -n "$public" ]; then
						case " $public " in
						*" $inc "*) ;;
						*)
							echo "$file:$line: includes \"$inc\": other folders may include only" \
								"$public of $g/ ($g/module.mk: ${g}_PUBLIC)"
							bad=1 ;;
						esac
					fi
				fi ;;
			*)
				echo "$file:$line: includes \"$inc\": $f/ may use ${uses:+only }${uses:-no other folder}" \
					"besides include/xflow/ ($f/module.mk: ${f}_USES := $uses)"
				bad=1 ;;
			esac
		done <<EOT
$out
EOT
	done
	# One include-guard style: XFLOW_ and the header's path below the
	# root (include/'s below include/), e.g. guestrt/hook/hook.h:
	# XFLOW_GUESTRT_HOOK_HOOK_H, include/xflow/plan.h: XFLOW_PLAN_H.
	hdrs=$(cd "$root" && { for f in $folders; do [ "$f" = sim ] || find "$f" -name '*.h'; done
		[ -d include ] && find include -name '*.h'; } | sort)
	for h in $hdrs; do
		want=$(echo "${h#include/}" | sed 's/\.h$//; s/[^A-Za-z0-9]/_/g' | tr a-z A-Z)
		case $want in XFLOW_*) ;; *) want=XFLOW_$want ;; esac
		want=${want}_H
		got=$(sed -n 's/^#ifndef[[:space:]]*\([A-Za-z0-9_]*\).*/\1/p' "$root/$h" | head -1)
		if [ "$got" != "$want" ]; then
			echo "$h: include guard ${got:-missing}, not $want (HACKING.md: one include-guard style)"
			bad=1
		fi
	done
	return $bad
}

self_test() {
	tmp=$(mktemp -d) || exit 1
	trap 'rm -rf "$tmp"' EXIT
	for m in */module.mk; do
		f=${m%/module.mk}
		[ "$f" = tests ] && continue
		find "$f" -type f \( -name '*.c' -o -name '*.h' -o -name '*.S' -o -name module.mk \) -print
	done | tar -cf - -T - | tar -xf - -C "$tmp"
	if ! check "$tmp" >"$tmp/clean.out"; then
		echo "FAIL: the copy fails before anything is planted:"; cat "$tmp/clean.out"; exit 1
	fi
	# A folder that may not use another: common/ below everything.
	printf '#include "tui/app.h"\n' >>"$tmp/common/clock.c"
	# A folder that may, through a header that is not public.
	printf '#include "weaver/jp/joinpoint.h"\n' >>"$tmp/tui/app.c"
	if check "$tmp" >"$tmp/planted.out"; then
		echo "FAIL: the planted includes were not caught"; exit 1
	fi
	for want in 'common/clock.c:[0-9]*: includes "tui/app.h": common/ may use no other folder' 'common_USES' \
		'tui/app.c:[0-9]*: includes "weaver/jp/joinpoint.h": other folders may include only weaver/weave.h' \
		'weaver_PUBLIC'; do
		grep -q "$want" "$tmp/planted.out" || { echo "FAIL: no '$want' in:"; cat "$tmp/planted.out"; exit 1; }
	done
	[ "$(wc -l <"$tmp/planted.out")" -eq 2 ] || { echo "FAIL: more than the two planted:"; cat "$tmp/planted.out"; exit 1; }
	echo "self-test: both planted includes caught:"
	sed 's/^/  /' "$tmp/planted.out"
}

case ${1:-} in
--self-test) self_test ;;
'') check . || exit 1
    echo "layout: every include keeps to its folder's USES"
    self_test ;;
*) check "$1" ;;
esac
