#!/usr/bin/env bash
# Installs the Debian packages qgrad needs, only those that are missing. Safe to re-run.
#   bash scripts/install_deps.sh            # build + test dependencies
#   QGRAD_WITH_TORCH=1 bash scripts/install_deps.sh   # also PyTorch for benchmarks/fixtures
#   QGRAD_WITH_FUZZ=1 bash scripts/install_deps.sh    # also Clang's libFuzzer (scripts/fuzz.sh)
#   QGRAD_WITH_NODE=1 bash scripts/install_deps.sh    # also node and npm (the ONNX Runtime test)
#   QGRAD_WITH_PLOT=1 bash scripts/install_deps.sh    # also matplotlib (qgrad plot and its tests)
#   QGRAD_WITH_DOCS=1 bash scripts/install_deps.sh    # also Doxygen (the docs target and its tests)
set -euo pipefail

# ocl-icd-opencl-dev: Debian's oneDNN CMake package (dnnl-config.cmake) requires OpenCL, which
# libdnnl-dev only recommends; --no-install-recommends below would drop it.
# libonnx-dev libprotobuf-dev: the ONNX exporter (deploy/onnx, QGRAD_ONNX=AUTO builds it when
# found); ONNX's CMake package links protobuf::libprotobuf, which CMake's FindProtobuf makes from
# libprotobuf-dev (protoc is not needed: the exporter uses libonnx-dev's generated classes).
# libopenmpi-dev openmpi-bin: data-parallel training (distributed/, QGRAD_MPI=AUTO builds it when
# found) and its tests, which mpirun starts on 2 ranks.
# libjpeg62-turbo-dev libpng-dev: the "image_folder" data format decodes JPEG and PNG files with
# them (QGRAD_IMAGES=AUTO builds it when found); its tests write real JPEG and PNG files with them.
pkgs=(build-essential cmake libdnnl-dev ocl-icd-opencl-dev catch2 nlohmann-json3-dev zlib1g-dev
  dataset-fashion-mnist libonnx-dev libprotobuf-dev libopenmpi-dev openmpi-bin
  libjpeg62-turbo-dev libpng-dev)
if [[ "${QGRAD_WITH_TORCH:-0}" == "1" ]]; then
  pkgs+=(python3-torch python3-numpy python3-scipy python3-yaml)  # pq's own code (gen_pq_*.py)
  # torchvision and PIL: the image_folder fixtures (gen_image_folder.py) and its benchmark.
  pkgs+=(python3-torchvision python3-pil)
fi
# The ONNX Runtime test installs npm's onnxruntime-node with npm; a machine that already has node
# and npm (say from NodeSource, whose nodejs bundles npm) keeps them.
if [[ "${QGRAD_WITH_NODE:-0}" == "1" ]] && ! { command -v node && command -v npm; } >/dev/null; then
  pkgs+=(nodejs npm)
fi
# qgrad plot runs cli/plot_runs.py with /usr/bin/python3; Agg output needs no GUI toolkit, so
# --no-install-recommends (below) keeps tk and friends out.
if [[ "${QGRAD_WITH_PLOT:-0}" == "1" ]]; then
  pkgs+=(python3-matplotlib)
fi
# The `docs` target and the API documentation tests (cmake/QgradDocs.cmake; Skipped without it).
if [[ "${QGRAD_WITH_DOCS:-0}" == "1" ]]; then
  pkgs+=(doxygen)
fi
if [[ "${QGRAD_WITH_FUZZ:-0}" == "1" ]]; then
  pkgs+=(clang libclang-rt-14-dev libomp-dev)
fi

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install_deps: all packages present"
  exit 0
fi

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
echo "install_deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install_deps: done"
