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
expect 2 "barley-twist does not apply" \
    "$MRC" run --topology ring:4 --strategy barley-twist
expect 2 "unknown operator 'mean'" "$MRC" run --op mean

expect_summary
