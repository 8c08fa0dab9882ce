#!/bin/sh
# The shipped image is what runs: mrc run --load and mrc sim --load run
# and time a saved image, refuse a damaged one and the options it fixes;
# mrc compile --node K prints node K's local program.
# Usage: test_cli_load.sh MRC
set -u
MRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

# check NAME CONDITION...: a check of this script's own, counted as the
# expect lines are.
check() {
    name=$1
    shift
    if "$@"; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL: $name"
    fi
}

img=$tmp/x.img
expect 0 "wrote" "$MRC" compile hcm8 --collective allreduce --count 1M \
    --dtype f32 -o "$img"

expect 0 "origin        hcm8, strategy auto, efficiency 1.0000; topology hcm8" \
    "$MRC" compile --load "$img"

# run: the image's own call, every element checked.
expect 0 '"wrong": 0, "ok": true' "$MRC" run --load "$img" --iters 1 --json
expect 0 "allreduce" "$MRC" run --load "$img" --iters 2 --warmup 0
expect 0 '"topology": "hcm8"' "$MRC" run --load "$img" --iters 1 --json

# sim: the same time as the simulation of the same compile.
"$MRC" sim --load "$img" >"$tmp/a" 2>&1
"$MRC" sim hcm8 --collective allreduce --size 4M >"$tmp/b" 2>&1
check "sim --load's time is sim's" [ -n "$(grep '^time' "$tmp/a")" ]
check "sim --load's output is sim's" cmp -s "$tmp/a" "$tmp/b"
"$MRC" sim --load "$img" --mode pipelined --json | grep -o '"time_us": [0-9.]*' >"$tmp/a"
"$MRC" sim hcm8 --collective allreduce --size 4M --mode pipelined --json |
    grep -o '"time_us": [0-9.]*' >"$tmp/b"
check "pipelined sim --load's time is sim's" cmp -s "$tmp/a" "$tmp/b"
check "pipelined time found" [ -s "$tmp/a" ]
expect 0 "energy" "$MRC" sim --load "$img" --pj-per-bit 2 --link-power 1 \
    --wake-us 2 --max-memory 1G

# A hand-edited topology file (its links slower than the generator's of
# the name it keeps) travels in the image: gone after compiling, the
# image still runs and times on its links.
"$MRC" topo show hcm8 --json |
    sed 's/"bandwidth_gbps": 32/"bandwidth_gbps": 7/' >"$tmp/slow.json"
"$MRC" compile "$tmp/slow.json" --collective allreduce --count 1M \
    --dtype f32 -o "$tmp/slow.img" >/dev/null 2>&1
"$MRC" sim "$tmp/slow.json" --collective allreduce --size 4M |
    grep '^time' >"$tmp/a"
rm "$tmp/slow.json"
expect 0 "topology carried whole" "$MRC" compile --load "$tmp/slow.img"
"$MRC" sim --load "$tmp/slow.img" | grep '^time' >"$tmp/b"
check "the file's links are the image's" cmp -s "$tmp/a" "$tmp/b"
"$MRC" sim hcm8 --collective allreduce --size 4M | grep '^time' >"$tmp/c"
check "not hcm8's own links" sh -c "! cmp -s '$tmp/b' '$tmp/c'"
expect 0 '"wrong": 0, "ok": true' "$MRC" run --load "$tmp/slow.img" \
    --iters 1 --json

# An image compiled round a failed link carries the reduced topology:
# it times as the compile's simulation does, and runs exactly; a failed
# link given with --load is refused (the image fixes the topology).
expect 0 "wrote" "$MRC" compile hcm8 --fail-link 0-2 --collective allreduce \
    --count 1M --dtype f32 -o "$tmp/fail.img"
"$MRC" sim --load "$tmp/fail.img" --json > "$tmp/a" 2>/dev/null
"$MRC" sim hcm8 --fail-link 0-2 --collective allreduce --size 4M --json \
    2>/dev/null > "$tmp/b"
check "sim --load of a failed-link image is sim's" cmp -s "$tmp/a" "$tmp/b"
expect 0 '"wrong": 0, "ok": true' "$MRC" run --load "$tmp/fail.img" \
    --iters 1 --json
for c in run sim; do
    expect 2 "--fail-link with --load" "$MRC" $c --load "$img" --fail-link 0-1
