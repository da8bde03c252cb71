// The browser build's size (issue 37): the package bundled by esbuild for the browser, minified
// and gzipped (level 9), whole and by what a page imports, so each part's cost can be read off.
// Needs `npm run build:ts`. Run: node dist/bench/bundle-size.js
import { gzipSync } from 'node:zlib';
import { bundle } from '../scripts/bundle-package.js';

const ENTRIES: Array<[string, string]> = [
  ['everything (export *)', `export * from 'gguf-mmap';`],
  ['header only (parseGguf, openGgufRemote, openGgufBlob)', `export { parseGguf, openGgufRemote, openGgufBlob } from 'gguf-mmap';`],
  ['tokenizer only (Tokenizer)', `export { Tokenizer } from 'gguf-mmap';`],
  ['chat templates only (renderChatTemplate)', `export { renderChatTemplate } from 'gguf-mmap';`],
  ['estimates (estimateMemory + header)', `export { estimateMemory, largestContext, openGgufRemote } from 'gguf-mmap';`],
  ['dequantization only (dequantize, dequantizeAsync)', `export { dequantize, dequantizeAsync } from 'gguf-mmap';`],
];

const kb = (n: number) => `${(n / 1024).toFixed(1)} KiB`;

export async function bundleSizes(): Promise<Array<{ name: string; minified: number; gzipped: number; parts: Record<string, number> }>> {
  const rows = [];
  for (const [name, source] of ENTRIES) {
    const b = await bundle(source, 'browser', true);
    // What each folder of the package (and each dependency) contributes, gzipped on its own.
    const parts: Record<string, number> = {};
    for (const [input, bytes] of Object.entries(b.bytesByInput)) {
      if (bytes === 0) continue;
      const part = input.includes('node_modules/') ? input.replace(/^.*node_modules\/((@[^/]+\/)?[^/]+).*$/, '$1') : input.includes('assets-data') ? 'WebAssembly kernels + tables (base64)' : input.replace(/^dist\/lib\/([^/]+)\/.*$/, 'lib/$1').replace(/^dist\/lib\/[^/]+\.js$/, 'lib');
      parts[part] = (parts[part] ?? 0) + bytes;
    }
    rows.push({ name, minified: Buffer.byteLength(b.code), gzipped: gzipSync(b.code, { level: 9 }).length, parts });
  }
  return rows;
}

const rows = await bundleSizes();
console.log('browser bundle (esbuild --bundle --minify --platform=browser), gzip -9:');
for (const r of rows) console.log(`  ${r.name.padEnd(56)} ${kb(r.minified).padStart(10)} minified  ${kb(r.gzipped).padStart(10)} gzipped`);
console.log('\neverything, minified bytes by part:');
for (const [part, bytes] of Object.entries(rows[0]!.parts).sort((a, b) => b[1] - a[1])) console.log(`  ${part.padEnd(40)} ${kb(bytes).padStart(10)}`);
