#!/usr/bin/env bash
# ctest driver: installs the qgrad build tree into a temporary prefix, then configures, builds
# and runs tests/downstream against it with find_package(qgrad).
# The downstream project is compiled by qgrad's own compiler: a static qgrad built with Clang
# (the sanitizer build) needs Clang's OpenMP runtime, which GCC's link does not bring.
#   run.sh <qgrad build dir> <downstream source dir> <build type> [C++ compiler]
set -euo pipefail
build=$1 src=$2 type=${3:-Release} cxx=${4:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE="$type" -DCMAKE_PREFIX_PATH="$work/prefix" \
  ${cxx:+-DCMAKE_CXX_COMPILER="$cxx"} >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/downstream"
