// npm run bench: hashing a TinyLlama-sized model's tensor data (mapped, in the page cache) as
// llama-gguf-hash does, in MB/s, against `sha256sum` of the same file in the same run.
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashTensors, hashTensorsAsync, openGguf, type HashKind } from '../lib/index.js';
import { ensureTinyllamaShaped } from '../scripts/tinyllama-shape.js';
import { findTinyllama } from '../scripts/tinyllama.js';
import { median } from './stats.js';

const RUNS = 3;

function mbps(bytes: number, ms: number): string {
  return `${(bytes / 1e6 / (ms / 1000)).toFixed(0)} MB/s`;
}

async function main(): Promise<void> {
  const threads = Math.min(4, availableParallelism() - 1);
  const path = findTinyllama() ?? ensureTinyllamaShaped(join(tmpdir(), 'gguf-mmap-bench-tinyllama-shaped.gguf'));
  const size = statSync(path).size;
  spawnSync('cat', [path], { stdio: 'ignore' }); // into the page cache for every row alike
  console.log(`\nhashing tensor data of ${path.split('/').pop()} (${(size / 1e6).toFixed(0)} MB, in the page cache), median of ${RUNS}`);
  console.log('| what | time | throughput |');
  console.log('|---|---:|---:|');
  const sha256sum = median(Array.from({ length: RUNS }, () => {
    const start = performance.now();
    spawnSync('sha256sum', [path], { stdio: 'ignore' });
    return performance.now() - start;
  }));
  console.log(`| baseline: \`sha256sum\` of the whole file | ${sha256sum.toFixed(0)} ms | ${mbps(size, sha256sum)} |`);
  const rows: Array<[string, HashKind[]]> = [['xxh64 (the default)', ['xxh64']], ['sha256', ['sha256']], ['--all (xxh64, sha1, sha256 in one pass)', ['xxh64', 'sha1', 'sha256']]];
  for (const [name, kinds] of rows) {
    const ms = median(Array.from({ length: RUNS }, () => {
      using g = openGguf(path);
      const start = performance.now();
      hashTensors(g, { kinds });
      return performance.now() - start;
    }));
    console.log(`| hashTensors ${name}, one thread | ${ms.toFixed(0)} ms | ${mbps(size, ms)} (${(sha256sum / ms).toFixed(2)}x sha256sum's speed) |`);
    // What the CLI runs: per-tensor lines on worker threads while this thread hashes the model's.
    const parallel = await medianAsync(async () => {
      using g = openGguf(path);
      const start = performance.now();
      await hashTensorsAsync(g, { kinds });
      return performance.now() - start;
    });
    console.log(`| gguf-mmap hash ${name} (hashTensorsAsync, ${kinds.some((k) => k !== 'xxh64') ? `${threads} worker${threads === 1 ? '' : 's'}` : 'no worker for xxh64 alone'}) | ${parallel.toFixed(0)} ms | ${mbps(size, parallel)} (${(sha256sum / parallel).toFixed(2)}x sha256sum's speed; ${(ms / parallel).toFixed(2)}x one thread) |`);
  }
}

async function medianAsync(run: () => Promise<number>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) times.push(await run());
  return median(times);
}

await main();
