#!/bin/sh
# mrc rings as a user meets it. Usage: test_cli_rings.sh MRC
set -u
MRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

expect 0 "barley-twist" "$MRC" help rings
expect 0 "efficiency 0.8571" "$MRC" rings hcm8 --strategy hcm8
expect 0 "3 rings" "$MRC" rings hcm8 --strategy hcm8
expect 0 "idle link directions: 0 of" "$MRC" rings torus-ladder:16 --strategy barley-twist
expect 0 "2 groups" "$MRC" rings ladder:12 --strategy ring-on-line
expect 0 "4 groups" "$MRC" rings hcm8 --strategy hcm8 --groups 2+2+2+2
expect 0 "efficiency 1.0000" "$MRC" rings torus2d:8,8
expect 0 "strategy auto" "$MRC" rings prism:3,4
expect 0 "3 rings" "$MRC" rings hcm8 --max-rings 3

expect 2 "barley-twist does not apply to ladder:8: it needs GCL's torus" \
    "$MRC" rings ladder:8 --strategy barley-twist
expect 2 "prism-faces does not apply to torus-ladder:12" \
    "$MRC" rings torus-ladder:12 --strategy prism-faces
expect 2 "replica size 3 does not divide the 8 nodes" \
    "$MRC" rings ring:8 --strategy ring --replica-size 3
expect 2 "unknown strategy 'twist'" "$MRC" rings hcm8 --strategy twist
expect 2 "--replica-size 'x' is not a positive integer" \
    "$MRC" rings hcm8 --replica-size x
expect 2 "name it \*.svg or \*.dot" "$MRC" rings hcm8 -o "$tmp/r.png"

# JSON: the documented keys, and a file that reads back as a topology.
"$MRC" rings hcm8 --strategy hcm8 --json >"$tmp/r.json"
for key in '"topology"' '"groups"' '"rings"' '"bidirectional"' '"share"' \
    '"hops"' '"route"' '"bound_gbps"' '"algbw_gbps"' '"efficiency"'; do
    expect 0 "$key" cat "$tmp/r.json"
done

expect 0 "wrote" "$MRC" rings hcm8 --strategy hcm8 -o "$tmp/r.dot"
expect 0 "#d62728" cat "$tmp/r.dot"
if command -v neato >/dev/null 2>&1; then
    expect 0 "wrote" "$MRC" rings torus-ladder:8 --strategy barley-twist \
        -o "$tmp/r.svg"
    expect 0 "<svg" cat "$tmp/r.svg"
fi

expect_summary
