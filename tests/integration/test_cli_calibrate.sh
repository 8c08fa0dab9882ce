#!/bin/sh
# mrc calibrate (threads and shm, --quick), its profile read back by mrc
# explain --profile, and profiles that are not right refused with exit 2.
# Figures are checked to be positive and finite, never their values.
# Usage: test_cli_calibrate.sh MRC
MRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

expect 0 "mrc calibrate \[--transport" "$MRC" help calibrate
expect 0 "calibrate \[-o PROFILE\]" "$MRC" --help

# Every figure of a profile positive (sync and message costs: not
# negative) and finite; every dtype's sum measured in and beyond cache.
check_profile() {
    [ -x /usr/bin/python3 ] || return 0
    /usr/bin/python3 -c '
import json, math, sys
p = json.load(open(sys.argv[1]))
assert p["format"] == "mrc-profile" and p["version"] == 1, p
assert p["transport"] == sys.argv[2], p
for k in ("ranks", "cores", "nodes_per_memory"):
    assert isinstance(p[k], int) and p[k] >= 1, k
for k in ("cache_bytes", "copy_gbps_cache", "copy_gbps_memory",
          "memory_gbps_shared"):
    assert math.isfinite(p[k]) and p[k] > 0, k
for k in ("message_us", "sync_us"):
    assert math.isfinite(p[k]) and p[k] >= 0, k
for k in ("spin_share", "quiet_turn_share"):  # optional shares
    assert 0 <= p.get(k, 0) <= 1, k
r = p["reduce_gbps"]
assert len(r) == 10, r.keys()
for d, ops in r.items():
    assert len(ops) == 5, (d, ops)
    for o, v in ops.items():
        assert math.isfinite(v["cache"]) and v["cache"] > 0, (d, o)
        assert math.isfinite(v["memory"]) and v["memory"] >= 0, (d, o)
    assert ops["sum"]["memory"] > 0, d
' "$1" "$2"
}

expect 0 "^calibrate  threads, 2 ranks" "$MRC" calibrate --quick \
    -o "$tmp/threads.json"
cp "$tmp/out" "$tmp/threads.txt"
expect 0 "" check_profile "$tmp/threads.json" threads
# threads fits a peer's windows apart from the tree's messages, and
# says so; where the fit stops at a bound (a host in a slow spell, or
# beside another test: the peer rate came out at 0.2 GB/s in one CI run),
# the summary says that instead and the profile has no figure for them.
if grep -q "^window     taken at the peer rate: its fit reached a bound" \
    "$tmp/threads.txt"; then
    expect 1 "" grep -q "\"window_gbps\"" "$tmp/threads.json"
else
    expect 0 "\"window_gbps\": [0-9]" cat "$tmp/threads.json"
    expect 0 "^window     [0-9.]* GB/s taking a peer's window" \
        cat "$tmp/threads.txt"
fi
# Where a rank writes around the caches: one of the sizes the rings were
# timed at both ways (1-16 MiB), or twice the largest, named in the
# summary; a communicator given the profile writes around from it on,
# unless $MRC_STREAM_BYTES says otherwise.
expect 0 "\"stream_bytes\": \(1048576\|2097152\|4194304\|8388608\|16777216\|33554432\)," \
    cat "$tmp/threads.json"
expect 0 "^stream     writes around the caches from a receive buffer of" \
    cat "$tmp/threads.txt"
# The rate of a call written around the caches, fitted on those rings:
# none where the fit stopped at a bound (a host beside a busy test: CI
# once had such a run), and the summary says so.
if grep -q '"stream_gbps"' "$tmp/threads.json"; then
    expect 0 "\"stream_gbps\": [0-9]" cat "$tmp/threads.json"
    expect 0 "^           [0-9.]* GB/s moving a call's data written around them" \
        cat "$tmp/threads.txt"
else
    expect 0 "^           no rate of their own for the calls written around them: its fit reached a bound" \
        cat "$tmp/threads.txt"
fi
sed 's/"stream_bytes": [0-9]*/"stream_bytes": 1048576/' "$tmp/threads.json" \
    > "$tmp/stream.json"
around="allreduce count 262144 float32: writes around the caches (its receive buffer is at least 1048576 bytes)"
expect 0 "rank 1: $around" env -u MRC_STREAM_BYTES \
    MRC_PROFILE="$tmp/stream.json" MRC_DEBUG=INFO \
    "$MRC" run --topology ring:2 --collective allreduce --count 256K --iters 1
