#!/bin/sh
# The Debian packages (make deb, debian/): built by scripts/deb.sh, or its
# last build reused when the tree has not changed since; lintian finds no
# error and no warning that debian/*.lintian-overrides does not explain;
# each package holds the files it must, with resolved Depends; the conffile;
# the exporter is not enabled and the agent is; systemd-analyze finds
# nothing to say of the units; the packaged config parses; xflowtop --demo
# runs from the packages' file tree; Build-Depends are packages
# scripts/deps.sh installs.  Skips (77) where debhelper, dpkg-dev or lintian
# cannot be had.
set -u
cd "$(dirname "$0")/../.."
out=build/deb
tmp=$(mktemp -d /tmp/xflow-deb-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

if ! scripts/deps.sh ensure deb >"$tmp/deps.log" 2>&1; then
	cat "$tmp/deps.log"
	echo "SKIP: the packaging tools cannot be had here ($(scripts/deps.sh list deb))"
	exit 77
fi

start=$(date +%s)
scripts/deb.sh "$out" || fail "make deb failed"
echo "packages: $(( $(date +%s) - start ))s"
ver=$(dpkg-parsechangelog -S Version)
deb() { echo "$out/${1}_${ver}_amd64.deb"; }
for p in xflowtop xflow-agent xflowtop-sim; do
	[ -f "$(deb $p)" ] || fail "no $(deb $p)"
done

# --- lintian: no error; a warning is either fixed or overridden with its
# reason (the overrides' comments).
changes=$(ls "$out"/xflowtop_*.changes) || fail "no .changes in $out"
lintian --fail-on error,warning "$changes" >"$tmp/lintian.out" 2>&1
rc=$?
grep -v 'running with root privileges' "$tmp/lintian.out"
[ $rc -eq 0 ] || fail "lintian: errors or warnings (exit $rc)"
echo "lintian: clean ($(lintian --version))"

# --- the files each package must hold.
has() { # package path...
	p=$1; shift
	dpkg-deb -c "$(deb "$p")" | awk '{print $6}' | sed 's|^\./|/|' >"$tmp/$p.files"
	for f in "$@"; do
		grep -qx "$f" "$tmp/$p.files" || fail "$p: $f is not in the package"
	done
}
has xflowtop /usr/bin/xflowtop /usr/bin/xflowc /usr/bin/xflow-xentrace \
	/etc/xflowtop/xflowtop.conf /lib/systemd/system/xflowtop-exporter.service \
	/usr/share/man/man1/xflowtop.1.gz /usr/share/man/man1/xflowc.1.gz \
	/usr/share/man/man5/xflow.5.gz /usr/share/man/man5/xflowtop.conf.5.gz \
	/usr/share/xflowtop/flows/netflow.xml /usr/share/xflowtop/flows/blkflow.xml \
	/usr/share/xflowtop/flows/kernel/xen_net.xml /usr/share/xflowtop/flows/kernel/xen_blk.xml \
	/usr/share/xflowtop/flows/kernel/net.xml /usr/share/xflowtop/flows/kernel/net_tp.xml \
	/usr/share/doc/xflowtop/copyright
has xflow-agent /usr/bin/xflow-agent /usr/share/man/man8/xflow-agent.8.gz \
	/lib/systemd/system/xflow-agent.service /usr/libexec/xflow-agent/xflow-agent-start
has xflowtop-sim /usr/bin/xensim /usr/lib/xflowtop/sim/xensim /usr/lib/xflowtop/sim/linux0 \
	/usr/lib/xflowtop/sim/linuxU /usr/lib/xflowtop/sim/truth-check
# The guest package is the agent alone (its BPF programs are embedded
# skeletons, not files); the simulated host is not in the dom0 package.
grep -v -e '^/$' -e '/$' "$tmp/xflow-agent.files" | grep -v -e '^/usr/share/doc/' \
	-e '^/usr/bin/xflow-agent$' -e '^/usr/share/man/man8/xflow-agent.8.gz$' \
	-e '^/lib/systemd/system/xflow-agent.service$' -e '^/usr/libexec/xflow-agent/' \
	&& fail "xflow-agent: files other than the agent's"
grep -q -e xensim -e /sim/ "$tmp/xflowtop.files" && fail "xflowtop: holds the simulated host"

# --- control fields: shlibs resolved, the versions tied, the conffile.
for p in xflowtop xflow-agent xflowtop-sim; do
	dpkg-deb -f "$(deb $p)" Package Version Architecture Depends >"$tmp/f" || fail "$p: dpkg-deb -f"
	grep -qx "Package: $p" "$tmp/f" || fail "$p: Package field"
	grep -qx "Architecture: amd64" "$tmp/f" || fail "$p: Architecture field"
	grep -q '^Depends:.*libc6' "$tmp/f" || fail "$p: Depends has no shared library: $(cat "$tmp/f")"
	grep -q '\${' "$tmp/f" && fail "$p: an unresolved substitution: $(cat "$tmp/f")"
done
dpkg-deb -f "$(deb xflow-agent)" Depends | grep -q libxen || fail "xflow-agent: no libxen in Depends"
# Never sanitized, whatever SAN the test ran under (make SAN=... check):
# an ASan build in a package would need libasan on every host.
for p in xflowtop xflow-agent xflowtop-sim; do
	dpkg-deb -f "$(deb $p)" Depends | grep -qE 'libasan|libubsan' &&
		fail "$p: a sanitized build was packaged ($(dpkg-deb -f "$(deb $p)" Depends))"
done
dpkg-deb -f "$(deb xflowtop-sim)" Depends | grep -q "xflow-agent (= $ver)" ||
	fail "xflowtop-sim: not tied to xflow-agent $ver"
dpkg-deb -I "$(deb xflowtop)" conffiles | grep -qx /etc/xflowtop/xflowtop.conf ||
	fail "xflowtop: /etc/xflowtop/xflowtop.conf is not a conffile"
# Installed, not enabled: the exporter's postinst enables it again only
# where the administrator had (dh_installsystemd --no-enable asks
# debian-installed first), and starts nothing; the agent's enables and
# starts it, and its prerm stops it.
dpkg-deb -e "$(deb xflowtop)" "$tmp/ctl-top"
dpkg-deb -e "$(deb xflow-agent)" "$tmp/ctl-agent"
grep -q "debian-installed 'xflowtop-exporter.service'" "$tmp/ctl-top/postinst" &&
	! grep -q "deb-systemd-invoke.*xflowtop-exporter" "$tmp/ctl-top/postinst" ||
	fail "xflowtop: the exporter is enabled or started on installation"
grep -q "enable 'xflow-agent.service'" "$tmp/ctl-agent/postinst" &&
	! grep -q "debian-installed 'xflow-agent.service'" "$tmp/ctl-agent/postinst" ||
	fail "xflow-agent: the unit is not enabled on installation"
grep -q "stop 'xflow-agent.service'" "$tmp/ctl-agent/prerm" || fail "xflow-agent: removing does not stop it"
# Without systemd, removing stops the agents of the package's binary (the
# Xen lab's purge test runs it: scripts/xenlab/dom0-phase-c.sh).
grep -q 'start-stop-daemon --stop .*--exec /usr/bin/xflow-agent' "$tmp/ctl-agent/prerm" ||
	fail "xflow-agent: without systemd, removing does not stop the agent"
sh -n "$tmp/ctl-agent/prerm" || fail "xflow-agent: prerm: sh -n"
echo "files and fields: as expected"

# --- the three packages' files in one tree.
root=$tmp/root
mkdir -p "$root"
for p in xflowtop xflow-agent xflowtop-sim; do dpkg-deb -x "$(deb $p)" "$root"; done
sh -n "$root/usr/libexec/xflow-agent/xflow-agent-start" || fail "xflow-agent-start: sh -n"

# The units, against this machine's systemd units and the packages' files
# (--root), where systemd-analyze is: any word from it is a failure (an
# unknown key or a bad assignment is only a warning to it).
if command -v systemd-analyze >/dev/null 2>&1 && [ -d /lib/systemd/system ]; then
	cp -a /lib/systemd/system/. "$root/lib/systemd/system/"
	systemd-analyze verify --man=no --root="$root" xflow-agent.service xflowtop-exporter.service \
		>"$tmp/verify" 2>&1
	rc=$?
	cat "$tmp/verify"
	[ $rc -eq 0 ] && [ ! -s "$tmp/verify" ] || fail "systemd-analyze verify (exit $rc)"
	echo "units: systemd-analyze verify is silent"
else
	echo "units: no systemd-analyze here, not verified"
fi

# The packaged configuration parses (xflowtop reads the file before it
# lists the collectors).
"$root/usr/bin/xflowtop" --config "$root/etc/xflowtop/xflowtop.conf" --list-collectors >"$tmp/lc" 2>&1 ||
	{ cat "$tmp/lc"; fail "the packaged xflowtop.conf does not parse"; }

# The simulated host from the packages' layout: xflowtop finds xensim and
# the agent beside itself and netflow.xml in share/, and the domains'
# DWARF is still there to weave by.
timeout 60 "$root/usr/bin/xflowtop" --demo -b -n 2 >"$tmp/demo" 2>&1 || { tail -20 "$tmp/demo"; fail "xflowtop --demo from the packages"; }
grep -q 'linuxU:.*linux0:' "$tmp/demo" || { tail -30 "$tmp/demo"; fail "demo: no hop from linuxU to linux0"; }
echo "demo: the packaged xflowtop --demo shows linuxU -> linux0 hops"

# --- Build-Depends: each one is a package scripts/deps.sh installs, so
# the Makefile's own install step brings what the package build needs.
deps=" $(scripts/deps.sh list) "
bd=$(sed -n '/^Build-Depends:/,/^[A-Z]/p' debian/control | sed '$d' | sed 's/^Build-Depends://' |
	tr ',' '\n' | sed 's/[[(<].*//; s/[[:space:]]//g' | grep -v '^$' | grep -v '^debhelper-compat$')
for b in $bd; do
	case $deps in *" $b "*) ;; *) fail "Build-Depends: $b is not in scripts/deps.sh" ;; esac
done
echo "Build-Depends: $(echo $bd) (all in scripts/deps.sh)"
ls -l "$out"/*.deb
echo "packages: checked in $(( $(date +%s) - start ))s"
