#!/bin/sh
# The shared-memory transport: ranks are processes started by mrc launch.
# Usage: test_shm.sh MRC SHM_RANK
set -u
MRC=$1
RANK=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

# Every collective, dtype and op, in place and not, element by element.
for n in 1 2 3 4; do
    expect 0 "rank 0 of $n: [0-9]* cases, 0 wrong elements, 0 failed" \
        "$MRC" launch -n $n --timeout 120 -- "$RANK" sweep
done
expect 0 "rank 7 of 8: [0-9]* cases, 0 wrong elements, 0 failed" \
    "$MRC" launch -n 8 --timeout 120 -- "$RANK" sweep hcm8
# Buffers at odd addresses: the same results, and nothing loaded from a
# misaligned address (the sanitizer build).
expect 0 "rank 0 of 3: [0-9]* cases, 0 wrong elements, 0 failed" \
    "$MRC" launch -n 3 --timeout 120 -- "$RANK" sweep-odd
# Allreduces of the whole job skip the program (one step, two steps through
# the segment, or reading the peers' buffers); the program's path for them
# too (MRC_NO_DIRECT).
expect 0 "rank 0 of 3: [0-9]* cases, 0 wrong elements, 0 failed" \
    env MRC_NO_DIRECT=1 "$MRC" launch -n 3 --timeout 120 -- "$RANK" sweep

# A rank killed mid-allreduce (4 MiB: by reading the peers' buffers, and
# by the program with MRC_NO_DIRECT): the others see it at once (under 10
# s, the timeout: seen, not waited out), name it, and their communicator
# refuses later calls; launch names the dead rank; nothing is left in
# /dev/shm.
export MRC_TIMEOUT=10
for direct in yes no; do
    if [ $direct = yes ]; then unset MRC_NO_DIRECT; else export MRC_NO_DIRECT=1; fi
    expect 1 "rank 3 (pid [0-9]*) was killed by signal 9" "$MRC" launch -n 4 \
        -- sh -c 'echo "$MRC_JOB" > "$0/job"; exec "$1" die' "$tmp" "$RANK"
    cp "$tmp/out" "$tmp/die"
    for r in 0 1 2; do
        expect 0 "rank $r: MRC_ERR_PEER_LOST after [0-9]\.[0-9]* s: .*rank 3 (pid" \
            cat "$tmp/die"
        expect 0 "rank $r: then MRC_ERR_PEER_LOST: .*earlier call failed" \
            cat "$tmp/die"
    done
    job=$(cat "$tmp/job")
    expect 0 "" test -z "$(ls /dev/shm | grep "^mrc-$job")"
done
unset MRC_NO_DIRECT

# The same in the one-step small allreduce.
expect 1 "rank 2 (pid [0-9]*) was killed by signal 9" "$MRC" launch -n 3 \
    -- "$RANK" die-small
cp "$tmp/out" "$tmp/die"
for r in 0 1; do
    expect 0 "rank $r: MRC_ERR_PEER_LOST after [0-9]\.[0-9]* s: .*rank 2 (pid" \
        cat "$tmp/die"
    expect 0 "rank $r: then MRC_ERR_PEER_LOST: .*earlier call failed" \
        cat "$tmp/die"
done

# The segment is private to the user (0600) while ranks attach; a rank
# whose peers never come times out, names how many came, and removes it.
MRC_TIMEOUT=2 "$MRC" launch -n 1 -- sh -c \
    'echo "$MRC_JOB" > "$0/job2"; MRC_NRANKS=2 exec "$1" sweep' \
    "$tmp" "$RANK" > "$tmp/alone" 2>&1 &
pid=$!
i=0
while [ ! -s "$tmp/job2" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.5
job=$(cat "$tmp/job2")
expect 0 "^600$" stat -c %a "/dev/shm/mrc-$job-seg"
wait $pid
expect 0 "1 of 2 ranks attached within 2 s" cat "$tmp/alone"
expect 0 "" test ! -e "/dev/shm/mrc-$job-seg"

# Without mrc launch: the variables are named.
expect 1 "MRC_NRANKS is not set" env -u MRC_NRANKS "$RANK" sweep

expect_summary