expect 0 "allreduce" env -u MRC_PROFILE -u MRC_STREAM_BYTES MRC_DEBUG=INFO \
    "$MRC" run --topology ring:2 --collective allreduce --count 256K --iters 1
cp "$tmp/out" "$tmp/plain.txt"
expect 1 "" grep -q "writes around" "$tmp/plain.txt"
expect 0 "allreduce" env MRC_STREAM_BYTES=2M MRC_PROFILE="$tmp/stream.json" \
    MRC_DEBUG=INFO "$MRC" run --topology ring:2 --collective allreduce \
    --count 256K --iters 1
cp "$tmp/out" "$tmp/env.txt"
expect 1 "" grep -q "writes around" "$tmp/env.txt"
# A loaded program's ranks take the profile's threshold too.
expect 0 "wrote" "$MRC" compile ring:2 --collective allreduce --count 256K \
    --dtype f32 -o "$tmp/stream.img"
expect 0 "rank 1: $around" env -u MRC_STREAM_BYTES \
    MRC_PROFILE="$tmp/stream.json" MRC_DEBUG=INFO \
    "$MRC" run --load "$tmp/stream.img" --iters 1
# A kernel that lists no caches (some VMs' do not): a core's own cache is
# the C library's figure (glibc reads CPUID), and two threads on two
# cores fit its share.
l2=$(getconf LEVEL2_CACHE_SIZE 2>/dev/null)
if [ ! -d /sys/devices/system/cpu/cpu0/cache ] &&
    [ -x /usr/bin/python3 ] && [ "${l2:-0}" -gt 0 ] 2>/dev/null &&
    [ "$(getconf _NPROCESSORS_ONLN)" -ge 2 ]; then
    expect 0 "" /usr/bin/python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert p.get("private_cache_bytes", 0) > 0, p.get("private_cache_bytes")
' "$tmp/threads.json"
fi
# The summary says how steady the host was beside the collective probes
# (a canary call brackets each; --quick waits for no slow spell).
expect 0 "^host       [a-z]*steady: a 4 KiB call took [0-9.]*-[0-9.]* us beside the [1-9][0-9]* probes" \
    cat "$tmp/threads.txt"
expect 0 "\"transport\": \"threads\"" cat "$tmp/threads.json"
# The profile in explain: the transport is the profile's.
expect 0 "^profile  .*threads.json (threads, 2 ranks" "$MRC" explain ring:4 \
    --collective allreduce --size 1M --profile "$tmp/threads.json"
expect 0 "transport threads$" "$MRC" explain ring:4 \
    --collective allreduce --size 1M --profile "$tmp/threads.json"
expect 0 "\"profile\": \".*threads.json\"" "$MRC" explain ring:4 \
    --collective allreduce --size 64M --profile "$tmp/threads.json" --json
# ... and not another transport's.
expect 2 \
    "threads.json: the profile was measured on the threads transport, not shm" \
    "$MRC" explain ring:4 --collective allreduce --size 1M \
    --profile "$tmp/threads.json" --transport shm
expect 2 "not the topology's links" "$MRC" explain ring:4 \
    --collective allreduce --size 1M --profile "$tmp/threads.json" \
    --transport links

# --json prints the profile; nothing written without -o. The profile is
# stdout alone: a warning that the host ran slow (on a loaded host, as
# under a parallel test run) goes to stderr.
# (A thin run, $MRC_TEST_SWEEP=thin: the sanitized build's, leaves out
# this calibration and the one of --check without a profile below: under
# the sanitizers their code is the calibration's above, a minute each.)
if [ "${MRC_TEST_SWEEP:-}" != thin ]; then
    "$MRC" calibrate --quick --json > "$tmp/printed.json" 2> "$tmp/printed.err"
    expect 0 "" test $? -eq 0
    expect 0 "\"format\": \"mrc-profile\"" cat "$tmp/printed.json"
    expect 0 "" check_profile "$tmp/printed.json" threads
fi

# shm: two real processes; -n sets the nodes sharing memory: 4, or 3 in
# a thin run (still more ranks than 2 cores, the turn's fit; under ASan
# 106 s against 136 for 4, the longest of the CI's ranks run in turn).
ranks=4
[ "${MRC_TEST_SWEEP:-}" != thin ] || ranks=3
expect 0 "^calibrate  shm, $ranks ranks" "$MRC" calibrate --quick \
    --transport shm -n $ranks -o "$tmp/shm.json"
