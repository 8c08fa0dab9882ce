#!/bin/sh
# mrc over MPI, under mpirun on loopback: mrc_comm_init_mpi and the
# drop-in library against MPI's own results.
# Usage: test_mpi.sh MPIRUN MPI_RANK LIBMRC_MPI MPI_ALLREDUCE
set -u
MPIRUN=$1
RANK=$2
LIB=$3
PLAIN=$4
# A sanitized build preloads its runtime first ($MRC_TEST_PRELOAD).
[ -n "${MRC_TEST_PRELOAD:-}" ] && LIB="$MRC_TEST_PRELOAD:$LIB"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../integration/expect.sh"

. "$(dirname "$0")/mpi_env.sh"
run() { "$MPIRUN" -np "$@"; }
# The jobs' segments in /dev/shm before any of ours (left by a run that
# was killed, say: not this test's to answer for).
ls /dev/shm | grep '^mrc-' | sort > "$tmp/shm_before"

# mrc_comm_init_mpi: every collective, dtype and op on world, a split and
# a dup; shared memory within the host, then every peer over MPI, then
# two pretend hosts (shared memory within each, MPI between).
for n in 2 3 4; do
    expect 0 "rank 0 of $n: [0-9]* cases, 0 wrong elements, 0 failed" \
        run $n "$RANK" api
done
expect 0 "rank 2 of 3: [0-9]* cases, 0 wrong elements, 0 failed" \
    run 3 -x MRC_MPI_HOSTS=3 "$RANK" api
expect 0 "rank 3 of 4: [0-9]* cases, 0 wrong elements, 0 failed" \
    run 4 -x MRC_MPI_HOSTS=2 "$RANK" api
# hier forced on ranks of pretend hosts: within each host through its
# segment, the leaders' ring over MPI; every call names its program.
expect 0 "rank 3 of 4: hier: [0-9]* cases, 0 wrong elements, 0 failed, [1-9]" \
    run 4 -x MRC_MPI_HOSTS=2 -x MRC_DEBUG=TRACE "$RANK" hier
cp "$tmp/out" "$tmp/trace"
expect 0 "rank 3: mrc_allreduce call [0-9]* count 300007 float32 sum: program hier" \
    cat "$tmp/trace"
expect 0 "rank 0: mrc_broadcast call [0-9]* .*: program hier (broadcast" \
    cat "$tmp/trace"
expect 0 "rank 5 of 6: hier: [0-9]* cases, 0 wrong elements, 0 failed, [1-9]" \
    run 6 -x MRC_MPI_HOSTS=3 "$RANK" hier

# The drop-in library on an unchanged MPI program: every call against the
# PMPI_ one, byte for byte.
for n in 2 4; do
    expect 0 "rank 0 of $n: [0-9]* cases, 0 wrong elements, 0 failed" \
        run $n -x LD_PRELOAD="$LIB" "$RANK" pmpi
done
expect 0 "rank 1 of 3: [0-9]* cases, 0 wrong elements, 0 failed" \
    run 3 -x LD_PRELOAD="$LIB" -x MRC_MPI_HOSTS=3 "$RANK" pmpi
# An ordinary MPI program (bench/mpi_allreduce.c, no mrc in it) prints
# the same results as it is and under the preload, size by size (--quick:
# a call a size, its timed loops took 22 s as it is).
expect 0 "67108864" run 2 "$PLAIN" --quick
awk '$1 ~ /^[0-9]+$/ {print $1, $4}' "$tmp/out" > "$tmp/plain"
expect 0 "67108864" run 2 -x LD_PRELOAD="$LIB" "$PLAIN" --quick
awk '$1 ~ /^[0-9]+$/ {print $1, $4}' "$tmp/out" > "$tmp/preloaded"
expect 0 "" test "$(wc -l < "$tmp/plain")" -eq 4
expect 0 "" cmp "$tmp/plain" "$tmp/preloaded"

# Without the preload the same program knows it is not tested.
expect 1 "libmrc_mpi.so is not preloaded" run 2 "$RANK" pmpi

# MRC_MPI_VERBOSE: which path each call site took, and why.
expect 0 "rank 0 of 2" run 2 -x LD_PRELOAD="$LIB" -x MRC_MPI_VERBOSE=1 \
    "$RANK" pmpi
cp "$tmp/out" "$tmp/verbose"
for line in \
    "MPI_Allreduce from .*mpi_rank+0x[0-9a-f]*: mrc (float32)" \
    "MPI_Allreduce from .*: MPI (an operator other than MPI_SUM" \
    "MPI_Reduce_scatter from .*: MPI (the ranks' counts differ)" \
    "MPI_Reduce from .*: MPI (a datatype that is not made of one" \
    "MPI_Bcast from .*: mrc (bytes)" \
    "MPI_Allgather from .*: mrc (bytes)" \
    "MPI_Reduce from .*: mrc (int64)"; do
    expect 0 "$line" cat "$tmp/verbose"
