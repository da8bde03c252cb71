#!/usr/bin/env bash
# The portable kernels compiled to WebAssembly with SIMD128 (native/dequant_wasm.cc with
# dequant.cc, dequant_portable.cc and the SIMD128 kernels of dequant_simd128.cc) into
# wasm/dequant.wasm, which the package ships and loads where the addon does not
# (lib/dequant/wasm.ts). Needs Debian's clang 19 (14 vectorizes the int8 -> float conversions
# lane by lane), lld and the WASI sysroot; installs them when missing and run as root (as CI
# runs), else says what to install.
#
# The module is committed, so that `npm test` on a fresh clone tests what the package ships. The
# build is reproducible: `build-wasm.sh --check` (CI, and packing) builds it again into a
# temporary file and fails when it differs from the committed one (sources changed without a
# rebuild, or another compiler).
set -euo pipefail
cd "$(dirname "$0")/.."
check=false
if [ "${1:-}" = "--check" ]; then check=true; fi
packages="clang-19 lld-19 wasi-libc libc++-19-dev-wasm32 libc++abi-19-dev-wasm32 libclang-rt-19-dev-wasm32"
libcxx=/usr/lib/llvm-19/lib/wasm32-wasi
builtins=/usr/lib/llvm-19/lib/clang/19/lib/wasi/libclang_rt.builtins-wasm32.a
if ! command -v clang-19 >/dev/null || ! command -v wasm-ld-19 >/dev/null || [ ! -f "$libcxx/libc++.a" ] ||
  [ ! -f /usr/lib/wasm32-wasi/libc.a ] || [ ! -f "$builtins" ]; then
  # (scripts/install-ci-packages.sh installs them for CI; nothing is installed unasked.)
  echo "build-wasm: needs clang-19, wasm-ld-19 and the WASI sysroot (Debian: apt-get install $packages)" >&2
  exit 1
fi
mkdir -p wasm
out=wasm/dequant.wasm
if $check; then out=$(mktemp --suffix=.wasm); trap 'rm -f "$out"' EXIT; fi
# -ffp-contract=off and no fast-math, as the native build: ggml's roundings, bit for bit.
clang-19 --target=wasm32-wasi --sysroot=/usr -std=c++17 -O3 -msimd128 -ffp-contract=off -fno-exceptions \
  -nostdinc++ -isystem /usr/lib/llvm-19/include/wasm32-wasi/c++/v1 \
  -mexec-model=reactor -Wl,--no-entry -Wl,--strip-all -L"$libcxx" -L/usr/lib/wasm32-wasi -lc++ -lc++abi \
  -o "$out" native/dequant.cc native/dequant_portable.cc native/dequant_simd128.cc native/dequant_wasm.cc
if $check; then
  if ! cmp -s "$out" wasm/dequant.wasm; then
    echo "build-wasm: the committed wasm/dequant.wasm is not what its sources build to: run npm run build:wasm and commit it" >&2
    exit 1
  fi
  echo "build-wasm: wasm/dequant.wasm matches its sources ($(wc -c < wasm/dequant.wasm) bytes)"
else
  echo "build-wasm: wasm/dequant.wasm ($(wc -c < wasm/dequant.wasm) bytes)"
fi
