#!/usr/bin/env bash
# The whole suite against the ASan + UBSan build of the addon (npm run build:sanitize first).
# Node itself is not instrumented, so the ASan runtime is preloaded; leak checking is off (V8
# keeps memory to the end by design), and so is ASan's own SIGBUS handler, so that the addon's
# handler (lost pages of a truncated file) is the one under test. Any sanitizer report aborts
# the process, failing the run.
set -euo pipefail
cd "$(dirname "$0")/.."
addon="$PWD/build-sanitize/Release/gguf_mmap.node"
[ -f "$addon" ] || { echo "no sanitizer build at $addon: run npm run build:sanitize" >&2; exit 1; }
LD_PRELOAD="$(gcc -print-file-name=libasan.so)" \
ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:handle_sigbus=0" \
UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
GGUF_MMAP_ADDON="$addon" \
  npx vitest run "$@"
