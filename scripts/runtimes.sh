#!/usr/bin/env bash
# The same answers on every runtime a Node service uses. Installs Node 22, 24 and 26, Bun and Deno
# (scripts/install-runtimes.sh), then runs the whole vitest suite under each Node, and the
# public-API smoke suite (scripts/runtime-smoke.ts) under Bun and Deno, where vitest does not run.
# Needs `npm run build:ts` and a built addon first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-runtimes.sh
bins="$PWD/.cache/runtimes/node_modules"

for version in 22 24 26; do
  echo "== Node $("$bins/node$version/bin/node" --version): the whole suite"
  PATH="$bins/node$version/bin:$PATH" npx vitest run
done
echo "== Bun $("$bins/bun/bin/bun" --version): smoke suite"
"$bins/bun/bin/bun" dist/scripts/runtime-smoke.js
echo "== $("$bins/deno/deno" --version | head -1): smoke suite"
# Deno's permissions: read the models, write temporary files, read GGUF_MMAP_* variables, load the addon.
"$bins/deno/deno" run --allow-read --allow-write --allow-env --allow-ffi dist/scripts/runtime-smoke.js
