#!/bin/sh
# mrc explain, and --algo on compile, run and sim.
# Usage: test_cli_explain.sh MRC
MRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

expect 0 "mrc explain SPEC" "$MRC" help explain
expect 0 "explain SPEC" "$MRC" --help
# Text: a row per family that applies, the others with why, the choice.
expect 0 "^rings .*<- chosen" "$MRC" explain ring:8 --collective allgather \
    --size 1M
expect 0 "direct2  does not apply: direct2 does not apply to allgather" \
    "$MRC" explain ring:8 --collective allgather --size 1M
expect 0 "^chosen   rings: " "$MRC" explain hcm8 --collective allreduce \
    --size 64M
# The CPU model: small allreduces in one step, larger ones in two.
expect 0 "^direct1 .*<- chosen" "$MRC" explain ring:4 --collective \
    allreduce --size 256 --transport shm
expect 0 "^direct2 .*<- chosen" "$MRC" explain ring:4 --collective \
    allreduce --size 1M --transport shm
# MPI point-to-point has no memory semantics.
expect 0 "direct1  does not apply: .*point-to-point" "$MRC" explain ring:4 \
    --collective allreduce --size 256 --transport mpi
expect 0 "^chosen   direct2: forced" "$MRC" explain ring:4 --collective \
    allreduce --size 1M --transport threads --algo direct2

# The selector scored against measured families (bench/selector_regret.py):
# at 2 ranks, 8 bytes, the model runs direct1; measured twice as slow as
# the rings there, its regret is 2, and the cell is named.
regret=$(dirname "$0")/../../bench/selector_regret.py
sweep() { # direct1's and the rings' us for an allreduce of 8 bytes
    mkdir -p "$tmp/$1"
    printf 'allreduce 8 %s ok\n' "$2" > "$tmp/$1/2.allreduce.direct1.1.txt"
    printf 'allreduce 8 %s ok\n' "$3" > "$tmp/$1/2.allreduce.rings.1.txt"
    printf 'allreduce 8 %s ok\n' 4.0 > "$tmp/$1/2.allreduce.ompi.1.txt"
}
sweep slow 2.0 1.0
sweep fast 1.0 2.0
expect 0 "^| 2 | allreduce | 8 | direct1 | 2.00 | rings | 1.00 | 2.00 |" \
    /usr/bin/python3 "$regret" "$MRC" "$tmp/slow"
expect 0 "^| all | | 0 of 1 | 2.000 | 0.500 |" \
    /usr/bin/python3 "$regret" "$MRC" "$tmp/slow"
expect 0 "^| all | | 1 of 1 | 1.000 | 0.250 |" \
    /usr/bin/python3 "$regret" "$MRC" "$tmp/fast"
expect 2 "no cell with two families" /usr/bin/python3 "$regret" "$MRC" \
    "$tmp/none"

# JSON: every family once, the chosen one applies and is the fastest.
check_json() {
    "$MRC" explain "$@" --json > "$tmp/e.json" 2>&1 &&
        /usr/bin/python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
c = d["candidates"]
assert [x["family"] for x in c] == ["rings", "direct1", "direct2", "tree",
                                    "hier"], c
ok = [x for x in c if x["applies"]]
assert ok, c
best = min(ok, key=lambda x: x["time_us"])
assert d["chosen"] == best["family"], (d["chosen"], best)
for x in ok:
    assert x["time_us"] > 0 and x["busbw_gbps"] > 0, x
    assert 0 < x["bound_pct"] <= 100.0001, x
for x in c:
    if not x["applies"]:
        assert x["why"], x
assert d["reason"], d
print("ok", d["chosen"])
' "$tmp/e.json"
}
expect 0 "ok rings" check_json hcm8 --collective allreduce --size 8M
expect 0 "ok direct1" check_json ring:4 --collective allreduce --size 256 \
    --transport threads
expect 0 "ok direct2" check_json ring:8 --collective allreduce \
    --size 64K --transport shm
# (a broadcast is timed in place, as MPI's is: without the root's copy
# to itself the tree comes out 1% ahead of the rings)
expect 0 "ok tree" check_json ring:4 --collective broadcast --size 1M \
    --transport mpi --root 2
