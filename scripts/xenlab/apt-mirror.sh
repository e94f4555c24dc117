#!/bin/sh
# Print the Debian archive this machine's apt uses for SUITE (default
# bookworm), so debootstrap fetches from where the machine is allowed to:
# never a hard-coded host.  Reads /etc/apt/sources.list (one-line form),
# sources.list.d/*.list and sources.list.d/*.sources (deb822), in apt's
# order, honouring "Enabled: no".  Prints "URI KEYRING" (KEYRING may be
# "-"); exits 1 when no source serves a main suite.
#
# A source for SUITE itself wins.  Otherwise the first one for the
# machine's own main suite (say trixie): the same archive serves bookworm.
set -u
SUITE=${1:-bookworm}
ETC=${APT_ETC:-/etc/apt}

# One "URI SUITE KEYRING" line per suite of every enabled deb source.
entries() {
	for f in "$ETC/sources.list" "$ETC"/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		# deb [opts] URI SUITE COMPONENT...
		sed 's/#.*//' "$f" | awk '$1 == "deb" {
			k = "-"; i = 2
			if ($2 ~ /^\[/) {
				for (; i <= NF; i++) {
					if ($i ~ /^\[?signed-by=/) { k = $i; sub(/^\[?signed-by=/, "", k); sub(/\]$/, "", k) }
					if ($i ~ /\]$/) break
				}
				i++
			}
			print $i, $(i + 1), k
		}'
	done
	for f in "$ETC"/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		# Stanzas are separated by blank lines; fields may not repeat.
		awk 'function flush() {
				if (types ~ /(^| )deb( |$)/ && tolower(enabled) != "no")
					for (i = 1; i <= nu; i++) for (j = 1; j <= ns; j++) print u[i], s[j], key
				types = ""; enabled = ""; key = "-"; nu = 0; ns = 0
			}
			BEGIN { key = "-" }
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			{ f = tolower($1) }
			f == "types:" { types = $0; sub(/^[^:]*:[ \t]*/, "", types) }
			f == "enabled:" { enabled = $2 }
			f == "signed-by:" { key = ($2 ~ /^\//) ? $2 : "-" }
			f == "uris:" { for (i = 2; i <= NF; i++) u[++nu] = $i }
			f == "suites:" { for (i = 2; i <= NF; i++) s[++ns] = $i }
			END { flush() }' "$f"
	done
}

all=$(entries)
pick=$(printf '%s\n' "$all" | awk -v s="$SUITE" '$2 == s { print $1, $3; exit }')
if [ -z "$pick" ]; then
	own=$(. /etc/os-release 2>/dev/null; echo "${VERSION_CODENAME:-}")
	[ -n "$own" ] && pick=$(printf '%s\n' "$all" | awk -v s="$own" '$2 == s { print $1, $3; exit }')
fi
[ -n "$pick" ] || exit 1
echo "$pick"
