#!/bin/sh
# Install the Debian packages that mrc needs to build, test and draw.
#
# Run by `make run` and `make test` before they configure. As root on
# Debian it installs what is missing (one `apt-get update` first); as any
# other user it names the missing packages and fails, so that a build never
# starts half-equipped. Extra packages can be named as arguments.
set -eu

packages="cmake make gcc pkg-config libcmocka-dev libjansson-dev graphviz gnuplot-nox openmpi-bin libopenmpi-dev
          g++ python3 python3-numpy python3-pytest python3-mpi4py python3-torch
          libtorch-dev pybind11-dev python3-sklearn $*"

if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "setup: not a Debian system; make sure these are installed:" \
         "$packages" >&2
    exit 0
fi

missing=""
for p in $packages; do
    status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
    case "$status" in
        *"install ok installed"*) ;;
        *) missing="$missing $p" ;;
    esac
done

[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
    echo "setup: missing Debian packages:$missing" >&2
    echo "setup: install them with: sudo apt-get install$missing" >&2
    exit 1
fi

echo "setup: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
# shellcheck disable=SC2086
apt-get install -y -q --no-install-recommends $missing >/dev/null
echo "setup: done"
