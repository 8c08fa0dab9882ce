#!/bin/sh
# Times every algorithm family the selector chooses between, forced one
# at a time with MRC_ALGO, on bench/mpi-collectives under the drop-in
# library (and Open MPI alone beside them), for bench/selector_regret.py
# to score the selector's picks against: which family was fastest for
# each collective and size, and how far the one it picks is behind.
#
#   usage: bench/family_sweep.sh [-r ROUNDS] [-n RANKS] [-c LIST] -k DIR
#                                BUILD [-- MPI-COLLECTIVES-ARGS...]
#
# Writes DIR/P.COLLECTIVE.FAMILY.ROUND.txt (FAMILY: direct1, direct2,
# rings, tree, or ompi), each mpi-collectives' own output. -r: rounds
# (default 2; the families in turn within a round); -n: ranks (default
# 2); -c: the collectives, comma-separated (default all five:
# allreduce,reduce_scatter,allgather,reduce,bcast). Arguments after --
# go to every run (default: -b 8 -e 16M). A family that does not apply
# to a collective, or stops at a size it cannot take (direct1 past its
# window), leaves the rows it ran; the scorer uses only rows checked
# "ok". MPIRUN names the launcher (default mpirun); FAMILY_SWEEP_TIMEOUT
# the seconds one run may take (default 300). Exit: 0 once every run was made, 2 for bad usage.
set -eu

rounds=2 ranks=2 dir=""
colls="allreduce reduce_scatter allgather reduce bcast"
usage() {
    echo "usage: bench/family_sweep.sh [-r ROUNDS] [-n RANKS] [-c LIST]" \
         "-k DIR BUILD [-- ARGS...]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
    -r) [ $# -ge 2 ] || usage; rounds=$2; shift 2 ;;
    -n) [ $# -ge 2 ] || usage; ranks=$2; shift 2 ;;
    -k) [ $# -ge 2 ] || usage; dir=$2; shift 2 ;;
    -c) [ $# -ge 2 ] || usage; colls=$(echo "$2" | tr ',' ' '); shift 2 ;;
    -*) usage ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] && [ -n "$dir" ] || usage
build=$1
shift
[ $# -eq 0 ] || { [ "$1" = "--" ] || usage; shift; }
[ $# -gt 0 ] || set -- -b 8 -e 16M
case "$rounds$ranks" in *[!0-9]*) usage ;; esac
for c in $colls; do
    case "$c" in
    allreduce | reduce_scatter | allgather | reduce | bcast) ;;
    *) echo "family_sweep.sh: unknown collective '$c'" >&2; exit 2 ;;
    esac
done
bench=$build/bench/mpi-collectives
lib=$build/libmrc_mpi.so
for f in "$bench" "$lib"; do
    [ -e "$f" ] || { echo "family_sweep.sh: no $f (build it first)" >&2; exit 2; }
done
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
mkdir -p "$dir"
mpirun=${MPIRUN:-mpirun}
limit=${FAMILY_SWEEP_TIMEOUT:-300}

r=1
while [ "$r" -le "$rounds" ]; do
    for c in $colls; do
        for f in direct1 direct2 rings tree ompi; do
            out=$dir/$ranks.$c.$f.$r.txt
            if [ "$f" = ompi ]; then
                timeout "$limit" "$mpirun" -np "$ranks" "$bench" -c "$c" "$@" \
                    >"$out" 2>&1 || true
            else
                timeout "$limit" "$mpirun" -np "$ranks" -x LD_PRELOAD="$lib" \
                    -x MRC_ALGO="$f" "$bench" -c "$c" "$@" >"$out" 2>&1 || true
            fi
        done
    done
    r=$((r + 1))
done
echo "family_sweep.sh: $rounds round(s) at $ranks ranks in $dir"
