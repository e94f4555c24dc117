#!/bin/sh
# The man pages agree with each other and with what the programs write
# (issue 26 item 9):
#   - local_var() takes the program's variable first, then the binding
#     (xflow(5)); no page writes it the other way round;
#   - each option of xflow-agent(8) and xflowtop(1) is described once in
#     its OPTIONS;
#   - every key of xflowtop's JSON (tui/report.c) is in xflowtop(1), but
#     those of the trace events of a snapshot's .trace.json, whose format is
#     Chrome's (documented there by name).
fail=0
say() { echo "FAIL: $*"; fail=1; }

for m in man/man*/*.[0-9]; do
	grep -n 'local_var( *v *[,"]' "$m" | while IFS= read -r l; do
		echo "FAIL: $m:$l: local_var(v, name), where xflow(5) says local_var(name, v)"
	done | grep . && fail=1
done

for m in man/man8/xflow-agent.8 man/man1/xflowtop.1; do
	dups=$(awk '/^\.SH OPTIONS/ { on = 1; next } /^\.SH/ { on = 0 }
		on && prev == ".TP" && /^\.B/ {
			n = split($0, w, /[ ,"]+/)
			for (i = 2; i <= n; i++) if (w[i] ~ /^\\-\\-[a-z]/) { print w[i]; break }
		}
		{ prev = $0 }' "$m" | sort | uniq -d)
	[ -z "$dups" ] || say "$m: described twice in OPTIONS: $dups"
done

trace_keys="ph ts dur pid tid cat bp args name id s elapsed_us"
for k in $(grep -o 'JU("[a-z_0-9]*"\|json_key([a-z&]*, "[a-z_0-9]*"' tui/report.c |
	   sed 's/.*"\([a-z_0-9]*\)"/\1/' | sort -u); do
	case " $trace_keys " in *" $k "*) continue ;; esac
	grep -qw -- "$k" man/man1/xflowtop.1 || say "xflowtop(1) does not document the JSON key $k"
done
[ $fail -eq 0 ] && echo "the man pages agree"
exit $fail