done
# once per call site and path, not once per call
expect 0 "" test "$(grep -c 'rank 0: MPI_Allreduce.*mrc (float32)' \
    "$tmp/verbose")" -eq 1

# Legal MPI that the drop-in library once got wrong or hung on. The pair
# types (holes inside, gaps between elements: MPI_DOUBLE_INT is 12 bytes
# in 16) through every intercepted call, against PMPI_.
expect 0 "rank 0 of 3: pairs: [0-9]* cases, 0 wrong elements, 0 failed" \
    run 3 -x LD_PRELOAD="$LIB" -x MRC_TIMEOUT=5 "$RANK" pairs
# Ranks that pass different datatypes of one signature take one route.
expect 0 "rank 0 of 3: mixed: [0-9]* cases, 0 wrong elements, 0 failed" \
    run 3 -x LD_PRELOAD="$LIB" -x MRC_TIMEOUT=5 "$RANK" mixed
# An in-place MPI_Reduce_scatter_block leaves the rest of recvbuf alone.
expect 0 "rank 1 of 3: rsb: 4 cases, 0 wrong elements, 0 failed" \
    run 3 -x LD_PRELOAD="$LIB" -x MRC_TIMEOUT=5 "$RANK" rsb
# A failed call (a timeout the program asked for) under MPI_ERRORS_RETURN
# returns an error, says so, and the calls after it go to MPI and work;
# under MPI_ERRORS_ARE_FATAL the job ends, saying why.
expect 0 "later collectives on this communicator go to MPI" \
    run 2 -x LD_PRELOAD="$LIB" -x MRC_TIMEOUT=1 "$RANK" errors
cp "$tmp/out" "$tmp/errors"
expect 0 "rank 1 of 2: errors: 8 cases, 0 wrong elements, 0 failed" \
    cat "$tmp/errors"
"$MPIRUN" -np 2 -x LD_PRELOAD="$LIB" -x MRC_TIMEOUT=1 "$RANK" fatal \
    > "$tmp/fatal" 2>&1
expect 0 "" test $? -ne 0
expect 0 "MPI_Allreduce on rank [01]: .*timed out after 1 s" cat "$tmp/fatal"
expect 1 "" grep -q "fatal: 1 cases" "$tmp/fatal"
# No timeout unless MRC_TIMEOUT sets one (MPI has none): a root 3 s late
# is waited for; with MRC_TIMEOUT=1 the same call fails, saying so.
expect 0 "no timeout (\$MRC_TIMEOUT unset)" \
    run 2 -x LD_PRELOAD="$LIB" -x MRC_MPI_VERBOSE=1 "$RANK" late
cp "$tmp/out" "$tmp/late"
expect 0 "rank 1 of 2: late: 1 cases, 0 wrong elements, 0 failed" \
    cat "$tmp/late"
"$MPIRUN" -np 2 -x LD_PRELOAD="$LIB" -x MRC_TIMEOUT=1 "$RANK" late \
    > "$tmp/late1" 2>&1
expect 0 "" test $? -ne 0
expect 0 "MPI_Bcast on rank 1: .*timed out after 1 s" cat "$tmp/late1"
# With no timeout a dead peer is still seen, and named.
"$MPIRUN" -np 2 -x LD_PRELOAD="$LIB" "$RANK" dies > "$tmp/dies" 2>&1
expect 0 "" test $? -ne 0
expect 0 "MPI_Bcast on rank 0: .*rank 1 (pid [0-9]*) is gone" \
    cat "$tmp/dies"

# While a rank waits in mrc, MPI progresses: rank 1's blocking 8 MiB
# MPI_Send to rank 0, which waits in a collective, completes (it waited
# out the timeout before).
for n in 2 3; do
    expect 0 "rank 0 of $n: progress: 3 cases, 0 wrong elements, 0 failed" \
        run $n -x LD_PRELOAD="$LIB" -x MRC_TIMEOUT=5 "$RANK" progress
done

# Counts past 2^31 elements (2 x 2 GiB per rank).
if [ "${MRC_TEST_BIG:-1}" != 0 ]; then
    expect 0 "rank 0 of 2: 2 cases, 0 wrong elements, 0 failed" \
        run 2 -x LD_PRELOAD="$LIB" "$RANK" big
fi

# Nothing left in /dev/shm by any of it (the tests that start ranks
# hold one lock: no other test's jobs run beside these).
expect 0 "" test -z \
    "$(ls /dev/shm | grep '^mrc-' | sort | comm -13 "$tmp/shm_before" -)"
expect_summary
