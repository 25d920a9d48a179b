#!/usr/bin/env bash
# The GPU check: what every session that is lent a GPU runs there first. On an offline machine
# with CUDA, CMake and a C++ compiler (the device tool's), it unpacks the vendored Debian packages
# (scripts/vendor_debs.sh, run beforehand where apt works) into vendor/root with dpkg -x (no root,
# no apt), builds qgrad with CUDA for the GPU it finds and, the GPU's own steps first since a lent
# GPU's time is short: runs the gpu: tests (test_gpu), trains lenet5bn for one epoch on the CPU and
# on the GPU from the same seed, float and QAT (configs/lenet5bn_qat.json), and compares their
# test accuracies, runs bench/bench_gpu.py (float, then --qat torch_ao, then MobileNetV2 for the
# depthwise convolutions) and bench/bench_fake_quant_gpu.py, then
# builds everything else and runs the rest of the ctest suite. It ends with a summary of every step.
#   bash scripts/gpu_check.sh                  # everything
#   bash scripts/gpu_check.sh --quick          # build test_gpu only and run the gpu: tests
#   bash scripts/gpu_check.sh --no-gpu-dry-run # no GPU needed: unpack, configure, build, CPU steps
#   bash scripts/gpu_check.sh --deadline 400   # start no step after 400 s (later ones: SKIP)
# Exit status: 0 every step passed, 1 a step failed, 2 no GPU is visible (and no dry run).
# Logs go to build-gpu/logs; when $OUT (the device tool's output folder) is set, summary.txt and
# logs.tar.gz are refreshed there after every step, so a run cut off at its limit still reports.
# QGRAD_ACC_TOL: the largest accepted |cpu - cuda| test accuracy difference, in percentage
# points (default 1.5; the two devices sum in different orders, so the runs drift apart).
set -uo pipefail
cd "$(dirname "$0")/.."
root_dir=$(pwd)

mode=full
deadline=0
while [[ $# -gt 0 ]]; do
  case $1 in
  --quick) mode=quick ;;
  --no-gpu-dry-run) mode=dry ;;
  --deadline)
    [[ ${2:-} =~ ^[0-9]+$ ]] || {
      echo "gpu_check: --deadline expects a number of seconds, got '${2:-}'" >&2
      exit 2
    }
    deadline=$2
    shift
    ;;
  -h | --help)
    sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  *)
    echo "gpu_check: unknown option '$1' (expected --quick, --no-gpu-dry-run, --deadline N or --help)" >&2
    exit 2
    ;;
  esac
  shift
done

build=${QGRAD_GPU_BUILD_DIR:-build-gpu}
logs=$build/logs
rm -rf "$logs" # this run's logs alone go back
mkdir -p "$logs"
jobs=$(nproc)
summary=()
failed=0
publish() { # the summary so far and every log, to $OUT, where the device tool returns them
  printf '%s\n' "${summary[@]}" >"$logs/summary.txt"
  [[ -n ${OUT:-} && -d ${OUT:-} ]] || return 0
  cp "$logs/summary.txt" "$OUT/summary.txt"
  tar -czf "$OUT/logs.tar.gz.part" -C "$logs" . 2>/dev/null && mv "$OUT/logs.tar.gz.part" "$OUT/logs.tar.gz"
}
step() { # name status detail
  summary+=("$(printf '%-28s %-6s %s' "$1" "$2" "${3:-}")")
  [[ $2 == FAIL ]] && failed=1
  echo "=== gpu_check: $1: $2 ${3:-}"
  publish
}
in_time() { # name: whether the deadline lets the step start; a late step is recorded as SKIP
  [[ $deadline == 0 || $SECONDS -lt $deadline ]] && return 0
  step "$1" SKIP "deadline of $deadline s reached"
  return 1
}
finish() {
  echo
  echo "=== gpu_check summary ($mode) ==="
  printf '%s\n' "${summary[@]}"
  publish
  exit "$failed"
}

# --- the GPU --------------------------------------------------------------------------------
gpu_name=""
if command -v nvidia-smi >/dev/null; then
  gpu_name=$(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1)
fi
if [[ -z $gpu_name ]]; then
  if [[ $mode != dry ]]; then
    echo "gpu_check: no NVIDIA GPU is visible (nvidia-smi finds none); --no-gpu-dry-run checks the rest" >&2
    exit 2
  fi
  step gpu SKIP "none visible (dry run)"
