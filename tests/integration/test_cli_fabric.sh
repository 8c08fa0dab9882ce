#!/bin/sh
# mrc fabric: every pattern scheduled and checked, the JSON report, an
# exchange file, and refusals of bad usage and bad files.
# Usage: test_cli_fabric.sh MRC
set -u
MRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

for p in neighbour broadcast random all-to-all; do
    expect 0 "misdelivered\": 0, \"late\": 0, \"missed\": 0" \
        "$MRC" fabric --tiles 200 --columns 8 --pattern $p --json
    cp "$tmp/out" "$tmp/r"
    expect 0 "\"toggles\": [0-9]*, \"toggles_ungated\": [0-9]*" cat "$tmp/r"
    expect 0 "\"lower_bound_cycles\": [1-9]" cat "$tmp/r"
done
# The full chip, all to all: about 2.2 million packets, every one checked.
expect 0 "2165312 delivered, 0 misdelivered, 0 late, 0 missed" \
    "$MRC" fabric --pattern all-to-all
cp "$tmp/out" "$tmp/r"
expect 0 "exchange  all-to-all: 2165312 packets" cat "$tmp/r"
# A multi-packet broadcast: one packet a cycle from tile 0.
expect 0 "\"packets\": 25, \"deliveries\": 1575, \"delivered\": 1575" \
    "$MRC" fabric --tiles 64 --pattern broadcast --bytes 100 --json
cp "$tmp/out" "$tmp/r"
expect 0 "\"cycles\": 4[0-9]," cat "$tmp/r"
# A seed is a seed: the same twice, another differs (timings aside).
for s in 3 3 4; do
    "$MRC" fabric --tiles 100 --columns 5 --pattern random --seed $s --json |
        sed 's/, "schedule_seconds.*//'
done > "$tmp/seeds"
sed -n 1p "$tmp/seeds" > "$tmp/a"
sed -n 2p "$tmp/seeds" > "$tmp/b"
sed -n 3p "$tmp/seeds" > "$tmp/c"
expect 0 "" cmp -s "$tmp/a" "$tmp/b"
expect 1 "" cmp -s "$tmp/a" "$tmp/c"

# An exchange file: tile 2 (column 1) to tiles 6 and 7 (column 3) of 8
# in 4 columns: one packet each, East only; toggles 3 each gated, 4 not.
cat > "$tmp/ex.json" <<'JSON'
{"tiles": 8, "columns": 4,
 "exchange": [{"source": 2, "destinations": [6], "bytes": 4},
              {"source": 2, "destinations": [7], "bytes": 4}]}
JSON
expect 0 "\"packets\": 2, \"deliveries\": 2, \"delivered\": 2" \
    "$MRC" fabric --pattern "$tmp/ex.json" --json
cp "$tmp/out" "$tmp/r"
expect 0 "\"toggles\": 6, \"toggles_ungated\": 8" cat "$tmp/r"
expect 0 "fabric    8 tiles in 4 columns of 2" \
    "$MRC" fabric --pattern "$tmp/ex.json"
# The options win over the file; a tile the fabric lacks is named.
expect 2 "entry 0: destination 6 is not a tile (the fabric has 6)" \
    "$MRC" fabric --pattern "$tmp/ex.json" --tiles 6

# Bad files: each names the file and what is wrong, prints no report.
printf '{"exchange": [{"source": 1, "destinations": [1]}]}' > "$tmp/self.json"
expect 2 "self.json: exchange\[0\]: entry 0: tile 1 sends to itself" \
    "$MRC" fabric --pattern "$tmp/self.json"
printf '{"exchange": [\n  {"source": 1,, }]}' > "$tmp/syntax.json"
expect 2 "syntax.json:2:16: JSON syntax error" \
    "$MRC" fabric --pattern "$tmp/syntax.json"
cp "$tmp/out" "$tmp/r"
expect 1 "" grep -q "cycles" "$tmp/r"
expect 2 "cannot open\|No such file" \
    "$MRC" fabric --pattern "$tmp/missing.json"

# Bad usage.
expect 2 "--pattern is required" "$MRC" fabric --tiles 8
expect 2 "unknown pattern 'everything'" "$MRC" fabric --pattern everything
expect 2 "--tiles 'many' is not" "$MRC" fabric --pattern random --tiles many
expect 2 "9 columns for 8 tiles" \
    "$MRC" fabric --pattern random --tiles 8 --columns 9
expect 2 "--seed 'x' is not a number" "$MRC" fabric --pattern random --seed x
expect 2 "for the named patterns" \
    "$MRC" fabric --pattern "$tmp/ex.json" --seed 3
expect 0 "usage: mrc fabric" "$MRC" help fabric

expect_summary
