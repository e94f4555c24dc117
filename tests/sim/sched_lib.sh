# Helpers for the scheduler model's tests (sourced after lib.sh).
XFLOW_XENTRACE=$BUILD/bin/xflow-xentrace
# xenalyze ships in Debian's xen-utils-common; the comparison is skipped
# without it (XENALYZE=path picks one that is not on PATH).
XENALYZE=${XENALYZE:-$(command -v xenalyze 2>/dev/null || true)}

need_xentrace_reader() {
	[ -x "$XFLOW_XENTRACE" ] || { echo "missing $XFLOW_XENTRACE (run make)"; exit 77; }
}

# Reads trace $1 with the project's reader: exit 0, no diagnostic, no record
# skipped or unknown.  Leaves its summary in $1.summary.
check_trace() {
	"$XFLOW_XENTRACE" --cpu-hz 2.4G --extras "$1" > "$1.summary" 2> "$1.err" ||
		{ cat "$1.err"; fail "xflow-xentrace could not read $1"; }
	[ ! -s "$1.err" ] || { cat "$1.err"; fail "xflow-xentrace complained about $1"; }
	grep -q '^records [0-9]*, skipped 0, unknown 0, .*(0 records lost)' "$1.summary" ||
		{ grep '^records' "$1.summary"; fail "records of $1 skipped, unknown or lost"; }
	if [ -n "$XENALYZE" ]; then
		# xenalyze's summary of the same file, line for line.
		"$XENALYZE" --cpu-hz 2.4G --summary "$1" 2>/dev/null | sed -n '/^Total time/,$p' > "$1.xenalyze"
		sed -n '/^Total time/,/^--- xflow-xentrace extras/p' "$1.summary" | sed '$d' > "$1.ours"
		cmp -s "$1.xenalyze" "$1.ours" ||
			{ diff "$1.xenalyze" "$1.ours" | head; fail "xenalyze --summary disagrees on $1"; }
		echo "xenalyze --summary agrees with xflow-xentrace on $(basename "$1")"
	fi
}

# The records of trace $1 on the truth $2's clock, one a line in $3:
#   ns cpu kind fields...
# kinds: rs DOM VCPU FROM TO; wake DOM VCPU; block DOM VCPU;
# switch PREVDOM PREVVCPU NEXTDOM NEXTVCPU; hc OP DOM VCPU (the vCPU that
# ran there); irq IRQ NS (Xen handled it for NS, until the record's time).  The dump counts from the first record; the first runstate
# change ends a vCPU's first interval, whose end the truth has.
trace_events() {
	"$XFLOW_XENTRACE" --cpu-hz 2.4G --dump "$1" > "$3.dump" || fail "xflow-xentrace --dump $1"
	# (Plain awk has no hex constants: 33 is 0x21 (runstate changes),
	# 163844/163846/163850 WAKE/BLOCK/SWITCH, 2101261 PV_HYPERCALL_V2,
	# 8396808 HW_IRQ_HANDLED, whose TSCs are low words: their difference
	# is taken mod 2^32.)
	awk -F'\t' '
		FNR == NR {
			if ($1 == "#xentrace") ns0 = $4
			if ($1 == "#sched" && $4 == "blocked") first[$2 "." $3] = first[$2 "." $3] "" $6 " " $5 ","
			next
		}
		function hex(s,  i, c, v) { v = 0; s = tolower(s)
			for (i = 1; i <= length(s); i++) { c = index("0123456789abcdef", substr(s, i, 1)) - 1; v = v * 16 + c }
			return v }
		{
			t = $0; sub(/^ +/, "", t); split(t, f, / +/)
			ns = f[1] * 1e9; cpu = substr(f[2], 4); ev = hex(f[3])
			if (!have_off && int(ev / 4096) == 33 && ev % 16 == 1) {
				w = hex(f[4]); key = int(w / 65536) "." (w % 65536)
				n = split(first[key], c, ",")
				for (i = 1; i < n; i++) { split(c[i], se, " "); if (se[2] == ns0) end0 = se[1] }
				off = end0 - ns; have_off = 1
			}
			ns += off
			if (int(ev / 4096) == 33 && ev % 16 == 1) {
				w = hex(f[4]); d = int(w / 65536); v = w % 65536
				from = int(ev / 256) % 16; to = int(ev / 16) % 16
				if (to == 0) cur[cpu] = d " " v
				printf "%.0f %s rs %d %d %d %d\n", ns, cpu, d, v, from, to
			} else if (ev == 163844 || ev == 163846) {
				printf "%.0f %s %s %d %d\n", ns, cpu, ev == 163844 ? "wake" : "block", hex(f[4]), hex(f[5])
			} else if (ev == 163850) {
				printf "%.0f %s switch %d %d %d %d\n", ns, cpu, hex(f[4]), hex(f[5]), hex(f[6]), hex(f[7])
			} else if (ev == 2101261) {
				printf "%.0f %s hc %d %s\n", ns, cpu, hex(f[4]) % 1048576, cur[cpu]
			} else if (ev == 8396808) {
				cy = hex(f[6]) - hex(f[5]); if (cy < 0) cy += 4294967296
				printf "%.0f %s irq %d %.0f\n", ns, cpu, hex(f[4]), cy / 2.4
			}
		}' "$2" "$3.dump" > "$3"
	[ -s "$3" ] || fail "no scheduler records in $1"
}

