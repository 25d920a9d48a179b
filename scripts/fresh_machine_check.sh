#!/usr/bin/env bash
# Proves the README on a genuinely fresh Debian 12: builds a minimal bookworm root with
# `debootstrap --variant=minbase` (nothing but the base system), copies a clean clone of this
# repository's HEAD into it, and runs the README's two commands there, in a chroot with /proc,
# /sys and /dev mounted: `bash scripts/quickstart.sh` (installs what is missing, builds, runs the
# QAT main job) and then `bash scripts/test.sh` (the whole suite). Fails if either fails.
# Needs root, debootstrap (installed with apt-get when missing) and the Debian mirror; when one
# of these is missing it says so plainly and exits 0 without checking anything, unless
# QGRAD_FRESH_REQUIRED=1, when it exits 1. The root is deleted afterwards (QGRAD_FRESH_KEEP=1
# keeps it); debootstrap's and apt's downloads are cached in /var/cache/qgrad-fresh.
# When this machine has ccache, its cache is shared into the root (and ccache installed there
# before the README's commands run), so objects this machine already compiled with the same
# compiler and headers are not compiled again: configure, every package and every header lookup
# still run against the fresh root, so a cached object cannot hide a missing package.
#   sudo bash scripts/fresh_machine_check.sh
#   QGRAD_DEBIAN_MIRROR=http://mirror.example/debian bash scripts/fresh_machine_check.sh
# The base root can be built ahead, while something else runs (.ci/run does this beside the
# test suites), and used later; a prepared root is used once and deleted like any other:
#   bash scripts/fresh_machine_check.sh --prepare DIR   # debootstrap into DIR (new or empty)
#   bash scripts/fresh_machine_check.sh --root DIR      # the check, in the root prepared in DIR
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

mode=check
root=""
case "${1:-}" in
  --prepare) mode=prepare; root=${2:?--prepare needs a folder} ;;
  --root) root=${2:?--root needs a folder} ;;
  "") ;;
  *) echo "fresh_machine_check: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
esac

mirror=${QGRAD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${QGRAD_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
suite=bookworm
cache=/var/cache/qgrad-fresh
# Written into a root once it is ready for the check (what --root looks for).
ready_mark=.qgrad-fresh-ready

cannot() {
  echo "fresh_machine_check: NOT RUN: $*" >&2
  if [[ "${QGRAD_FRESH_REQUIRED:-0}" == "1" ]]; then exit 1; fi
  exit 0
}

[[ $(id -u) -eq 0 ]] || cannot "needs root (debootstrap, chroot and mounts); run it with sudo"
command -v git >/dev/null || cannot "git is not installed (the check copies a clean clone of HEAD)"

mounted=()
keep_root=${QGRAD_FRESH_KEEP:-0}
# unmount_all: what mount_all mounted, last first.
unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  mounted=()
}
cleanup() {
  unmount_all
  [[ -n "$root" && -d "$root" ]] || return 0
  # Never delete through a mount that is still there (the host's /dev or /proc).
  if findmnt -rn -o TARGET | grep -q "^$root"; then
    echo "fresh_machine_check: mounts remain under $root; not deleting it" >&2
  elif [[ "$keep_root" != "1" ]]; then
    rm -rf --one-file-system "$root"
  else
    echo "fresh_machine_check: kept $root"
  fi
}
trap cleanup EXIT

# The host's ccache folder, shared into the root; empty without ccache.
ccache_dir=""
if command -v ccache >/dev/null; then
  ccache_dir=$(ccache --get-config cache_dir 2>/dev/null || true)
  if [[ -n "$ccache_dir" ]] && ! mkdir -p "$ccache_dir" 2>/dev/null; then ccache_dir=""; fi
fi

# mount_all: /proc, /sys, /dev, apt's download cache and the shared ccache, into the root.
mount_all() {
  # apt's downloaded .deb files are kept between checks (the packages are still installed anew).
  mkdir -p "$cache/apt-archives/partial"
  local binds=(proc sys dev dev/pts var/cache/apt/archives) m
  # The root's ccache looks in its $HOME/.cache/ccache, /root's (run_in_root sets HOME=/root).
  [[ -n "$ccache_dir" ]] && binds+=(root/.cache/ccache)
  for m in "${binds[@]}"; do
    mkdir -p "$root/$m"
    case $m in
      proc) mount -t proc proc "$root/proc" ;;
      sys) mount -t sysfs sys "$root/sys" ;;
      dev) mount --bind /dev "$root/dev" ;;
      dev/pts) mount --bind /dev/pts "$root/dev/pts" ;;
      var/cache/apt/archives) mount --bind "$cache/apt-archives" "$root/$m" ;;
      root/.cache/ccache) mount --bind "$ccache_dir" "$root/$m" ;;
    esac
    mounted+=("$root/$m")
  done
}

