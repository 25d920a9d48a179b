#!/usr/bin/env bash
# Installs npm's onnxruntime-node (its CPU build ships inside the package) into DIR for the
# ONNX Runtime tests, then runs them (the hidden [.ort] cases of a Catch2 test program:
# test_deploy's exports, test_cli's verify-deploy) with QGRAD_ORT_DIR=DIR. Exits 77 (ctest:
# Skipped, visibly) when node or npm is missing or the npm registry cannot be reached, never
# passing silently.
#   bash tests/deploy/ort/install_ort.sh DIR path/to/test_deploy_or_test_cli
set -uo pipefail
dir=$1
test_program=$2
version=1.30.0  # pinned: the outputs compared are this runtime's
for tool in node npm; do
  if ! command -v "$tool" >/dev/null; then
    echo "SKIPPED: $tool is not installed (apt-get install nodejs npm)"
    exit 77
  fi
done
if [[ ! -f $dir/node_modules/onnxruntime-node/package.json ]] ||
  ! grep -q "\"version\": \"$version\"" "$dir/node_modules/onnxruntime-node/package.json"; then
  mkdir -p "$dir"
  [[ -f $dir/package.json ]] || echo '{"private": true}' >"$dir/package.json"
  # --ignore-scripts: the package's install script would download the GPU build.
  if ! (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund "onnxruntime-node@$version" >npm.log 2>&1); then
    tail -5 "$dir/npm.log"
    echo "SKIPPED: npm could not install onnxruntime-node@$version (registry unreachable?)"
    exit 77
  fi
fi
QGRAD_ORT_DIR=$dir exec "$test_program" "[.ort]"
