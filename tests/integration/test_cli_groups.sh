#!/bin/sh
# Any grouping (--groups as node lists) and failed links (--fail-link) on
# rings, compile, run and sim, end to end. Usage: test_cli_groups.sh MRC
set -u
MRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

pairs=0,4+1,5+2,6+3,7

for c in rings compile run sim; do
    expect 0 "fail-link A-B\[:K\]" "$MRC" help $c
    expect 0 "0,4+1,5" "$MRC" help $c
done

# Seed 004's 4x2 configuration over the counterpart links: one ring each
# over the double link, as fast as the pairs within a subset.
expect 0 "4 groups" "$MRC" rings hcm8 --strategy hcm8 --groups $pairs
expect 0 "both ways  3 7" "$MRC" rings hcm8 --strategy hcm8 --groups $pairs
expect 0 "algbw 64.00 GB/s, efficiency 0.2857" \
    "$MRC" rings hcm8 --strategy hcm8 --groups $pairs
expect 0 "efficiency 0.2857  (worst group)" \
    "$MRC" rings hcm8 --groups $pairs
# The ring strategy goes round a group in its listed (rank) order.
expect 0 "both ways  7 0 -(7,6)-> 5" "$MRC" rings ring:8 --strategy ring \
    --groups 7,0,5+3,1,2,6,4

# Non-consecutive groups, rank orders that are not the node order, and
# groups of different sizes end to end: the checker proves the program,
# the threads' results are exact (any wrong element is exit 1), the
# simulator runs it.
expect 0 "check" "$MRC" compile hcm8 --groups 4,0+5,1+6,2+7,3 \
    --collective allreduce --count 1M --dtype f32
expect 0 '"num_groups": 2' "$MRC" compile hcm8 --strategy ring \
    --groups 7,0,5+3,1,2,6,4 --collective allgather --count 1000 \
    --dtype f32 --json
for s in auto ring hcm8; do
    expect 0 '"wrong": 0' "$MRC" run --strategy $s --groups 4,0+5,1+6,2+7,3 \
        --count 1001 --iters 1 --warmup 0 --json
done
expect 0 '"wrong": 0' "$MRC" run --strategy ring --groups 7,0,5+3,1,2,6,4 \
    --count 999 --iters 1 --warmup 0 --dtype int32 --json
expect 0 "reduce" "$MRC" run --topology ring:6 --groups 5,1,3+4,0,2 \
    --collective reduce --count 100 --iters 1 --warmup 0
expect 0 "algbw    60.318 GB/s" "$MRC" sim hcm8 --strategy hcm8 \
    --groups $pairs --collective allreduce --size 1M
expect 0 "strategy ring" "$MRC" sim hcm8 --strategy ring \
    --groups 7,0,5+3,1,2,6,4 --collective allgather --size 64K \
    --mode pipelined
expect 0 "chosen" "$MRC" explain hcm8 --groups $pairs --collective allreduce \
    --size 1M

# Bad groups: named, exit 2, no output on stdout.
expect 2 "leave 2 of the 8 nodes of hcm8 in no group, node 3 first" \
    "$MRC" rings hcm8 --groups 0,4+1,5+2,6
expect 2 "node 0 is in group 0 and in group 3 (groups must be disjoint)" \
    "$MRC" rings hcm8 --groups 0,4+1,5+2,6+3,7,0
expect 2 "node 1 is twice in group 0" "$MRC" rings hcm8 --groups 0,1,1+2
expect 2 "'9' in group 1 is not a node of hcm8 (0 to 7)" \
    "$MRC" compile hcm8 --groups 0,4+1,9 --collective allreduce \
    --count 1M --dtype f32
expect 2 "group 1 has an empty entry" "$MRC" sim hcm8 --groups 0,4++1 \
    --collective allreduce --size 1M
expect 2 "'x' in group 0 is not a node" "$MRC" run --groups 0,x --count 8
expect 2 "nodes 0 and 5 are not joined by a double link" \
    "$MRC" rings hcm8 --strategy hcm8 --groups 0,5+1,4+2,6+3,7
"$MRC" rings hcm8 --groups 0,4+1 >"$tmp/stdout" 2>/dev/null
expect 0 "" test ! -s "$tmp/stdout"