# direct1's leaf reads the root's buffer (by reference past 64 KiB at 2
# ranks) and the root waits for it: the model charges the call whole,
# by either completion; the tree's root runs calls ahead with local
# completion, and its leaf takes each piece once (docs/performance.md,
# "Each piece copied once": the tree and the rings at 0.67-0.94 of
# direct1's time on every broadcast of 128 KiB-16 MiB at 2 ranks). Below
# 64 KiB direct1's form by copy runs ahead too, and stays.
expect 0 "ok tree" check_json ring:2 --collective broadcast --size 1M \
    --transport shm
expect 0 "ok tree" check_json ring:2 --collective broadcast --size 1M \
    --transport shm --completion local
expect 0 "ok direct1" check_json ring:2 --collective broadcast --size 32K \
    --transport shm --completion local
# A name that needs escaping reaches JSON escaped.
cat > "$tmp/q.json" <<'EOF2'
{"format": "mrc-topology", "version": 1, "name": "a\"b\\c",
 "nodes": [{"id": 0}, {"id": 1}, {"id": 2}],
 "links": [{"a": 0, "b": 1}, {"a": 1, "b": 2}, {"a": 2, "b": 0}]}
EOF2
expect 0 "ok " check_json "$tmp/q.json" --collective allreduce \
    --size 1K
expect 0 'a"b\\c' /usr/bin/python3 -c \
    'import json,sys; print(json.load(open(sys.argv[1]))["topology"])' \
    "$tmp/e.json"

# Bad input: exit 2 with what and why.
expect 2 "family direct2 asked for: direct2 does not apply to allgather" \
    "$MRC" explain ring:4 --collective allgather --size 1K --algo direct2
expect 2 "unknown transport 'tcp'" "$MRC" explain ring:4 --collective \
    allreduce --size 1K --transport tcp
expect 2 "required" "$MRC" explain ring:4 --collective allreduce
expect 2 "not a whole number of float32" "$MRC" explain ring:4 \
    --collective allreduce --size 7
expect 2 "unknown algorithm 'fast'" "$MRC" explain ring:4 --collective \
    allreduce --size 1K --algo fast

expect 2 "explain: --completion: unknown completion 'soon' (group local)" \
    "$MRC" explain ring:4 --collective reduce --size 1K --completion soon

# --completion: direct1's reduce with local completion lists the root's
# waits alone (on the others, from the next: it starts from its own
# input), explained with the same families.
expect 0 "program  reduce of 16 float32 (sum), root rank 0, local completion" \
    "$MRC" compile ring:4 --collective reduce --count 16 --dtype f32 \
    --algo direct1 --completion local --listing
cp "$tmp/out" "$tmp/listing"
expect 0 "wait   flag 0 of node (rel + s + 1) mod N from the root  if rel = 0" \
    cat "$tmp/listing"
expect 0 "copy   the slice sendbuf -> recvbuf  if rel = 0" cat "$tmp/listing"
expect 0 "into recvbuf, sum with recvbuf  if rel = 0" cat "$tmp/listing"
expect 0 "chosen " "$MRC" explain ring:4 --collective broadcast --size 64 \
    --transport shm --completion local
expect 2 "compile: --completion: unknown completion 'soon'" "$MRC" compile \
    ring:4 --collective reduce --count 16 --dtype f32 --completion soon

# --algo on compile, sim and run.
expect 0 "7 instructions" "$MRC" compile ring:4 --collective allreduce \
    --count 16 --dtype f32 --algo direct1
expect 2 "direct2 does not apply to allgather" "$MRC" compile ring:4 \
    --collective allgather --count 16 --dtype f32 --algo direct2
expect 2 "4 ranks do not split over 3 hosts" "$MRC" compile ring:4 \
    --collective allreduce --count 16 --dtype f32 --algo hier --hosts 3
expect 2 "hier does not apply to allgather" "$MRC" compile ring:4 \
    --collective allgather --count 16 --dtype f32 --algo hier --hosts 2
expect 2 "--hosts '0' is not a positive integer" "$MRC" compile ring:4 \
    --collective allreduce --count 16 --dtype f32 --algo hier --hosts 0
