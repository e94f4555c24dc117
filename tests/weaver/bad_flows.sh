#!/bin/sh
# Every flows/bad/NAME.xml must fail `xflowc check` with exit 1 and print
# exactly the error lines of flows/bad/NAME.expected (file:line:col: error:
# message), no more and no fewer; the shipped flows and the paper's figures
# must check clean.
set -u
XFLOWC=${BUILD:-build}/bin/xflowc
[ -x "$XFLOWC" ] || { echo "no $XFLOWC"; exit 1; }
fail=0
for x in flows/bad/*.xml; do
	exp=${x%.xml}.expected
	[ -f "$exp" ] || { echo "FAIL $x: no $exp"; fail=1; continue; }
	out=$("$XFLOWC" check "$x" 2>&1 >/dev/null)
	rc=$?
	got=$(printf '%s\n' "$out" | grep -E '^[^ ]+:[0-9]+:[0-9]+: error:')
	if [ "$rc" -ne 1 ]; then
		echo "FAIL $x: exit $rc, want 1"; printf '%s\n' "$out"; fail=1
	elif [ "$got" != "$(cat "$exp")" ]; then
		echo "FAIL $x: errors differ"; echo "--- want"; cat "$exp"; echo "--- got"
		printf '%s\n' "$got"; fail=1
	fi
done
for x in flows/*.xml flows/kernel/*.xml tests/weaver/figures/*.xml; do
	"$XFLOWC" check "$x" || { echo "FAIL $x does not check clean"; fail=1; }
done
# Usage errors exit 2; help exits 0.
"$XFLOWC" >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL no arguments: want exit 2"; fail=1; }
"$XFLOWC" check --bogus flows/netflow.xml >/dev/null 2>&1; [ $? -eq 2 ] || { echo "FAIL bad option: want 2"; fail=1; }
"$XFLOWC" --help | grep -q 'usage: xflowc check' || { echo "FAIL --help"; fail=1; }
# -Werror turns the -Wall warning about the 12-bit field into an error.
"$XFLOWC" check -Wall -Werror flows/netflow.xml >/dev/null 2>&1; [ $? -eq 1 ] || { echo "FAIL -Werror"; fail=1; }
[ $fail -eq 0 ] && echo "all bad flows give their expected diagnostics"
exit $fail
