#!/usr/bin/env bash
# Says on stderr which prebuilt binaries the package being packed carries.
cd "$(dirname "$0")/.."
found=$(cd prebuilds 2>/dev/null && ls -1 */*.node 2>/dev/null | tr '\n' ' ')
echo "gguf-mmap: packing prebuilt binaries: ${found:-none} (npm run pack:release builds linux-x64, linux-arm64 and win32-x64)" >&2
