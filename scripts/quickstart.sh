#!/usr/bin/env bash
# One command from a fresh Debian/Ubuntu machine to qgrad's main job: installs what is missing,
# builds, and runs the main job: quantization-aware training of LeNet-5 with batch norm on
# Fashion-MNIST for 3 epochs (torch.ao recipe: per-channel symmetric int8 weights, per-tensor
# affine uint8 inputs), i.e. `qgrad train --config configs/lenet5bn_qat.json`. Extra arguments
# go to `qgrad train`; one naming another config replaces the default one, e.g.
# `bash scripts/quickstart.sh --config configs/lenet5bn.json` (float training).
#   bash scripts/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"

args=(--config configs/lenet5bn_qat.json)
for a in "$@"; do
  case "$a" in
    --config | -c | --config=*) args=() ;;
  esac
done
./build/cli/qgrad train ${args[@]+"${args[@]}"} "$@"
