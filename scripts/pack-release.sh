#!/usr/bin/env bash
# The release tarball: every prebuilt binary (linux-x64 for this machine's glibc tag,
# linux-arm64 and win32-x64 cross-compiled: Debian's g++-aarch64-linux-gnu and
# g++-mingw-w64-x86-64, which .ci/run installs), the WebAssembly kernels checked against their
# sources (clang-19), then `npm pack` of the result into DEST (default: here). Plain `npm pack`
# needs only the host's compiler and carries whatever prebuilds/ holds (it says which).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${1:-.}
npm run build:ts >/dev/null
npm run build:prebuilt >/dev/null
bash scripts/prebuild-arm64.sh >/dev/null
bash scripts/cross-compile-windows.sh >/dev/null
bash scripts/build-wasm.sh --check >/dev/null
bash scripts/prebuilds-report.sh
npm pack --ignore-scripts --silent --pack-destination "$dest"