cp "$tmp/out" "$tmp/shm4.txt"
expect 0 "" check_profile "$tmp/shm.json" shm
# A message's three costs: its receiver's core, its sender's (a send
# through the slots, fitted to loops of broadcasts), its way.
expect 0 "^message  *[0-9.]* us on its receiver's core, [0-9.]* us on its sender's, [0-9.]* us on its way" \
    cat "$tmp/shm4.txt"
# More ranks than cores: the turn for a core, and its share in a quiet
# step, are fitted and reported.
if [ "$(nproc)" -lt $ranks ]; then
    expect 0 "^turn  .* us more a message ([01]\.[0-9]* of it in a quiet step)" \
        cat "$tmp/shm4.txt"
fi
expect 0 "^chosen " "$MRC" explain ring:4 --collective allreduce --size 4M \
    --profile "$tmp/shm.json"

# --check: the validation sweep, every family's rows with positive
# figures (their ratios are reported, not judged here).
"$MRC" calibrate --check --profile "$tmp/threads.json" --quick --json \
    > "$tmp/check.json"
expect 0 "" /usr/bin/python3 -c '
import json, math, sys
c = json.load(open(sys.argv[1]))
fams = {r["family"] for r in c["rows"]}
assert fams == {"rings", "direct1", "direct2", "tree"}, fams
for r in c["rows"]:
    for k in ("measured_us", "predicted_us", "ratio"):
        assert math.isfinite(r[k]) and r[k] > 0, r
assert 0 <= c["within"] <= len(c["rows"]), c
# each row is bracketed by a canary; rows timed again are counted
assert c["timed_again"] >= 0 and 0 <= c["kept_slow"] <= len(c["rows"]), c
' "$tmp/check.json"
if [ "${MRC_TEST_SWEEP:-}" != thin ]; then
    expect 0 "rows within" "$MRC" calibrate --check --quick -n 3
fi
# A profile edited: edit_profile IN OUT PYTHON (statements on p).
edit_profile() {
    /usr/bin/python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(p, open(sys.argv[2], "w"))
' "$@"
}
# A quick check with PROFILE, once: its text (stdout and stderr) in
# $tmp/said.txt, its JSON in $tmp/said.json.
check_once() {
    expect 0 "^family" "$MRC" calibrate --check --quick --profile "$1"
    cp "$tmp/out" "$tmp/said.txt"
    "$MRC" calibrate --check --quick --json --profile "$1" \
        > "$tmp/said.json" 2> "$tmp/said.err"
}
# That check's JSON: not as calibrated, its rows run, and PYTHON's
# asserts on c (the JSON) hold.
said_json() {
    /usr/bin/python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
assert c["as_calibrated"] is False, c
assert len(c["rows"]) > 0, c
exec(sys.argv[2])
' "$tmp/said.json" "$1"
}
# The host's copy rates beside the profile's: a profile whose rates are
# far from this host's (a tenth and ten times them) is named stale on
# stderr, both ratios given, and its JSON says so; the rows still run.
# Not a third and three times: the quick calibration above runs beside
# the suite's other tests, and once measured the rate beyond cache at a
# third of the host's (7.8 GB/s), which three times put back at the
# host's own (ratio 1.06).
expect 0 "" edit_profile "$tmp/threads.json" "$tmp/stale.json" \
    'p["copy_gbps_cache"] /= 10; p["copy_gbps_memory"] *= 10'
check_once "$tmp/stale.json"
expect 0 "^# host now: copies at [0-9.]* GB/s in cache, [0-9.]* beyond" \
    cat "$tmp/said.txt"
expect 0 "warning: this host copies at [0-9.]* (in cache) and 0\.[0-9]* (beyond)" \
    cat "$tmp/said.txt"
expect 0 "" said_json '
h, p = c["host_copy_gbps"], c["profile"]["copy_gbps"]
assert h[0] / p[0] > 1.25 and h[1] / p[1] < 0.8, (h, p)'
expect 0 "^host: [0-9]* rows timed again beside a slow canary" "$MRC" \
    calibrate --check --quick --transport shm --profile "$tmp/shm.json"
