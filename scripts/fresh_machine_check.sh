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
#   sudo bash scripts/fresh_machine_check.sh
#   QGRAD_DEBIAN_MIRROR=http://mirror.example/debian bash scripts/fresh_machine_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

mirror=${QGRAD_DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${QGRAD_DEBIAN_SECURITY:-http://deb.debian.org/debian-security}
suite=bookworm
cache=/var/cache/qgrad-fresh

cannot() {
  echo "fresh_machine_check: NOT RUN: $*" >&2
  if [[ "${QGRAD_FRESH_REQUIRED:-0}" == "1" ]]; then exit 1; fi
  exit 0
}

[[ $(id -u) -eq 0 ]] || cannot "needs root (debootstrap, chroot and mounts); run it with sudo"
command -v git >/dev/null || cannot "git is not installed (the check copies a clean clone of HEAD)"
if ! command -v debootstrap >/dev/null; then
  echo "fresh_machine_check: installing debootstrap"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends debootstrap >/dev/null; } ||
    cannot "debootstrap is not installed and apt-get could not install it"
fi

root=$(mktemp -d /var/tmp/qgrad-fresh.XXXXXX)
mounted=()
cleanup() {
  local m
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    m=${mounted[i]}
    umount -l "$m" 2>/dev/null || true
  done
  # Never delete through a mount that is still there (the host's /dev or /proc).
  if findmnt -rn -o TARGET | grep -q "^$root"; then
    echo "fresh_machine_check: mounts remain under $root; not deleting it" >&2
  elif [[ "${QGRAD_FRESH_KEEP:-0}" != "1" ]]; then
    rm -rf --one-file-system "$root"
  else
    echo "fresh_machine_check: kept $root"
  fi
}
trap cleanup EXIT

mkdir -p "$cache"
echo "fresh_machine_check: debootstrap --variant=minbase $suite into $root ($mirror)"
start=$SECONDS
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
# The network this machine reaches the internet through may intercept TLS with a CA of its own (a
# sandbox's egress proxy; npm then fails with SELF_SIGNED_CERT_IN_CHAIN and the ONNX Runtime
# tests Skip). The certificates added here locally go along, as resolv.conf does; the root's
# ca-certificates package takes them in when it is installed. A machine on the open internet
# needs none.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
  mkdir -p "$root/usr/local/share/ca-certificates"
  cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi

# apt's downloaded .deb files are kept between checks (the packages are still installed anew).
mkdir -p "$cache/apt-archives/partial"
for m in proc sys dev dev/pts var/cache/apt/archives; do
  mkdir -p "$root/$m"
  case $m in
    proc) mount -t proc proc "$root/proc" ;;
    sys) mount -t sysfs sys "$root/sys" ;;
    dev) mount --bind /dev "$root/dev" ;;
    dev/pts) mount --bind /dev/pts "$root/dev/pts" ;;
    var/cache/apt/archives) mount --bind "$cache/apt-archives" "$root/$m" ;;
  esac
  mounted+=("$root/$m")
done

# A clean clone of HEAD: what a new user gets, without this checkout's build folders or edits.
git clone -q --no-hardlinks "$repo" "$root/root/qgrad"
git -C "$root/root/qgrad" log -1 --format='fresh_machine_check: testing commit %h %s'

run_in_root() {
  chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd /root/qgrad && $1"
}

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
