#!/bin/sh
# Predicted beside measured between processes: mrc-bench --predict under
# mrc launch (the columns, a positive ratio; profiles that are not right
# refused with exit 2 naming the file) and mrc calibrate --check on shm
# and at P = 4. Figures are checked to be positive, never their values.
# Usage: test_cli_predict.sh MRC MRC_BENCH
MRC=$1
BENCH=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"
PY=/usr/bin/python3

expect 0 "^calibrate  shm, 2 ranks" "$MRC" calibrate --quick --transport shm \
    -o "$tmp/shm.json"
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
expect 2 "threads.json: a profile of the threads transport; these ranks run on shm" \
    "$BENCH" --predict "$tmp/threads.json"
expect 1 "threads.json: a profile of the threads transport" "$MRC" launch \
    -n 2 -- "$BENCH" -b 4K -e 4K --predict "$tmp/threads.json"
expect 2 "missing.json: cannot open" "$BENCH" --predict "$tmp/missing.json"
expect 2 "missing value after --predict" "$BENCH" --predict

expect_summary
