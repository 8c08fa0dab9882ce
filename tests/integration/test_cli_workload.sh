#!/bin/sh
# mrc sim --workload: both examples on two topologies (the JSON's shape,
# one entry per op, step >= max(compute, communication) and step =
# compute + exposed), and bad files refused with exit 2, the op and the
# field named, nothing on stdout. Usage: test_cli_workload.sh MRC EXAMPLES
set -u
MRC=$1
EX=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

# The number after "KEY": in the one-line header of the JSON.
field() {
    sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p" "$tmp/out" | head -1
}

check() {
    if "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: $*"
    fi
}

for topo in hcm8 torus2d:4,4; do
    for wl in mlp transformer; do
        expect 0 "exposed  " "$MRC" sim "$topo" --workload "$EX/$wl.json"
        expect 0 '"exposed_comm_us"' "$MRC" sim "$topo" \
            --workload "$EX/$wl.json" --json
        for k in step_us total_us compute_us comm_us exposed_comm_us \
            energy_j energy_no_gating_j distinct_collectives; do
            check grep -q "\"$k\": [0-9]" "$tmp/out"
        done
        step=$(field step_us) compute=$(field compute_us)
        comm=$(field comm_us) exposed=$(field exposed_comm_us)
        check awk -v s="$step" -v c="$compute" -v m="$comm" -v e="$exposed" \
            'BEGIN { exit !(s + 0 > 0 && s >= c && s >= m &&
                           (s - c - e) ^ 2 < 1e-6) }'
        # One entry per op, each ending no earlier than it starts.
        want=$(grep -c '"id":' "$EX/$wl.json")
        check test "$(grep -c '^  {"id": ' "$tmp/out")" -eq "$want"
        check awk '/^  \{"id": / {
                       s = $0; sub(/.*"start_us": /, "", s); sub(/,.*/, "", s)
                       e = $0; sub(/.*"end_us": /, "", e); sub(/}.*/, "", e)
                       if (e + 0 < s + 0) bad = 1 }
                   END { exit bad }' "$tmp/out"
    done
done

# Refused: exit 2, the op and the field named, nothing printed on stdout.
refuse() {
    pattern=$1
    shift
    printf '%s\n' "$*" >"$tmp/bad.json"
    "$MRC" sim hcm8 --workload "$tmp/bad.json" >"$tmp/stdout" 2>"$tmp/err"
    got=$?
    if [ "$got" -eq 2 ] && [ ! -s "$tmp/stdout" ] &&
        grep -q -e "$pattern" "$tmp/err"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: (exit $got, wanted 2 and /$pattern/) $*"
        cat "$tmp/stdout" "$tmp/err"
    fi
}
H='"format": "mrc-workload", "version": 1'
refuse 'JSON syntax error' "{$H, \"ops\": ["
refuse 'op "a" (ops\[0\]): unknown field "algo"' \
    "{$H, \"ops\": [{\"id\": \"a\", \"kind\": \"compute\", \"duration_us\": 1, \"algo\": \"tree\"}]}"
refuse 'op "a" (ops\[0\]): "duration_us"' \
    "{$H, \"ops\": [{\"id\": \"a\", \"kind\": \"compute\", \"duration_us\": -5}]}"
refuse '"deps" names "zz", which is no op' \
    "{$H, \"ops\": [{\"id\": \"a\", \"kind\": \"compute\", \"duration_us\": 1, \"deps\": [\"zz\"]}]}"
refuse '"a" -> "b" -> "a"' \
    "{$H, \"ops\": [{\"id\": \"a\", \"kind\": \"compute\", \"duration_us\": 1, \"deps\": [\"b\"]}, {\"id\": \"b\", \"kind\": \"compute\", \"duration_us\": 1, \"deps\": [\"a\"]}]}"
refuse 'op "x" (ops\[0\]): "size" .* 1 TiB' \
    "{$H, \"ops\": [{\"id\": \"x\", \"kind\": \"collective\", \"collective\": \"allreduce\", \"size\": \"4T\"}]}"
refuse 'op "x" (allgather of 64 bytes): direct2 does not apply' \
    "{$H, \"ops\": [{\"id\": \"x\", \"kind\": \"collective\", \"collective\": \"allgather\", \"size\": 64, \"algo\": \"direct2\"}]}"
refuse '"version" must be 1' '{"format": "mrc-workload", "version": 7, "ops": []}'
expect 2 "no --collective" "$MRC" sim hcm8 --workload "$EX/mlp.json" \
    --collective allreduce
expect 2 "cannot open" "$MRC" sim hcm8 --workload "$tmp/missing.json"
expect_summary
