# Shared by the CLI tests: expect STATUS PATTERN CMD... runs CMD and checks
# its exit status and that its stdout+stderr match the grep PATTERN (an
# empty pattern matches anything). Counts into $passed and $failed; the
# caller sets $tmp to a scratch folder and ends with `expect_summary`.
passed=0
failed=0

expect() {
    want=$1 pattern=$2
    shift 2
    "$@" >"$tmp/out" 2>&1
    got=$?
    if [ "$got" -eq "$want" ] &&
        { [ -z "$pattern" ] || grep -q -e "$pattern" "$tmp/out"; }; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: $* (exit $got, wanted $want and /$pattern/):"
        sed 's/^/    /' "$tmp/out"
    fi
}

expect_summary() {
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
