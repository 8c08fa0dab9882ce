# Checks shared by the shared-memory tests. Uses MRC, RANK and tmp of the
# test that sources it, after expect.sh.

# Ranks that call differently all fail, naming both ranks and both calls,
# and then refuse the next call: N ranks run shm_rank's case WHAT; ENV
# (VAR=VALUE ...) is set for the launch.
mismatch() { # N WHAT PATTERN [ENV...] (expect's own variables kept apart)
    mm_n=$1 mm_what=$2 mm_pat=$3
    shift 3
    expect 0 "" env MRC_TIMEOUT=5 "$@" "$MRC" launch -n $mm_n --timeout 60 \
        -- "$RANK" mismatch $mm_what
    cp "$tmp/out" "$tmp/mismatch"
    mm_r=0
    while [ $mm_r -lt $mm_n ]; do
        expect 0 "rank $mm_r: MRC_ERR_INVALID_ARG: .*ranks disagree: rank [0-9] called $mm_pat" \
            cat "$tmp/mismatch"
        expect 0 "rank $mm_r: then MRC_ERR_INVALID_ARG: .*earlier call failed" \
            cat "$tmp/mismatch"
        mm_r=$((mm_r + 1))
    done
}

# The ranks of a job (0 .. N-2) whose last rank was killed, as saved in
# FILE: each names the dead rank and then refuses the next call.
peers_saw_death() { # N FILE
    pd_r=0
    while [ $pd_r -lt $(($1 - 1)) ]; do
        expect 0 "rank $pd_r: MRC_ERR_PEER_LOST after [0-9]\.[0-9]* s: .*rank $(($1 - 1)) (pid" \
            cat "$2"
        expect 0 "rank $pd_r: then MRC_ERR_PEER_LOST: .*earlier call failed" \
            cat "$2"
        pd_r=$((pd_r + 1))
    done
}
