#!/bin/sh
# Installs the build into a scratch prefix and imports the Python package
# from there: it must load the installed libmrc (found relative to the
# package, the prefix chosen at install time), not the build tree's.
# Usage: test_install.sh BUILD_DIR PYTHON PYTHON_INSTALL_DIR
set -eu
build=$1
python=$2
pydir=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/$pydir/mrc/__init__.py"
cd "$tmp"
env -u MRC_LIBRARY PYTHONPATH="$tmp/prefix/$pydir" PYTHONDONTWRITEBYTECODE=1 \
    "$python" -c '
import os, sys, mrc
lib = os.path.realpath(mrc.LIBRARY_PATH)
prefix = os.path.realpath(sys.argv[1])
assert lib.startswith(prefix + os.sep), (lib, prefix)
assert mrc.__file__.startswith(sys.argv[1]), mrc.__file__
e = mrc.Embedding("hcm8")
print("installed mrc %s: hcm8 efficiency %.4f" % (mrc.__version__,
                                                 e.efficiency))
' "$tmp/prefix" > "$tmp/out"
grep -q "hcm8 efficiency 1.0000" "$tmp/out"
echo "1 passed, 0 failed"
