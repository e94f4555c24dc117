#!/bin/sh
# The simulated Xen libraries (sim/xenlibs) are drop-in replacements: the
# same sonames and exactly the same exported symbols, with the same
# versions, as Debian's; nothing else leaks out of them.  And simxen, their
# toolstack, answers as documented.
. "$(dirname "$0")/lib.sh"
DIR=$BUILD/sim/xenlibs
SYS=/usr/lib/x86_64-linux-gnu
[ -x "$DIR/simxen" ] || { echo "missing $DIR (run make xenlibs)"; exit 77; }
command -v objdump >/dev/null || { echo "no objdump"; exit 77; }

exports() {
	objdump -T "$1" | awk '$2 == "g" && $4 != "*ABS*" { print $6, $7 }' | sort
}

for lib in libxenstore.so.4 libxenevtchn.so.1 libxengnttab.so.1; do
	[ -e "$SYS/$lib" ] || { echo "no $SYS/$lib (libxen-dev)"; exit 77; }
	soname=$(objdump -p "$DIR/$lib" | awk '$1 == "SONAME" { print $2 }')
	[ "$soname" = "$lib" ] || fail "$lib: soname $soname"
	exports "$SYS/$lib" >"$TMP/want"
	exports "$DIR/$lib" >"$TMP/got"
	diff -u "$TMP/want" "$TMP/got" || fail "$lib: exports differ from Debian's"
	objdump -p "$DIR/$lib" | grep -q 'NEEDED.*libxen' && fail "$lib needs a real Xen library"
	echo "ok $lib: $(wc -l <"$TMP/got") symbols as Debian's"
done

# libxenvchan's needs are all met, with the versions it asks for.
objdump -T "$SYS/libxenvchan.so.4.17" | awk '$4 == "*UND*" && $5 ~ /^VERS_/ { print $5, $6 }' |
	sort >"$TMP/needs"
for lib in libxenstore.so.4 libxenevtchn.so.1 libxengnttab.so.1; do exports "$DIR/$lib"; done |
	sort >"$TMP/have"
missing=$(comm -23 "$TMP/needs" "$TMP/have")
[ -z "$missing" ] || fail "libxenvchan needs what we lack: $missing"
LD_LIBRARY_PATH=$DIR ldd "$SYS/libxenvchan.so.4.17" | grep -q "$DIR/libxenstore.so.4" ||
	fail "libxenvchan does not load the simulation with LD_LIBRARY_PATH"

S="$DIR/simxen"
ST=$TMP/state
"$S" --help | grep -q 'simulated Xen' || fail "help does not say simulation"
"$S" >/dev/null 2>&1; [ $? -eq 2 ] || fail "no arguments: want exit 2"
"$S" "$ST" domain-create 5 web || fail "domain-create"
"$S" "$ST" domain-create 5 web 2>/dev/null && fail "domain-create twice"
[ "$("$S" "$ST" domains)" = "0 Domain-0
5 web" ] || fail "domains: $("$S" "$ST" domains)"
[ "$("$S" "$ST" read /local/domain/5/name)" = web ] || fail "name"
[ "$("$S" "$ST" perms /local/domain/5/data)" = n5 ] || fail "data perms"
[ "$("$S" "$ST" ls /local/domain/5 | tr '\n' ' ')" = "data domid name " ] || fail "ls"
"$S" "$ST" write rel value || fail "write"
[ "$(cat "$ST/store/local/domain/0/rel/.value")" = value ] || fail "layout: .value"
# A hostile guest scribbles straight into the layout.
mkdir "$ST/store/local/domain/5/data/forged" && printf evil >"$ST/store/local/domain/5/data/forged/.value"
[ "$("$S" "$ST" read /local/domain/5/data/forged)" = evil ] || fail "a scribbled node"
[ "$("$S" "$ST" perms /local/domain/5/data/forged)" = n5 ] || fail "inherited perms"
"$S" "$ST" domain-destroy 5 || fail "domain-destroy"
"$S" "$ST" read /local/domain/5/name 2>/dev/null && fail "domain 5 still in the store"
"$S" "$ST" domain-destroy 0 2>/dev/null && fail "destroyed dom0"
echo "ok simxen"
