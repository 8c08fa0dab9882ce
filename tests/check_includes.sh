#!/bin/sh
# The house's include rules, checked over SRC (default: the repository's
# src/): each folder is one stage of the data flow, and a stage includes
# only its own headers and those of the stages before it,
#
#   common, reduce  <  topo  <  embed  <  program, transport
#                   <  exec, sim, fabric  <  api  <  pmpi
#
# (the public headers include/mrc/*.h count as the stage that implements
# them), and no stage includes another's *_internal.h. Prints each
# offending include as FILE:LINE and why; exit 1 if any, 0 if none.
#
#   usage: tests/check_includes.sh [SRC]
set -u
src=${1:-$(dirname "$0")/../src}
[ -d "$src" ] || { echo "check_includes: no directory $src" >&2; exit 2; }

rank() { # stage of a module (folder under src/), or of a public header
    case $1 in
    common | reduce | mrc/types.h | mrc/status.h) echo 0 ;;
    topo | mrc/topo.h) echo 1 ;;
    embed | mrc/embed.h) echo 2 ;;
    program | transport | mrc/program.h) echo 3 ;;
    exec | sim | fabric | mrc/sim.h | mrc/profile.h | mrc/fabric.h) echo 4 ;;
    api | mrc/comm.h | mrc/mrc.h | mrc/mrc_mpi.h) echo 5 ;;
    pmpi) echo 6 ;;
    *) echo "" ;;
    esac
}

for f in $(find "$src" -name '*.c' -o -name '*.h' | sort); do
    rel=${f#"$src"/}
    mod=${rel%%/*}
    mr=$(rank "$mod")
    if [ -z "$mr" ]; then
        echo "$rel: the folder '$mod' has no place in the data flow (add it to tests/check_includes.sh)"
        echo x
        continue
    fi
    grep -n '^#include "' "$f" | while IFS= read -r line; do
        n=${line%%:*}
        h=$(echo "$line" | sed 's/^[0-9]*:#include "\([^"]*\)".*/\1/')
        case $h in
        mrc/*) hm=$h ;;
        */*) hm=${h%%/*} ;;
        *) hm=$mod ;; # beside the file: its own module
        esac
        case $h in
        mrc/version.h) continue ;; # generated, of no stage
        esac
        hr=$(rank "$hm")
        if [ -z "$hr" ]; then
            echo "$rel:$n: includes \"$h\", which is of no known stage"
            echo x
        elif [ "$hm" != "$mod" ] && [ "$hr" -gt "$mr" ]; then
            echo "$rel:$n: includes \"$h\", of a later stage ($hm) than $mod"
            echo x
        fi
        case $h in
        */*_internal.h)
            if [ "${h%%/*}" != "$mod" ]; then
                echo "$rel:$n: includes \"$h\", another module's inside"
                echo x
            fi ;;
        esac
    done
done | {
    found=0
    while IFS= read -r out; do
        if [ "$out" = x ]; then found=1; else echo "$out"; fi
    done
    [ $found -eq 0 ]
}
