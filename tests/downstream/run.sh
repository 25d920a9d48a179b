#!/usr/bin/env bash
# ctest driver: installs the qgrad build tree into a temporary prefix, then configures, builds
# and runs tests/downstream against it with find_package(qgrad).
#   run.sh <qgrad build dir> <downstream source dir> <build type>
set -euo pipefail
build=$1 src=$2 type=${3:-Release}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE="$type" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/downstream"
