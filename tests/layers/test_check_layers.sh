#!/usr/bin/env bash
# Proves scripts/check_layers.sh fails on what it is there to catch: in a throw-away tree of two
# layers (low below high), an upward include, and an upward symbol (low's library calls a
# function that only high's library defines, declared by low itself so no include shows it).
# The same tree without either passes, so the failures are the check's, not the set-up's.
#   test_check_layers.sh <check_layers.sh> <C++ compiler> <ar> <nm>
set -euo pipefail
check=$1 cxx=$2 ar=$3 nm=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src/low" "$work/src/high"

echo 'int low_fn();' >"$work/src/low/low.h"
echo 'int low_fn() { return 1; }' >"$work/src/low/low.cpp"
printf '#include "low/low.h"\nint high_fn() { return low_fn() + 1; }\n' >"$work/src/high/high.cpp"
build() {
  local f
  for f in low high; do
    "$cxx" -c "$work/src/$f/$f.cpp" -I"$work/src" -o "$work/$f.o"
    rm -f "$work/lib$f.a"
    "$ar" qc "$work/lib$f.a" "$work/$f.o"
  done
}
run() {
  bash "$check" --nm "$nm" --root "$work/src" "low=low/=$work/liblow.a" \
    "high=high/=$work/libhigh.a" >"$work/out" 2>&1
}
expect_failure() {  # what <text the report must name>
  if run; then
    echo "FAIL: $1 passed the layer check"; cat "$work/out"; exit 1
  fi
  if ! grep -qF "$2" "$work/out"; then
    echo "FAIL: $1: the report does not name '$2'"; cat "$work/out"; exit 1
  fi
  echo "ok: $1 fails the check: $(grep -F "$2" "$work/out" | head -1)"
}

build
run || { echo "FAIL: the clean tree did not pass"; cat "$work/out"; exit 1; }
echo "ok: the clean tree passes"

# An upward include (a header of the layer above), in a header and in a source.
printf '#include "high/high.h"\n' >>"$work/src/low/low.h"
expect_failure "an upward include" "low includes high: low/low.h:2:#include \"high/high.h\""
printf 'int low_fn();\n' >"$work/src/low/low.h"

# An upward symbol with no include: low declares high's function itself and calls it.
printf 'int high_fn();\nint low_fn() { return high_fn() - 1; }\n' >"$work/src/low/low.cpp"
build
expect_failure "an upward symbol" "low uses a symbol of high: high_fn()"