# The p-th percentile (0..100) of the numbers on standard input.
percentile() {
	sort -n | awk -v p="$1" '{ v[NR] = $1 } END { if (!NR) { print "none"; exit }
		i = int(NR * p / 100 + 0.5); if (i < 1) i = 1; if (i > NR) i = NR; print v[i] }'
}

# Runs the host 2 s at 200 messages and 20 block requests a second with the
# knobs "$@", writing $TMP/x.trace and $TMP/truth; checks that the guest
# finished and the trace reads; leaves its records in $TMP/ev.
sched_run() {
	"$XENSIM" --duration 2 --rate 200 --block-rate 20 "$@" \
		--xentrace "$TMP/x.trace" --truth "$TMP/truth" > "$TMP/log" 2>&1 || { cat "$TMP/log"; fail "xensim $*"; }
	grep -q '400 messages (400 segments) sent, 400 acknowledged; 40 block requests, 40 done' "$TMP/log" ||
		{ cat "$TMP/log"; fail "the guest did not finish its work"; }
	check_trace "$TMP/x.trace"
	trace_events "$TMP/x.trace" "$TMP/truth" "$TMP/ev"
}

# The p50 of domain $2's waits for a pCPU (blocked -> runnable -> running)
# in the records $1 (from trace_events), in ns.
wake_to_run_p50() {
	awk -v d="$2" '$3 == "rs" && $4 == d && $6 == 2 && $7 == 1 { s = $1 }
		$3 == "rs" && $4 == d && $6 == 1 && $7 == 0 && s { print $1 - s; s = 0 }' "$1" | percentile 50
}

# The p50 (ns) of hop $2 in truth $1, from truth-check (which must pass with
# at least $3 messages).
hop_p50() {
	"$TRUTH_CHECK" --tsv --guests 1 --min-msgs "$3" "$1" > "$1.hops" || { cat "$1.hops"; fail "truth-check $1"; }
	awk -F'\t' -v h="$2" '$3 == h { print $5 }' "$1.hops"
}

# Bounds the waits in column $2 of file $1 (ns), which an injected delay of
# $3 ns made: at least $5 of them, none shorter than the delay (it is never
# released early), p50 at most the delay + 10% + $4 (this run's measured
# lateness at p90).  $6 names them in the messages.
check_waits() {
	n=$(wc -l < "$1")
	[ "$n" -ge "$5" ] || fail "only $n $6"
	min=$(awk -v c="$2" '{ print $c }' "$1" | percentile 0)
	p50=$(awk -v c="$2" '{ print $c }' "$1" | percentile 50)
	echo "$n $6: min $min ns, p50 $p50 ns for $3 injected; late by $4 ns at p90"
	[ "$min" -ge $(($3 - 1000)) ] || fail "one of the $6 took $min ns, less than the delay"
	[ "$p50" -le $(($3 + $3 / 10 + $4)) ] || fail "the $6 took $p50 ns at p50: above the delay + 10% + lateness"
}
