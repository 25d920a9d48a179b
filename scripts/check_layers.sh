#!/usr/bin/env bash
# Fails when a layer of qgrad reaches up: core -> ops -> nn -> distributed -> quant -> qgrad (the
# umbrella) -> deploy -> cli, each allowed to use only the layers before it. Two checks, run by
# the build (the qgrad_layer_check target, part of `all`) so the picture cannot drift from the
# code:
#   includes: a source or header of a layer that includes a path of a later layer
#             (`#include "quant/..."` in nn/, `#include "qgrad.h"` in core/);
#   symbols:  an undefined symbol of a layer's static libraries that only a later layer's
#             libraries define (a call into a layer above, even through a declaration the
#             layer wrote itself), read with nm.
# Usage: check_layers.sh --nm NM --root SOURCE_ROOT LAYER...
#   LAYER is NAME=PATHS=ARCHIVES, bottom layer first: PATHS are comma-separated folders (ending
#   in /) or files relative to SOURCE_ROOT, ARCHIVES comma-separated static libraries (may be
#   empty). Exit 0 when the layers are clean, 1 with every violation listed, 2 on bad usage.
set -euo pipefail

nm_tool=nm
root=
layers=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --nm) nm_tool=$2; shift 2 ;;
    --root) root=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) layers+=("$1"); shift ;;
  esac
done
if [[ -z "$root" || ${#layers[@]} -lt 2 ]]; then
  echo "check_layers.sh: needs --root and at least two layers (see --help)" >&2
  exit 2
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failed=0
names=()
paths=()
archives=()
for spec in "${layers[@]}"; do
  IFS='=' read -r name p a <<<"$spec"
  if [[ -z "$name" || -z "$p" ]]; then
    echo "check_layers.sh: layer '$spec' is not NAME=PATHS=ARCHIVES" >&2
    exit 2
  fi
  names+=("$name"); paths+=("$p"); archives+=("${a:-}")
done
n=${#names[@]}

# ---- includes ----
for ((i = 0; i < n - 1; i++)); do
  files=()
  IFS=',' read -ra own <<<"${paths[i]}"
  for p in "${own[@]}"; do
    if [[ -d "$root/$p" ]]; then
      while IFS= read -r -d '' f; do files+=("$f"); done < <(
        find "$root/$p" -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) -print0)
    elif [[ -f "$root/$p" ]]; then
      files+=("$root/$p")
    fi
  done
  [[ ${#files[@]} -eq 0 ]] && continue
  for ((j = i + 1; j < n; j++)); do
    IFS=',' read -ra above <<<"${paths[j]}"
    for p in "${above[@]}"; do
      # A folder matches as a prefix ("quant/..."), a file exactly ("qgrad.h").
      pattern="^[[:space:]]*#[[:space:]]*include[[:space:]]*\"${p//./\\.}"
      [[ "$p" == */ ]] || pattern+='"'
      if hits=$(grep -nE "$pattern" "${files[@]}" /dev/null); then
        while IFS= read -r hit; do
          echo "layer check: ${names[i]} includes ${names[j]}: ${hit#"$root"/}"
        done <<<"$hits"
        failed=1
      fi
    done
  done
done

# ---- symbols ----
# Strong definitions only (text, data, bss, read-only): inline functions and template
# instantiations (weak) are emitted wherever they are used, so they say nothing about layers.
defined() {  # archives... -> sorted strong symbols they define
  local a
  for a in "$@"; do
    "$nm_tool" -g --defined-only --format=posix "$a" 2>/dev/null |
      awk 'NF >= 2 && $2 ~ /^[TDBRi]$/ {print $1}'
  done | LC_ALL=C sort -u
}
undefined() {  # archives... -> sorted symbols they use but do not define
  local a
  for a in "$@"; do
    "$nm_tool" -g --undefined-only --format=posix "$a" 2>/dev/null | awk 'NF >= 2 {print $1}'
  done | LC_ALL=C sort -u
}
for ((i = 0; i < n; i++)); do
  IFS=',' read -ra libs <<<"${archives[i]}"
  for a in "${libs[@]}"; do
    if [[ ! -f "$a" ]]; then
      echo "check_layers.sh: ${names[i]}'s library '$a' does not exist" >&2
      exit 2
    fi
  done
  if [[ ${#libs[@]} -gt 0 ]]; then
    defined "${libs[@]}" >"$work/def.$i"
    undefined "${libs[@]}" | LC_ALL=C comm -23 - "$work/def.$i" >"$work/undef.$i"
  else
    : >"$work/def.$i"
    : >"$work/undef.$i"
  fi
done
demangle=cat
command -v c++filt >/dev/null && demangle=c++filt
for ((i = 0; i < n - 1; i++)); do
  for ((j = i + 1; j < n; j++)); do
    if LC_ALL=C comm -12 "$work/undef.$i" "$work/def.$j" >"$work/up" && [[ -s "$work/up" ]]; then
      while IFS= read -r sym; do
        echo "layer check: ${names[i]} uses a symbol of ${names[j]}: $sym"
      done < <($demangle <"$work/up")
      failed=1
    fi
  done
done

if [[ $failed -ne 0 ]]; then
  order=$(printf '%s -> ' "${names[@]}")
  echo "layer check: FAILED (each layer may use only the layers below it: ${order% -> })" >&2
  exit 1
fi
exit 0
