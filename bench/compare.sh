#!/bin/sh
# Compares two builds of mrc against Open MPI's MPI_Allreduce, in turn on
# the same machine: runs
#   mpirun -np P BUILD/bench/mrc-bench -b 8 -e 64M -f 8 --mpi -r 5 --json
# R times for each build, alternating (BEFORE AFTER, then AFTER BEFORE,
# so that a drift of the machine's speed during the session falls on both
# alike), and prints per size, as markdown: the median over the rounds of
# mrc's time over MPI's (lower: mrc faster), before and after, and
# after/before - 1 in % (positive: the after build lost ground against
# MPI); then the raw medians of each side's time.
#
# MPI's time is the yardstick: this machine's speed swings by up to 2x
# from one run to the next, and the ratio to MPI, timed in the same run on
# the same buffers, cancels most of that. Compare the ratios, not the
# times. --json only for its three decimals (the table prints one).
#
# MPI timed inside mrc-bench shares the process with the build under
# test, which can slow it: a build that leaves its ranks skewed or
# busy when MPI's loop starts makes MPI look slower and its own ratio
# better. So each round also runs AFTER/bench/mpi-allreduce with the
# same sizes (MPI alone: no mrc code in the process), in turn with the
# two builds, and a second table gives each build's time over that
# anchor's of the same round.
#
#   usage: bench/compare.sh [-l] [-r ROUNDS] [-k DIR] BEFORE AFTER P
#                           [-- MRC-BENCH-ARGS...]
#
# BEFORE and AFTER are build directories (holding bench/mrc-bench); P the
# number of ranks. -r: rounds (default 3). -k: keep the raw outputs in DIR
# (default: a new temporary directory, named at the end). Arguments after
# -- replace "-b 8 -e 64M -f 8 -r 5" (--mpi --json are always added).
# -l: the shared-memory path without MPI instead, P processes started by
# the build's own `mrc launch -n P`: no MPI to time beside it, so the
# table compares mrc's times themselves, with the memory-bandwidth floor
# of the same runs as the only sign of the machine's state.
# MPIRUN names the launcher (default: mpirun or mpiexec from PATH);
# COMPARE_TIMEOUT the seconds one run may take (default 900); COMPARE_LIMIT
# the change in % past which a size is counted as worse (default 5).
# Exit: 0 when every run finished with exact results (whatever the
# figures), 1 when a run failed or a result was wrong, 2 for bad usage.
set -u

usage() {
    echo "compare.sh: $*" >&2
    echo "usage: bench/compare.sh [-l] [-r ROUNDS] [-k DIR] BEFORE AFTER P" \
         "[-- MRC-BENCH-ARGS...]" >&2
    exit 2
}

is_count() { # VALUE: a whole number from 1 to 999?
    case $1 in
    '' | *[!0-9]* | 0*) return 1 ;;
    esac
    [ "${#1}" -le 3 ]
}

rounds=3 keep='' launch=0
while [ $# -gt 0 ]; do
    case $1 in
    -l) launch=1
        shift ;;
    -r) [ $# -ge 2 ] || usage "-r wants a number of rounds"
        rounds=$2
        shift 2 ;;
    -k) [ $# -ge 2 ] || usage "-k wants a directory"
        keep=$2
        shift 2 ;;
    -h | --help) usage "compares two builds' mrc/MPI time ratios" ;;
    -*) usage "unknown option $1" ;;
    *) break ;;
    esac
