#!/usr/bin/env bash
# Installs npm's onnxruntime-node (its CPU build ships inside the package) into DIR for the
# ONNX Runtime tests, then runs them (the hidden [.ort] cases of a Catch2 test program:
# test_deploy's exports, test_cli's verify-deploy) with QGRAD_ORT_DIR=DIR. Exits 77 (ctest:
# Skipped, visibly) when node or npm is missing or the npm registry cannot be reached, never
# passing silently. With QGRAD_ORT_REQUIRED=1 (CI, and the fresh-machine check it runs) those
# cases fail instead: there the ONNX Runtime tests must run.
#   bash tests/deploy/ort/install_ort.sh DIR path/to/test_deploy_or_test_cli
set -uo pipefail
dir=$1
test_program=$2
version=1.30.0  # pinned: the outputs compared are this runtime's
skip() {
  echo "SKIPPED: $*"
  if [[ "${QGRAD_ORT_REQUIRED:-0}" == "1" ]]; then
    echo "FAILED: QGRAD_ORT_REQUIRED=1, so the ONNX Runtime tests may not be skipped"
    exit 1
  fi
  exit 77
}
for tool in node npm; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (apt-get install nodejs npm)"
done
if [[ ! -f $dir/node_modules/onnxruntime-node/package.json ]] ||
  ! grep -q "\"version\": \"$version\"" "$dir/node_modules/onnxruntime-node/package.json"; then
  mkdir -p "$dir"
  [[ -f $dir/package.json ]] || echo '{"private": true}' >"$dir/package.json"
  # --ignore-scripts: the package's install script would download the GPU build.
  if ! (cd "$dir" && npm install --ignore-scripts --no-audit --no-fund "onnxruntime-node@$version" >npm.log 2>&1); then
    tail -5 "$dir/npm.log"
    skip "npm could not install onnxruntime-node@$version (registry unreachable?)"
  fi
fi
QGRAD_ORT_DIR=$dir exec "$test_program" "[.ort]"