# A clean environment, as a new user's login has; QGRAD_ORT_REQUIRED (CI) goes along, so the
# root's suite runs the ONNX Runtime tests rather than skipping them.
run_in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    ${QGRAD_ORT_REQUIRED:+QGRAD_ORT_REQUIRED="$QGRAD_ORT_REQUIRED"} \
    bash -c "cd /root/qgrad 2>/dev/null || cd /root; $1"
}

# prepare_root: a minbase bookworm in $root with a fresh installation's apt sources, and ccache
# when the host's cache is shared.
prepare_root() {
  if ! command -v debootstrap >/dev/null; then
    echo "fresh_machine_check: installing debootstrap"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends debootstrap >/dev/null; } ||
      cannot "debootstrap is not installed and apt-get could not install it"
  fi
  mkdir -p "$cache"
  echo "fresh_machine_check: debootstrap --variant=minbase $suite into $root ($mirror)"
  local start=$SECONDS
  if ! debootstrap --variant=minbase --cache-dir="$cache" "$suite" "$root" "$mirror" \
      >"$root.debootstrap.log" 2>&1; then
    tail -n 20 "$root.debootstrap.log" >&2
    rm -f "$root.debootstrap.log"
    cannot "debootstrap could not build a $suite root from $mirror (offline?)"
  fi
  rm -f "$root.debootstrap.log"
  echo "fresh_machine_check: base system ready in $((SECONDS - start)) s"

  # The apt sources a fresh Debian 12 installation has.
  cat >"$root/etc/apt/sources.list" <<SOURCES
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
SOURCES
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
  # The network this machine reaches the internet through may intercept TLS with a CA of its own
  # (a sandbox's egress proxy; npm then fails with SELF_SIGNED_CERT_IN_CHAIN and the ONNX Runtime
  # tests Skip). The certificates added here locally go along, as resolv.conf does; the root's
  # ca-certificates package takes them in when it is installed. A machine on the open internet
  # needs none.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    mkdir -p "$root/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
  fi

  if [[ -n "$ccache_dir" ]]; then
    start=$SECONDS
    mount_all
    if run_in_root "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends ccache >/dev/null"; then
      echo "fresh_machine_check: ccache installed in the root ($((SECONDS - start)) s)"
    else
      echo "fresh_machine_check: ccache could not be installed in the root; compiling without it"
    fi
    unmount_all
  fi
  touch "$root/$ready_mark"
}

if [[ $mode == prepare ]]; then
  mkdir -p "$root"
  [[ -z $(ls -A "$root") ]] || { echo "fresh_machine_check: --prepare: $root is not empty" >&2; exit 2; }
  root=$(cd "$root" && pwd)
  keep_root=0  # a half-built root is not left behind
  prepare_root
  keep_root=1
  echo "fresh_machine_check: prepared $root (use it with --root $root)"
  exit 0
fi

if [[ -n "$root" ]]; then
  [[ -f "$root/$ready_mark" ]] ||
    { echo "fresh_machine_check: --root: $root was not prepared with --prepare" >&2; exit 2; }
  root=$(cd "$root" && pwd)
  rm -f "$root/$ready_mark"
  echo "fresh_machine_check: using the root prepared in $root"
else
  root=$(mktemp -d /var/tmp/qgrad-fresh.XXXXXX)
  prepare_root
fi
mount_all

# A clean clone of HEAD: what a new user gets, without this checkout's build folders or edits.
git clone -q --no-hardlinks "$repo" "$root/root/qgrad"
git -C "$root/root/qgrad" log -1 --format='fresh_machine_check: testing commit %h %s'
[[ -n "$ccache_dir" ]] && echo "fresh_machine_check: sharing this machine's ccache ($ccache_dir)"

status=0
start=$SECONDS
echo "=== fresh root: bash scripts/quickstart.sh ==="
if run_in_root "bash scripts/quickstart.sh"; then
  echo "fresh_machine_check: quickstart passed in $((SECONDS - start)) s"
else
  echo "fresh_machine_check: FAILED: bash scripts/quickstart.sh on a fresh $suite root" >&2
  status=1
fi
if ((status == 0)); then
  start=$SECONDS
  echo "=== fresh root: bash scripts/test.sh ==="
  if run_in_root "bash scripts/test.sh"; then
    echo "fresh_machine_check: test suite passed in $((SECONDS - start)) s"
  else
    echo "fresh_machine_check: FAILED: bash scripts/test.sh on a fresh $suite root" >&2
    status=1
  fi
fi
((status == 0)) && echo "fresh_machine_check: the README's two commands passed on a fresh Debian $suite root"
exit $status
