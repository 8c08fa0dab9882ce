#!/bin/sh
# mrc compile and mrc run as a user meets them. Usage: test_cli_run.sh MRC
set -u
MRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

expect 0 "--listing" "$MRC" help compile
expect 0 "busbw" "$MRC" help run
expect 0 "shared code   11 instructions" \
    "$MRC" compile hcm8 --strategy hcm8 --collective allreduce --count 1M --dtype f32
expect 0 '"code_instructions": 11' \
    "$MRC" compile ring:512 --collective allreduce --count 1M --dtype f32 --json
expect 0 '"code_instructions": 11' \
    "$MRC" compile ring:8 --collective allreduce --count 1M --dtype f32 --json
expect 0 '"table_bytes"' \
    "$MRC" compile hcm8 --collective reduce --root 3 --count 100 --dtype i8 --json
expect 0 "send   frag (pos - s) mod N" \
    "$MRC" compile torus-ladder:8 --strategy barley-twist --collective allreduce --count 4K --dtype bf16 --listing
expect 0 "wrote" "$MRC" compile prism:3,3 --strategy prism-faces \
    --collective reduce-scatter --count 999 --dtype f64 --op max -o "$tmp/p.mrcp"
expect 0 "reduce-scatter of 999 float64" "$MRC" compile --load "$tmp/p.mrcp"
head -c 200 "$tmp/p.mrcp" >"$tmp/cut.mrcp"
expect 2 "truncated" "$MRC" compile --load "$tmp/cut.mrcp"
printf 'garbage' >"$tmp/bad.mrcp"
expect 2 "not an mrc program image" "$MRC" compile --load "$tmp/bad.mrcp"
expect 2 "unknown collective 'allsum'" \
    "$MRC" compile hcm8 --collective allsum --count 1 --dtype f32
expect 2 "unknown data type 'f8'" \
    "$MRC" compile hcm8 --collective allreduce --count 1 --dtype f8
expect 2 "root 9 is not a rank" \
    "$MRC" compile hcm8 --collective reduce --root 9 --count 1 --dtype f32
expect 2 "required" "$MRC" compile hcm8

# run: every collective checked; JSON rows with "wrong": 0.
expect 0 "reduce-scatter" "$MRC" run --topology ring:3 --count 1000 --iters 1
expect 0 '"wrong": 0' "$MRC" run --topology hcm8 --strategy hcm8 --groups 4+2+2 \
    --count 10001 --dtype bf16 --op max --iters 1 --json
expect 0 '"ok": true' "$MRC" run --topology ladder:8 --strategy ring-on-line \
    --replica-size 2 --collective broadcast --count 77 --iters 1 --json
# Routed hops run through their relays: every collective exact, and the
# relaying nodes say that they forwarded (MRC_DEBUG=TRACE), GCL's
# ring-on-line within a group, rung rings through another group's nodes.
routed() { # NAME PATTERN: the last run's rows all exact, and PATTERN traced
    rows=$(grep -c '"wrong": 0, "ok": true' "$tmp/out")
    if [ "$rows" -eq 5 ] && grep -q -e "$2" "$tmp/out"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: $1: $rows exact rows of 5, or no /$2/:"
        sed 's/^/    /' "$tmp/out" | head -40
    fi
}
expect 0 "forwards" env MRC_DEBUG=TRACE "$MRC" run --topology ladder:8 \
    --strategy ring-on-line --replica-size 2 --count 1001 --iters 1 --json
routed ring-on-line \
    'mrc: rank 4: forwards stream 0 step 0 chunk 0 ([0-9]* elements) from 2 to 6, hop to 6'
expect 0 "forwards" env MRC_DEBUG=TRACE "$MRC" run --topology ladder:16 \
    --strategy rung-ring-4 --count 1001 --dtype i32 --iters 1 --json
routed rung-ring-4 \
    'mrc: rank 2: forwards stream 0 step 0 chunk 0 ([0-9]* elements) from 0 to 4, hop to 4'
grep -q "forwards" "$tmp/out" && ! "$MRC" run --topology ladder:16 \
    --strategy rung-ring-4 --count 1001 --iters 1 2>&1 | grep -q forwards &&
    passed=$((passed + 1)) || {
    failed=$((failed + 1))
    echo "FAIL: forwards traced without MRC_DEBUG"
}
# The port mask: handed over (and traced) as each phase starts, shown by
# the listing.
expect 0 "mrc: rank 2: phase 0 (steps 0-5): idle ports {1}" \
    env MRC_DEBUG=TRACE "$MRC" run --topology ladder:8 \
    --strategy ring-on-line --replica-size 2 --count 100 --iters 1 \
    --collective allreduce
expect 0 "phase 0 (steps 0-5): node 2 idle ports {1}" \
    "$MRC" compile ladder:8 --strategy ring-on-line --replica-size 2 \
    --collective allreduce --count 100 --dtype f32 --listing
expect 0 "relays (64: each forwards every message of its hop" \
    "$MRC" compile ladder:16 --strategy rung-ring-4 --collective reduce \
    --count 100 --dtype f32 --listing
expect 0 "node 4 relays stream 0, hop 2 -> 6: from node 2 to node 6 by port" \
    "$MRC" compile ladder:8 --strategy ring-on-line --replica-size 2 \
    --collective allgather --count 100 --dtype f32 --listing

expect 2 "barley-twist does not apply" \
    "$MRC" run --topology ring:4 --strategy barley-twist
expect 2 "unknown operator 'mean'" "$MRC" run --op mean

expect_summary
