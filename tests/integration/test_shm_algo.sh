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
. "$(dirname "$0")/shm_checks.sh"

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
# Local completion (MPI's: the drop-in library's): the leaves of a
# reduce and the root of a broadcast return at once, and run calls ahead
# of their peers; every result still exact.
for algo in direct1 tree rings; do
    for n in 2 3; do
        expect 0 "rank 0 of $n: [0-9]* cases, 0 wrong elements, 0 failed" \
            env MRC_ALGO=$algo MRC_COMPLETION=local "$MRC" launch -n $n \
            --timeout 120 -- "$RANK" sweep
    done
done
expect 1 "shm_rank: \$MRC_COMPLETION: unknown completion 'soon' (group local)" \
    env MRC_COMPLETION=soon "$MRC" launch -n 2 --timeout 60 -- "$RANK" quick

# hier on 4 ranks taken to be on 2 hosts (MRC_HOSTS): within each pair
# through the segment, the leaders' ring by messages; it skips
# reduce-scatter and allgather.
expect 0 "rank 0 of 4: [0-9]* cases, 0 wrong elements, 0 failed, [1-9][0-9]* skipped" \
    env MRC_ALGO=hier MRC_HOSTS=2 "$MRC" launch -n 4 --timeout 120 -- \
    "$RANK" sweep

# Ranks that call differently fail on every rank naming both calls, by
# copy through the window (100000 floats) and by reference (2 and 4 MiB),
# and the communicator refuses the next call.
f32sum='float32 (sum)'
mismatch 3 count "allreduce of 10000[01] $f32sum but rank [0-9] allreduce of 10000[01] $f32sum" MRC_ALGO=direct2
mismatch 2 large "allreduce of \(2097152\|4194304\) $f32sum but rank [0-9] allreduce of \(2097152\|4194304\) $f32sum" MRC_ALGO=direct2
mismatch 3 root "broadcast of 100000 float32 from root [01] but rank [0-9] broadcast of 100000 float32 from root [01]" MRC_ALGO=direct2
# direct1's broadcast: every rank waits for every other's flag (no round
# back from the root), and still every rank fails in the same call.
mismatch 3 root "broadcast of 100000 float32 from root [01] but rank [0-9] broadcast of 100000 float32 from root [01]" MRC_ALGO=direct1
mismatch 3 dtype "allreduce of 100000 \(float32\|int32\) (sum) but rank [0-9] allreduce of 100000 \(float32\|int32\) (sum)" MRC_ALGO=direct1
# The families by messages: in a reduce or a broadcast a rank need not
# hear from the one that disagrees (the root of a broadcast hears from
# nobody, a leaf from its parent), and it fails all the same: before it
# returns, it sees that every peer of its group has begun the call alike.
mismatch 3 rootsmall "broadcast of 16 float32 from root [01] but rank [0-9] broadcast of 16 float32 from root [01]" MRC_ALGO=rings
mismatch 4 rootsmall "broadcast of 16 float32 from root [01] but rank [0-9] broadcast of 16 float32 from root [01]" MRC_ALGO=tree
mismatch 3 root "broadcast of 100000 float32 from root [01] but rank [0-9] broadcast of 100000 float32 from root [01]" MRC_ALGO=tree
mismatch 3 reduceroot "reduce of 16 float32 from root [01] (sum) but rank [0-9] reduce of 16 float32 from root [01] (sum)" MRC_ALGO=tree
mismatch 4 reduceroot "reduce of 16 float32 from root [01] (sum) but rank [0-9] reduce of 16 float32 from root [01] (sum)" MRC_ALGO=rings

