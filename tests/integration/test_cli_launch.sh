#!/bin/sh
# mrc launch as a user meets it. Usage: test_cli_launch.sh MRC SHM_RANK
set -u
MRC=$1
RANK=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

expect 0 "MRC_JOB" "$MRC" help launch
# Every rank sees its rank, the size and a 32-digit job id.
expect 0 "" "$MRC" launch -n 3 -- sh -c \
    'echo "$MRC_RANK/$MRC_NRANKS ${#MRC_JOB}" >> "$0/env"' "$tmp"
expect 0 "0/3 32" sort "$tmp/env"
expect 0 "2/3 32" sort "$tmp/env"
# ... and a 32-digit token of the job, not its id.
expect 0 "" "$MRC" launch -n 1 -- sh -c \
    'echo "${#MRC_JOB_TOKEN}" > "$0/token"
     [ "$MRC_JOB_TOKEN" != "$MRC_JOB" ] || echo same >> "$0/token"' "$tmp"
expect 0 "^32$" cat "$tmp/token"
# A failing rank is named with its status.
expect 1 "rank 1 (pid [0-9]*) exited with status 3" "$MRC" launch -n 3 -- \
    sh -c '[ "$MRC_RANK" != 1 ] || exit 3'
# A killed rank is named; the survivors finish and report; the job's
# shared memory is removed.
expect 1 "rank 2 (pid [0-9]*) was killed by signal 9" "$MRC" launch -n 3 \
    -- sh -c 'echo "$MRC_JOB" > "$0/job"
        if [ "$MRC_RANK" = 2 ]; then : > "/dev/shm/mrc-$MRC_JOB-left"
            kill -9 $$; fi
        sleep 0.3; echo "survivor $MRC_RANK"' "$tmp"
cp "$tmp/out" "$tmp/killed"
expect 0 "survivor 0" cat "$tmp/killed"
expect 0 "removed 1 shared-memory object" cat "$tmp/killed"
job=$(cat "$tmp/job")
expect 0 "" test ! -e "/dev/shm/mrc-$job-left"
# Survivors that hang are stopped after the grace time.
expect 1 "still running 1 s after rank 0 failed" "$MRC" launch -n 2 \
    --grace 1 -- sh -c '[ "$MRC_RANK" != 0 ] || exit 4; sleep 30'
expect 1 "timed out after 1 s" "$MRC" launch -n 2 --timeout 1 -- sleep 30
expect 1 "cannot run '/nonexistent/prog'" "$MRC" launch -n 1 -- \
    /nonexistent/prog
# Signals reach the ranks.
# (Each rank says when its trap is set: the launcher has a watchdog child
# too, so counting its children would not tell.)
"$MRC" launch -n 2 -- sh -c \
    'trap "echo \"TERM $MRC_RANK\" >> \"$0/sig\"; exit 0" TERM
     echo up >> "$0/up"; sleep 30 & wait' "$tmp" > "$tmp/launch.out" 2>&1 &
pid=$!
i=0
while [ "$(cat "$tmp/up" 2>/dev/null | wc -l)" -lt 2 ] && [ $i -lt 50 ]
do sleep 0.1; i=$((i + 1)); done
sleep 0.1
kill -TERM $pid
wait $pid
expect 0 "got signal 15" cat "$tmp/launch.out"
expect 0 "TERM 1" cat "$tmp/sig"
# The launcher killed while the ranks start (rank 0 has made the job's
# segment, rank 1 is not there yet): by TERM it stops the ranks and removes
# the segment; by KILL (no handler runs) its watchdog does.
for sig in TERM KILL; do
    rm -f "$tmp/job"
    "$MRC" launch -n 2 -- sh -c 'echo "$MRC_JOB" > "$0/job"
        [ "$MRC_RANK" = 0 ] || sleep 30; exec "$1" sweep' "$tmp" "$RANK" \
        > "$tmp/launch.out" 2>&1 &
    pid=$!
    i=0
    while { [ ! -s "$tmp/job" ] ||
            [ ! -e "/dev/shm/mrc-$(cat "$tmp/job")-seg" ]; } && [ $i -lt 100 ]
    do sleep 0.05; i=$((i + 1)); done
    job=$(cat "$tmp/job")
    expect 0 "" test -e "/dev/shm/mrc-$job-seg"
    kill -$sig $pid
    wait $pid
    i=0
    while ls /dev/shm | grep -q "^mrc-$job-" && [ $i -lt 60 ]
    do sleep 0.05; i=$((i + 1)); done
    expect 0 "" test -z "$(ls /dev/shm | grep "^mrc-$job-")"
done

# Bad usage.
expect 2 "-n wants a number of ranks" "$MRC" launch -n 0 -- true
expect 2 "-n wants a number of ranks" "$MRC" launch -n x -- true
expect 2 "no program" "$MRC" launch -n 2
expect 2 "-n N is required" "$MRC" launch -- true
expect 2 "unknown option '--bogus'" "$MRC" launch -n 2 --bogus -- true
expect 2 "--timeout wants" "$MRC" launch -n 2 --timeout -1 -- true

expect_summary
