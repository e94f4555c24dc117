# Helpers for issue 24's scripts: the scheduler join on the simulated host
# (sourced after tests/e2e/lib.sh and tests/sim/lib.sh; not a test itself).
SCHED_E2E=$BUILD/tests/e2e/sched-e2e
SCHED_SPLITS=$BUILD/tests/e2e/sched-splits
XFLOWTOP=$BUILD/bin/xflowtop
e2e_need "$SCHED_E2E" "$SCHED_SPLITS" "$XFLOWTOP"
command -v python3 > /dev/null || { echo "python3 is needed to read the JSON"; exit 77; }
# The hop a notification crosses, from the guest into dom0, as the splits
# name it (domain ids) and as the truth does.
CROSS="1:network_start_xmit->0:netbk_fill_frags"
CROSS_TRUTH="U:network_start_xmit->0:netbk_fill_frags"
# Columns of a split line: 4 run, 5 wait, 6 notify, 7 backend, 8 blocked,
# 9 offline, 10 xen, 11 unknown, 12 culprit, then the unknown's reasons:
# 13 no_trace, 14 lost, 15 clock, 16 old, 17 early.
COLS="run:4 wait:5 notify:6 backend:7 blocked:8 offline:9 xen:10 unknown:11"

# Runs the host for 3 s with the knobs "$@" and xflowtop on it, into
# $TMP/run; then splits every hop sample of its session against its trace
# into $TMP/run/splits.  One retry: two cores shared with other builds.
sched_run() {
	for attempt in 1 2; do
		rm -rf "$TMP/run"
		mkdir -p "$TMP/run"
		if timeout -s TERM 120 "$SCHED_E2E" "$XFLOWTOP" "$TMP/run" "$@" > "$TMP/run/log" 2>&1 &&
			"$SCHED_SPLITS" "$TMP/run/session" "$TMP/run/x.trace" > "$TMP/run/splits"; then
			return 0
		fi
		cat "$TMP/run/log"
		echo "attempt $attempt failed"
	done
	fail "sched-e2e $*"
}

# The p-th percentile of column $3 over the lines of hop $2 in splits $1.
split_pct() {
	awk -F'\t' -v h="$2" -v c="$3" '$1 == h { print $c }' "$1" | percentile "$4"
}

# Every sample's states add up to its hop, and the reasons of its unknown
# to that, exactly; and there are at least $2 samples of hop $CROSS.
check_sums() {
	awk -F'\t' -v h="$CROSS" '$1 !~ /^#/ { s = 0; for (i = 4; i <= 11; i++) s += $i
		u = 0; for (i = 13; i <= 17; i++) u += $i
		if (s != $3 - $2) { if (bad++ < 3) print "sample " $0 " adds up to " s; }
		if (u != $11) { if (bad++ < 3) print "sample " $0 " has reasons adding up to " u; }
		n++; if ($1 == h) x++ }
		END { print n " samples split, " x " of the hop across; " bad + 0 " do not add up"; exit bad > 0 }' "$1" ||
		fail "the states do not add up to the hop, or the reasons to the unknown"
	n=$(awk -F'\t' -v h="$CROSS" '$1 == h' "$1" | wc -l)
	[ "$n" -ge "$2" ] || fail "only $n samples of $CROSS"
}

# Prints the p50 of each state of hop $2 in splits $1, and fails unless
# every state but those named in $3 (space-separated) has a p50 below $4.
check_others() {
	line=""
	for sc in $COLS; do
		s=${sc%%:*} c=${sc#*:}
		p=$(split_pct "$1" "$2" "$c" 50)
		line="$line $s=$p"
		case " $3 " in *" $s "*) continue ;; esac
		[ "$p" -lt "$4" ] || fail "$s of $2 has a p50 of $p ns, not near zero (< $4)"
	done
	echo "$2 p50:$line"
}

# xflowtop --replay of the run's session with its trace ($TMP/run) splits
# hop $CROSS exactly as the model split its samples in splits $1: the same
# nanoseconds in every state, summed.  Leaves the replay's JSON in
# $TMP/replay.json.
check_replay_is_model() {
	"$XFLOWTOP" --replay "$TMP/run/session" --xentrace "$TMP/run/x.trace" --cpu-hz 2.4G -b --json -d 0.2 \
		> "$TMP/replay.json" 2> "$TMP/replay.err" || { cat "$TMP/replay.err"; fail "xflowtop --replay"; }
	json_last "$TMP/replay.json" '" ".join(str(v) for v in hop("network_start_xmit", "netbk_fill_frags")["split"]["all"]["ns"].values())' > "$TMP/replay.sums"
	# %.0f, not %d: mawk's %d stops at 2^31 - 1, 2.1 s of one state
	# summed over the run's hops, which a loaded machine passes.
	awk -F'\t' -v h="$CROSS" '$1 == h { for (i = 4; i <= 11; i++) t[i] += $i }
		END { for (i = 4; i <= 11; i++) printf "%s%.0f", (i > 4 ? " " : ""), t[i]; print "" }' "$1" > "$TMP/model.sums"
	echo "replay: $(cat "$TMP/replay.sums"); the model: $(cat "$TMP/model.sums")"
	cmp -s "$TMP/replay.sums" "$TMP/model.sums" || fail "the replay's split is not the model's"
}

# The last JSON object xflowtop printed in $1, as Python's json sees it,
# through the expression $2 (the object is d; hop(FROM, TO) finds a hop).
json_last() {
	python3 -c '
import json, sys
d = None
for line in open(sys.argv[1]):
    if line.strip():
        d = json.loads(line)
def hop(f, t):
    for h in d["hops"]:
        if h["from"]["function"] == f and h["to"]["function"] == t:
            return h
    return None
print(eval(sys.argv[2]))' "$1" "$2"
}