expect 0 "\[leaders\] send" "$MRC" compile ring:4 --collective allreduce \
    --count 16 --dtype f32 --algo hier --hosts 2 --listing
# auto: the family explain chooses on the links.
chosen=$("$MRC" explain ring:4 --collective allreduce --size 64 --json |
    /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin)
c=[x for x in d["candidates"] if x["family"] == d["chosen"]][0]
print(c["code_instructions"])')
expect 0 "shared code   $chosen instructions" "$MRC" compile ring:4 \
    --collective allreduce --count 16 --dtype f32 --algo auto
expect 2 "unknown algorithm" "$MRC" compile ring:4 --collective allreduce \
    --count 16 --dtype f32 --algo fast
expect 0 "in 6 steps" "$MRC" sim ring:4 --collective allreduce --size 1M \
    --algo rings
expect 0 "time " "$MRC" sim ring:4 --collective allreduce \
    --size 1M --algo hier --hosts 2
expect 2 "do not split over 3 hosts" "$MRC" sim ring:4 --collective allreduce \
    --size 1M --algo hier --hosts 3
# mrc run on nodes taken to be on hosts: hier runs exact, or says why not.
expect 0 "  0  auto .*allreduce" "$MRC" run --topology ring:8 --algo hier \
    --hosts 4 --collective allreduce --count 1001 --iters 1
expect 2 "8 ranks do not split over 3 hosts" "$MRC" run --topology ring:8 \
    --algo hier --hosts 3 --collective allreduce --count 1001 --iters 1
# Between hosts over MPI only rings, tree and hier apply; hier is there.
expect 0 "hier " "$MRC" explain ring:8 --collective allreduce --size 1M \
    --transport mpi --hosts 2
expect 2 "unknown algorithm" "$MRC" sim ring:4 --collective allreduce \
    --size 1M --algo fast
expect 0 " 0  auto " "$MRC" run --topology ring:4 --strategy auto \
    --collective allreduce --count 1K --iters 1 --algo rings
expect 2 "direct2 does not apply to allgather" "$MRC" run --topology ring:4 \
    --strategy auto --collective allgather --count 1K --iters 1 --algo direct2
expect 2 "unknown algorithm" "$MRC" run --topology ring:4 --collective \
    allreduce --count 1K --iters 1 --algo fast
# MRC_ALGO does as --algo, and a bad one is named.
expect 2 "MRC_ALGO: unknown algorithm 'fast'" env MRC_ALGO=fast "$MRC" run \
    --topology ring:4 --strategy auto --collective allreduce --count 1K \
    --iters 1
expect 2 "direct2 does not apply to allgather" env MRC_ALGO=direct2 "$MRC" \
    run --topology ring:4 --strategy auto --collective allgather --count 1K \
    --iters 1
# $MRC_STREAM_BYTES (where writes go around the caches) must be a size:
# one that is not fails the communicator, not silently the default.
expect 2 "\$MRC_STREAM_BYTES 'lots' is not a size in bytes" env \
    MRC_STREAM_BYTES=lots "$MRC" run --topology ring:2 --collective \
    allreduce --count 4 --iters 1
expect 2 "\$MRC_STREAM_BYTES '0' is not a size in bytes" env \
    MRC_STREAM_BYTES=0 "$MRC" run --topology ring:2 --collective \
    allreduce --count 4 --iters 1
# So must the chunk and the timeout.
expect 2 "\$MRC_CHUNK_BYTES '-3' is not a size in bytes" env \
    MRC_CHUNK_BYTES=-3 "$MRC" run --topology ring:2 --collective \
    allreduce --count 4 --iters 1
expect 2 "\$MRC_TIMEOUT 'soon' is not a number of seconds above 0" env \
    MRC_TIMEOUT=soon "$MRC" run --topology ring:2 --collective \
    allreduce --count 4 --iters 1
expect 0 "allreduce" env MRC_TIMEOUT= MRC_CHUNK_BYTES= MRC_STREAM_BYTES= \
    "$MRC" run --topology ring:2 --collective allreduce --count 4 --iters 1

expect_summary
