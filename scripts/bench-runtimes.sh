#!/usr/bin/env bash
# npm run bench:runtimes: the targets of views, headers, split sets, lookups and kernels in one
# run on every Node a service uses: this Node (20 here) and Node 22, 24 and 26
# (scripts/install-runtimes.sh). Each benchmark prints its baseline beside it, measured in the same
# process; bench/big-tensors.ts goes through the runtimes itself. Needs a built addon.
set -euo pipefail
cd "$(dirname "$0")/.."
npm run build:ts >/dev/null
bash scripts/install-runtimes.sh
bins="$PWD/.cache/runtimes/node_modules"
node dist/bench/big-tensors.js
for node in "$(command -v node)" "$bins/node22/bin/node" "$bins/node24/bin/node" "$bins/node26/bin/node"; do
  echo
  echo "======== Node $("$node" --version)"
  for bench in many-tensors split-open first-access lookup dequant; do
    "$node" "dist/bench/$bench.js"
  done
done
