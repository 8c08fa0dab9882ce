#!/bin/sh
# Runs every libFuzzer target of a fuzz build for SECONDS each, one after
# the other, each seeded with what the generators write, and prints one
# line a target. Fails if any target finds a crash, a leak or a hang; its
# reproducer is left in BUILD (crash-*, leak-*, timeout-*).
#   usage: scripts/fuzz.sh BUILD MRC SECONDS [TARGET...]
set -u
build=$1 mrc=$2 seconds=$3
shift 3
targets=${*:-fuzz_topo fuzz_embed fuzz_program fuzz_fabric fuzz_workload}

seeds() { # TARGET DIR: write the target's seed corpus into DIR
    case $1 in
    fuzz_topo)
        for s in hcm8 prism:3,3 ladder:6 torus-ladder:8 torus2d:3,3 ring:2; do
            "$mrc" topo show "$s" --json > "$2/$s.json" || return 1
        done ;;
    fuzz_embed)
        for s in "hcm8" "hcm8 --groups 4+4" "hcm8 --groups 2+2+2+2" \
                 "ring:5" "ladder:6 --strategy peripheral-ring" \
                 "torus-ladder:8 --strategy barley-twist" "prism:3,3"; do
            # shellcheck disable=SC2086 # the words are the arguments
            "$mrc" rings $s --json > "$2/$(echo "$s" | tr ' +:,' '____').json" ||
                return 1
        done ;;
    fuzz_program)
        for c in "hcm8 --collective allreduce --count 1K --dtype f32" \
                 "hcm8 --groups 4+4 --collective reduce-scatter --count 64 --dtype i32" \
                 "ring:4 --collective broadcast --count 100 --dtype i8 --root 1" \
                 "ring:3 --collective reduce --count 7 --dtype u64 --op max --root 2" \
                 "ladder:4 --collective allgather --count 5 --dtype f64" \
                 "ring:2 --collective allreduce --count 3 --dtype bf16 --op avg" \
                 "ring:4 --collective allreduce --count 9 --dtype f32 --algo direct2" \
                 "ring:5 --collective reduce --count 9 --dtype f32 --algo tree --root 3" \
                 "ring:4 --collective allreduce --count 9 --dtype f32 --algo hier --hosts 2" \
                 "ring:6 --collective allreduce --count 20000 --dtype f32 --algo hier --hosts 3" \
                 "ring:4 --collective broadcast --count 9 --dtype i8 --algo hier --hosts 2 --root 3"; do
            # shellcheck disable=SC2086
            "$mrc" compile $c -o "$2/$(echo "$c" | cksum | cut -d' ' -f1).img" \
                > /dev/null 2>&1 || return 1
        done ;;
    fuzz_fabric)
        "$build/tests/fabric_seeds" "$2" || return 1 ;;
    fuzz_workload)
        # The examples, and a Chakra trace as its jsonizer writes one.
        here=$(dirname "$0")/..
        cp "$here"/examples/workloads/*.json "$2/" || return 1
        printf '%s\n' '{"version": "0.0.4"}{"id": "1", "type": "COMP_NODE",' \
            '"durationMicros": "200"}{"id": "2", "type": "COMM_COLL_NODE",' \
            '"dataDeps": ["1"], "attr": [{"name": "comm_type", "int64Val":' \
            '"0"}, {"name": "comm_size", "int64Val": "4096"}]}' \
            > "$2/chakra.json" || return 1 ;;
    esac
}

max_len() {
    case $1 in fuzz_topo) echo 4096 ;; *) echo 16384 ;; esac
}

failed=0
for t in $targets; do
    log=$build/$t.log
    rm -rf "$build/seeds/$t"
    mkdir -p "$build/seeds/$t" "$build/corpus/$t"
    if ! seeds "$t" "$build/seeds/$t"; then
        echo "$t: could not write the seed corpus" >&2
        failed=1
        continue
    fi
    start=$(date +%s)
    (cd "$build" && "./tests/$t" -max_total_time="$seconds" \
        -max_len="$(max_len "$t")" -timeout=30 -print_final_stats=1 \
        "corpus/$t" "seeds/$t") > "$log" 2>&1
    rc=$?
    took=$(($(date +%s) - start))
    last=$(grep -E '^#[0-9]+' "$log" | tail -n 1)
    field() { echo "$last" | sed -n "s/.* $1: *\([^ ]*\).*/\1/p"; }
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
    if [ $rc -eq 0 ]; then
        found="nothing found"
    else
        found="FOUND (exit $rc): $(grep -m1 -E 'ERROR|SUMMARY|deadly' "$log")"
        failed=1
    fi
    echo "$t: ${runs:-?} runs in ${took}s (${rate:-?} exec/s), cov" \
        "$(field cov) ft $(field ft), corpus $(field corp), $found"
done
exit $failed
