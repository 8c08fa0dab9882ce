#!/bin/sh
# Predicted beside measured between processes: mrc-bench --predict under
# mrc launch (the columns, a positive ratio; profiles that are not right
# refused with exit 2 naming the file; a profile of 2 ranks predicts 4 on
# one host as one memory system) and mrc calibrate --check on shm and at
# P = 4. Figures are checked to be positive, never their values.
# Usage: test_cli_predict.sh MRC MRC_BENCH
MRC=$1
BENCH=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"
PY=/usr/bin/python3

expect 0 "^calibrate  shm, 2 ranks" "$MRC" calibrate --quick --transport shm \
    -o "$tmp/shm.json"
cp "$tmp/out" "$tmp/shm_summary"
# A node's copies with its own buffers past its core's cache: a rate
# within its fit's bounds, or none and the summary says so (a host whose
# cores hold 2 MiB each had it at the lower bound, 0.01 GB/s, from a call
# that never left them, and direct1's 1 MiB predicted at 1,000 times).
expect 0 "" $PY -c '
import json, sys
p = json.load(open(sys.argv[1]))
said = "no rate of its own once its buffers have left" in open(sys.argv[2]).read()
x = p.get("copy_gbps_shared", 0)
# (a fit is at its bound below 1.001 of the lower one, 0.01, or above
# 0.999 of the upper one, the copy rate)
assert x == 0 or 0.01 * 1.001 <= x <= 0.999 * p["copy_gbps_cache"], x
fitted = p["private_cache_bytes"] > 0 and p["ranks"] <= p["cores"]
assert said == (x == 0 and fitted), (x, said)
' "$tmp/shm.json" "$tmp/shm_summary"
# How a send buffer exposed by reference is read, timed both ways at 2
# ranks and named with its figures: read through the kernel (send_by_ref
# 1) exactly where that was faster by 3% or more.
expect 0 "" $PY -c '
import json, re, sys
p = json.load(open(sys.argv[1]))
m = re.search(r"a send exposed by reference (is read there when it is the "
              r"last call.s|that fits its "
              r"owner.s area is copied in) \(an allgather of 128 KiB a rank: "
              r"([0-9.]+) us copied in, ([0-9.]+) read there\)",
              open(sys.argv[2]).read())
assert m, "no line on send buffers"
copied, read = float(m.group(2)), float(m.group(3))
assert copied > 0 and read > 0, (copied, read)
by_ref = p.get("send_by_ref", 0)
assert by_ref in (0, 1), by_ref
# (the summary rounds to 0.01 us: at the edge either way is right)
if abs(read * 1.03 - copied) > 0.02:
    assert (by_ref == 1) == (read * 1.03 <= copied), (by_ref, copied, read)
assert m.group(1).startswith("is read there") == (by_ref == 1), m.group(1)
' "$tmp/shm.json" "$tmp/shm_summary"
expect 0 "^calibrate  threads, 2 ranks" "$MRC" calibrate --quick \
    -o "$tmp/threads.json"

# mrc-bench --predict: two columns in the table, two fields in the JSON.
expect 0 "pred(us) pred/meas" "$MRC" launch -n 2 -- "$BENCH" -b 4K -e 64K \
    -f 16 -n 3 -w 1 --predict "$tmp/shm.json"
cp "$tmp/out" "$tmp/table"
expect 0 "^# pred: .*shm.json's node model (shm)" cat "$tmp/table"
"$MRC" launch -n 2 -- "$BENCH" -b 4K -e 64K -f 16 -n 3 -w 1 --json \
    --predict "$tmp/shm.json" > "$tmp/bench.json"
expect 0 "" $PY -c '
import json, math, sys
b = json.load(open(sys.argv[1]))
assert b["transport"] == "shm" and b["profile"].endswith("shm.json"), b
assert [r["bytes"] for r in b["rows"]] == [4096, 65536], b
for r in b["rows"]:
    p, q = r["predicted_us"], r["predicted_over_measured"]
    assert math.isfinite(p) and p > 0 and math.isfinite(q) and q > 0, r
    assert r["wrong"] == 0, r
