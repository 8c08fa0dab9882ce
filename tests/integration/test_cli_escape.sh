#!/bin/sh
# Hostile names meet every writer: a topology whose name and node names
# try to break out of gnuplot, JSON, DOT, XML and the shell, in a file
# whose own name does the same. No command may run (no marker file), every
# JSON must parse, every DOT must be read by Graphviz, every SVG must be
# well-formed XML, and the name must come back as it was where it is shown.
# Names with control characters are refused when the file is read.
# Usage: test_cli_escape.sh MRC
set -u
MRC=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/expect.sh"

# The standard library's JSON and XML parsers; /usr/bin/python3 first, so
# that no virtual environment on PATH decides.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
if [ -z "$PY" ]; then
    echo "SKIP: no python3 to parse the outputs"
    exit 77
fi

cd "$tmp" || exit 1
# The name, in JSON: a gnuplot breakout, a JSON/DOT breakout (" \ }), XML
# (< & '), the shell ($(...) and backticks), and Graphviz's \N escape.
name="x' ; system('touch gp_marker') ; '\\\" }\\\\N <b>&amp; \$(touch sh_marker) \`touch bq_marker\`"
# The name as the writers must give it back (JSON-decoded).
plain="x' ; system('touch gp_marker') ; '\" }\\N <b>&amp; \$(touch sh_marker) \`touch bq_marker\`"
topo="t'\"\$(touch path_marker).json"
cat >"$topo" <<EOF
{"format": "mrc-topology", "version": 1, "name": "$name",
 "nodes": [{"id": 0, "name": "$name", "x": 0, "y": 1},
           {"id": 1, "x": -0.866, "y": -0.5},
           {"id": 2, "name": "<node>&\\"2\\"", "x": 0.866, "y": -0.5}],
 "links": [{"a": 0, "b": 1}, {"a": 1, "b": 2}, {"a": 2, "b": 0}]}
EOF
printf '%s' "$plain" >name.txt

# json FILE: FILE parses as JSON and holds the name as one of its strings.
json() {
    "$PY" -c '
import json, sys
want = open("name.txt", encoding="utf-8").read()
def strings(v):
    if isinstance(v, dict):
        for k, x in v.items():
            yield from strings(x)
    elif isinstance(v, list):
        for x in v:
            yield from strings(x)
    elif isinstance(v, str):
        yield v
doc = json.load(open(sys.argv[1], encoding="utf-8"))
found = [s for s in strings(doc) if want in s or s == sys.argv[2]]
print("parsed; name found" if found else "parsed; name missing")
sys.exit(0 if found else 1)
' "$1" "${2:-}"
}

# svg FILE: FILE is well-formed XML and its text holds the name.
svg() {
    "$PY" -c '
import sys, xml.etree.ElementTree as ET
want = open("name.txt", encoding="utf-8").read()
root = ET.parse(sys.argv[1]).getroot()
text = "".join(root.itertext())
attrs = [v for e in root.iter() for v in e.attrib.values()]
ok = want in text or any(want in a for a in attrs)
print("well-formed; name found" if ok else "well-formed; name missing")
sys.exit(0 if ok else 1)
' "$1"
}

# dot FILE: Graphviz reads FILE without an error.
dot_ok() {
    dot -Tsvg "$1" -o "$1.svg" 2>"$1.err" && ! grep -q -i "error" "$1.err" &&
        echo "dot read it"
}

expect 0 "" "$MRC" topo show "$topo" --json
cp "$tmp/out" show.json
expect 0 "name found" json show.json
expect 0 "" "$MRC" rings "$topo" --json
cp "$tmp/out" rings.json
expect 0 "name found" json rings.json
expect 0 "" "$MRC" compile "$topo" --collective allreduce --count 64 --dtype float32 --json
cp "$tmp/out" compile.json
expect 0 "parsed; name found" json compile.json "$topo"
expect 0 "" "$MRC" run --topology "$topo" --collective allreduce \
    --count 64 --iters 1 --warmup 0 --json
cp "$tmp/out" run.json
expect 0 "name found" json run.json
expect 0 "" "$MRC" sim "$topo" --collective allreduce --size 1K --json
cp "$tmp/out" sim.json
expect 0 "name found" json sim.json
expect 0 "" "$MRC" sim "$topo" --compare --collective allreduce --size 1K \
    --json
cp "$tmp/out" compare.json
expect 0 "name found" json compare.json
expect 0 "wrote" "$MRC" sim "$topo" --sweep 1K:4K --collective allreduce \
    -o sweep
expect 0 "name found" json sweep.json
if command -v gnuplot >/dev/null 2>&1; then
    expect 0 "wrote sweep.svg" "$MRC" sim "$topo" --sweep 1K:4K \
        --collective allreduce -o sweep
    expect 0 "name found" svg sweep.svg
fi
# An exchange file with a hostile name: its path is shown in the JSON.
xfile="x\"'\$(touch fabric_marker).json"
echo '{"tiles": 4, "columns": 2, "exchange": [{"source": 0,
 "destinations": [1], "bytes": 4}]}' >"$xfile"
expect 0 "" "$MRC" fabric --pattern "$xfile" --json
cp "$tmp/out" fabric.json
expect 0 "parsed; name found" json fabric.json "$xfile"

if command -v dot >/dev/null 2>&1; then
    expect 0 "wrote" "$MRC" topo draw "$topo" -o topo.dot
    expect 0 "dot read it" dot_ok topo.dot
    expect 0 "name found" svg topo.dot.svg
    expect 0 "wrote" "$MRC" topo draw "$topo" -o topo.svg
    expect 0 "name found" svg topo.svg
    expect 0 "wrote" "$MRC" rings "$topo" -o rings.dot
    expect 0 "dot read it" dot_ok rings.dot
    expect 0 "wrote" "$MRC" rings "$topo" -o rings.svg
    expect 0 "name found" svg rings.svg
fi

# Control characters in names are refused, naming the file and the field.
for c in '\n' '\t' '\u0001' '\u001b[31m'; do
    printf '{"format": "mrc-topology", "version": 1, "name": "a%sb",
 "nodes": [{"id": 0}, {"id": 1}], "links": [{"a": 0, "b": 1}]}\n' "$c" \
        >ctl.json
    expect 2 'ctl.json: "name" must not hold control characters' \
        "$MRC" topo show ctl.json
    printf '{"format": "mrc-topology", "version": 1, "nodes": [{"id": 0},
 {"id": 1, "name": "a%sb"}], "links": [{"a": 0, "b": 1}]}\n' "$c" \
        >ctl.json
    expect 2 'nodes\[1\]: "name" must not hold control' \
        "$MRC" topo show ctl.json
done

# Nothing ran: no marker from gnuplot, the shell or backticks.
for m in gp_marker sh_marker bq_marker path_marker fabric_marker; do
    expect 1 "" test -e "$m"
done
expect_summary
