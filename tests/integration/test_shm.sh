#!/bin/sh
# The shared-memory transport: ranks are processes started by mrc launch.
# Usage: test_shm.sh MRC SHM_RANK
set -u
MRC=$1
RANK=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"
. "$(dirname "$0")/shm_checks.sh"

# Every collective, dtype and op, in place and not, element by element.
for n in 1 2 3 4; do
    expect 0 "rank 0 of $n: [0-9]* cases, 0 wrong elements, 0 failed" \
        "$MRC" launch -n $n --timeout 120 -- "$RANK" sweep
done
expect 0 "rank 7 of 8: [0-9]* cases, 0 wrong elements, 0 failed" \
    "$MRC" launch -n 8 --timeout 120 -- "$RANK" sweep hcm8
# Routed hops between processes: the relays forward (within the group on
# ring-on-line, through the other groups' nodes on rung rings), exact.
expect 0 "rank 4: forwards stream 0 step 0 chunk 0 ([0-9]* elements) from 2 to 6" \
    env MRC_DEBUG=TRACE "$MRC" launch -n 8 --timeout 120 -- "$RANK" quick \
    ladder:8 ring-on-line 2
[ "$(grep -c 'quick, 0 wrong elements, 0 failed' "$tmp/out")" -eq 8 ] &&
    passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: ring-on-line ranks"; }
expect 0 "rank 2: forwards stream 0 step 0 chunk 0 ([0-9]* elements) from 0 to 4" \
    env MRC_DEBUG=TRACE "$MRC" launch -n 16 --timeout 120 -- "$RANK" quick \
    ladder:16 rung-ring-4
[ "$(grep -c 'quick, 0 wrong elements, 0 failed' "$tmp/out")" -eq 16 ] &&
    passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL: rung-ring-4 ranks"; }
# A reduce's leaves never wait for the root: they may run only a few calls
# ahead of it (a channel's slots), not thousands into its memory.
# At 2 ranks, too, the root takes the pieces its leaf sent ahead straight
# from their slots into its receives, each piece copied once: none kept
# early (a piece whose receive is not posted yet is copied out of its
# slot only while the receive tested is not done; before, every piece in
# when its receive was posted was: 3997 of the run's).
expect 0 "rank 0 of 2: runahead MRC_OK, [0-9]* ms, the fastest rank [0-9]* ms, the slowest [0-9]*, 0 wrong elements" \
    env MRC_ALGO=rings MRC_DEBUG=TRACE "$MRC" launch -n 2 --timeout 120 -- "$RANK" runahead
early=$(grep -c 'kept early' "$tmp/out")
[ "$early" -eq 0 ] && passed=$((passed + 1)) ||
    { failed=$((failed + 1)); echo "FAIL: runahead at 2 ranks: $early pieces kept early, wanted none"; }
expect 0 "rank 2 of 3: runahead MRC_OK, [0-9]* ms, the fastest rank [0-9]* ms, the slowest [0-9]*, 0 wrong elements" \
    env MRC_ALGO=rings "$MRC" launch -n 3 --timeout 120 -- "$RANK" runahead
# Buffers at odd addresses: the same results, and nothing loaded from a
# misaligned address (the sanitizer build).
expect 0 "rank 0 of 3: [0-9]* cases, 0 wrong elements, 0 failed" \
    "$MRC" launch -n 3 --timeout 120 -- "$RANK" sweep-odd
# Buffers from mrc_mem_alloc: the peers map them and read them with plain
# loads (each case's buffers are new regions, so mappings of freed ones
# are dropped and slots taken again); through the program's path too, and
# through the kernel with MRC_NO_MAP. The same results.
for n in 2 3 4; do
    expect 0 "rank 1: maps rank 0's shared region [0-9]* ([0-9]* bytes)" \
        env MRC_DEBUG=TRACE "$MRC" launch -n $n --timeout 120 -- "$RANK" \
        sweep-shared
    cp "$tmp/out" "$tmp/shared"
    expect 0 "rank 0 of $n: [0-9]* cases, 0 wrong elements, 0 failed" \
        cat "$tmp/shared"
done
expect 0 "rank 0 of 3: [0-9]* cases, 0 wrong elements, 0 failed" \
    env MRC_NO_DIRECT=1 "$MRC" launch -n 3 --timeout 120 -- "$RANK" \
    sweep-shared
expect 0 "rank 2 of 3: [0-9]* cases, 0 wrong elements, 0 failed" \
    env MRC_NO_MAP=1 MRC_DEBUG=TRACE "$MRC" launch -n 3 --timeout 120 -- \
    "$RANK" sweep-shared
