#!/bin/sh
# Runs bench/mpi-collectives (an ordinary MPI program) as it is and under
# the drop-in library, in turn, R rounds (Open MPI first, then mrc, then
# mrc first: a drift of the machine's speed falls on both alike), and
# prints per collective and size the median over the rounds of each
# side's time a call, and mrc / Open MPI (below 1: mrc faster), as
# markdown; then, per collective, the geometric mean of that ratio.
#
#   usage: bench/mpi_collectives.sh [-r ROUNDS] [-n RANKS] [-k DIR]
#                                   [-B BEFORE] [-E VAR=VALUE] BUILD
#                                   [-- MPI-COLLECTIVES-ARGS...]
#
# BUILD is a build directory (holding bench/mpi-collectives and
# libmrc_mpi.so). -r: rounds (default 5); -n: ranks (default 2); -k: keep
# the raw outputs in DIR (default: a new temporary directory, named at the
# end). -B: another build's library too (BEFORE/libmrc_mpi.so, the program
# still BUILD's), each round's three runs in an order that turns with the
# round, and two more columns: its time and mrc / it (a change measured
# beside Open MPI in the same rounds). -E: the "before" side runs with
# VAR=VALUE in its ranks' environment (mpirun -x), and without -B it is
# BUILD's own library: a setting (MRC_STREAM_BYTES=1M, MRC_ALGO=tree)
# measured beside the default. Arguments after -- go to every
# run (e.g. --cold, -c allreduce, -e 1M). MPIRUN names the launcher
# (default: mpirun from PATH); MPI_COLLECTIVES_TIMEOUT the seconds one run
# may take (default 900). With BUILD/bench/peer-read, the time a line
# takes between cores 0 and 1 before each round and after the last is
# printed at the end: a round in one of a VM's slow spells shows there
# (docs/performance.md, "What a slow spell is").
# Exit: 0 when every run finished with exact results, 1 when a run failed
# or a check was wrong, 2 for bad usage.
set -eu

rounds=5 ranks=2 keep="" before="" before_env=""
usage() {
    echo "usage: bench/mpi_collectives.sh [-r ROUNDS] [-n RANKS] [-k DIR]" \
         "[-B BEFORE] [-E VAR=VALUE] BUILD [-- ARGS...]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case "$1" in
    -r) [ $# -ge 2 ] || usage; rounds=$2; shift 2 ;;
    -n) [ $# -ge 2 ] || usage; ranks=$2; shift 2 ;;
    -k) [ $# -ge 2 ] || usage; keep=$2; shift 2 ;;
    -B) [ $# -ge 2 ] || usage; before=$2; shift 2 ;;
    -E) [ $# -ge 2 ] || usage; before_env=$2; shift 2 ;;
    -*) usage ;;
    *) break ;;
    esac
done
[ $# -ge 1 ] || usage
build=$1
shift
[ $# -eq 0 ] || { [ "$1" = "--" ] || usage; shift; }
case "$rounds$ranks" in *[!0-9]*) usage ;; esac
case "$before_env" in
"") ;;
[A-Za-z_]*=*) case "${before_env%%=*}" in *[!A-Za-z0-9_]*) usage ;; esac ;;
*) usage ;;
esac
[ -z "$before_env" ] || [ -n "$before" ] || before=$build
[ "$rounds" -ge 1 ] && [ "$ranks" -ge 1 ] || usage
prog="$build/bench/mpi-collectives"
lib="$build/libmrc_mpi.so"
[ -x "$prog" ] || { echo "mpi_collectives.sh: no $prog (build with MPI)" >&2; exit 2; }
[ -f "$lib" ] || { echo "mpi_collectives.sh: no $lib" >&2; exit 2; }
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
if [ -n "$before" ]; then
    [ -f "$before/libmrc_mpi.so" ] ||
        { echo "mpi_collectives.sh: no $before/libmrc_mpi.so" >&2; exit 2; }
    before=$(cd "$before" && pwd)/libmrc_mpi.so
fi
mpirun=${MPIRUN:-mpirun}
limit=${MPI_COLLECTIVES_TIMEOUT:-900}
if [ -n "$keep" ]; then
    mkdir -p "$keep"
    dir=$keep
else
    dir=$(mktemp -d)
fi