done
expect 2 "--fail-link with --load" "$MRC" compile --load "$img" \
    --fail-link 0-1

# Other shapes: rooted, per-block, groups, the families, relayed hops.
while read -r spec; do
    # shellcheck disable=SC2086
    "$MRC" compile $spec -o "$tmp/o.img" >/dev/null 2>&1
    expect 0 '"wrong": 0, "ok": true' "$MRC" run --load "$tmp/o.img" \
        --iters 1 --json
    expect 0 "^time" "$MRC" sim --load "$tmp/o.img"
done <<'SPECS'
ring:5 --collective reduce --root 3 --count 1001 --dtype i32
prism:3,3 --strategy prism-faces --collective reduce-scatter --count 999 --dtype f64 --op max
hcm8 --groups 4+4 --collective allgather --count 100 --dtype u8
hcm8 --collective broadcast --root 2 --count 12345 --dtype f16 --algo tree
ring:8 --collective allreduce --count 5000 --dtype f32 --algo direct2
ring:8 --collective allreduce --count 5000 --dtype f32 --algo hier --hosts 2
ladder:8 --strategy ring-on-line --replica-size 2 --collective allreduce --count 1000 --dtype f32
SPECS

# A flipped byte anywhere is refused: the magic, the version, the
# length, the checksum, the payload's first byte, its middle, its last.
flip() { # FILE OFFSET OUT
    cp "$1" "$3"
    v=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
    printf "\\$(printf %03o $((v ^ 255)))" |
        dd of="$3" bs=1 seek="$2" conv=notrunc 2>/dev/null
}
len=$(wc -c <"$img")
for off in 0 8 16 24 32 $((len / 2)) $((len - 1)); do
    flip "$img" "$off" "$tmp/bad.img"
    check "byte $off flipped" sh -c "! cmp -s '$img' '$tmp/bad.img'"
    expect 2 "bad.img: .*image" "$MRC" run --load "$tmp/bad.img"
    expect 2 "bad.img: .*image" "$MRC" sim --load "$tmp/bad.img"
    expect 2 "bad.img: .*image" "$MRC" compile --load "$tmp/bad.img" \
        --node 0
done
head -c $((len - 1)) "$img" >"$tmp/cut.img"
expect 2 "truncated" "$MRC" run --load "$tmp/cut.img"
expect 2 "truncated" "$MRC" sim --load "$tmp/cut.img"
: >"$tmp/empty.img"
expect 2 "not an mrc program image" "$MRC" run --load "$tmp/empty.img"
expect 2 "not an mrc program image" "$MRC" sim --load "$tmp/empty.img"
mkdir "$tmp/dir"
expect 2 "not a regular file" "$MRC" run --load "$tmp/dir"
expect 2 "not a regular file" "$MRC" sim --load "$tmp/dir"
expect 2 "cannot open" "$MRC" run --load "$tmp/missing.img"
expect 2 "cannot open" "$MRC" sim --load "$tmp/missing.img"
expect 2 "missing SPEC" "$MRC" sim --collective allreduce --size 4M

# What the image fixes is refused with it; what it does not is taken.
for opt in "--topology hcm8" "--strategy auto" "--groups 8" \
    "--replica-size 2" "--collective allreduce" "--count 1M" \
    "--dtype f32" "--op sum" "--chunk 64K" "--algo rings" "--hosts 1"; do
    # shellcheck disable=SC2086
    expect 2 "${opt%% *} with --load: the image fixes it" \
        "$MRC" run --load "$img" $opt
done
for opt in "--strategy auto" "--groups 8" "--replica-size 2" \
    "--collective allreduce" "--size 4M" "--dtype f32" "--algo rings" \
    "--hosts 1" "--sweep 1K:4K" "--compare" "-o $tmp/sw"; do
    # shellcheck disable=SC2086
    expect 2 "with --load: the image fixes it" "$MRC" sim --load "$img" $opt
done
expect 2 "--load takes no SPEC" "$MRC" sim hcm8 --load "$img"
for opt in "--collective allreduce" "--count 1" "--dtype f32" "--op max" \
    "--root 1" "--chunk 1K" "--algo tree" "--hosts 2" "--strategy auto" \
    "-o $tmp/y.img"; do
    # shellcheck disable=SC2086
    expect 2 "with --load: the image fixes it" "$MRC" compile --load "$img" $opt