' "$tmp/bench.json"
# Buffers the peers map (--mem-alloc): the same program predicted without
# the kernel's copy (a profile whose kernel copies at a third of a peer's
# read), so faster than on malloc's buffers (direct2's 16 MiB, past what
# it exposes by copy and past the 8 MiB area its send buffer would be
# copied into, reads both of its peer's buffers by reference).
$PY -c '
import json, sys
p = json.load(open(sys.argv[1]))
p["kernel_gbps"] = p["peer_gbps_cache"] / 3
p.pop("kernel_gbps_cache", None)
json.dump(p, open(sys.argv[2], "w"))
' "$tmp/shm.json" "$tmp/slow_kernel.json"
for m in plain mapped; do
    flag=$([ $m = mapped ] && echo --mem-alloc)
    MRC_ALGO=direct2 "$MRC" launch -n 2 -- "$BENCH" -b 16M -e 16M -n 2 -w 1 \
        --json --predict "$tmp/slow_kernel.json" $flag > "$tmp/$m.json"
done
expect 0 "" $PY -c '
import json, sys
p, m = (json.load(open(f))["rows"][0] for f in sys.argv[1:])
assert p["wrong"] == 0 and m["wrong"] == 0, (p, m)
assert m["predicted_us"] < p["predicted_us"], (p, m)
' "$tmp/plain.json" "$tmp/mapped.json"
# A profile measured on 2 ranks predicts 4 ranks of one host as one
# memory system, not two hosts of two: the same figure as the profile
# that says 4 share it (16 MiB, past the cache, where sharing counts).
$PY -c '
import json, sys
p = json.load(open(sys.argv[1]))
p["nodes_per_memory"] = 4
json.dump(p, open(sys.argv[2], "w"))
' "$tmp/shm.json" "$tmp/shm4.json"
for f in shm shm4; do
    MRC_ALGO=rings "$MRC" launch -n 4 -- "$BENCH" -b 16M -e 16M -n 1 -w 0 \
        --json --predict "$tmp/$f.json" > "$tmp/p_$f.json"
done
expect 0 "" $PY -c '
import json, sys
a, b = (json.load(open(f))["rows"][0] for f in sys.argv[1:])
assert a["wrong"] == 0 and a["predicted_us"] > 0, a
assert a["predicted_us"] == b["predicted_us"], (a, b)
' "$tmp/p_shm.json" "$tmp/p_shm4.json"
# Without --predict, neither.
"$MRC" launch -n 2 -- "$BENCH" -b 4K -e 4K -n 2 -w 1 --json > "$tmp/plain.json"
expect 1 "" grep -q predicted "$tmp/plain.json"

# Profiles that are not right: every rank refuses before joining (exit 2,
# which the launcher reports), naming the file and what is wrong.
printf '{"format": "mrc-profile", "version": 1,' > "$tmp/corrupt.json"
expect 2 "corrupt.json: profile: not JSON" "$BENCH" --predict \
    "$tmp/corrupt.json"
expect 1 "corrupt.json: profile: not JSON" "$MRC" launch -n 2 -- "$BENCH" \
    -b 4K -e 4K --predict "$tmp/corrupt.json"
cp "$tmp/out" "$tmp/launch"
expect 0 "rank 0 (pid [0-9]*) exited with status 2" cat "$tmp/launch"
expect 2 "threads.json: a profile of the threads transport; these ranks run" \
    "$BENCH" --predict "$tmp/threads.json"
expect 1 "threads.json: a profile of the threads transport" "$MRC" launch \
    -n 2 -- "$BENCH" -b 4K -e 4K --predict "$tmp/threads.json"
expect 2 "missing.json: cannot open" "$BENCH" --predict "$tmp/missing.json"
expect 2 "missing value after --predict" "$BENCH" --predict