# Failed links: the output says what was lost, before and after.
expect 0 "failed links 0-1:1 (27 of 28 physical links left); strategy hcm8: algbw 109.71 GB/s, efficiency 0.8571 before; algbw 109.71 GB/s, efficiency 1.0000 after" \
    "$MRC" rings hcm8 --strategy hcm8 --fail-link 0-1:1
expect 0 "strategy auto: algbw 128.00 GB/s, efficiency 1.0000 before; algbw 109.71 GB/s, efficiency 1.0000 after" \
    "$MRC" rings hcm8 --fail-link 0-2
expect 0 "topology hcm8 without 0-2,3-7:1" \
    "$MRC" rings hcm8 --fail-link 0-2 --fail-link=3-7:1
expect 2 "hcm8 needs the link between nodes 0 and 2, which failed" \
    "$MRC" rings hcm8 --strategy hcm8 --fail-link 0-2
expect 2 "barley-twist needs the link between nodes 0 and 1" \
    "$MRC" rings torus-ladder:8 --strategy barley-twist --fail-link 0-1
expect 0 "strategy peripheral-ring" \
    "$MRC" rings ladder:8 --strategy peripheral-ring --fail-link 2-3
expect 0 "failed links 0-2" "$MRC" compile hcm8 --fail-link 0-2 \
    --collective allreduce --count 1M --dtype f32
expect 0 '"num_groups": 1' "$MRC" compile hcm8 --fail-link 0-2 \
    --collective allreduce --count 1M --dtype f32 --json
"$MRC" compile hcm8 --fail-link 0-2 --collective allreduce --count 1M \
    --dtype f32 --json >"$tmp/c.json" 2>/dev/null
expect 0 "" python3 -c "import json,sys; json.load(open(sys.argv[1]))" \
    "$tmp/c.json"
expect 0 "hcm8 without 0-2, strategy auto" "$MRC" sim hcm8 \
    --fail-link 0-2 --collective allreduce --size 1M
expect 0 "efficiency 1.0000 after" "$MRC" run --strategy hcm8 \
    --fail-link 0-1:1 --count 1001 --iters 1 --warmup 0
expect 0 '"wrong": 0' "$MRC" run --fail-link 0-2 --fail-link 5-6:2 \
    --count 1001 --iters 1 --warmup 0 --json
expect 0 '"wrong": 0' "$MRC" run --strategy hcm8 --groups $pairs \
    --fail-link 0-2 --fail-link 3-7:1 --count 1001 --iters 1 --warmup 0 \
    --json

# Bad failed links: named, exit 2.
for c in "rings hcm8" "compile hcm8 --collective allreduce --count 8 --dtype f32" \
    "sim hcm8 --collective allreduce --size 1K" "run --count 8"; do
    # shellcheck disable=SC2086
    expect 2 "'9' is not a node of hcm8 (0 to 7)" "$MRC" $c --fail-link 0-9
done
expect 2 "a link joins two different nodes" "$MRC" rings hcm8 --fail-link 3-3
expect 2 "no link joins nodes 0 and 5" "$MRC" rings hcm8 --fail-link 0-5
expect 2 "'3' is not a count of links from 1 to the 2 between nodes 0 and 1" \
    "$MRC" rings hcm8 --fail-link 0-1:3
expect 2 "'0' is not a count" "$MRC" rings hcm8 --fail-link 0-1:0
expect 2 "expected A-B or A-B:K" "$MRC" rings hcm8 --fail-link 01
expect 2 "give one link A-B or A-B:K per --fail-link" \
    "$MRC" rings hcm8 --fail-link 0-1,2-3
expect 2 "give one link" "$MRC" rings hcm8 --fail-link ""
expect 2 "failed link '1-0': all 2 links between nodes 1 and 0 failed already" \
    "$MRC" rings hcm8 --fail-link 0-1 --fail-link 1-0
expect 2 "option '--fail-link' needs a value" "$MRC" rings hcm8 --fail-link
expect 2 "graph is disconnected: node 1 cannot be reached" \
    "$MRC" run --topology ring:8 --fail-link 0-1 --fail-link 4-5 --count 8

expect_summary
