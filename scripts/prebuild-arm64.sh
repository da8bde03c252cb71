#!/usr/bin/env bash
# The linux-arm64 prebuilt binary, cross-compiled with Debian's g++-aarch64-linux-gnu into
# prebuilds/linux-arm64/ (in a scratch copy, so build/Release keeps this machine's build).
# Without the cross compiler it fails (a package packed there would lack arm64), unless
# GGUF_MMAP_SKIP_ARM64=1 says an x64-only package is meant.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v aarch64-linux-gnu-g++ >/dev/null; then
  if [ "${GGUF_MMAP_SKIP_ARM64:-}" = 1 ]; then
    echo "prebuild-arm64: skipped (GGUF_MMAP_SKIP_ARM64=1): the package has no linux-arm64 binary"
    exit 0
  fi
  echo "prebuild-arm64: no aarch64-linux-gnu-g++ (apt-get install g++-aarch64-linux-gnu), or set GGUF_MMAP_SKIP_ARM64=1" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r native binding.gyp package.json "$work/"
ln -s "$PWD/node_modules" "$work/node_modules"
(cd "$work" && CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++ LINK=aarch64-linux-gnu-g++ \
  npx prebuildify --napi --tag-libc --arch arm64 >/dev/null)
# prebuildify's --strip runs the host's strip, which cannot read an arm64 file.
aarch64-linux-gnu-strip -S -x "$work"/prebuilds/linux-arm64/*.node
mkdir -p prebuilds/linux-arm64
cp "$work"/prebuilds/linux-arm64/*.node prebuilds/linux-arm64/
echo "prebuild-arm64: $(ls prebuilds/linux-arm64)"
