#!/bin/sh
# mrc sim as a user meets it. Usage: test_cli_sim.sh MRC
set -u
MRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

expect 0 "--compare" "$MRC" help sim
# The closed form: ring:4, 2 GB/s, 100 ns, 64000 bytes: 6 x (100 + 64000/16).
expect 0 "time     24.600 us in 6 steps" \
    "$MRC" sim "ring:4,bw=2,lat=100" --strategy ring --collective allreduce \
    --size 64000 --chunks 1
expect 0 '"energy_no_gating_j"' "$MRC" sim hcm8 --strategy hcm8 \
    --collective allreduce --size 1M --json
expect 0 '"utilisation"' "$MRC" sim torus-ladder:8 --strategy barley-twist \
    --collective reduce-scatter --size 64K --json
expect 0 "hcm8 " "$MRC" sim hcm8 --compare --collective allreduce --size 16M
# The families rank beside the strategies; one that does not apply says
# why.
expect 0 "^direct2 *- *[0-9.]* " "$MRC" sim hcm8 --compare --collective allreduce --size 1M
expect 0 "^tree *- *[0-9.]* " "$MRC" sim hcm8 --compare --collective allreduce --size 1M
expect 0 "^direct2 *direct2 does not apply to allgather" "$MRC" sim ring:8 --compare --collective allgather --size 64K
expect 0 "peripheral-ring" "$MRC" sim torus-ladder:16 --compare \
    --collective broadcast --size 1M
# Groups run at once, each to its own barrier: 4+2+2 takes the time of
# its slowest group (its 2-node groups, as in 2+2+2+2; its 4-node group
# takes what it takes in 4+4), not the sum of per-step maxima (199.608).
for g in "4+2+2 132.072 us in 6" "2+2+2+2 132.072 us in 2" \
    "4+4 101.304 us in 6"; do
    set -- $g
    expect 0 "time     $2 $3 in $5 steps" "$MRC" sim hcm8 --strategy hcm8 \
        --groups "$1" --collective allreduce --size 8M
done
expect 0 "wrote $tmp/s.csv" "$MRC" sim ring:6 --sweep 1K:1M \
    --collective allgather -o "$tmp/s"
expect 0 "ring,1048576," cat "$tmp/s.csv"
expect 0 '"results"' cat "$tmp/s.json"
expect 2 "--collective and --size" "$MRC" sim hcm8
expect 0 "time     24.600 us" \
    "$MRC" sim "ring:4,bw=2,lat=100" --strategy ring --collective allreduce \
    --size 64000 --chunks 1 --mode pipelined
expect 0 '"mode": "pipelined"' "$MRC" sim hcm8 --collective reduce \
    --size 4M --mode pipelined --chunks 8 --json
expect 2 "bsp or pipelined" "$MRC" sim hcm8 --collective allreduce \
    --size 1M --mode async
# A call in a run of 8: the tree's broadcast on ring:2 (one link of 2
# lanes, A = 1000 ns, S / 2B = 250 ns), its root a call ahead of its leaf:
# (2A + S / 2B) / 2 a call (tests/unit/sim/test_sim.c, test_run_of_calls),
# where one call alone takes A + S / 2B.
expect 0 "time     1.125 us" "$MRC" sim "ring:2,bw=2,lat=1000" \
    --collective broadcast --size 1000 --algo tree --mode pipelined --calls 8
expect 0 "time     1.250 us" "$MRC" sim "ring:2,bw=2,lat=1000" \
    --collective broadcast --size 1000 --algo tree --mode pipelined
expect 2 "--calls times a run of calls in pipelined mode" "$MRC" sim hcm8 \
    --collective allreduce --size 1M --calls 8
expect 2 "--calls '17': a run of 2 to 16 calls" "$MRC" sim hcm8 \
    --collective allreduce --size 1M --mode pipelined --calls 17
expect 2 "MIN:MAX" "$MRC" sim hcm8 --collective allreduce --sweep 1K
expect 2 "barley-twist does not apply" "$MRC" sim ring:8 \
    --strategy barley-twist --collective allreduce --size 1M
# 65536 nodes: one step per ring loop stands for all of them.
expect 0 "in 131070 steps" "$MRC" sim torus2d:256,256 \
    --collective allreduce --size 1G
# Pipelined: one node stands for a symmetric group (its time is the
# closed form's, as bsp's); where none can, the full walk's bound holds
# and says why.
expect 0 "time     82311.960 us" "$MRC" sim torus2d:256,256 \
    --collective allreduce --size 1G --mode pipelined
expect 2 "one size) and takes groups of at most 4096 nodes; group 0 has 5000" \
    "$MRC" sim ring:5000 --collective allreduce --size 1000004 \
    --mode pipelined

expect_summary
