#!/usr/bin/env bash
# Builds qgrad and runs the whole test suite (ctest). With CI=true (or QGRAD_SANITIZE_RUN=1) it
# also builds and runs the suite under AddressSanitizer + UndefinedBehaviorSanitizer.
#   bash scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# matplotlib: the qgrad plot tests (Skipped without it).
QGRAD_WITH_NODE=1 QGRAD_WITH_PLOT=1 bash scripts/install_deps.sh

jobs=$(nproc)
run_suite() {
  local dir=$1
  shift
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@"
  cmake --build "$dir" -j"$jobs"
  (cd "$dir" && ctest --output-on-failure -j"$jobs")
}

run_suite build

if [[ "${CI:-}" == "true" || "${QGRAD_SANITIZE_RUN:-0}" == "1" ]]; then
  echo "=== sanitizer build (ASan + UBSan) ==="
  # CUDA off: the sanitizers check our host code; CUDA runtime init under ASan is noisy.
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # No benchmarks either: ctest runs none of them, and CI's time goes to compiling under ASan.
  run_suite build-sanitize -DQGRAD_SANITIZE=ON -DQGRAD_CUDA=OFF -DQGRAD_NATIVE=ON \
    -DQGRAD_BUILD_BENCH=OFF
fi
