#!/usr/bin/env bash
# Builds qgrad and runs the whole test suite (ctest). With CI=true (or QGRAD_SANITIZE_RUN=1) it
# also builds and runs the suite under AddressSanitizer + UndefinedBehaviorSanitizer, in the
# build that scripts/fuzz.sh's libFuzzer targets then link (CMakePresets.json: "sanitize").
# Each suite's configure, build and test times are printed as it ends.
#   bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=0
[[ "${CI:-}" == "true" || "${QGRAD_SANITIZE_RUN:-0}" == "1" ]] && sanitize=1

# node and npm: the ONNX Runtime tests; matplotlib: the qgrad plot tests; Doxygen: the API
# documentation tests (each Skipped without it); Clang's sanitizer runtimes and libFuzzer: the
# sanitizer build.
QGRAD_WITH_NODE=1 QGRAD_WITH_PLOT=1 QGRAD_WITH_DOCS=1 QGRAD_WITH_FUZZ=$sanitize \
  bash scripts/install_deps.sh

jobs=$(nproc)
# run_suite NAME DIR CONFIGURE_ARGS...: configure, build and ctest, each timed.
run_suite() {
  local name=$1 dir=$2 t0=$SECONDS t1 t2
  shift 2
  cmake "$@"
  t1=$SECONDS
  cmake --build "$dir" -j"$jobs"
  t2=$SECONDS
  (cd "$dir" && ctest --output-on-failure -j"$jobs")
  echo "test.sh: $name suite: configure $((t1 - t0)) s, build $((t2 - t1)) s, tests $((SECONDS - t2)) s"
}

run_suite Release build -S . -B build -DCMAKE_BUILD_TYPE=Release

if ((sanitize)); then
  echo "=== sanitizer build (ASan + UBSan, Clang) ==="
  # CUDA off: the sanitizers check our host code; CUDA runtime init under ASan is noisy.
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_suite ASan+UBSan build-sanitize --preset sanitize
fi