cp "$tmp/out" "$tmp/shared"
expect 1 "" grep -q "maps rank" "$tmp/shared"
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
peers_saw_death 3 "$tmp/die"

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

# Ranks that call differently (the last rank's count, type, op or root
# differs) all fail before any reads a peer's memory, naming both ranks and
# both calls, in every path: one step, two steps, reading the peers'
# buffers, one step against two, and the program's path (MRC_NO_DIRECT,
# and three ranks, where a rank that disagrees with nobody learns it from
# its peers); then the communicator refuses further calls at once.
f32sum='float32 (sum)'
mismatch 2 count "allreduce of 10000[01] $f32sum but rank [0-9] allreduce of 10000[01] $f32sum"
mismatch 3 count "allreduce of 10000[01] $f32sum but rank [0-9] allreduce of 10000[01] $f32sum"
big='\(2097152\|4194304\)'
mismatch 2 large "allreduce of $big $f32sum but rank [0-9] allreduce of $big $f32sum"
mismatch 2 path "allreduce of [12]000 $f32sum but rank [0-9] allreduce of [12]000 $f32sum"
mismatch 3 split "allreduce of 10000[01] $f32sum but rank [0-9] allreduce of 10000[01] $f32sum"
ty='\(float32\|int32\)'
mismatch 2 dtype "allreduce of 100000 $ty (sum) but rank [0-9] allreduce of 100000 $ty (sum)"
mismatch 2 op "allreduce of 100000 float32 ([sm][ua][mx]) but rank [0-9] allreduce of 100000 float32 ([sm][ua][mx])"
mismatch 2 root "broadcast of 100000 float32 from root [01] but rank [0-9] broadcast of 100000 float32 from root [01]"
mismatch 3 root "broadcast of 100000 float32 from root [01] but rank [0-9] broadcast of 100000 float32 from root [01]"
mismatch 2 count "allreduce of 10000[01] $f32sum but rank [0-9] allreduce of 10000[01] $f32sum" MRC_NO_DIRECT=1
mismatch 3 op "allreduce of 100000 float32 ([sm][ua][mx]) but rank [0-9] allreduce of 100000 float32 ([sm][ua][mx])" MRC_NO_DIRECT=1

# A segment made before the job's ranks (by another local user who guessed
# the id, or left by an earlier job of the same id) is refused at once with
# the reason, and nothing is written to it: one anybody may write (0666),
# one of the wrong size, one of the right size without an mrc header, and
# a live job's whose token is not this rank's.
job="mrcsegtest$$"
seg="/dev/shm/mrc-$job-seg"
one() { # RANK [TOKEN]: one rank of a 2-rank job, on its own
    env MRC_TIMEOUT=3 MRC_NRANKS=2 MRC_RANK=$1 MRC_JOB=$job \
        MRC_JOB_TOKEN=${2:-t0k3n} "$RANK" sweep
}
head -c 4096 /dev/urandom > "$seg"
chmod 0666 "$seg"
cp "$seg" "$tmp/seg"
expect 1 "shared memory /mrc-$job-seg has mode 0666, not 0600: .*refused" one 1
expect 1 "shared memory /mrc-$job-seg already exists .*refused" one 0
chmod 0600 "$seg"
expect 1 "shared memory /mrc-$job-seg is 4096 bytes, not the [0-9]* of a job of 2 ranks.*refused" one 1
need=$(sed -n 's/.* is 4096 bytes, not the \([0-9]*\) of .*/\1/p' "$tmp/out")
expect 0 "" cmp "$seg" "$tmp/seg"
truncate -s "$need" "$seg"
cp "$seg" "$tmp/seg"
expect 1 "shared memory /mrc-$job-seg has no mrc header of version .*refused" one 1
expect 0 "" cmp "$seg" "$tmp/seg"
rm -f "$seg"
one 0 right-token > "$tmp/rank0" 2>&1 &
pid=$!
i=0
while [ ! -e "$seg" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
expect 1 "shared memory /mrc-$job-seg carries another job's token.*refused" \
    one 1 wrong-token
wait $pid
expect 0 "1 of 2 ranks attached within 3 s" cat "$tmp/rank0"
expect 0 "" test ! -e "$seg"

# Without mrc launch: the variables are named.
expect 1 "MRC_NRANKS is not set" env -u MRC_NRANKS "$RANK" sweep

expect_summary
