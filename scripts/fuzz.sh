#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) in the sanitizer build, build-sanitize/ (Clang with
# ASan + UBSan and coverage instrumentation; CMakePresets.json: "sanitize", the same build whose
# test suite scripts/test.sh runs under CI, so after it nothing is compiled again), and runs a
# timed campaign of each, starting from its committed seed corpus and dictionary. Fails on the
# first crash, sanitizer report, leak, uncaught non-qgrad exception, input slower than 10 s, or
# allocation over the bound: 1024 MB in one malloc, 2048 MB resident. What a campaign finds new
# stays in build-sanitize/fuzz/corpus/<name>/; a crash input is written to
# build-sanitize/fuzz/artifacts/.
#   bash scripts/fuzz.sh                      # every target, 60 s each (what CI runs)
#   bash scripts/fuzz.sh --seconds 3600 npy   # a long run of one target
#   bash scripts/fuzz.sh --runs 10000000      # every target until 10 million executions
#   bash scripts/fuzz.sh --list               # the target names
# Targets run side by side, one a core (--parallel N to change).
set -euo pipefail
cd "$(dirname "$0")/.."

seconds=60
runs=-1
parallel=$(nproc)
targets=()
while (($#)); do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; seconds=0; shift 2 ;;
    --parallel) parallel=$2; shift 2 ;;
    --list) ls tests/fuzz/fuzz_*.cpp | sed 's|.*/fuzz_||; s|\.cpp$||'; exit 0 ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(ls tests/fuzz/fuzz_*.cpp | sed 's|.*/fuzz_||; s|\.cpp$||')
fi

QGRAD_WITH_FUZZ=1 bash scripts/install_deps.sh
build=build-sanitize
out=$build/fuzz
cmake --preset sanitize >/dev/null
cmake --build "$build" -j"$(nproc)" --target $(printf 'fuzz_%s ' "${targets[@]}")

export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
mkdir -p "$out/artifacts"
rm -f "$out"/fuzz_*.summary
limit_text="$seconds s"
((runs >= 0)) && limit_text="$runs runs"
# One campaign a core: each target is single-threaded (OMP_NUM_THREADS=1).
run_target() {
  local name=$1 seeds=tests/fuzz/corpus/$1 work=$out/corpus/$1 log=$out/fuzz_$1.log
  mkdir -p "$work"
  local dict=()
  [[ -f tests/fuzz/dict/$name.dict ]] && dict=(-dict="tests/fuzz/dict/$name.dict")
  local limit=(-max_total_time="$seconds")
  ((runs >= 0)) && limit=(-runs="$runs")
  if ! OMP_NUM_THREADS=1 "$build/tests/fuzz/fuzz_$name" "${limit[@]}" "${dict[@]}" \
      -rss_limit_mb=2048 -malloc_limit_mb=1024 -timeout=10 -print_final_stats=1 \
      -artifact_prefix="$out/artifacts/${name}-" "$work" "$seeds" >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz.sh: target $name FAILED; the input is in $out/artifacts/ (log: $log)" >&2
    return 1
  fi
  local execs
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1 || true)
  local secs
  secs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$log" | grep -o 'in [0-9]*' | grep -o '[0-9]*' | tail -1 || true)
  echo "$name: ${execs:-?} executions in ${secs:-?} s, no finding" >"$out/fuzz_$name.summary"
}

# A target passed when it wrote its summary line.
for name in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n || true; done
  echo "=== fuzz $name (${limit_text}) ==="
  run_target "$name" &
done
wait
echo "=== fuzz summary ==="
failed=0
for name in "${targets[@]}"; do
  cat "$out/fuzz_$name.summary" 2>/dev/null || { echo "$name: FAILED"; failed=1; }
done
exit $failed
