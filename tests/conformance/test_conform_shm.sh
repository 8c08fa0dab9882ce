#!/bin/sh
# The conformance cases over the shared-memory transport: ranks are
# processes started by mrc launch, each case on a segment of its own.
# Usage: test_conform_shm.sh MRC CONFORM_RANK
set -u
MRC=$1
RANK=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../integration/expect.sh"

# Every rank's line of every case says ok (a memory case may say that the
# transport has none, and then it is counted as skipped).
skipped=0
check() { # N CASE...
    n=$1
    shift
    for k in "$@"; do
        r=0
        while [ $r -lt "$n" ]; do
            expect 0 "^rank $r of $n: shm $k: \(ok\|skip: transport shm has no memory semantics\)$" \
                cat "$tmp/run"
            grep -q "^rank $r of $n: shm $k: skip" "$tmp/run" &&
                skipped=$((skipped + 1))
            r=$((r + 1))
        done
    done
}

cases="match burst large memory agree memory-agree cancel"
for n in 2 3; do
    expect 0 "" "$MRC" launch -n $n --timeout 60 -- "$RANK" shm $cases
    cp "$tmp/out" "$tmp/run"
    check $n $cases
done
# An unknown case is a failure, not a pass.
expect 1 "no case 'nonesuch'" "$MRC" launch -n 2 --timeout 60 -- "$RANK" \
    shm nonesuch
[ $skipped -gt 0 ] && echo "$skipped rank-cases skipped: the shm transport has no memory semantics yet"
expect_summary
