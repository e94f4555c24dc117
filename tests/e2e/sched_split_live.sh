#!/bin/sh
# Issue 24 live, as the demo runs it: one guest at the demo's rate (1000
# messages/s, some 37 k hops/s), xflowtop refreshing every 4 s.  The hops
# wait for the trace in a queue of 65,536 (1.7 s of them): a trace taken
# only at each refresh lagged the flows by the whole interval, and about
# half of the hops were given up as '?' before it came.  The share of the
# hops' time xflowtop splits live (not '?') must be at least 95 % of what
# xflowtop --replay of the same session with the same trace splits, over
# all hops and over the hop from the guest into dom0.  And the replay's
# share at least half of what sched-splits gives offline: a replay taking
# the trace 1 s ahead of the flows, past what a vCPU's timeline keeps, left
# 89 % of it '?' (not closer: sched-splits keeps fewer of the slowest
# samples of the hop across, and on a loaded machine hops long enough to
# outlast a timeline are '?' more often among those).  What either lost of
# the trace is printed with its reasons; live must not lose more than the
# replay of the same trace, beyond 1 %.
. tests/e2e/lib.sh
. tests/sim/lib.sh
. tests/e2e/sched_lib.sh

sched_run --rate 1000 --duration 6 --refresh 4 --iterations 3
S=$TMP/run/splits
L=$TMP/run/live.json
check_sums "$S" 1000
"$XFLOWTOP" --replay "$TMP/run/session" --xentrace "$TMP/run/x.trace" --cpu-hz 2.4G -b --json -d 0.2 \
	> "$TMP/replay.json" 2> "$TMP/replay.err" || { cat "$TMP/replay.err"; fail "xflowtop --replay"; }
cat > "$TMP/compare.py" <<'EOF'
import json, sys
cross = sys.argv[4]

def last(p):
    d = None
    for line in open(p):
        if line.strip():
            d = json.loads(line)
    return d

# xflowtop's: the sums of the splits it made, as its last object says.
def shares(d):
    r = {"all": [0, 0], cross: [0, 0]}
    for h in d["hops"]:
        if "split" not in h:
            continue
        ns = h["split"]["all"]["ns"]
        total = sum(ns.values())
        name = "%d:%s->%d:%s" % (h["from"]["domain_id"], h["from"]["function"], h["to"]["domain_id"],
                                 h["to"]["function"])
        for k in ("all", name):
            if k in r:
                r[k][0] += total
                r[k][1] += total - ns["unknown"]
    return r

# Offline: every sample of the session split against the whole trace.
off = {"all": [0, 0], cross: [0, 0]}
for line in open(sys.argv[3]):
    f = line.rstrip("\n").split("\t")
    if f[0].startswith("#"):
        continue
    total, unknown = int(f[2]) - int(f[1]), int(f[10])
    for k in ("all", f[0]):
        if k in off:
            off[k][0] += total
            off[k][1] += total - unknown
live_d, replay_d = last(sys.argv[1]), last(sys.argv[2])
got = {"live": shares(live_d), "replay": shares(replay_d), "offline": off}
bad = 0
for k in ("all", cross):
    empty = 0
    for name in got:
        t, known = got[name][k]
        print("%s, %s: %.1f %% of %.3f s split" % (k, name, 100.0 * known / t if t else 0, t / 1e9))
        empty |= not t or not known
    if empty:
        bad = 1
        continue
    for a, b, least in (("live", "replay", 0.95), ("replay", "offline", 0.5)):
        ratio = (got[a][k][1] / got[a][k][0]) / (got[b][k][1] / got[b][k][0])
        print("%s: %s / %s %.3f (at least %.2f)" % (k, a, b, ratio, least))
        bad |= ratio < least
for name, d in (("live", live_d), ("replay", replay_d)):
    s = d["sched"]
    print("%s: %d split, %d split early, %d trace records lost (%d before the join, %d splits older than the "
          "timelines keep, %d beyond the vCPU limit)" % (name, s["hops_split"], s["split_early"], s["trace_lost"],
                                                        s["lost_records"], s["too_old"], s["no_vcpu_room"]))
bad |= live_d["sched"]["trace_lost"] > replay_d["sched"]["trace_lost"] + replay_d["sched"]["trace_records"] // 100
sys.exit(bad)
EOF
python3 "$TMP/compare.py" "$L" "$TMP/replay.json" "$S" "$CROSS" ||
	fail "less of the hops' time split live than in the replay, or in the replay than offline"
echo ok
