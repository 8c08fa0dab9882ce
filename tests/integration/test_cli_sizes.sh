#!/bin/sh
# Sizes that overflow or would take more memory than the machine has are
# refused up front, with the figure, before anything large is allocated;
# files that are not regular files are refused without waiting on them.
# Nothing here allocates more than a few MiB when the refusals work.
# Usage: test_cli_sizes.sh MRC MRC_BENCH
set -u
MRC=$1
BENCH=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

# A limit fixed here, so that the results do not depend on the machine.
limit="MRC_MAX_MEMORY=8G"

# run: 2^62 float32 elements overflowed a size and crashed; 1T printed
# rows at 28 PB/s with an empty message. Both are refused, no row.
expect 2 "needs 17179869184 GiB of buffers (2 ranks, two each); the limit" \
    "$MRC" run --topology ring:2 --count 4611686018427387904 --dtype f32
expect 1 "" grep -q "algbw\|allreduce" "$tmp/out"
expect 2 "needs 32768 GiB of buffers (2 ranks, two each)" \
    "$MRC" run --topology ring:2 --count 1T --dtype f32
expect 1 "" grep -q "algbw\|allreduce" "$tmp/out"
# A chunk of one byte makes a plan entry per element: refused when the
# call is planned, on every rank, with no row for it.
expect 1 "auto allreduce: rank 0: .*needs [0-9.]* GiB of plans" \
    env "$limit" "$MRC" run --chunk 1 --collective allreduce --algo rings
expect 1 "" grep -q "algbw" "$tmp/out"
expect 2 "needs 70 KiB of buffers" \
    "$MRC" run --topology ring:3 --count 1000 --max-memory 1K
expect 2 "--max-memory 'lots' is not a size" \
    "$MRC" run --topology ring:3 --max-memory lots

# sim: chains of messages counted before any is made.
expect 2 "needs 34 GiB of simulation state (67108928 chains" \
    env "$limit" "$MRC" sim hcm8 --collective allreduce --size 16T
# Pipelined: every node's chains (uneven fragments), or one node's where
# it stands for the group.
expect 2 "needs 3.6 GiB of simulation state (4194308 chains" \
    env MRC_MAX_MEMORY=2G "$MRC" sim ring:4 --collective allreduce \
    --size 1099511627780 --mode pipelined
expect 2 "\$MRC_MAX_MEMORY 'lots' is not a size in bytes above 0" \
    env MRC_MAX_MEMORY=lots "$MRC" sim ring:4 --collective allreduce \
    --size 1M
expect 2 "\$MRC_MAX_MEMORY '0' is not a size in bytes above 0" \
    env MRC_MAX_MEMORY=0 "$MRC" topo show ring:4
# A limit the command sets comes first.
expect 0 "time" env MRC_MAX_MEMORY=lots "$MRC" sim ring:4 \
    --collective allreduce --size 1M --max-memory 8G
expect 2 "needs 928 MiB of simulation state (1048576 chains" \
    env MRC_MAX_MEMORY=512M "$MRC" sim ring:4 --collective allreduce \
    --size 1T --mode pipelined
expect 2 "has 64 sizes; at most 41" \
    "$MRC" sim ring:4 --collective allreduce \
    --sweep 1:18446744073709551615 -o "$tmp/sweep"
expect 1 "" test -e "$tmp/sweep.csv"

# fabric: 70 bytes asking for 2^31 - 1 bytes to one tile, and the
# all-to-all of 46340 tiles (2^31 packets), refused unbuilt.
printf '{"tiles":2,"exchange":[{"source":0,"destinations":[1],"bytes":%s}]}' \
    2147483647 >"$tmp/f70.json"
expect 2 "needs 15 GiB of schedule tables; the limit is 8.0 GiB" \
    env "$limit" "$MRC" fabric --pattern "$tmp/f70.json"
expect 2 "needs 140 GiB of exchange and schedule tables" \
    env "$limit" "$MRC" fabric --pattern all-to-all --tiles 46340
# Two latches per tile and column: 100000 tiles in 50000 columns.
expect 2 "needs 37 GiB of latches and queues for the fabric simulation" \
    env "$limit" "$MRC" fabric --pattern neighbour --tiles 100000 \
    --columns 50000

# Files: one over the cap is refused before it is read (a sparse file:
# no disk), one that is not a regular file is refused as such.
dd if=/dev/null of="$tmp/big.json" bs=1M seek=65 2>/dev/null
expect 2 "big.json is 65 MiB, larger than the 64 MiB limit for input files" \
    "$MRC" topo check "$tmp/big.json"
expect 2 "big.json is 65 MiB, larger than the 32 MiB limit" \
    "$MRC" fabric --pattern "$tmp/big.json" --max-memory 1G
mkfifo "$tmp/fifo"
expect 2 "fifo is not a regular file" "$MRC" topo check "$tmp/fifo"
expect 2 "/dev/zero is not a regular file" "$MRC" topo show /dev/zero
expect 2 "is not a regular file" "$MRC" sim "$tmp" --collective allreduce \
    --size 1K

# Specs: too large is said as such.
expect 2 "'ring:2147483648': N must be at most 1048576" \
    "$MRC" topo show ring:2147483648

# mrc-bench: 4 bytes times 2^63 wrapped to 0, and the sweep went round
# forever; a maximum past the limit is refused before anything is
# allocated.
expect 0 "      4            1  float32" \
    timeout 20 "$MRC" launch -n 1 -- "$BENCH" -b 4 -e 8 \
    -f 9223372036854775808 -n 1 -w 0
expect 1 "needs 8192 GiB of buffers for -e 1099511627776 on 2 ranks" \
    env "$limit" timeout 20 "$MRC" launch -n 2 -- "$BENCH" -b 1K -e 1T
expect 1 "-e is less than one element of float32" \
    timeout 20 "$MRC" launch -n 1 -- "$BENCH" -b 2 -e 2

expect_summary
