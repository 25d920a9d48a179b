#!/usr/bin/env bash
# Downloads the Debian packages qgrad needs on an offline GPU machine into vendor/debs/ (git
# ignored), for scripts/gpu_check.sh to unpack there with dpkg -x: no root, no apt, no network.
# Run it where apt works (this Debian 12 machine, or any with the same release); downloading
# needs no root (apt-get download), only up-to-date package lists (apt-get update, as root).
#
# The GPU machine is assumed to have CUDA, CMake, a C++ compiler and PyTorch, so of what
# scripts/install_deps.sh installs only these are vendored, each with the runtime package its
# -dev package's symlinks point into (a "group"; gpu_check.sh unpacks a group unless its first
# package is installed there, so nothing the machine has is shadowed):
#   dnnl    libdnnl-dev libdnnl2          oneDNN (the CPU convolutions); libdnnl2 is the runtime
#   opencl  ocl-icd-opencl-dev ocl-icd-libopencl1 opencl-c-headers
#                                         Debian's dnnl-config.cmake needs OpenCL (CL/cl.h and
#                                         libOpenCL.so); libdnnl2 links libOpenCL.so.1
#   json    nlohmann-json3-dev            header-only JSON
#   catch2  catch2                        header-only test framework (v2)
#   zlib    zlib1g-dev zlib1g             find_package(ZLIB); CUDA images often lack the -dev
#   data    dataset-fashion-mnist         the training data (/usr/share/datasets/fashion-mnist)
# Left out: build-essential and libgomp1 (OpenMP's runtime and omp.h come with GCC, which a CUDA
# image has), cmake, opencl-clhpp-headers (C++ bindings ocl-icd-opencl-dev depends on, unused:
# CMake's and oneDNN's FindOpenCL look for CL/cl.h only) and python3-torch.
#
# Idempotent: a .deb already there with the archive's SHA256 is kept, others are downloaded, and
# .deb files no longer wanted (an older version) are removed. vendor/debs/MANIFEST lists group,
# package, version, architecture, file and SHA256 of each. Prints the total size (about 40 MB,
# three quarters of it the data set).
#   bash scripts/vendor_debs.sh
#   QGRAD_VENDOR_DIR=/path/vendor bash scripts/vendor_debs.sh   # another folder than ./vendor
set -euo pipefail
cd "$(dirname "$0")/.."

groups=(
  "dnnl libdnnl-dev libdnnl2"
  "opencl ocl-icd-opencl-dev ocl-icd-libopencl1 opencl-c-headers"
  "json nlohmann-json3-dev"
  "catch2 catch2"
  "zlib zlib1g-dev zlib1g"
  "data dataset-fashion-mnist"
)

die() {
  echo "vendor_debs: error: $*" >&2
  exit 1
}

for tool in apt-get dpkg-deb sha256sum; do
  command -v "$tool" >/dev/null ||
    die "$tool not found: run this on a Debian/Ubuntu machine where apt works (it downloads .deb files)"
done

dest=${QGRAD_VENDOR_DIR:-vendor}/debs
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

packages=()
declare -A group_of=()
for g in "${groups[@]}"; do
  read -r name members <<<"$g"
  for p in $members; do
    packages+=("$p")
    group_of[$p]=$name
  done
done

# apt-get download as root warns that its sandbox user cannot write the folder; it can, as root.
apt_opts=()
if [[ $(id -u) -eq 0 ]]; then apt_opts+=(-o APT::Sandbox::User=root); fi

# What apt would download: 'URI' file size SHA256:hash, one line per package.
if ! uris=$(apt-get download --print-uris "${apt_opts[@]}" "${packages[@]}" 2>&1); then
  echo "$uris" >&2
  die "apt cannot resolve the packages above. Refresh the package lists (as root: apt-get update)
and check that this machine's release has them (Debian 12 'bookworm' does; oneDNN's runtime is
libdnnl2 there)."
fi

declare -A file_of=() sha_of=() size_of=()
while read -r uri file size hash; do
  [[ $uri == \'* ]] || continue
  pkg=${file%%_*}
  file_of[$pkg]=$file
  size_of[$pkg]=$size
  sha_of[$pkg]=${hash#SHA256:}
done <<<"$uris"
for p in "${packages[@]}"; do
  [[ -n ${file_of[$p]:-} ]] || die "apt-get download --print-uris gave no file for $p:
$uris"
  [[ ${sha_of[$p]} =~ ^[0-9a-f]{64}$ ]] || die "no SHA256 for $p in apt's answer: '${sha_of[$p]}'"
done

have_sha() { # file sha: whether the file exists with that SHA256
  [[ -f $1 ]] && [[ $(sha256sum "$1" | cut -d' ' -f1) == "$2" ]]
}

partial="$dest/.partial"
rm -rf "$partial"
mkdir -p "$partial"
trap 'rm -rf "$partial"' EXIT
downloaded=0
for p in "${packages[@]}"; do
  f=${file_of[$p]}
  if have_sha "$dest/$f" "${sha_of[$p]}"; then
    continue
  fi
  echo "vendor_debs: downloading $p ($(numfmt --to=iec --suffix=B "${size_of[$p]}"))"
  # Into a scratch folder first, so an interrupted download never looks like a finished one.
  if ! (cd "$partial" && apt-get download -q "${apt_opts[@]}" "$p" >/dev/null); then
    die "apt-get download $p failed (network, or a mirror without it?)"
  fi
  have_sha "$partial/$f" "${sha_of[$p]}" ||
    die "$p: downloaded file $f is missing or does not have the archive's SHA256"
  mv -f "$partial/$f" "$dest/$f"
  downloaded=$((downloaded + 1))
done

# Remove .deb files that are no longer wanted (older versions, dropped packages).
declare -A wanted=()
for p in "${packages[@]}"; do wanted[${file_of[$p]}]=1; done
for f in "$dest"/*.deb; do
  [[ -e $f ]] || continue
  if [[ -z ${wanted[$(basename "$f")]:-} ]]; then
    echo "vendor_debs: removing $(basename "$f") (not wanted any more)"
    rm -f "$f"
  fi
done

{
  echo "# group package version architecture file sha256 (written by scripts/vendor_debs.sh)"
  for p in "${packages[@]}"; do
    f=${file_of[$p]}
    printf '%s %s %s %s %s %s\n' "${group_of[$p]}" "$p" "$(dpkg-deb -f "$dest/$f" Version)" \
      "$(dpkg-deb -f "$dest/$f" Architecture)" "$f" "${sha_of[$p]}"
  done
} >"$dest/MANIFEST.tmp"
mv -f "$dest/MANIFEST.tmp" "$dest/MANIFEST"

total=0
printf '%-24s %-34s %10s\n' package version size
for p in "${packages[@]}"; do
  f=${file_of[$p]}
  size=$(stat -c %s "$dest/$f")
  total=$((total + size))
  printf '%-24s %-34s %10s\n' "$p" "$(dpkg-deb -f "$dest/$f" Version)" \
    "$(numfmt --to=iec --suffix=B "$size")"
done
echo "vendor_debs: ${#packages[@]} packages in $dest ($downloaded downloaded now), total" \
  "$(awk -v b="$total" 'BEGIN { printf "%.1f MB (%.1f MiB)", b / 1e6, b / 1048576 }')"
