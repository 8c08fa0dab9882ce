#!/bin/sh
# Every family over shared memory, forced with MRC_ALGO: the sweep element
# by element (the cases a family does not apply to must be refused as
# such), ranks that call differently, and a rank killed mid-call.
# Usage: test_shm_algo.sh MRC SHM_RANK
set -u
MRC=$1
RANK=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

# The forced family ran: rings skip nothing; direct1 skips what it cannot
# do (past its window), direct2 the collectives whose one step is direct1.
for algo in rings direct1 direct2; do
    skip='[1-9][0-9]*'
    [ $algo = rings ] && skip=0
    expect 0 "rank 0 of 2: [0-9]* cases, 0 wrong elements, 0 failed" \
        env MRC_ALGO=$algo "$MRC" launch -n 2 --timeout 120 -- "$RANK" sweep
    expect 0 "rank 0 of 3: [0-9]* cases, 0 wrong elements, 0 failed, $skip skipped" \
        env MRC_ALGO=$algo "$MRC" launch -n 3 --timeout 120 -- "$RANK" sweep
done

# Ranks that call differently fail on every rank naming both calls, by
# copy through the window (100000 floats) and by reference (2 and 4 MiB),
# and the communicator refuses the next call.
mismatch() { # ALGO N WHAT PATTERN
    mm_algo=$1 mm_n=$2 mm_what=$3 mm_pat=$4
    expect 0 "" env MRC_TIMEOUT=5 MRC_ALGO=$mm_algo "$MRC" launch -n $mm_n \
        --timeout 60 -- "$RANK" mismatch $mm_what
    cp "$tmp/out" "$tmp/mismatch"
    mm_r=0
    while [ $mm_r -lt $mm_n ]; do
        expect 0 "rank $mm_r: MRC_ERR_INVALID_ARG: .*ranks disagree: rank [0-9] called $mm_pat" \
            cat "$tmp/mismatch"
        expect 0 "rank $mm_r: then MRC_ERR_INVALID_ARG: .*earlier call failed" \
            cat "$tmp/mismatch"
        mm_r=$((mm_r + 1))
    done
}
f32sum='float32 (sum)'
mismatch direct2 3 count "allreduce of 10000[01] $f32sum but rank [0-9] allreduce of 10000[01] $f32sum"
mismatch direct2 2 large "allreduce of \(2097152\|4194304\) $f32sum but rank [0-9] allreduce of \(2097152\|4194304\) $f32sum"
mismatch direct2 3 root "broadcast of 100000 float32 from root [01] but rank [0-9] broadcast of 100000 float32 from root [01]"
mismatch direct1 3 dtype "allreduce of 100000 \(float32\|int32\) (sum) but rank [0-9] allreduce of 100000 \(float32\|int32\) (sum)"

# A rank killed mid-allreduce (4 MiB by reference with direct2, 8 bytes
# with direct1): the others see it before the timeout, name it, and refuse
# later calls; nothing is left in /dev/shm.
export MRC_TIMEOUT=10
for case in direct2:die direct1:die-small; do
    algo=${case%%:*} what=${case#*:}
    expect 1 "rank 2 (pid [0-9]*) was killed by signal 9" env MRC_ALGO=$algo \
        "$MRC" launch -n 3 -- sh -c 'echo "$MRC_JOB" > "$0/job"; exec "$1" "$2"' \
        "$tmp" "$RANK" "$what"
    cp "$tmp/out" "$tmp/die"
    for r in 0 1; do
        expect 0 "rank $r: MRC_ERR_PEER_LOST after [0-9]\.[0-9]* s: .*rank 2 (pid" \
            cat "$tmp/die"
        expect 0 "rank $r: then MRC_ERR_PEER_LOST: .*earlier call failed" \
            cat "$tmp/die"
    done
    job=$(cat "$tmp/job")
    expect 0 "" test -z "$(ls /dev/shm | grep "^mrc-$job")"
done
expect_summary
