#!/bin/sh
# mrc calibrate --transport mpi under mpirun on loopback: rank 0 writes a
# profile of the mpi transport, which mrc explain reads back; one rank is
# refused; mrc-bench --predict takes it under mpirun, and refuses a
# profile of another transport; the ranks of one host take a shm profile
# for their selector. Figures are checked to be positive and finite, not
# their values.
# Usage: test_mpi_calibrate.sh MPIRUN MRC MRC_BENCH
set -u
MPIRUN=$1
MRC=$2
BENCH=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/../integration/expect.sh"

. "$(dirname "$0")/mpi_env.sh"

expect 0 "^calibrate  mpi, 2 ranks" "$MPIRUN" -np 2 "$MRC" calibrate \
    --transport mpi --quick -o "$tmp/mpi.json"
expect 0 "" test "$(grep -c '^calibrate ' "$tmp/out")" -eq 1
if [ -x /usr/bin/python3 ]; then
    expect 0 "" /usr/bin/python3 -c '
import json, math, sys
p = json.load(open(sys.argv[1]))
assert p["transport"] == "mpi" and p["ranks"] == 2, p
for k in ("cache_bytes", "copy_gbps_cache", "copy_gbps_memory",
          "memory_gbps_shared"):
    assert math.isfinite(p[k]) and p[k] > 0, k
for k in ("message_us", "sync_us"):
    assert math.isfinite(p[k]) and p[k] >= 0, k
assert p["sync_us"] > 0, p
' "$tmp/mpi.json"
fi
expect 0 "transport mpi$" "$MRC" explain ring:4 --collective allreduce \
    --size 1M --profile "$tmp/mpi.json"
expect 2 "at least 2 ranks" "$MPIRUN" -np 1 "$MRC" calibrate \
    --transport mpi --quick
# mrc-bench --predict under mpirun: the ranks run on mpi.
expect 0 "pred(us) pred/meas" "$MPIRUN" -np 2 "$BENCH" -b 4K -e 64K -f 16 \
    -n 3 -w 1 --predict "$tmp/mpi.json"
cp "$tmp/out" "$tmp/table"
expect 0 "^ *65536 .* 0$" cat "$tmp/table"
"$MRC" calibrate --quick -o "$tmp/threads.json" > /dev/null
expect 2 "threads.json: a profile of the threads .*ranks run on mpi" \
    "$MPIRUN" -np 2 "$BENCH" --predict "$tmp/threads.json"
# MPI ranks all on one host run the shared-memory endpoint: a shm
# profile describes them, and their selector takes it ($MRC_PROFILE);
# a threads profile is refused, naming the transport to measure.
"$MRC" calibrate --transport shm -n 2 --quick -o "$tmp/shm.json" > /dev/null
expect 0 "fastest of [0-9] on the shm model" "$MPIRUN" -np 2 \
    -x MRC_PROFILE="$tmp/shm.json" -x MRC_DEBUG=info "$BENCH" -b 64K -e 64K \
    -n 3 -w 1
expect 0 "" test "$(grep -c 'stays with MPI' "$tmp/out")" -eq 0
expect 1 "measured on the threads transport.*--transport shm" "$MPIRUN" \
    -np 2 -x MRC_PROFILE="$tmp/threads.json" "$BENCH" -b 64K -e 64K -n 3 -w 1
expect_summary
