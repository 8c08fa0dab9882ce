#!/bin/sh
# The suite-style benchmark (bench/mpi_collectives.c, an ordinary MPI
# program) and its script, as it is and under the drop-in library: every
# collective's exact check passes at small sizes on 2 and 3 ranks, with
# the same buffers and with cold ones, and bad usage is refused.
# Usage: test_mpi_suite.sh MPIRUN BUILD_DIR SOURCE_DIR
set -u
MPIRUN=$1
BUILD=$2
SRC=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../integration/expect.sh"
. "$(dirname "$0")/mpi_env.sh"
export MPIRUN
prog=$BUILD/bench/mpi-collectives
script=$SRC/bench/mpi_collectives.sh

# Both sides, every collective, exact at every size (a wrong element
# fails the run: exit 1).
expect 0 "| reduce_scatter | 64 |" \
    sh "$script" -r 1 -n 2 "$BUILD" -- -e 4K -n 5 -w 2
# The host's state beside the rounds: the time a line takes between
# cores 0 and 1 before the round and after it (bench/peer-read --line).
if [ "$(nproc)" -ge 2 ]; then
    cp "$tmp/out" "$tmp/first"
    expect 0 "host: a line between cores 0 and 1, ns one way, before each round and after the last: [0-9][0-9]* [0-9][0-9]*$" \
        cat "$tmp/first"
    expect 0 "line: [0-9][0-9]* ns one way (5 runs: [0-9][0-9]*-[0-9][0-9]*)" \
        "$BUILD/bench/peer-read" --line
    expect 0 "stream, 16-byte entries: [0-9.]* ns a message" \
        "$BUILD/bench/peer-read" --stream
fi
expect 2 "peer-read: --line takes no sizes" "$BUILD/bench/peer-read" --line 1K
expect 0 "allgather: geometric mean" \
    sh "$script" -r 1 -n 3 "$BUILD" -- -b 8 -e 1K -n 5 -w 2 --cold
# A second build beside them (-B): its column and mrc / it, from the
# same rounds (here the same build twice); a build without the library
# is refused.
expect 0 "| bcast | 64 | [0-9.]* | [0-9.]* | [0-9.]* | [0-9.]* | [0-9.]* |" \
    sh "$script" -r 1 -n 2 -B "$BUILD" "$BUILD" -- -c bcast -b 64 -e 64 -n 5 -w 2
cp "$tmp/out" "$tmp/two"
expect 0 "bcast: geometric mean .*; mrc / before [0-9.]*" cat "$tmp/two"
expect 2 "no $tmp/libmrc_mpi.so" sh "$script" -B "$tmp" "$BUILD"
# A setting beside the default (-E): the before side is the build's own
# library with VAR=VALUE in its ranks' environment, and only that side
# (here MRC_DEBUG=INFO: its ranks log the program they chose).
expect 0 "before: MRC_DEBUG=INFO" sh "$script" -r 1 -n 2 -k "$tmp/env" \
    -E MRC_DEBUG=INFO "$BUILD" -- -c bcast -b 64 -e 64 -n 5 -w 2
expect 0 "rank [01]: program" cat "$tmp/env/before-1.txt.err"
expect 1 "" grep -q "program" "$tmp/env/mrc-1.txt.err"
expect 2 "usage: bench/mpi_collectives.sh" sh "$script" -E 1X=2 "$BUILD"
# Calls of eight counts a size (--shapes): every one a new shape of call
# for the library at first, then found again.
expect 0 "| allreduce | 256 |" \
    sh "$script" -r 1 -n 2 "$BUILD" -- -b 16 -e 1K -n 40 -w 2 --shapes 8
# Buffers from MPI_Alloc_mem: the drop-in library serves them from
# mrc_mem_alloc, the peers map them (the trace says so), and every check
# passes (a wrong element exits 1); through the script, MPI's own too.
expect 0 "rank 1: maps rank 0's shared region" \
    "$MPIRUN" -np 2 -x MRC_DEBUG=TRACE -x LD_PRELOAD="$BUILD/libmrc_mpi.so" \
    "$prog" -b 64K -e 1M -n 3 -w 1 --alloc-mem
cp "$tmp/out" "$tmp/alloc"
expect 0 "bcast  *1048576  *[0-9.]* ok" cat "$tmp/alloc"
expect 0 "| allreduce | 1048576 |" \
    sh "$script" -r 1 -n 3 "$BUILD" -- -b 256K -e 1M -n 3 -w 1 --alloc-mem
# A size a reduction cannot take (under one float a rank) is skipped,
# not run: reduce-scatter of 8 bytes on 3 ranks has no row.
expect 0 "reduce_scatter  *16  *[0-9.]* ok" \
    "$MPIRUN" -np 3 "$prog" -c reduce_scatter -b 4 -e 16 -n 2 -w 1
grep -q "reduce_scatter  *8 " "$tmp/out" &&
    { echo "FAIL: a reduce-scatter of 8 bytes on 3 ranks was run"; failed=$((failed + 1)); }
expect 0 '"check": "ok"' \
    "$MPIRUN" -np 2 "$prog" -c bcast -e 64 -n 2 -w 1 --json
# Bad usage.
expect 2 "bad option or value: -c scan" "$MPIRUN" -np 2 "$prog" -c scan
expect 2 "bad option or value: -e 0" "$MPIRUN" -np 2 "$prog" -e 0
expect 2 "bad option or value: --shapes 0" "$MPIRUN" -np 2 "$prog" --shapes 0
expect 2 "usage: bench/mpi_collectives.sh" sh "$script" -r x "$BUILD"
expect 2 "no $tmp/bench/mpi-collectives" sh "$script" "$tmp"
expect_summary
