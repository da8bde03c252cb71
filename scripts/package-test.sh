#!/usr/bin/env bash
# The package as a user gets it: the release tarball (`npm run pack:release`: every prebuilt
# binary), then the tarball installed into a fresh project
# with no C++ compiler, make or python on PATH (the prebuilt binary must be used), then used from
# ESM, CommonJS, the CLI and a strict TypeScript file (node16, nodenext and bundler resolution).
# Prints one line per check and a closing "N passed, N failed"; exits 1 if anything failed.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0
check() { # name, command...
  local name=$1
  shift
  if out=$("$@" 2>&1); then
    passed=$((passed + 1))
    echo "ok    $name"
  else
    failed=$((failed + 1))
    echo "FAIL  $name"
    echo "$out" | tail -20 | sed 's/^/      /'
  fi
}

# `npm pack` with only the host's toolchain (no cross compilers, no clang-19, on no PATH of its
# own): it builds the host's binary and says which it carries; nothing is installed.
hostbin="$work/hostbin"
mkdir -p "$hostbin" "$work/plain"
for tool in node npm npx sh bash env python3 make g++ gcc c++ cc ar strip ld as uname rm mkdir cp mv ln cat sed grep dirname basename ls tr chmod touch find head tail sort wc cut; do
  p=$(command -v "$tool") && ln -sf "$p" "$hostbin/$tool"
done
check "npm pack with only the host toolchain builds, and names the prebuilt binaries it carries" \
  bash -c "PATH='$hostbin' npm pack --pack-destination '$work/plain' >'$work/plain.log' 2>&1 && grep -q 'packing prebuilt binaries: .*linux-x64/' '$work/plain.log' && ls '$work/plain'/*.tgz >/dev/null"
tarball=$(bash scripts/pack-release.sh "$work" | tail -1)
echo "tarball: $tarball ($(du -k "$work/$tarball" | cut -f1) KiB, $(tar tzf "$work/$tarball" | wc -l) files)"
check "the Linux binaries need at most GLIBC 2.28, no GLIBCXX or CXXABI, no undefined __wrap_ symbol" \
  bash -c "mkdir -p '$work/bins' && tar xzf '$work/$tarball' -C '$work/bins' --wildcards 'package/prebuilds/linux-*/*.node' && bash scripts/check-glibc.sh '$work'/bins/package/prebuilds/linux-*/*.node"
check "the tarball has no scripts, benchmarks or source maps; it has the prebuilt binaries (linux-x64, linux-arm64, win32-x64), the WebAssembly kernels and LICENSE" \
  bash -c "! tar tzf '$work/$tarball' | grep -E 'dist/(scripts|bench)/|\\.js\\.map\$' && tar tzf '$work/$tarball' | grep -q 'package/prebuilds/linux-x64/' && tar tzf '$work/$tarball' | grep -q 'package/prebuilds/linux-arm64/' && tar tzf '$work/$tarball' | grep -q 'package/prebuilds/win32-x64/gguf-mmap.node' && tar tzf '$work/$tarball' | grep -q 'package/wasm/dequant.wasm' && tar tzf '$work/$tarball' | grep -q 'package/LICENSE'"

# A PATH with node, npm and sh only: no g++, cc, make or python to build with.
bin="$work/bin"
mkdir -p "$bin"
ln -s "$(command -v node)" "$bin/node"
ln -s "$(command -v npm)" "$bin/npm"
ln -s "$(command -v sh)" "$bin/sh" # npm runs scripts with sh, as every image has
project="$work/project"
mkdir -p "$project"
cd "$project"
echo '{ "name": "consumer", "version": "1.0.0", "private": true, "type": "module" }' > package.json
start=$(date +%s%N)
check "npm install <tarball> with no compiler on PATH" env PATH="$bin" npm install --no-audit --no-fund --foreground-scripts "$work/$tarball"
echo "      install took $(( ($(date +%s%N) - start) / 1000000 )) ms"
check "the addon loaded is the prebuilt one" env PATH="$bin" node -e "
  const { createRequire } = require('node:module');
  const p = require('node-gyp-build').path(require('node:path').dirname(require.resolve('gguf-mmap/package.json')));
  if (!p.includes('prebuilds')) throw new Error('loaded ' + p);"

sample="$project/node_modules/gguf-mmap/dist/sample.gguf"
cat > esm.mjs <<JS
import { openGguf, nativeDequantInfo } from 'gguf-mmap';
const g = openGguf('$sample'); // \`using\` needs Node 24
if (g.mode !== 'mmap') throw new Error('mode ' + g.mode);
const t = g.tensor('token_embd.weight');
const row = t.dequantizeRows(1, 1);
if (row.length !== t.rowLength || !Number.isFinite(row[0])) throw new Error('bad row');
if (nativeDequantInfo().types.length === 0) throw new Error('no native kernels');
g.close();
JS
check "ESM import, mapped, native kernels" env PATH="$bin" node esm.mjs
cat > nowasm.mjs <<JS
import { openGguf, dequantKernelFor } from 'gguf-mmap';
const g = openGguf('$sample');
if (g.mode !== 'read' || dequantKernelFor('Q4_K') !== 'wasm') throw new Error(g.mode + ' ' + dequantKernelFor('Q4_K'));
const t = g.tensor('token_embd.weight');
const a = t.dequantize(), b = t.dequantize(undefined, { backend: 'js' });
if (!a.every((v, i) => Object.is(v, b[i]))) throw new Error('WebAssembly and TypeScript differ');
g.close();
JS
check "without the addon: read mode, the WebAssembly kernels, the same bits" env PATH="$bin" GGUF_MMAP_ADDON=off node nowasm.mjs
cat > cjs.cjs <<JS
const { openGguf } = require('gguf-mmap');
const { version } = require('gguf-mmap/package.json');
const g = openGguf('$sample');
if (g.metadata.get('general.architecture') !== 'llama' || !version) throw new Error('bad metadata');
g.close();
JS
check "CommonJS require (and gguf-mmap/package.json)" env PATH="$bin" node cjs.cjs
check "CLI: gguf-mmap --version and inspect" bash -c "PATH='$bin' ./node_modules/.bin/gguf-mmap --version | grep -qx \"\$(node -p 'require(\"gguf-mmap/package.json\").version')\" && PATH='$bin' ./node_modules/.bin/gguf-mmap inspect | grep -q 'GGUF v3'"

# Strict TypeScript: the README's and docs' examples and a consumer file, compiled with no casts under three
# resolutions.
cp "$repo/test/types/consumer.ts" consumer.ts
# The "In tests" example imports vitest: the repository's, linked in (its own imports resolve there).
ln -sfn "$repo/node_modules/vitest" node_modules/vitest
node -e '
  const { readFileSync, writeFileSync } = require("node:fs");
  const blocks = process.argv.slice(1).flatMap((doc) => [...readFileSync(doc, "utf8").matchAll(/```ts\n([\s\S]*?)```/g)]);
  blocks.forEach((m, i) => writeFileSync(`readme-${i}.ts`, m[1] + "\nexport {};\n"));
' "$repo/README.md" "$repo"/docs/*.md
for resolution in node16 nodenext bundler; do
  module=$([ "$resolution" = bundler ] && echo esnext || echo "$resolution")
  check "strict TypeScript, moduleResolution $resolution" node "$repo/node_modules/typescript/bin/tsc" --noEmit --strict \
    --noUncheckedIndexedAccess --target es2022 --lib es2022,esnext.disposable --module "$module" --moduleResolution "$resolution" \
    --types node --typeRoots "$repo/node_modules/@types" consumer.ts readme-*.ts
done

echo "package: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
