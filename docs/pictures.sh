#!/bin/sh
# Regenerates the pictures in docs/img from the mrc binary (needs Graphviz).
# Usage: docs/pictures.sh [path/to/mrc]
set -eu
MRC=${1:-build/tools/mrc/mrc}
out=$(dirname "$0")/img
mkdir -p "$out"
for spec in hcm8 prism:3,4 ladder:8 torus-ladder:8 torus2d:4,4; do
    "$MRC" topo draw "$spec" -o "$out/topo-$(echo "$spec" | tr ':,' '--').svg"
done
rings() { # NAME SPEC ARGS...
    name=$1
    shift
    "$MRC" rings "$@" -o "$out/rings-$name.svg" >/dev/null
}
rings ring ring:8 --strategy ring
rings peripheral-ring ladder:8 --strategy peripheral-ring
rings barley-twist torus-ladder:8 --strategy barley-twist
rings ring-on-line ladder:8 --strategy ring-on-line
rings rung-ring-2 torus-ladder:8 --strategy rung-ring-2
rings rung-ring-4 ladder:16 --strategy rung-ring-4
rings prism-faces prism:3,4 --strategy prism-faces
rings hcm8 hcm8 --strategy hcm8
rings hcm8-4+2+2 hcm8 --strategy hcm8 --groups 4+2+2
rings auto-hcm8 hcm8
rings auto-torus2d torus2d:4,4
rings auto-torus-ladder torus-ladder:16
