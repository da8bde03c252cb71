// npm run fetch:tinyllama [-- --url URL --sha256 HEX]: downloads the real TinyLlama Q4_K_M model
// into the cache (see scripts/tinyllama.ts), resuming an interrupted download, with a progress bar.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { download } from './download.js';
import { cacheDir, TINYLLAMA_FILE, TINYLLAMA_URL } from './tinyllama.js';

const { values } = parseArgs({ options: { url: { type: 'string' }, sha256: { type: 'string' }, dest: { type: 'string' } } });
const dest = values.dest ?? join(cacheDir(), TINYLLAMA_FILE);

function progressBar(received: number, total: number | undefined, started: number): string {
  const mb = (n: number) => (n / 1e6).toFixed(1);
  const rate = received / 1e6 / Math.max(0.001, (Date.now() - started) / 1000);
  if (total === undefined) return `${mb(received)} MB  ${rate.toFixed(1)} MB/s`;
  const width = 30;
  const filled = Math.round((received / total) * width);
  return `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${((received / total) * 100).toFixed(1)}%  ${mb(received)}/${mb(total)} MB  ${rate.toFixed(1)} MB/s`;
}

async function main(): Promise<void> {
  if (existsSync(dest)) {
    console.log(`already cached: ${dest}`);
    return;
  }
  const started = Date.now();
  let lastLine = 0;
  const result = await download({
    url: values.url ?? TINYLLAMA_URL,
    dest,
    sha256: values.sha256,
    onProgress: (received, total) => {
      const now = Date.now();
      if (process.stderr.isTTY) process.stderr.write(`\r${progressBar(received, total, started)}`);
      else if (now - lastLine > 5000 || received === total) {
        lastLine = now;
        process.stderr.write(`${progressBar(received, total, started)}\n`);
      }
    },
  });
  if (process.stderr.isTTY) process.stderr.write('\n');
  if (result.resumedFrom > 0) console.log(`resumed from byte ${result.resumedFrom}`);
  console.log(`${result.verified ? 'verified' : 'NOT verified (no checksum given or served)'} sha256 ${result.sha256}`);
  console.log(`saved ${dest}`);
}

main().catch((error: unknown) => {
  process.stderr.write(`\nfetch:tinyllama: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