# The host's speed beside the profile's: calibrate keeps its fastest
# canary (a 4 KiB allreduce of two threads); a check on a host that runs
# it far slower or faster than the profile says so on stderr, after the
# --wait budget (none with --quick), and its JSON gives both.
expect 0 "" /usr/bin/python3 -c '
import json, sys
assert json.load(open(sys.argv[1]))["canary_us"] > 0
' "$tmp/threads.json"
expect 0 "" edit_profile "$tmp/threads.json" "$tmp/fast.json" \
    'p["canary_us"] /= 1000'
expect 0 "" edit_profile "$tmp/threads.json" "$tmp/slow.json" \
    'p["canary_us"] *= 1000'
check_once "$tmp/fast.json"
expect 0 "^# host now: a 4 KiB allreduce of two threads takes [0-9.]* us (the profile.s: 0\.0" \
    cat "$tmp/said.txt"
expect 0 "warning: a 4 KiB allreduce of two threads takes [0-9.]* times its time when the profile was measured (the host runs slower" \
    cat "$tmp/said.txt"
expect 0 "" said_json '
assert c["host_canary_us"] > 100 * c["profile"]["canary_us"] > 0, c'
expect 0 "(the calibration ran in a slow spell: calibrate again)" \
    "$MRC" calibrate --check --quick --profile "$tmp/slow.json"

expect 2 "--profile goes with --check" "$MRC" calibrate \
    --profile "$tmp/threads.json"
expect 2 "--check sweeps the threads or shm transport, not 'mpi'" "$MRC" \
    calibrate --check --transport mpi
expect 2 "--check --transport threads: .*shm.json is a profile of the shm" \
    "$MRC" calibrate --check --profile "$tmp/shm.json"

# Profiles that are not right: exit 2, the file and what is wrong named.

printf '{"format": "mrc-profile", "version": 1,' > "$tmp/corrupt.json"
expect 2 "corrupt.json: profile: not JSON" "$MRC" explain ring:4 \
    --collective allreduce --size 1M --profile "$tmp/corrupt.json"
sed 's/"version": 1/"version": 2/' "$tmp/threads.json" > "$tmp/v2.json"
expect 2 "v2.json: profile version 2; this mrc reads version 1" "$MRC" \
    explain ring:4 --collective allreduce --size 1M --profile "$tmp/v2.json"
# mrc sim --profile: the node model times the nodes' memory, reductions
# and message costs (within a host, in place of the links): the measured
# profile changes the time, and one whose every rate is a hundredth of
# the measured makes the same program take longer than with local work
# free (a measured host may copy faster than the default links, so the
# measured profile alone says nothing of which is longer); --load takes
# the profile too.
"$MRC" sim ring:2 --collective allreduce --size 4M --json > "$tmp/free.json"
"$MRC" sim ring:2 --collective allreduce --size 4M --json \
    --profile "$tmp/threads.json" > "$tmp/node.json"
/usr/bin/python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
def slow(d):
    for k, v in d.items():
        if isinstance(v, dict):
            slow(v)
        elif "gbps" in k or k in ("cache", "memory"):
            d[k] = v / 100
slow(p)
json.dump(p, open(sys.argv[2], "w"))
' "$tmp/threads.json" "$tmp/slow.json"
"$MRC" sim ring:2 --collective allreduce --size 4M --json \
    --profile "$tmp/slow.json" > "$tmp/slow_node.json"
expect 0 "" /usr/bin/python3 -c '
import json, sys
free, node, slow = (json.load(open(f))["time_us"] for f in sys.argv[1:4])
assert free > 0 and node > 0 and node != free, (free, node)
assert slow > free, (free, slow)
' "$tmp/free.json" "$tmp/node.json" "$tmp/slow_node.json"
expect 0 "wrote" "$MRC" compile ring:2 --collective allreduce --count 1M \
    --dtype f32 -o "$tmp/r2.img"
"$MRC" sim --load "$tmp/r2.img" --json --profile "$tmp/threads.json" \
    > "$tmp/node_load.json"
expect 0 "" cmp "$tmp/node.json" "$tmp/node_load.json"
expect 2 "v2.json: profile version 2" "$MRC" sim ring:2 \
    --collective allreduce --size 4M --profile "$tmp/v2.json"

# mrc run --predict: beside each row the simulator's time for the program
# it ran, and predicted / measured (figures positive, never judged).
for f in direct1 rings; do
    "$MRC" run --topology ring:2 --collective allreduce --count 64K \
        --algo $f --iters 2 --predict "$tmp/threads.json" --json \
        > "$tmp/pred.json"
    expect 0 "" /usr/bin/python3 -c '