# mrc calibrate --check on shm: P processes started as one job, the
# same table as threads; the header says what was measured.
check_json() { # FILE TRANSPORT P RUNS [COLLECTIVE [CALLS]]
    $PY -c '
import json, math, sys
c = json.load(open(sys.argv[1]))
t, P, runs = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
coll = sys.argv[5] if len(sys.argv) > 5 else "allreduce"
assert c["transport"] == t and c["ranks"] == P and c["runs"] == runs, c
assert c["calls"] == int(sys.argv[6] if len(sys.argv) > 6 else 1), c
assert c["collective"] == coll, c
assert c["profile"]["transport"] == t and c["profile"]["file"], c
assert c["profile"]["written"].endswith("Z"), c
assert c["host"] and c["cores"] >= 1 and len(c["load"]) == 3, c
fams = {r["family"] for r in c["rows"]}
assert fams == {"rings", "direct1", "direct2", "tree"}, fams
sizes = sorted({r["bytes"] for r in c["rows"]})
assert sizes == [4096, 16384, 65536, 262144], sizes
for r in c["rows"]:
    for k in ("measured_us", "fastest_us", "slowest_us", "predicted_us",
              "ratio"):
        assert math.isfinite(r[k]) and r[k] > 0, r
    assert r["fastest_us"] <= r["measured_us"] <= r["slowest_us"], r
    # A row within has a run within; one outside has one within only
    # when the runs reach past the bound it misses. The figures are
    # printed rounded (3 decimals), so the ratio of a run within rounding of
    # a bound could go either way (3.27 / 2.616 is 1.25 here, 1.2502 in
    # the tool): those rows are not judged.
    lo, hi = c["lo"], c["hi"]
    p, s, f = r["predicted_us"], r["slowest_us"], r["fastest_us"]
    a, b = p / s, p / f
    def near(x, m):  # x = p / m, each of p and m within 0.0005
        return min(abs(x - lo), abs(x - hi)) <= x * 5e-4 * (1 / p + 1 / m)
    reach = a <= hi and b >= lo
    if not near(a, s) and not near(b, f):
        assert r["a_run_within"] == (r["within"] or reach), r
    if runs == 1:
        assert r["a_run_within"] == r["within"], r
within = sum(r["within"] for r in c["rows"])
assert c["within"] == within, c
assert c["a_run_within"] == sum(r["a_run_within"] for r in c["rows"]), c
# Ranks outnumbering the cores the profile saw widen the bounds.
wide = P > c["profile"]["cores"]
assert (c["lo"], c["hi"]) == ((0.67, 1.5) if wide else (0.8, 1.25)), c
' "$@"
}
"$MRC" calibrate --check --transport shm --profile "$tmp/shm.json" --quick \
    --runs 3 --json > "$tmp/shm_check.json"
expect 0 "" check_json "$tmp/shm_check.json" shm 2 3
# P = 4, both transports (more ranks than the profile's cores on a small
# host: the wider bounds).
"$MRC" calibrate --check --transport shm --profile "$tmp/shm.json" --quick \
    --runs 1 -n 4 --json > "$tmp/shm4.json"
expect 0 "" check_json "$tmp/shm4.json" shm 4 1
"$MRC" calibrate --check --profile "$tmp/threads.json" --quick --runs 1 \
    -n 4 --json > "$tmp/threads4.json"
expect 0 "" check_json "$tmp/threads4.json" threads 4 1
# The other collectives the selector times by the same model: reduce on
# shm's processes, broadcast on threads.
"$MRC" calibrate --check --transport shm --profile "$tmp/shm.json" --quick \
    --runs 1 -c reduce --json > "$tmp/shm_reduce.json"
expect 0 "" check_json "$tmp/shm_reduce.json" shm 2 1 reduce 8
"$MRC" calibrate --check --profile "$tmp/threads.json" --quick --runs 1 \
    --collective broadcast --json > "$tmp/threads_bcast.json"
expect 0 "" check_json "$tmp/threads_bcast.json" threads 2 1 broadcast
# On shm a rooted row is predicted as a call in a run of 8 unless --calls
# says otherwise (its ranks told so too), the header saying so; --calls
# 1, or threads: a call alone, no such line.
"$MRC" calibrate --check --transport shm --profile "$tmp/shm.json" --quick \
    --runs 1 -c broadcast --calls 4 --json > "$tmp/shm_run.json"
expect 0 "" check_json "$tmp/shm_run.json" shm 2 1 broadcast 4
# shm's ranks predict as told, each row as mrc sim times it: --calls 1, a
# call alone (a rank's own default would be a run of 8).
"$MRC" calibrate --check --transport shm --profile "$tmp/shm.json" --quick \
    --runs 1 -c broadcast --calls 1 --json > "$tmp/shm_alone.json"