# With local completion a rank that receives still compares the call of
# every rank it reads from; a rank that only sends learns of the
# disagreement at its next call (the root's failure, or its own
# comparison of its last call): every rank fails, in that call or the
# next, naming both calls. At 2 ranks that each name the other the root
# of a reduce nobody receives: the next call finds it.
for case in 3:count 3:roots 2:roots; do
    n=${case%%:*} what=${case#*:}
    expect 0 "" env MRC_TIMEOUT=5 MRC_ALGO=direct1 MRC_COMPLETION=local \
        "$MRC" launch -n $n --timeout 60 -- "$RANK" mismatch-local $what
    cp "$tmp/out" "$tmp/local"
    r=0
    while [ $r -lt $n ]; do
        expect 0 "rank $r: \(then \)\?MRC_ERR_INVALID_ARG: .*ranks disagree: rank [0-9] called reduce of 1[67] float32 from root [0-2] (sum) but rank [0-9] reduce of 1[67] float32 from root [0-2] (sum)" \
            cat "$tmp/local"
        r=$((r + 1))
    done
done
expect 0 "the call before this one (rank [01])" grep -h "" "$tmp/local"
# Calls that may wait on nobody, all of them: the ranks look at their
# unheard calls (and their peers' failures) every 16, so the
# disagreement is found within 17 calls by a rank that runs them beside
# its peer; a rank that ran all 40 ahead of it learns at its next call
# that waits (the allreduce after them).
expect 0 "" env MRC_TIMEOUT=5 MRC_ALGO=direct1 MRC_COMPLETION=local \
    "$MRC" launch -n 2 --timeout 60 -- "$RANK" mismatch-local rootsloop
cp "$tmp/out" "$tmp/loop"
expect 0 "rank [01]: failed at call \([0-9]\|1[0-7]\): MRC_ERR_INVALID_ARG: .*calls\? before this one (rank [01]): the ranks disagree: rank [01] called reduce of 16 float32 from root [01] (sum) but rank [01] reduce of 16 float32 from root [01] (sum)" \
    cat "$tmp/loop"
for r in 0 1; do
    expect 0 "rank $r: .*MRC_ERR_INVALID_ARG: .*ranks disagree: rank [01] called reduce of 16 float32 from root [01] (sum) but rank [01] reduce of 16 float32" \
        cat "$tmp/loop"
done

# A rank writes the end of its small deep calls one in 16: a peer whose
# next call needs the ends of the calls before it finds them by the
# rank's log, without waiting for the rank's next call (rank 0 away for
# 1.5 s, timeout 1 s). On 3 ranks: on 2, direct1's broadcast of 128 KiB
# goes by reference, and its root waits for its reader.
expect 0 "rank 1 of 3: endsbehind MRC_OK, the broadcast took 0\.[0-4][0-9]* s, 0 wrong elements" \
    env MRC_TIMEOUT=1 MRC_ALGO=direct1 MRC_COMPLETION=local \
    "$MRC" launch -n 3 --timeout 60 -- "$RANK" endsbehind
cp "$tmp/out" "$tmp/behind"
expect 0 "rank 0 of 3: endsbehind MRC_OK, .* 0 wrong elements" cat "$tmp/behind"
# On 2 the root of that broadcast (by reference) waits for its reader,
# local completion or not: with its reader away it times out, after its
# 1 s, where by copy it returned at once.
expect 1 "rank 1 of 2: endsbehind MRC_ERR_TIMEOUT, the broadcast took 1\.[0-9]* s" \
    env MRC_TIMEOUT=1 MRC_ALGO=direct1 MRC_COMPLETION=local \
    "$MRC" launch -n 2 --timeout 60 -- "$RANK" endsbehind

# A leaf of 4 KiB reduces runs ahead of its root through the ring of wide
# windows (16 calls), and no further.
expect 0 "rank 1 of 2: wideahead MRC_OK, 12 reduces in 0\.[0-4][0-9]* s, 40 in [0-9]\.[0-9]* s, 0 wrong elements" \
    env MRC_TIMEOUT=10 MRC_ALGO=direct1 MRC_COMPLETION=local \
    "$MRC" launch -n 2 --timeout 60 -- "$RANK" wideahead
cp "$tmp/out" "$tmp/wide"
expect 0 "rank 0 of 2: wideahead MRC_OK, .* 0 wrong elements" cat "$tmp/wide"

# Two roots of one broadcast, which hear from nobody, then broadcasts
# they only receive, in which they publish nothing: they still compare
# their unheard call within 17 calls (not first at the allreduce after
# them; the one whose look came before its peer had begun it learns
# from that peer), and every rank fails naming both.
expect 0 "" env MRC_TIMEOUT=5 MRC_ALGO=direct1 MRC_COMPLETION=local \
    "$MRC" launch -n 3 --timeout 60 -- "$RANK" mismatch-local rootthenleaf
cp "$tmp/out" "$tmp/leaf"
bcast16='broadcast of 16 float32 from root [0-2]'
expect 0 "rank [02]: failed at call \([0-9]\|1[0-7]\): MRC_ERR_INVALID_ARG: .*ranks disagree: rank [0-2] called $bcast16 but rank [0-2] $bcast16" \
    cat "$tmp/leaf"
for r in 0 1 2; do
    expect 0 "rank $r: .*MRC_ERR_INVALID_ARG: .*ranks disagree: rank [0-2] called $bcast16 but rank [0-2] $bcast16" \
        cat "$tmp/leaf"
done

# Ranks that run different families for one call ($MRC_ALGO on one rank
# only) disagree, and fail so on every rank, naming the families.
expect 0 "" env MRC_TIMEOUT=5 "$MRC" launch -n 3 --timeout 60 -- sh -c \
    '[ "$MRC_RANK" = 2 ] && export MRC_ALGO=direct1 || export MRC_ALGO=rings
     exec "$0" mismatch family' "$RANK"
cp "$tmp/out" "$tmp/family"
for r in 0 1 2; do
    expect 0 "rank $r: MRC_ERR_INVALID_ARG: .*ranks disagree: rank [0-9] called allreduce of 1000 float32 (sum) by \(rings\|direct1\) but rank [0-9] allreduce of 1000 float32 (sum) by \(rings\|direct1\)" \
        cat "$tmp/family"
done

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
    peers_saw_death 3 "$tmp/die"
    job=$(cat "$tmp/job")
    expect 0 "" test -z "$(ls /dev/shm | grep "^mrc-$job")"
done
# A host profile whose send_by_ref is 1 (calibrate's, where the kernel's
# read beats the owner's copy and its reader's), and one whose is 0.
cat > "$tmp/byref.json" <<'JSON'
{"format": "mrc-profile", "version": 1, "transport": "shm", "ranks": 2,
 "cores": 2, "nodes_per_memory": 2, "cache_bytes": 4194304,
 "copy_gbps_cache": 40, "copy_gbps_memory": 8, "memory_gbps_shared": 10,
 "peer_gbps_cache": 12, "private_cache_bytes": 1048576,
 "peer_gbps_shared": 7, "rendezvous_bytes": 1048576, "rendezvous_us": 1,
 "slot_gbps": 12, "turn_us": 0, "flag_turn_us": 0, "get_us": 0.5,
 "kernel_gbps": 15, "spin_share": 0, "send_by_ref": 1,
 "reduce_gbps": {"float32": {"sum": {"cache": 20, "memory": 6}}},
 "message_us": 0.4, "sync_us": 0.2}
JSON
sed 's/"send_by_ref": 1,//' "$tmp/byref.json" > "$tmp/copy.json"
# How each send buffer exposed by reference went (direct1's allgather and
# reduce-scatter at 2 ranks; shm_rank sendcopy's calls: a, a again, in
# place, b, b for a reduce-scatter, b again, big a, big a, b, an
# allreduce that exposes no send buffer, b again), with the
# profile $1 ("" for none), as rank $2's trace says; $3: what it must
# say. A new buffer goes into its owner's area, where its peers read it
# with plain loads; the last call's again (the same address and size,
# exposed in the call just before: not b after the allreduce) stays
# where it is, read through the kernel, without a profile and
# with send_by_ref, and goes into the area with a profile whose
# send_by_ref is 0; by reference always when a buffer the call writes
# overlaps it (in place) or it is past the area's room. Results exact
# (new contents each call).
send_went() {
    expect 0 "rank 0 of 2: 11 calls, 0 wrong elements, 0 failed" \
        env MRC_ALGO=direct1 ${1:+MRC_PROFILE="$1"} MRC_DEBUG=TRACE \
        "$MRC" launch -n 2 --timeout 60 -- "$RANK" sendcopy
    went=$(sed -n "s/^mrc: rank $2: call \([0-9]*\): its send buffer ([0-9]* bytes) \([a-z]*\).*/\1\2/p" \
        "$tmp/out" | tr '\n' ' ')
    if [ "$went" = "$3" ] &&
        grep -q "rank $2: call 2: .* by reference: a buffer the call writes overlaps it" "$tmp/out" &&
        grep -q "rank $2: call 7: .* by reference: larger than its area's room" "$tmp/out" &&
        { [ -n "$1" ] && [ "$1" = "$tmp/copy.json" ] ||
            grep -q "rank $2: call 1: .* by reference: the last call's, read where it is" "$tmp/out"; }; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: sendcopy's send buffers (profile '${1:-none}', rank $2) went '$went', wanted '$3'"
    fi
}
send_went "" 0 "0copied 1by 2by 3copied 4copied 5by 6by 7by 8copied 10copied "
send_went "$tmp/byref.json" 1 "0copied 1by 2by 3copied 4copied 5by 6by 7by 8copied 10copied "
send_went "$tmp/copy.json" 0 "0copied 1copied 2by 3copied 4copied 5copied 6by 7by 8copied 10copied "

# A host whose kernel forbids cross-memory attach (MRC_NO_CMA=1 says so
# for this rank): the selector takes no program that reads a peer's
# buffers by reference, and every case is exact (and none is refused);
# a family asked for that would read so fails on every rank in the same
# call, naming why.
for n in 2 3; do
    expect 0 "rank 0 of $n: [1-9][0-9]* cases, 0 wrong elements, 0 failed, 0 skipped" \
        env MRC_NO_CMA=1 "$MRC" launch -n $n --timeout 120 -- "$RANK" sweep
done
for algo in direct1 direct2; do
    expect 1 "rank 1: mrc_[a-z_]* (rank 1): family $algo asked for: $algo reads the peers' buffers in place (by reference), which this host does not allow (cross-memory attach)" \
        env MRC_NO_CMA=1 MRC_ALGO=$algo "$MRC" launch -n 2 --timeout 120 -- \
        "$RANK" sweep
    call0=$(sed -n 's/^rank 0: \(mrc_[a-z_]*\) (rank 0): family .*/\1/p' "$tmp/out")
    call1=$(sed -n 's/^rank 1: \(mrc_[a-z_]*\) (rank 1): family .*/\1/p' "$tmp/out")
    if [ -n "$call0" ] && [ "$call0" = "$call1" ]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: without cross-memory attach, $algo: rank 0 failed in '$call0', rank 1 in '$call1'"
    fi
done

# With send_by_ref every case of direct1's sweep is exact (its allgather
# and reduce-scatter by reference from 16 KiB, its broadcast past 64 KiB).
for completion in group local; do
    expect 0 "rank 0 of 2: [0-9]* cases, 0 wrong elements, 0 failed" \
        env MRC_ALGO=direct1 MRC_COMPLETION=$completion \
        MRC_PROFILE="$tmp/byref.json" "$MRC" launch -n 2 --timeout 120 -- \
        "$RANK" sweep
done

# A /dev/shm without room for the job's segment (a container's): every
# rank refuses at once, naming what the job needs and the room there is,
# where a touch past the room would be a SIGBUS mid-call; a job that fits
# runs. In a mount namespace of its own (root's): else said and skipped.
if unshare -m sh -c 'mount -t tmpfs -o size=1m tmpfs /dev/shm' 2>/dev/null; then
    small() {
        size=$1
        shift
        unshare -m sh -c 'mount -t tmpfs -o size="$0" tmpfs /dev/shm &&
            exec "$@"' "$size" "$@"
    }
    expect 1 "rank [0-3]: the job's shared memory needs [0-9.]* MiB for 4 ranks, and /dev/shm has 48 MiB free" \
        small 48m "$MRC" launch -n 4 --timeout 30 -- "$RANK" quick
    cp "$tmp/out" "$tmp/small"
    expect 0 "4 of 4 rank(s) failed" cat "$tmp/small"
    expect 0 "rank 0 of 2: 11 calls, 0 wrong elements, 0 failed" \
        small 48m env MRC_ALGO=direct1 "$MRC" launch -n 2 --timeout 60 -- \
        "$RANK" sendcopy
    # (a tmpfs of size 0 has no limit, and says 0 blocks: not refused)
    expect 0 "rank 0 of 4: quick, 0 wrong elements, 0 failed" \
        small 0 "$MRC" launch -n 4 --timeout 60 -- "$RANK" quick
else
    echo "skipped: a small /dev/shm (no mount namespace here)"
fi

expect_summary
