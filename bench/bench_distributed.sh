#!/usr/bin/env bash
# Weak scaling of data-parallel training on this machine: bench_distributed with 1 and with 2
# ranks of one thread each, the same batch per rank, in one run; prints each line and the
# efficiency (images/s on 2 ranks / (2 x images/s on 1)), the share of the step spent waiting
# for the gradient all-reduce, and how many all-reduces started while backward still ran.
#   bash bench/bench_distributed.sh [BUILD_DIR] [STEPS]
set -euo pipefail
build=${1:-build}
steps=${2:-30}
bench=$build/bench/bench_distributed
export OMP_NUM_THREADS=1 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1
echo "# $(date -u +%Y-%m-%d) $(git -C "$(dirname "$0")/.." rev-parse --short HEAD) $(nproc --all) cores, 1 thread a rank"
specs=("lenet5bn 128" "vggfm 64" "lenet5bn 128 qat" "vggfm 64 qat")
[[ -n ${QGRAD_BENCH_ONLY:-} ]] && specs=("$QGRAD_BENCH_ONLY")
for spec in "${specs[@]}"; do
  read -r model batch mode <<<"$spec"
  one=$(mpirun -np 1 "$bench" "$model" "$batch" "$steps" ${mode:+"$mode"})
  two=$(mpirun -np 2 "$bench" "$model" "$batch" "$steps" ${mode:+"$mode"})
  echo "$one"
  echo "$two"
  /usr/bin/env python3 - "$one" "$two" <<'PY' 2>/dev/null || true
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
print(f"  {a['model']}{' QAT' if a['qat'] else ''} batch {a['batch_per_rank']}/rank: "
      f"efficiency {b['images_per_s'] / (2 * a['images_per_s']):.2f}, "
      f"waiting {100 * b['wait_share']:.1f}% of the step, buffers {100 * b['broadcast_share']:.1f}%, "
      f"{100 * b['started_in_backward']:.0f}% of all-reduces started in backward")
PY
done
