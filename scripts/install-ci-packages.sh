#!/usr/bin/env bash
# Debian's packages CI needs, installed by .ci/run alone (as root): the cross compilers and
# emulators of the prebuilt binaries' checks (mingw-w64, aarch64 g++, qemu-user, wine), the
# WebAssembly toolchain of scripts/build-wasm.sh, Python's filelock (a peer of the cache-lock
# tests) and Chromium (the viewer's browser tests). No other script installs anything: each says
# what it lacks.
set -euo pipefail
packages=(
  python3-filelock python3-jinja2
  g++-mingw-w64-x86-64 g++-aarch64-linux-gnu qemu-user wine64 wine
  clang-19 lld-19 wasi-libc libc++-19-dev-wasm32 libc++abi-19-dev-wasm32 libclang-rt-19-dev-wasm32
  chromium
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "install-ci-packages: missing ${missing[*]}; installing needs root and apt-get (Debian)" >&2
    exit 1
  fi
  echo "install-ci-packages: ${missing[*]}"
  # Another process's apt or dpkg may hold the lock for a while: wait for it.
  apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq "${missing[@]}" >/dev/null
fi
