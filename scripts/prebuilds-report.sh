#!/usr/bin/env bash
# Says on stderr which prebuilt binaries the package being packed carries, and warns about any
# older than the native sources (left by an earlier `npm run pack:release`: rebuild or delete it).
cd "$(dirname "$0")/.."
found=$(cd prebuilds 2>/dev/null && ls -1 */*.node 2>/dev/null | tr '\n' ' ')
echo "gguf-mmap: packing prebuilt binaries: ${found:-none} (npm run pack:release builds linux-x64, linux-arm64 and win32-x64)" >&2
newest=$(find native binding.gyp -type f -printf '%T@\n' 2>/dev/null | sort -n | tail -1)
for binary in prebuilds/*/*.node; do
  [ -f "$binary" ] || continue
  if [ "$(stat -c %Y "$binary")" -lt "${newest%.*}" ]; then
    echo "gguf-mmap: warning: $binary is older than native/: run npm run pack:release, or delete it" >&2
  fi
done