done
[ $# -ge 3 ] || usage "wants BEFORE AFTER P"
before=$1 after=$2 ranks=$3
shift 3
if [ $# -gt 0 ]; then
    [ "$1" = "--" ] || usage "unexpected argument $1 (mrc-bench's go after --)"
    shift
fi
bench_args=${*:-"-b 8 -e 64M -f 8 -r 5"}
is_count "$rounds" || usage "-r $rounds: wants a number of rounds, 1 to 999"
is_count "$ranks" || usage "P $ranks: wants a number of ranks, 1 to 999"
limit=${COMPARE_LIMIT:-5}
case $limit in
'' | *[!0-9.]* | *.*.*) usage "COMPARE_LIMIT $limit: wants a percentage" ;;
esac

for side in BEFORE AFTER; do
    [ "$side" = BEFORE ] && dir=$before || dir=$after
    if [ ! -d "$dir" ]; then
        echo "compare.sh: $side build directory '$dir' does not exist" >&2
        exit 2
    fi
    if [ ! -f "$dir/bench/mrc-bench" ] || [ ! -x "$dir/bench/mrc-bench" ]; then
        echo "compare.sh: $side build directory '$dir' has no" \
             "bench/mrc-bench (build it there first: make build)" >&2
        exit 2
    fi
    if [ "$launch" = 1 ] && { [ ! -f "$dir/tools/mrc/mrc" ] ||
                              [ ! -x "$dir/tools/mrc/mrc" ]; }; then
        echo "compare.sh: -l: $side build directory '$dir' has no" \
             "tools/mrc/mrc to launch with (build it there first)" >&2
        exit 2
    fi
done

mpirun=${MPIRUN:-}
if [ -z "$mpirun" ]; then
    mpirun=$(command -v mpirun || command -v mpiexec || true)
fi
if [ "$launch" = 0 ] && { [ -z "$mpirun" ] ||
                          ! command -v "$mpirun" >/dev/null 2>&1; }; then
    echo "compare.sh: no mpirun found (install Open MPI, or set MPIRUN)" >&2
    exit 2
fi

# Open MPI on one host: loopback only (no other network is there to
# probe), more ranks than cores allowed, and root allowed (containers).
# Whatever the caller set already is kept.
: "${OMPI_MCA_btl_tcp_if_include:=lo}" "${OMPI_MCA_oob_tcp_if_include:=lo}"
: "${OMPI_MCA_rmaps_base_oversubscribe:=1}"
: "${OMPI_ALLOW_RUN_AS_ROOT:=1}" "${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:=1}"
export OMPI_MCA_btl_tcp_if_include OMPI_MCA_oob_tcp_if_include \
    OMPI_MCA_rmaps_base_oversubscribe OMPI_ALLOW_RUN_AS_ROOT \
    OMPI_ALLOW_RUN_AS_ROOT_CONFIRM

alone=0
if [ "$launch" = 0 ] && [ -x "$after/bench/mpi-allreduce" ]; then
    alone=1
fi

if [ -n "$keep" ]; then
    mkdir -p "$keep" || exit 2
    raw=$keep
else
    raw=$(mktemp -d -t mrc-compare.XXXXXX) || exit 2
fi
: > "$raw/rows" || exit 2

tmo=
if command -v timeout >/dev/null 2>&1; then
    tmo="timeout ${COMPARE_TIMEOUT:-900}"
fi

run() { # SIDE DIR ROUND: one run, its rows appended to $raw/rows
    out="$raw/$1-$3.json" err="$raw/$1-$3.err"
    if [ "$1" = alone ]; then
        # shellcheck disable=SC2086 # the words are the arguments
        $tmo "$mpirun" -np "$ranks" "$2/bench/mpi-allreduce" $bench_args \
            --json > "$out" 2> "$err"
    elif [ "$launch" = 1 ]; then
        # shellcheck disable=SC2086 # the words are the arguments
        $tmo "$2/tools/mrc/mrc" launch -n "$ranks" -- \
            "$2/bench/mrc-bench" $bench_args --json > "$out" 2> "$err"
    else
        # shellcheck disable=SC2086 # the words are the arguments
        $tmo "$mpirun" -np "$ranks" "$2/bench/mrc-bench" $bench_args \
            --mpi --json > "$out" 2> "$err"
    fi
    rc=$?
    if [ "$rc" -ne 0 ]; then
        echo "compare.sh: $1 round $3 failed (exit $rc$( [ "$rc" -eq 124 ] &&
            echo ", timed out")): $2/bench/mrc-bench; the start of its" \
            "stderr (all of it in $err):" >&2
        head -n 8 "$err" >&2
        exit 1
    fi
    awk -v side="$1" -v round="$3" -v out="$out" -v launch="$launch" '
        function field(name,   s) {
            if (!match($0, "\"" name "\": [0-9.eE+-]+"))
                return ""
            s = substr($0, RSTART, RLENGTH)
            sub(/^[^:]*: /, "", s)
            return s
        }
        /"bytes":/ {
            b = field("bytes"); t = field("time_us")
            m = launch ? 1 : field("mpi_time_us"); w = field("wrong")
            f = field("floor_gbps")
            if (side == "alone") { m = t; w = 0; f = 0 }
            if (b == "" || t == "" || m == "" || w == "" || f == "") {
                print "compare.sh: " out ": a row without bytes, " \
                      "time_us, mpi_time_us, floor_gbps or wrong: " $0 \
                      > "/dev/stderr"
                bad = 1
                exit 1
            }
            if (w + 0 != 0) {
                print "compare.sh: " out ": " w " wrong elements at " b \
                      " bytes" > "/dev/stderr"
                bad = 1
                exit 1
            }
            if (t + 0 <= 0 || m + 0 <= 0) {
                print "compare.sh: " out ": a time of 0 at " b " bytes" \
                      > "/dev/stderr"
                bad = 1
                exit 1
            }
            print side, round, b, t, m, f
            n++
        }
        END {
            if (!bad && n == 0) {
                print "compare.sh: " out ": no rows" > "/dev/stderr"
                exit 1
            }
        }' "$out" >> "$raw/rows" || exit 1
}

