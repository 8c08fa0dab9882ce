#!/bin/sh
# The include check catches what it is for: a copy of src/ with a later
# stage's header planted in an earlier stage, and another module's
# *_internal.h, must fail it, naming both.
set -u
here=$(dirname "$0")
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
cp -R "$here/../src" "$tmp/src"
echo '#include "api/comm_state.h"' >>"$tmp/src/topo/dot.c"
echo '#include "exec/exec_internal.h"' >>"$tmp/src/sim/bsp.c"
out=$(sh "$here/check_includes.sh" "$tmp/src") && {
    echo "FAIL: the check passed a tree with bad includes"
    exit 1
}
for want in 'topo/dot.c:.*later stage (api) than topo' \
            'sim/bsp.c:.*another module.s inside'; do
    echo "$out" | grep -q "$want" || {
        echo "FAIL: the check did not say '$want'; it said:"
        echo "$out"
        exit 1
    }
done
echo "ok: both planted includes named"
