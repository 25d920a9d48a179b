#!/usr/bin/env bash
# One command from a fresh Debian/Ubuntu machine to qgrad's main job: installs what is missing,
# builds, and runs the main job: `qgrad train` (lenet5bn on Fashion-MNIST, 3 epochs). Extra
# arguments go to `qgrad train`, e.g. `bash scripts/quickstart.sh --config configs/vggfm.json`.
#   bash scripts/quickstart.sh
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install_deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)"
./build/cli/qgrad train "$@"
