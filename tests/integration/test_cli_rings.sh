#!/bin/sh
# mrc rings as a user meets it. Usage: test_cli_rings.sh MRC
set -u
MRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

expect 0 "barley-twist" "$MRC" help rings
expect 0 "efficiency 0.8571" "$MRC" rings hcm8 --strategy hcm8
expect 0 "3 rings" "$MRC" rings hcm8 --strategy hcm8
expect 0 "idle link directions: 0 of" "$MRC" rings torus-ladder:16 --strategy barley-twist
expect 0 "2 groups" "$MRC" rings ladder:12 --strategy ring-on-line
expect 0 "4 groups" "$MRC" rings hcm8 --strategy hcm8 --groups 2+2+2+2
expect 0 "efficiency 1.0000" "$MRC" rings torus2d:8,8
expect 0 "strategy auto" "$MRC" rings prism:3,4
expect 0 "3 rings" "$MRC" rings hcm8 --max-rings 3

expect 2 "barley-twist does not apply to ladder:8: it needs GCL's torus" \
    "$MRC" rings ladder:8 --strategy barley-twist
expect 2 "prism-faces does not apply to torus-ladder:12" \
    "$MRC" rings torus-ladder:12 --strategy prism-faces
expect 2 "replica size 3 does not divide the 8 nodes" \
    "$MRC" rings ring:8 --strategy ring --replica-size 3
expect 2 "unknown strategy 'twist'" "$MRC" rings hcm8 --strategy twist
expect 2 "--replica-size 'x' is not a positive integer" \
    "$MRC" rings hcm8 --replica-size x
expect 2 "name it \*.svg or \*.dot" "$MRC" rings hcm8 -o "$tmp/r.png"

# GCL's eight IPU-Links per IPU (rung=4, column=2): barley-twist meets the
# bound and leaves no physical link idle; the preset is the same torus.
expect 0 "efficiency 1.0000" \
    "$MRC" rings torus-ladder:8,rung=4,column=2 --strategy barley-twist
expect 0 "idle physical links: 0 of 32" \
    "$MRC" rings torus-ladder:8,rung=4,column=2 --strategy barley-twist
expect 0 "efficiency 1.0000" "$MRC" rings gcl-torus:8 --strategy barley-twist
expect 0 "efficiency 0.6667" "$MRC" rings torus-ladder:8 --strategy barley-twist
# Claim 1's "at least one" interlayer link, taken as two.
expect 0 "efficiency 0.7500" \
    "$MRC" rings prism:3,4,inter=2 --strategy prism-faces

# Honest accounting: every direction of prism:3,4 is busy, yet the face
# rings leave the third endmost link and the second intermediate link of
# each neighbour pair idle, two ports at every node.
"$MRC" rings prism:3,4 --strategy prism-faces >"$tmp/p.txt"
expect 0 "idle link directions: 0 of 42" cat "$tmp/p.txt"
expect 0 "idle physical links: 12 of 39" cat "$tmp/p.txt"
expect 0 "idle ports: 24 of 78; per node (idle/ports) 0:2/7 1:2/7" \
    cat "$tmp/p.txt"
expect 0 " 4:2/6 " cat "$tmp/p.txt"
expect 0 "idle ports: 0 of 32$" "$MRC" rings ring:16
"$MRC" rings prism:3,4 --strategy prism-faces --json >"$tmp/p.json"
expect 0 '"idle_physical_links": 12,' cat "$tmp/p.json"
expect 0 '"physical_links": 39,' cat "$tmp/p.json"
expect 0 '"idle_ports": \[2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2\]' \
    cat "$tmp/p.json"

expect 2 "prism-faces does not apply to prism-torus:3,4: it needs two endmost" \
    "$MRC" rings prism-torus:3,4 --strategy prism-faces
expect 0 "efficiency 1.0000" "$MRC" rings prism-torus:3,4

# Bad link counts: the spec and the key named, exit 2.
expect 2 "rung=0 is not a number of links from 1 to 1024" \
    "$MRC" rings torus-ladder:8,rung=0 --strategy barley-twist
expect 2 "rung=-1 is not a number of links" \
    "$MRC" rings torus-ladder:8,rung=-1
expect 2 "column=two is not a number of links" \
    "$MRC" rings torus-ladder:8,column=two
expect 2 "unknown option 'rungs' for torus-ladder (options: rung=links" \
    "$MRC" rings torus-ladder:8,rungs=2
expect 2 "option 'inter' given twice" "$MRC" rings prism:3,4,inter=2,inter=3
expect 2 "1026 links, more than 1024" "$MRC" rings torus-ladder:4,column=513
expect 2 "more than 16777216 physical links" \
    "$MRC" rings torus2d:1024,1024,x=17,y=16

# JSON: the documented keys, and a file that reads back as a topology.
"$MRC" rings hcm8 --strategy hcm8 --json >"$tmp/r.json"
for key in '"topology"' '"groups"' '"rings"' '"bidirectional"' '"share"' \
    '"hops"' '"route"' '"bound_gbps"' '"algbw_gbps"' '"efficiency"'; do
    expect 0 "$key" cat "$tmp/r.json"
done

expect 0 "wrote" "$MRC" rings hcm8 --strategy hcm8 -o "$tmp/r.dot"
expect 0 "#d62728" cat "$tmp/r.dot"
if command -v neato >/dev/null 2>&1; then
    expect 0 "wrote" "$MRC" rings torus-ladder:8 --strategy barley-twist \
        -o "$tmp/r.svg"
    expect 0 "<svg" cat "$tmp/r.svg"
fi

expect_summary