done
expect 2 "--iters and --warmup" "$MRC" run --load "$img" --iters 0
expect 2 "threads run at most 256" sh -c \
    "'$MRC' compile ring:300 --collective allgather --count 1 --dtype u8 \
     -o '$tmp/big.img' && '$MRC' run --load '$tmp/big.img'"
expect 0 "^time" "$MRC" sim --load "$tmp/big.img"
"$MRC" compile ring:8 --collective allreduce --count 100 --dtype i32 \
    --op avg -o "$tmp/avg.img" >/dev/null 2>&1
expect 2 "avg of int32" "$MRC" run --load "$tmp/avg.img"

# One node's local program: its peers, ports and fragments, no table
# placeholders; node 0's differs from node 3's where the tables do.
ring="ring:8 --collective allreduce --count 1M --dtype f32"
# shellcheck disable=SC2086
"$MRC" compile $ring --node 3 >"$tmp/n3" 2>&1
# shellcheck disable=SC2086
"$MRC" compile $ring --node 0 --listing >"$tmp/n0" 2>&1
check "node 3 sends to node 4" grep -q "send .* to node 4 by port 1" "$tmp/n3"
check "node 3 receives from node 2" grep -q "recv .* from node 2 on port 0" \
    "$tmp/n3"
check "node 3's fragments" grep -q "frag (3 - s) mod 8" "$tmp/n3"
check "node 3's first send" grep -q "step 0: send frag 3 " "$tmp/n3"
check "no placeholders" \
    sh -c "! grep -q -e 'next\[pos\]' -e 'prev\[pos\]' -e '_port\[node\]' \
        -e 'mod N' '$tmp/n3'"
check "node 0 sends to node 1" grep -q "send .* to node 1 by port" "$tmp/n0"
check "node 0 is not node 3" sh -c "! grep -q 'frag (3 - s) mod 8' '$tmp/n0'"
check "the same code length" sh -c "[ \$(grep -c '^    [0-9]' '$tmp/n0') \
    -eq \$(grep -c '^    [0-9]' '$tmp/n3') ]"
"$MRC" compile --load "$img" --node 5 >"$tmp/l5" 2>&1
"$MRC" compile hcm8 --collective allreduce --count 1M --dtype f32 \
    --node 5 >"$tmp/c5" 2>&1
check "the image's node 5 is the compile's" cmp -s "$tmp/l5" "$tmp/c5"
check "node 5's program" grep -q "local program of node 5" "$tmp/l5"
# shellcheck disable=SC2086
expect 0 '"node": 3, ' "$MRC" compile $ring --node 3 --json
# shellcheck disable=SC2086
expect 0 '"next": 4, "prev": 2' "$MRC" compile $ring --node 3 --json
# shellcheck disable=SC2086
expect 2 "--node 8: ring:8 has nodes 0 to 7" "$MRC" compile $ring --node 8
# shellcheck disable=SC2086
expect 2 "--node 'x' is not a node number" "$MRC" compile $ring --node x
# shellcheck disable=SC2086
expect 2 "--node '-1' is not a node number" "$MRC" compile $ring --node -1
# shellcheck disable=SC2086
expect 2 "--node '' is not a node number" "$MRC" compile $ring --node ''
expect 2 "has nodes 0 to 7" "$MRC" compile --load "$img" --node 8
# A node on another group's routed hop relays it: that is in its program.
expect 0 "stream 0, hop 4 -> 0: from node 4 on port 2 to node 0 by port 0" \
    "$MRC" compile ladder:8 --strategy ring-on-line --replica-size 2 \
    --collective allreduce --count 1000 --dtype f32 --node 2
expect 0 '"relays": \[{"stream": 0, "hop": \[4, 0\]' \
    "$MRC" compile ladder:8 --strategy ring-on-line --replica-size 2 \
    --collective allreduce --count 1000 --dtype f32 --node 2 --json
expect 0 "\[leaders: N 2, pos 1\]" "$MRC" compile ring:8 \
    --collective allreduce --count 5000 --dtype f32 --algo hier --hosts 2 \
    --node 5
expect 0 "--node K" "$MRC" help compile
expect 0 "--load" "$MRC" help run
expect 0 "--load" "$MRC" help sim
expect_summary
