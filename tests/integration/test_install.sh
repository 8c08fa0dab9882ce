#!/bin/sh
# Installs the build into a scratch prefix and builds a small consumer
# against it twice: with CMake's find_package(mrc) and with pkg-config.
# Usage: test_install.sh BUILD_DIR CONSUMER_SOURCE_DIR
set -eu
build=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null

cmake -S "$src" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
    >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib:${LD_LIBRARY_PATH:-}" \
    "$tmp/cmake-build/consumer" > "$tmp/out"
grep -q "hcm8: 8 nodes" "$tmp/out"
# the fabric's API is exported from the shared library too
grep -q "fabric: 64 of 64 deliveries on time" "$tmp/out"
"$tmp/cmake-build/consumer_static" | grep -q "fabric: 64 of 64"

pcdir=$(dirname "$(find "$tmp/prefix" -name mrc.pc | head -n 1)")
PKG_CONFIG_PATH="$pcdir" pkg-config --exists mrc
cc -std=c11 "$src/consumer.c" -o "$tmp/pc-consumer" \
    $(PKG_CONFIG_PATH="$pcdir" pkg-config --cflags --libs mrc)
LD_LIBRARY_PATH="$(dirname "$pcdir")" "$tmp/pc-consumer" | grep -q "fabric: 64 of 64"
test -f "$(dirname "$pcdir")/cmake/mrc/mrcConfigVersion.cmake"
echo "1 passed, 0 failed"