else
  step gpu OK "$gpu_name"
fi

# --- vendored packages ----------------------------------------------------------------------
# A group (see vendor_debs.sh's MANIFEST) is unpacked unless its first package is installed at the
# vendored version: another version (Ubuntu's Catch2 3 or oneDNN 3, say) would not build qgrad,
# and CMAKE_PREFIX_PATH puts the unpacked copy first.
vroot=$root_dir/vendor/root
if [[ -f vendor/debs/MANIFEST ]]; then
  declare -A first_of=() version_of=() files_of=()
  while read -r group pkg version _arch file _sha; do
    [[ $group == \#* ]] && continue
    [[ -z ${first_of[$group]:-} ]] && first_of[$group]=$pkg && version_of[$group]=$version
    files_of[$group]+=" $file"
  done <vendor/debs/MANIFEST
  unpacked=()
  for g in "${!first_of[@]}"; do
    if [[ $(dpkg-query -W -f='${Status} ${Version}' "${first_of[$g]}" 2>/dev/null) == "install ok installed ${version_of[$g]}" ]]; then
      continue
    fi
    for f in ${files_of[$g]}; do
      dpkg -x "vendor/debs/$f" "$vroot" || {
        step vendor FAIL "dpkg -x $f"
        finish
      }
    done
    unpacked+=("$g")
  done
  step vendor OK "unpacked into vendor/root: ${unpacked[*]:-nothing (all installed)}"
else
  step vendor SKIP "no vendor/debs/MANIFEST (run scripts/vendor_debs.sh where apt works)"
fi
if [[ -d $vroot ]]; then
  # Environment, not -D, so the cmake runs that the tests start themselves find them too.
  export CMAKE_PREFIX_PATH=$vroot/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  # Only oneDNN and the OpenCL loader it links go on the loader path: the whole folder would put
  # Debian's zlib in front of the machine's for every program (python3 and cmake included).
  mkdir -p "$vroot/ldpath"
  for lib in "$vroot"/usr/lib/x86_64-linux-gnu/lib{dnnl,OpenCL}.so*; do
    [[ -e $lib ]] && ln -sfn "$lib" "$vroot/ldpath/"
  done
  export LD_LIBRARY_PATH=$vroot/ldpath${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export CPATH=$vroot/usr/include${CPATH:+:$CPATH}
fi
data_dir=/usr/share/datasets/fashion-mnist
if [[ ! -e $data_dir/train-images-idx3-ubyte.gz && -d $vroot$data_dir ]]; then
  # The tests read the data from Debian's path; a throwaway GPU machine gets a link there.
  if mkdir -p "$(dirname $data_dir)" 2>/dev/null && ln -sfn "$vroot$data_dir" "$data_dir" 2>/dev/null; then :; else
    data_dir=$vroot$data_dir
  fi
fi

# --- build ----------------------------------------------------------------------------------
arch=${QGRAD_CUDA_ARCH:-native}
configure() {
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DQGRAD_CUDA=$1 -DCMAKE_CUDA_ARCHITECTURES="$2" \
    >"$logs/configure.log" 2>&1
}
cuda_opt=ON
[[ $mode == dry && -z $gpu_name && ! -x /usr/local/cuda/bin/nvcc ]] && cuda_opt=OFF
if ! configure $cuda_opt "$arch"; then
  # CMake before 3.24, or no GPU to read the architecture from: Hopper.
  arch=90
  rm -rf "$build/CMakeCache.txt" "$build/CMakeFiles"
  configure $cuda_opt "$arch" || {
    step configure FAIL "see configure.log"
    tail -30 "$logs/configure.log"
    finish
  }
fi
step configure OK "CUDA=$cuda_opt arch=$arch"
# The GPU's own programs first: the library, test_gpu, the CLI and the training benchmark.
t0=$(date +%s)
gpu_targets=(test_gpu)
[[ $mode != quick ]] && gpu_targets+=(qgrad_cli bench_train bench_fake_quant_gpu)
if ! cmake --build "$build" -j"$jobs" --target "${gpu_targets[@]}" >"$logs/build_gpu_targets.log" 2>&1; then
  step "build ${gpu_targets[*]}" FAIL "see build_gpu_targets.log"
  grep -E "error|Error" "$logs/build_gpu_targets.log" | head -40
  finish
fi
step "build ${gpu_targets[*]}" OK "$(($(date +%s) - t0)) s"

# --- the gpu: tests ---------------------------------------------------------------------------
# A crash (a host read of device memory, say) ends a Catch2 run at the first case; a backtrace
# from cuda-gdb (the device machine's debugger, which also debugs host code) names the place.
backtrace_of() { # log-name command...: the stack of the command's first crash, into <log-name>.log
  command -v cuda-gdb >/dev/null || return 0
  timeout 240 cuda-gdb -batch -ex run -ex bt -ex "info sharedlibrary" --args "$@" >"$logs/$1.log" 2>&1 </dev/null
}
t0=$(date +%s)
if "$build/tests/test_gpu" --reporter compact >"$logs/test_gpu.log" 2>&1; then
  step test_gpu OK "$(grep -E "test cases|assertions" "$logs/test_gpu.log" | tail -1); $(($(date +%s) - t0)) s"
else
  rc=$?
  step test_gpu "$([[ $rc == 77 ]] && echo SKIP || echo FAIL)" \
    "rc $rc: $(grep -E "test cases|assertions|SKIPPED|FAILED" "$logs/test_gpu.log" | tail -1)"
  grep -B2 -A12 -E "FAILED|failed|error" "$logs/test_gpu.log" | head -150
  if [[ $rc -gt 128 ]]; then
    backtrace_of test_gpu_backtrace "$build/tests/test_gpu"
    grep -E "^#[0-9]" "$logs/test_gpu_backtrace.log" | head -25
    # Every case in a process of its own, so one crash hides none of the others.
    (cd "$build" && ctest -R "^gpu:" -j4 --timeout 300 --output-on-failure) >"$logs/test_gpu_each.log" 2>&1
    step "test_gpu, case by case" "$([[ $? == 0 ]] && echo OK || echo FAIL)" \
      "$(grep -E "tests passed|tests failed" "$logs/test_gpu_each.log" | tail -1)"
    sed -n '/The following tests FAILED/,$p' "$logs/test_gpu_each.log"
  fi
fi
[[ $mode == quick ]] && finish

# --- training: one epoch of lenet5bn on each device from the same seed, float and QAT ----------
# QAT: configs/lenet5bn_qat.json, the main job (torch_ao FakeQuantize with moving-average
# observers, which run on the GPU).
qgrad=$build/cli/qgrad
[[ -x $qgrad ]] || qgrad=$(find "$build" -maxdepth 2 -name qgrad -type f -perm -u+x | head -1)
devices=(cpu)
[[ -n $gpu_name ]] && devices+=(cuda)
for config in lenet5bn lenet5bn_qat; do
  declare -A acc=()
  for dev in "${devices[@]}"; do
    in_time "train $config $dev" || continue
    out_dir=$root_dir/$build/runs/${config}_$dev
    cfg=$logs/${config}_1epoch_$dev.json
    rm -rf "$out_dir"
    sed -e 's/"epochs": 3/"epochs": 1/' -e "s#/usr/share/datasets/fashion-mnist#$data_dir#" \
      -e "0,/{/s##{\"output\": {\"dir\": \"$out_dir\", \"progress\": \"off\"},#" "configs/$config.json" >"$cfg"
    t0=$(date +%s)
    if "$qgrad" train --config "$cfg" --device "$dev" >"$logs/train_${config}_$dev.log" 2>&1; then
      line=$(grep -E "^epoch 1/1" "$logs/train_${config}_$dev.log" | tail -1)
      acc[$dev]=$(sed -E 's/.*test loss [0-9.]+ acc ([0-9.]+)%.*/\1/' <<<"$line")
      step "train $config $dev" OK "$line ($(($(date +%s) - t0)) s)"
    else
      rc=$?
      step "train $config $dev" FAIL "rc $rc: $(tail -3 "$logs/train_${config}_$dev.log" | tr '\n' ' ')"
      if [[ $rc -gt 128 ]]; then
        backtrace_of "train_${config}_${dev}_backtrace" "$qgrad" train --config "$cfg" --device "$dev"
        grep -E "^#[0-9]" "$logs/train_${config}_${dev}_backtrace.log" | head -25
      fi
    fi
  done
  if [[ -n ${acc[cpu]:-} && -n ${acc[cuda]:-} ]]; then
    tol=${QGRAD_ACC_TOL:-1.5}
    if awk -v a="${acc[cpu]}" -v b="${acc[cuda]}" -v t="$tol" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t) }'; then
      step "accuracy $config cpu/cuda" OK "${acc[cpu]}% vs ${acc[cuda]}% (tolerance $tol points)"
    else
      step "accuracy $config cpu/cuda" FAIL "${acc[cpu]}% vs ${acc[cuda]}% (tolerance $tol points)"
    fi
  fi
  unset acc
done

# --- benchmark --------------------------------------------------------------------------------
if [[ -f bench/bench_gpu.py && -n $gpu_name ]] && in_time bench_gpu; then
  if PYTHONUNBUFFERED=1 python3 bench/bench_gpu.py --build "$build" --rounds 2 --steps 30 >"$logs/bench_gpu.log" 2>&1; then
    step bench_gpu OK "see bench_gpu.log"
    cat "$logs/bench_gpu.log"
  else
    step bench_gpu FAIL "$(tail -3 "$logs/bench_gpu.log" | tr '\n' ' ')"
  fi
fi
if [[ -f bench/bench_gpu.py && -n $gpu_name ]] && in_time "bench_gpu --qat"; then
  if PYTHONUNBUFFERED=1 python3 bench/bench_gpu.py --build "$build" --qat torch_ao --rounds 2 --steps 30 >"$logs/bench_gpu_qat.log" 2>&1; then
    step "bench_gpu --qat" OK "see bench_gpu_qat.log"
    cat "$logs/bench_gpu_qat.log"
  else
    step "bench_gpu --qat" FAIL "$(tail -3 "$logs/bench_gpu_qat.log" | tr '\n' ' ')"
  fi
fi
if [[ -f bench/bench_fake_quant_gpu.py && -n $gpu_name ]] && in_time bench_fake_quant_gpu; then
  if python3 bench/bench_fake_quant_gpu.py --build "$build" >"$logs/bench_fake_quant_gpu.log" 2>&1; then
    step bench_fake_quant_gpu OK "see bench_fake_quant_gpu.log"
    cat "$logs/bench_fake_quant_gpu.log"
  else
    step bench_fake_quant_gpu FAIL "$(tail -3 "$logs/bench_fake_quant_gpu.log" | tr '\n' ' ')"
  fi
fi
# MobileNetV2's training step (cuDNN's depthwise convolutions) against PyTorch's (issue 29).
if [[ -f bench/bench_gpu.py && -n $gpu_name ]] && in_time "bench_gpu depthwise"; then
  if PYTHONUNBUFFERED=1 python3 bench/bench_gpu.py --build "$build" --models mobilenet_v2_cifar --batches 128 --rounds 2 --steps 20 >"$logs/bench_gpu_depthwise.log" 2>&1; then
    step "bench_gpu depthwise" OK "see bench_gpu_depthwise.log"
    cat "$logs/bench_gpu_depthwise.log"
  else
    step "bench_gpu depthwise" FAIL "$(tail -3 "$logs/bench_gpu_depthwise.log" | tr '\n' ' ')"
  fi
fi

# --- everything else, and the rest of the suite ------------------------------------------------
if in_time "build all"; then
  t0=$(date +%s)
  if ! cmake --build "$build" -j"$jobs" >"$logs/build.log" 2>&1; then
    step "build all" FAIL "see build.log"
    grep -E "error|Error" "$logs/build.log" | head -40
    finish
  fi
  step "build all" OK "$(($(date +%s) - t0)) s"
fi
if in_time ctest; then
  t0=$(date +%s)
  # The gpu: cases ran above (test_gpu); the rest of the suite here.
  (cd "$build" && ctest -j"$jobs" -E "^gpu:" --output-on-failure --timeout 900) >"$logs/ctest.log" 2>&1
  rc=$?
  res=$(grep -E "tests passed|tests failed" "$logs/ctest.log" | tail -1)
  skipped=$(grep -c "\*\*\*Skipped" "$logs/ctest.log")
  if [[ $rc == 0 ]]; then
    step ctest OK "$res; $skipped skipped; $(($(date +%s) - t0)) s"
  else
    step ctest FAIL "$res"
    sed -n '/The following tests FAILED/,$p' "$logs/ctest.log"
  fi
fi
finish