load() { # the load averages, for the record of how busy the machine was
    if [ -r /proc/loadavg ]; then
        cut -d' ' -f1-3 /proc/loadavg
    else
        uptime | sed 's/.*load average[s]*: *//'
    fi
}

if [ "$launch" = 1 ]; then
    echo "# compare.sh: BUILD/tools/mrc/mrc launch -n $ranks --" \
         "BUILD/bench/mrc-bench $bench_args --json, $rounds rounds," \
         "alternating"
else
    echo "# compare.sh: mpirun -np $ranks BUILD/bench/mrc-bench" \
         "$bench_args --mpi --json, $rounds rounds, alternating"
fi
echo "# BEFORE: $before"
echo "# AFTER:  $after"
echo "# load before: $(load)"
i=1
while [ "$i" -le "$rounds" ]; do
    if [ $((i % 2)) -eq 1 ]; then
        run before "$before" "$i"
        [ "$alone" = 1 ] && run alone "$after" "$i"
        run after "$after" "$i"
    else
        run after "$after" "$i"
        [ "$alone" = 1 ] && run alone "$after" "$i"
        run before "$before" "$i"
    fi
    echo "# round $i of $rounds done, load $(load)"
    i=$((i + 1))
done
echo "# load after: $(load)"
echo

awk -v P="$ranks" -v R="$rounds" -v limit="$limit" -v launch="$launch" '
    function median(list,   v, n, i, j, t) {
        n = split(list, v, " ")
        for (i = 2; i <= n; i++)
            for (j = i; j > 1 && v[j - 1] + 0 > v[j] + 0; j--) {
                t = v[j]; v[j] = v[j - 1]; v[j - 1] = t
            }
        return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    }
    # (side, size): its time over MPI alone of the same round, median
    function alone_ratio(side, s,   v, n, i, l, kv) {
        n = split(over[side SUBSEP s], v, " ")
        l = ""
        for (i = 1; i <= n; i++) {
            split(v[i], kv, ":")
            if ((kv[1] SUBSEP s) in alone)
                l = l " " (kv[2] / alone[kv[1] SUBSEP s])
        }
        return l == "" ? "" : median(l)
    }
    function alone_median(s,   k, l, kv) {
        l = ""
        for (k in alone) {
            split(k, kv, SUBSEP)
            if (kv[2] + 0 == s)
                l = l " " alone[k]
        }
        return median(l)
    }
    function range(list,   v, n, i, lo, hi) {
        n = split(list, v, " ")
        lo = hi = v[1] + 0
        for (i = 2; i <= n; i++) {
            if (v[i] + 0 < lo) lo = v[i] + 0
            if (v[i] + 0 > hi) hi = v[i] + 0
        }
        return sprintf("%.3f-%.3f", lo, hi)
    }
    $1 == "alone" {
        alone[$2 SUBSEP $3] = $4
        next
    }
    {
        k = $1 SUBSEP $3
        over[k] = over[k] " " $2 ":" $4
        ratio[k] = ratio[k] " " ($4 / $5)
        mrc[k] = mrc[k] " " $4
        mpi[k] = mpi[k] " " $5
        floor[k] = floor[k] " " $6
        if (!($3 in seen)) {
            seen[$3] = 1
            sizes[++ns] = $3 + 0
        }
    }
    END {
        for (i = 2; i <= ns; i++)
            for (j = i; j > 1 && sizes[j - 1] > sizes[j]; j--) {
                t = sizes[j]; sizes[j] = sizes[j - 1]; sizes[j - 1] = t
            }
        if (launch)
            printf "P = %d, mrc launch: mrc time (us), median of %d " \
                   "rounds\n\n", P, R
        else
            printf "P = %d: mrc time / MPI time, median of %d rounds " \
                   "(lower: mrc faster)\n\n", P, R
        print "| bytes | before | after | after/before - 1 |" \
              " before (range) | after (range) |"
        print "| ---: | ---: | ---: | ---: | ---: | ---: |"
        worse = 0
        for (i = 1; i <= ns; i++) {
            s = sizes[i]; b = "before" SUBSEP s; a = "after" SUBSEP s
            if (!(b in ratio) || !(a in ratio)) {
                printf "| %d | %s | %s | - | | |\n", s,
                       b in ratio ? sprintf("%.3f", median(ratio[b])) : "-",
                       a in ratio ? sprintf("%.3f", median(ratio[a])) : "-"
                continue
            }
            rb = median(ratio[b]); ra = median(ratio[a])
            ch = 100 * (ra / rb - 1)
            if (ch > limit)
                worse++
            printf "| %d | %.3f | %.3f | %+.1f%% | %s | %s |\n", s, rb, ra,
                   ch, range(ratio[b]), range(ratio[a])
        }
        printf "\n%d of %d sizes more than %s%% worse after than before.\n",
               worse, ns, limit
        if (launch) {
            print "\nFloor (GB/s, membw x (P-1)/P^2 of the same runs), " \
                  "median:\n"
            print "| bytes | before | after |"
            print "| ---: | ---: | ---: |"
            for (i = 1; i <= ns; i++) {
                s = sizes[i]; b = "before" SUBSEP s; a = "after" SUBSEP s
                printf "| %d | %s | %s |\n", s,
                       b in floor ? sprintf("%.2f", median(floor[b])) : "-",
                       a in floor ? sprintf("%.2f", median(floor[a])) : "-"
            }
            exit 0
        }
        if (length(alone) > 0) {
            print "\nAgainst MPI alone (mpi-allreduce, no mrc in the " \
                  "process, same round): mrc time / MPI-alone time, " \
                  "median of the rounds:\n"
            print "| bytes | before | after | after/before - 1 | " \
                  "MPI alone (us) |"
            print "| ---: | ---: | ---: | ---: | ---: |"
            worse_alone = 0
            for (i = 1; i <= ns; i++) {
                s = sizes[i]
                rb = alone_ratio("before", s); ra = alone_ratio("after", s)
                if (rb == "" || ra == "")
                    continue
                ch = 100 * (ra / rb - 1)
                if (ch > limit)
                    worse_alone++
                printf "| %d | %.3f | %.3f | %+.1f%% | %.3f |\n", s, rb, ra,
                       ch, alone_median(s)
            }
            printf "\n%d of %d sizes more than %s%% worse after than " \
                   "before against MPI alone.\n", worse_alone, ns, limit
        }
        print "\nRaw medians, us per call (mrc / MPI):\n"
        print "| bytes | before mrc | before MPI | after mrc | after MPI |"
        print "| ---: | ---: | ---: | ---: | ---: |"
        for (i = 1; i <= ns; i++) {
            s = sizes[i]; b = "before" SUBSEP s; a = "after" SUBSEP s
            printf "| %d | %s | %s | %s | %s |\n", s,
                   b in mrc ? sprintf("%.3f", median(mrc[b])) : "-",
                   b in mpi ? sprintf("%.3f", median(mpi[b])) : "-",
                   a in mrc ? sprintf("%.3f", median(mrc[a])) : "-",
                   a in mpi ? sprintf("%.3f", median(mpi[a])) : "-"
        }
    }' "$raw/rows" || exit 1
echo
echo "Raw outputs: $raw"
