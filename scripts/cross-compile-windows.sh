#!/usr/bin/env bash
# The win32-x64 prebuilt binary, cross-compiled with Debian's mingw-w64 (posix thread model, the
# C and C++ runtimes linked in statically, so the addon imports only KERNEL32, msvcrt and the
# Node-API functions) into prebuilds/win32-x64/. The Node-API import library is made from
# node-api-headers' def file; it names node.exe as the module, so the binary loads into a host
# called node.exe (Node itself, not Bun or Electron). Needs Debian's g++-mingw-w64-x86-64
# (scripts/install-ci-packages.sh installs it for CI).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v x86_64-w64-mingw32-g++-posix >/dev/null; then
  echo "cross-compile-windows: no x86_64-w64-mingw32-g++-posix (Debian: apt-get install g++-mingw-w64-x86-64)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
x86_64-w64-mingw32-dlltool -d node_modules/node-api-headers/def/node_api.def -l "$work/node.lib" -D node.exe
# The sources binding.gyp compiles for Windows.
sources=$(node -e "
  const gyp = JSON.parse(require('fs').readFileSync('binding.gyp', 'utf8').replace(/<\([^)]*\)/g, ''));
  const t = gyp.targets[0];
  const win = t.conditions.find(([c]) => c === \"OS=='win'\")[1];
  console.log([...t.sources, ...win.sources].join(' '));")
objects=()
pids=()
for source in $sources; do
  object="$work/$(echo "$source" | tr / _).o"
  # -muse-unaligned-vector-move: GCC cannot align the stack beyond 16 bytes on Win64, so the AVX
  # kernels' spills must not use aligned moves.
  x86_64-w64-mingw32-g++-posix -std=c++17 -O3 -ffp-contract=off -c -Wall -Wno-unused-function \
    -Inative -Inode_modules/node-api-headers/include -I"$(node -p "require('node-addon-api').include_dir")" \
    -DNAPI_VERSION=8 -DNAPI_CPP_EXCEPTIONS -DNODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS -D_WIN32_WINNT=0x0A00 \
    -Wa,-muse-unaligned-vector-move "$source" -o "$object" &
  pids+=($!)
  objects+=("$object")
done
for pid in "${pids[@]}"; do wait "$pid"; done
mkdir -p prebuilds/win32-x64
x86_64-w64-mingw32-g++-posix -shared -static -s -o prebuilds/win32-x64/gguf-mmap.node "${objects[@]}" "$work/node.lib"
imports=$(x86_64-w64-mingw32-objdump -p prebuilds/win32-x64/gguf-mmap.node | awk '/DLL Name:/ {print $3}' | sort -u | tr '\n' ' ')
echo "win32-x64: prebuilds/win32-x64/gguf-mmap.node ($(du -k prebuilds/win32-x64/gguf-mmap.node | cut -f1) KiB; imports ${imports% })"