expect 0 "" check_json "$tmp/shm_alone.json" shm 2 1 broadcast 1
tree_sim() { # OUT [--calls K]
    out=$1
    shift
    "$MRC" sim ring:2 --collective broadcast --size 4096 --algo tree \
        --profile "$tmp/shm.json" --mode pipelined --json "$@" > "$out"
}
tree_sim "$tmp/tree_1.json"
tree_sim "$tmp/tree_8.json" --calls 8
same_row() { # CHECK.json SIM.json: the tree's 4 KiB row as predicted
    $PY -c '
import json, sys
c, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
row = [r for r in c["rows"] if r["family"] == "tree" and r["bytes"] == 4096]
assert abs(row[0]["predicted_us"] - s["time_us"]) <= 5e-4, (row, s["time_us"])
' "$@"
}
expect 0 "" same_row "$tmp/shm_alone.json" "$tmp/tree_1.json"
"$MRC" calibrate --check --transport shm --profile "$tmp/shm.json" --quick \
    --runs 1 -c broadcast --json > "$tmp/shm_default.json"
expect 0 "" same_row "$tmp/shm_default.json" "$tmp/tree_8.json"
expect 0 "^# predicted: a call in a run of 8 back to back" "$MRC" calibrate \
    --check --transport shm --profile "$tmp/shm.json" --quick --runs 1 \
    -c reduce
expect 0 "^# predicted: a call in a run of 2 back to back" "$MRC" calibrate \
    --check --profile "$tmp/threads.json" --quick --runs 1 -c reduce \
    --calls 2
"$MRC" calibrate --check --profile "$tmp/threads.json" --quick --runs 1 \
    -c reduce > "$tmp/alone_table"
expect 0 "^family  *bytes measured" cat "$tmp/alone_table"
expect 1 "" grep -q "^# predicted" "$tmp/alone_table"
# A profile measured just now reaches the ranks in a file, removed after;
# the table's header says what was measured. (A thin run, the sanitized
# build's, leaves it out: a calibration of 40 s under ASan whose probes
# and check the runs above take; only the ranks' file goes unsanitized.)
if [ "${MRC_TEST_SWEEP:-}" != thin ]; then
    mkdir "$tmp/t"
    expect 0 "^# check: allreduce, shm, P = 2, 1 run per row; host .*load .* at the start" \
        env TMPDIR="$tmp/t" "$MRC" calibrate --check --transport shm --quick \
        --runs 1
    cp "$tmp/out" "$tmp/shm_table"
    expect 0 "" test -z "$(ls -A "$tmp/t")"
    expect 0 "^# profile: measured just now (shm, 2 ranks on [0-9]* cores)" \
        cat "$tmp/shm_table"
    expect 0 "^family  *bytes measured(us)  *spread  *predicted pred/meas" \
        cat "$tmp/shm_table"
    expect 0 "^tree  *262144  *[0-9.]*  *1\.00 " cat "$tmp/shm_table"
    expect 0 "rows within 0\.[0-9]*-1\.[0-9]* (\*: outside; \*~: outside, but one of its runs is within: 0)" \
        cat "$tmp/shm_table"
fi
# Refused: a profile of another transport or corrupt, --runs out of range
# or alone, a rank started by hand.
expect 2 "--transport shm: .*threads.json is a profile of the threads" \
    "$MRC" calibrate --check --transport shm --profile "$tmp/threads.json"
expect 2 "corrupt.json: profile: not JSON" "$MRC" calibrate --check \
    --transport shm --profile "$tmp/corrupt.json"
expect 2 "--runs '0' is not a number of runs (1..99)" "$MRC" calibrate \
    --check --runs 0
expect 2 "--runs '100' is not a number" "$MRC" calibrate --check --runs 100
expect 2 "--runs goes with --check" "$MRC" calibrate --runs 3
expect 2 "--calls goes with --check" "$MRC" calibrate --calls 8
expect 2 "--calls '0' is not a run of calls (1..16)" "$MRC" calibrate \
    --check --calls 0
expect 2 "--calls '17' is not a run of calls (1..16)" "$MRC" calibrate \
    --check --calls 17
expect 2 "--collective goes with --check" "$MRC" calibrate -c reduce
expect 2 "--collective: .*gather" "$MRC" calibrate --check -c gather
expect 2 "--check-rank is for the ranks" "$MRC" calibrate --check \
    --check-rank --transport shm --profile "$tmp/shm.json"

expect_summary