run() { # SIDE ROUND [ARGS]
    side=$1 round=$2
    shift 2
    out="$dir/$side-$round.txt"
    if [ "$side" = mrc ]; then
        set -- -x LD_PRELOAD="$lib" "$prog" "$@"
    elif [ "$side" = before ] && [ -n "$before_env" ]; then
        set -- -x LD_PRELOAD="$before" -x "$before_env" "$prog" "$@"
    elif [ "$side" = before ]; then
        set -- -x LD_PRELOAD="$before" "$prog" "$@"
    else
        set -- "$prog" "$@"
    fi
    if ! timeout "$limit" "$mpirun" -np "$ranks" "$@" >"$out" 2>"$out.err"
    then
        echo "mpi_collectives.sh: the $side run of round $round failed:" >&2
        tail -5 "$out.err" >&2
        exit 1
    fi
}

# ns one way for a line between cores 0 and 1 now, or "-".
line_ns() {
    [ -x "$build/bench/peer-read" ] || { echo -; return; }
    "$build/bench/peer-read" --line 2>/dev/null | awk '{ print $2 }' |
        grep . || echo -
}

lines=""
r=1
while [ "$r" -le "$rounds" ]; do
    lines="$lines $(line_ns)"
    if [ -n "$before" ]; then # each side first, second and last in turn
        case $((r % 3)) in
        1) sides="mpi before mrc" ;;
        2) sides="mrc mpi before" ;;
        *) sides="before mrc mpi" ;;
        esac
    elif [ $((r % 2)) -eq 1 ]; then
        sides="mpi mrc"
    else
        sides="mrc mpi"
    fi
    for s in $sides; do run "$s" "$r" "$@"; done
    r=$((r + 1))
done

# Rows "coll bytes us check" of every run, tagged with their side.
for f in "$dir"/mpi-*.txt "$dir"/mrc-*.txt "$dir"/before-*.txt; do
    [ -f "$f" ] || continue
    side=$(basename "$f" | cut -d- -f1)
    awk -v side="$side" '!/^#/ && $1 != "collective" { print side, $0 }' "$f"
done | awk -v ranks="$ranks" -v rounds="$rounds" -v extra="$*" \
          -v two="${before:+1}" -v env="$before_env" '
    function median(list,   n, a, i, j, t) {
        n = split(list, a, " ")
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) {
                t = a[j]; a[j] = a[j - 1]; a[j - 1] = t
            }
        return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
    }
    {
        key = $2 " " $3
        if (!(key in seen)) { seen[key] = 1; order[++n] = key }
        t[$1 " " key] = t[$1 " " key] " " $4
        if ($5 != "ok") wrong++
    }
    END {
        printf "%d ranks, median of %d rounds%s%s\n\n", ranks, rounds,
               extra == "" ? "" : " (" extra ")",
               env == "" ? "" : "; before: " env
        printf "| collective | bytes | Open MPI (us) | mrc (us) | mrc / Open MPI |%s\n",
               two ? " before (us) | mrc / before |" : ""
        printf "| --- | ---: | ---: | ---: | ---: |%s\n", two ? " ---: | ---: |" : ""
        for (i = 1; i <= n; i++) {
            split(order[i], k, " ")
            a = median(t["mpi " order[i]]); b = median(t["mrc " order[i]])
            ratio = a > 0 ? b / a : 0
            printf "| %s | %s | %.2f | %.2f | %.3f |", k[1], k[2], a, b, ratio
            if (two) {
                bt = median(t["before " order[i]])
                printf " %.2f | %.3f |", bt, (bt > 0 ? b / bt : 0)
                if (bt > 0) lb[k[1]] += log(b / bt)
            }
            printf "\n"
            if (ratio > 0) { lg[k[1]] += log(ratio); cnt[k[1]]++ }
            if (ratio > 1.05) over[k[1]]++
        }
        print ""
        for (c in cnt)
            printf "%s: geometric mean %.3f over %d sizes, %d above 1.05%s\n",
                   c, exp(lg[c] / cnt[c]), cnt[c], over[c] + 0,
                   two ? sprintf("; mrc / before %.3f", exp(lb[c] / cnt[c])) : ""
        if (wrong) { printf "%d wrong results\n", wrong; exit 1 }
    }'
status=$?
lines="$lines $(line_ns)"
case "$lines" in
*[0-9]*) echo "host: a line between cores 0 and 1, ns one way, before each round" \
              "and after the last:$lines" ;;
esac
[ -n "$keep" ] || echo "raw outputs: $dir"
exit $status
