#!/bin/sh
# The conformance cases over the MPI transport, under mpirun on loopback:
# every peer over MPI point-to-point (mpi-p2p), and every peer through the
# transport's shared-memory endpoint (mpi-host, as when all ranks share a
# host). Each case runs on an endpoint of its own.
# Usage: test_conform_mpi.sh MPIRUN CONFORM_RANK
set -u
MPIRUN=$1
RANK=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../integration/expect.sh"

. "$(dirname "$0")/../mpi/mpi_env.sh"

# Every rank's line says ok, or one of the skips the transport owns up to:
# no memory semantics, or (between hosts) a cancel remote peers never hear
# of. Skips are counted and said.
skipped=0
skips='skip: transport mpi has no memory semantics\|skip: mpi between hosts: cancel does not tell remote peers'
check() { # MODE N CASE...
    mode=$1 n=$2
    shift 2
    for k in "$@"; do
        r=0
        while [ $r -lt "$n" ]; do
            expect 0 "^rank $r of $n: mpi $k: \(ok\|$skips\)" cat "$tmp/run"
            grep -q "^rank $r of $n: mpi $k: skip" "$tmp/run" &&
                skipped=$((skipped + 1))
            r=$((r + 1))
        done
    done
}

cases="match burst large memory agree memory-agree cancel"
for mode in mpi-p2p mpi-host; do
    for n in 2 3; do
        expect 0 "" "$MPIRUN" -np $n "$RANK" $mode $cases
        cp "$tmp/out" "$tmp/run"
        check $mode $n $cases
    done
done
[ $skipped -gt 0 ] && echo "$skipped rank-cases skipped (see the lines above for why)"
expect_summary
