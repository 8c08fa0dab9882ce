#!/bin/sh
# The mrc topo command line as a user meets it: output, exit status and the
# one-line message for each kind of mistake. Usage: test_cli_topo.sh MRC
set -u
MRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

expect 0 "usage: mrc COMMAND" "$MRC" --help
expect 0 "^mrc [0-9]" "$MRC" --version
expect 0 "prism:K,L" "$MRC" help topo
expect 0 "gcl-torus:N" "$MRC" help topo
expect 0 "rung=R,column=C" "$MRC" help topo
# Link counts per class: the ports and physical links they make.
expect 0 "8 per node" "$MRC" topo show gcl-torus:8
expect 0 "32 physical links" "$MRC" topo show torus-ladder:8,rung=4,column=2
expect 0 "48 physical links" "$MRC" topo show prism:3,4,inter=2
expect 0 "36 physical links in 24 link entries" "$MRC" topo show prism-torus:4,3
expect 0 "10 per node" "$MRC" topo show torus2d:4,4,x=2,y=3
expect 2 "x=0 is not a number of links" "$MRC" topo show torus2d:4,4,x=0
expect 2 "options: intra=links, inter=links" \
    "$MRC" topo show prism-torus:3,4,end=3
expect 2 "L >= 3 layers" "$MRC" topo show prism-torus:3,2
expect 2 "usage: mrc" "$MRC"
expect 2 "unknown command 'bogus'" "$MRC" bogus
expect 2 "no help on 'bogus'" "$MRC" help bogus
expect 2 "missing sub-command" "$MRC" topo
expect 2 "unknown sub-command 'list'" "$MRC" topo list

expect 0 "ports      7 per node" "$MRC" topo show hcm8
expect 0 "6 nodes with 6, 6 nodes with 7" "$MRC" topo show prism:3,4
expect 0 "ports      4 per node" "$MRC" topo show torus2d:4,4
expect 0 "more nodes" "$MRC" topo show torus2d:8,8
expect 2 "prism:K,L needs K >= 3" "$MRC" topo show prism:0,0
expect 2 "even N >= 4" "$MRC" topo show ladder:7
expect 2 "N >= 2" "$MRC" topo show ring:1
expect 2 "unknown generator 'nosuch'" "$MRC" topo show nosuch:4
expect 2 "unknown option '--jsn'" "$MRC" topo show hcm8 --jsn
expect 2 "unexpected argument 'ring:4'" "$MRC" topo show hcm8 ring:4
expect 2 "missing argument" "$MRC" topo show

# --json is the file format: save it, check it, read it back unchanged.
"$MRC" topo show torus2d:3,4,bw=50 --json >"$tmp/t.json"
expect 0 "t.json: ok: 12 nodes, 24 physical links" "$MRC" topo check "$tmp/t.json"
"$MRC" topo show "$tmp/t.json" --json >"$tmp/t2.json"
expect 0 "" cmp "$tmp/t.json" "$tmp/t2.json"
expect 0 "bandwidth  50 GB/s" "$MRC" topo show "$tmp/t.json"

printf '{"format": "mrc-topology", "version": 1,\n "nodes": [{"id": 0}\n' \
    >"$tmp/broken.json"
expect 2 "broken.json:3:.*JSON syntax error" "$MRC" topo check "$tmp/broken.json"
sed 's/"b": 1,/"b": 99,/' "$tmp/t.json" >"$tmp/unknown.json"
expect 2 "unknown.json: links\[0\]: unknown node 99" \
    "$MRC" topo check "$tmp/unknown.json"
expect 2 "cannot open" "$MRC" topo check "$tmp/none.json"

# Drawing: DOT always, SVG through Graphviz, nothing half-written.
expect 0 "wrote" "$MRC" topo draw hcm8 -o "$tmp/h.dot"
expect 0 "n0 -- n1" cat "$tmp/h.dot"
if command -v neato >/dev/null 2>&1; then
    expect 0 "wrote" "$MRC" topo draw prism:3,4 -o "$tmp/p.svg"
    expect 0 "<svg" cat "$tmp/p.svg"
fi
expect 2 "name it \*.svg or \*.dot" "$MRC" topo draw hcm8 -o "$tmp/h.png"
expect 2 "missing -o" "$MRC" topo draw hcm8
expect 1 "cannot create" "$MRC" topo draw hcm8 -o "$tmp/no/such/dir/h.dot"
expect 0 "" test ! -e "$tmp/h.png"

expect_summary
