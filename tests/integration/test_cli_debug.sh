#!/bin/sh
# MRC_DEBUG=INFO|TRACE: the communicator's set-up, the program chosen per
# call shape, and one line per call naming its program, over threads
# (mrc run) and shared memory (mrc launch).
# Usage: test_cli_debug.sh MRC SHM_RANK
MRC=$1
RANK=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

# count PATTERN WANT: lines of $tmp/err matching PATTERN.
count() {
    got=$(grep -c -e "$1" "$tmp/err")
    if [ "$got" -eq "$2" ]; then
        echo "ok: $2 x /$1/"
    else
        echo "FAIL: $got x /$1/, wanted $2"
        return 1
    fi
}

# Threads: 4 ranks, 2 timed + 1 checked call each (no warm-up: with one,
# it lasts 20 ms, however many calls that takes).
MRC_DEBUG=TRACE "$MRC" run --topology ring:4 --strategy auto \
    --collective reduce --count 1K --iters 2 --warmup 0 \
    > "$tmp/out" 2> "$tmp/err"
expect 0 "" test $? -eq 0
for r in 0 1 2 3; do
    expect 0 "ok" count "^mrc: rank $r: mrc_reduce call [0-9]* count 1024 float32 sum: program [a-z0-9]* (reduce, [0-9]* instructions)$" 3
    expect 0 "ok" count "^mrc: rank $r: topology ring:4: 4 nodes, 4 links$" 1
    expect 0 "ok" count "^mrc: rank $r: transport threads: node $r, group 0 of 4 ranks, family auto$" 1
    expect 0 "ok" count "^mrc: rank $r: rings auto: 1: 0 1 2 3" 1
done
# The program is chosen once for all ranks (they share it).
expect 0 "ok" count "^mrc: rank [0-3]: program [a-z0-9]* for reduce count 1024 float32 sum group 0: [0-9]* instructions, predicted [0-9.]* us on threads" 1
# Each call also says, at TRACE, the ports its node leaves idle (the
# program's port mask, as the call enters its one phase).
expect 0 "ok" count "^mrc: rank [0-3]: phase 0 (steps [0-9-]*): idle ports" 12
expect 0 "ok" count "^mrc: " 37
# With a warm-up it goes on for 20 ms past the count, ten calls at a
# time, and every rank makes the same calls.
MRC_DEBUG=TRACE "$MRC" run --topology ring:4 --strategy auto \
    --collective reduce --count 1K --iters 2 --warmup 1 \
    > "$tmp/out" 2> "$tmp/err"
expect 0 "" test $? -eq 0
n0=$(grep -c "^mrc: rank 0: mrc_reduce call" "$tmp/err")
for r in 1 2 3; do
    expect 0 "ok" count "^mrc: rank $r: mrc_reduce call" "$n0"
done
expect 0 "" test "$n0" -gt 4 -a $(((n0 - 4) % 10)) -eq 0

# INFO: no call lines.
MRC_DEBUG=INFO "$MRC" run --topology ring:4 --strategy auto \
    --collective reduce --count 1K --iters 2 > "$tmp/out" 2> "$tmp/err"
expect 0 "ok" count "call [0-9]" 0
expect 0 "ok" count "predicted" 1
# The family is chosen once per class of sizes (four to an octave, at
# the class's smallest vector), then compiled for each count of it:
# 1100 floats (4400 bytes) take the choice for 1024 (4096 bytes).
MRC_DEBUG=INFO "$MRC" run --topology ring:4 --strategy auto \
    --collective reduce --count 1100 --iters 2 > "$tmp/out" 2> "$tmp/err"
expect 0 "ok" count "program [a-z0-9]* for reduce count 1100 float32 sum group 0: .*(the choice for its class, count 1024)$" 1
# Unset: silent.
"$MRC" run --topology ring:4 --strategy auto --collective reduce \
    --count 1K --iters 2 > "$tmp/out" 2> "$tmp/err"
expect 0 "ok" count "^mrc: " 0

# Shared memory: 3 ranks of 3 calls each, every call named.
MRC_DEBUG=TRACE "$MRC" launch -n 3 -- "$RANK" three \
    > "$tmp/out" 2> "$tmp/err"
expect 0 "" test $? -eq 0
for r in 0 1 2; do
    expect 0 "ok" count "^mrc: rank $r: mrc_[a-z_]* .*program" 3
    expect 0 "ok" count "^mrc: rank $r: transport shm: node $r" 1
    expect 0 "ok" count "^mrc: rank $r: mrc_broadcast call [0-9]* count 1001 float32 sum: program [a-z0-9]* (broadcast, [0-9]* instructions)$" 1
done
# Three shapes, each compiled once per process (the allreduce too: it
# runs a program, as every call does).
expect 0 "ok" count "^mrc: rank [0-2]: program .* predicted" 9
# A family asked for runs as a program, the whole job's allreduce too.
MRC_ALGO=rings MRC_DEBUG=TRACE "$MRC" launch -n 2 -- "$RANK" three \
    > "$tmp/out" 2> "$tmp/err"
expect 0 "" test $? -eq 0
for r in 0 1; do
    expect 0 "ok" count "^mrc: rank $r: mrc_allreduce call [0-9]* count 1001 float32 sum: program rings (allreduce" 1
    expect 0 "ok" count "^mrc: rank $r: transport shm: node $r, group 0 of 2 ranks, family rings$" 1
done
expect 0 "ok" count "no program" 0

expect_summary