import json, math, sys
rows = json.load(open(sys.argv[1]))["results"]
assert rows, rows
for r in rows:
    p, q = r["predicted_us"], r["predicted_over_measured"]
    assert r["ok"] and math.isfinite(p) and p > 0 and q > 0, r
' "$tmp/pred.json"
done
# The prediction takes the threshold the run took, which may not be the
# profile's: with a stream rate of 10 MB/s, the rings' call that wrote
# around the caches ($MRC_PROFILE's 1 MiB) moves at least its 1 MiB
# receive buffer at that rate (104,858 us: the cache set to 1 GiB, so
# that all of it is the cache's share whatever the host's calibrated
# cache; under load one came out too small for it), and the same call through
# them ($MRC_STREAM_BYTES=2M beside it), or under no threshold but the
# built-in 8 MiB, is predicted at a tenth of that or less (the calibrated
# rates in cache; under the sanitizers they are slow, so no tighter
# ratio holds everywhere).
edit_profile "$tmp/threads.json" "$tmp/slow_stream.json" \
    'p.update(stream_bytes=1048576, stream_gbps=0.01, cache_bytes=1 << 30)'
run_rings() {
    "$MRC" run --topology ring:2 --collective allreduce --count 256K \
        --algo rings --iters 2 --predict "$tmp/slow_stream.json" --json
}
(
    unset MRC_STREAM_BYTES
    export MRC_PROFILE="$tmp/slow_stream.json"
    run_rings > "$tmp/pred_around.json"
    export MRC_STREAM_BYTES=2M
    run_rings > "$tmp/pred_through.json"
    unset MRC_PROFILE MRC_STREAM_BYTES
    run_rings > "$tmp/pred_built_in.json"
)
expect 0 "" /usr/bin/python3 -c '
import json, sys
around, through, built_in = (json.load(open(f))["results"][0]["predicted_us"]
                             for f in sys.argv[1:])
floor = 1048576 / 10e6 * 1e6
assert around >= floor, (around, floor)
assert around > 10 * through and around > 10 * built_in, (around, through,
                                                          built_in)
' "$tmp/pred_around.json" "$tmp/pred_through.json" "$tmp/pred_built_in.json"
expect 0 "pred/meas" "$MRC" run --topology ring:2 --collective allgather \
    --count 64K --iters 2 --predict "$tmp/threads.json"
expect 0 "pred/meas" "$MRC" run --load "$tmp/r2.img" --iters 2 \
    --predict "$tmp/threads.json"
expect 2 "a profile of the shm transport; mrc run runs threads" "$MRC" run \
    --topology ring:2 --collective allreduce --count 4K \
    --predict "$tmp/shm.json"
expect 2 "v2.json: profile version 2" "$MRC" run --topology ring:2 \
    --collective allreduce --count 4K --predict "$tmp/v2.json"

sed 's/"copy_gbps_memory": [^,]*/"copy_gbps_memory": -1/' \
    "$tmp/threads.json" > "$tmp/neg.json"
expect 2 "\"copy_gbps_memory\" must be a number above 0" "$MRC" explain \
    ring:4 --collective allreduce --size 1M --profile "$tmp/neg.json"
: > "$tmp/empty.json"
expect 2 "empty.json: profile: empty" "$MRC" explain ring:4 \
    --collective allreduce --size 1M --profile "$tmp/empty.json"
expect 2 "is not a regular file" "$MRC" explain ring:4 \
    --collective allreduce --size 1M --profile "$tmp"
expect 2 "missing.json: cannot open" "$MRC" explain ring:4 \
    --collective allreduce --size 1M --profile "$tmp/missing.json"

# Bad usage.
expect 2 "run it under mpirun" env -u OMPI_COMM_WORLD_SIZE -u PMI_SIZE \
    -u PMIX_RANK "$MRC" calibrate --transport mpi
expect 2 "--transport 'tcp'" "$MRC" calibrate --transport tcp
expect 2 "-n '1' is not a node count" "$MRC" calibrate -n 1
expect 2 "--wait 'soon' is not a number of seconds" "$MRC" calibrate \
    --wait soon
expect 2 "--wait '-1' is not a number of seconds" "$MRC" calibrate --check \
    --wait -1
# A directory as output: refused before any probe, nothing left behind.
mkdir "$tmp/dir"
expect 2 "dir is a directory" "$MRC" calibrate --quick -o "$tmp/dir"
expect 0 "" test -z "$(ls -A "$tmp/dir")"

expect_summary
