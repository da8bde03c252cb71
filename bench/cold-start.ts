// npm run bench: a model read from disk, not from the page cache. Before each measurement the
// file's pages are evicted (posix_fadvise(POSIX_FADV_DONTNEED), evictFromPageCache) and the
// measurement starts at once: on VMs that hand freed pages back to their host a little later, a read
// started seconds after an eviction runs slower for reasons of the host, not of the reader.
// Reports, beside `cat FILE` and fs.readFileSync measured the same way in this run: prefetch() of
// the whole model, opening it, its first embedding row, touching every tensor; and cold random
// embedding rows with the kernel's default read-ahead and after advise('random').
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { evictFromPageCache, openGguf, type GgufFile } from '../lib/index.js';
import { ensureTinyllamaDense } from '../scripts/tinyllama-shape.js';
import { findTinyllama } from '../scripts/tinyllama.js';
import { median } from './stats.js';

const RUNS = 3;
const ROW_TRIALS = 15;
const EMBEDDING = 'token_embd.weight';

/** Median over RUNS of `measure`, each after evicting the file. */
async function cold(path: string, measure: () => Promise<number> | number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    evictFromPageCache(path);
    times.push(await measure());
  }
  return median(times);
}

function timed(f: () => void): number {
  const start = performance.now();
  f();
  return performance.now() - start;
}

/** Reads one byte of every page of every tensor. */
function touchEveryTensor(g: GgufFile): number {
  let sum = 0;
  for (const t of g.tensors) {
    const bytes = t.bytes;
    for (let i = 0; i < bytes.length; i += 4096) sum += bytes[i]!;
  }
  return sum;
}

/** Each trial: drop the row's pages from this mapping and the cache, then time one random row. */
function coldRows(g: GgufFile, path: string): number[] {
  const embedding = g.tensor(EMBEDDING)!;
  const rows = embedding.shape[1]!;
  const out = new Float32Array(embedding.shape[0]!);
  const times: number[] = [];
  for (let i = 0; i < ROW_TRIALS; i++) {
    const row = Math.floor(Math.random() * rows);
    g.advise('dontneed', [embedding]);
    evictFromPageCache(path);
    times.push(timed(() => embedding.dequantizeRows(row, 1, out)));
  }
  return times.sort((a, b) => a - b);
}

async function main(): Promise<void> {
  const real = findTinyllama();
  const path = real ?? ensureTinyllamaDense(join(tmpdir(), 'gguf-mmap-bench-tinyllama-dense.gguf'));
  const size = statSync(path).size; // (an open file's mapped header would survive the evictions)
  console.log(`\ncold start: ${path} (${real ? 'real TinyLlama' : 'generated, TinyLlama-shaped, random bytes'}), ${(size / 1e6).toFixed(0)} MB; pages evicted before each run, median of ${RUNS}`);

  const cat = await cold(path, () => timed(() => {
    const r = spawnSync('cat', [path], { stdio: ['ignore', 'ignore', 'inherit'] });
    if (r.status !== 0) throw new Error('cat failed');
  }));
  const readFile = await cold(path, () => timed(() => void readFileSync(path)));
  const prefetch = await cold(path, async () => {
    using g = openGguf(path);
    const start = performance.now();
    await g.prefetch();
    const ms = performance.now() - start;
    const { resident, total } = g.residency();
    if (resident < total) throw new Error(`prefetch left ${total - resident} bytes out`);
    return ms;
  });
  let open = 0;
  let firstRow = 0;
  const openRuns: number[] = [];
  const rowRuns: number[] = [];
  const touch = await cold(path, () => {
    let g: GgufFile | undefined;
    openRuns.push(timed(() => (g = openGguf(path))));
    const embedding = g!.tensor(EMBEDDING)!;
    rowRuns.push(timed(() => embedding.dequantizeRows(12345 % embedding.shape[1]!, 1)));
    const ms = timed(() => touchEveryTensor(g!));
    g!.close();
    return ms;
  });
  open = median(openRuns);
  firstRow = median(rowRuns);

  const mbps = (ms: number) => `${((size / ms) * 1e3 / 1e9).toFixed(2)} GB/s`;
  console.log('| cold (evicted) | median | throughput | vs cat |');
  console.log('|---|---:|---:|---:|');
  console.log(`| \`cat FILE > /dev/null\` | ${cat.toFixed(0)} ms | ${mbps(cat)} | 1x |`);
  console.log(`| \`fs.readFileSync\` | ${readFile.toFixed(0)} ms | ${mbps(readFile)} | ${(readFile / cat).toFixed(2)}x |`);
  console.log(`| \`await file.prefetch()\` | ${prefetch.toFixed(0)} ms | ${mbps(prefetch)} | ${(prefetch / cat).toFixed(2)}x |`);
  console.log(`| \`openGguf\` | ${open.toFixed(2)} ms | | |`);
  console.log(`| first embedding row (\`dequantizeRows\`) | ${firstRow.toFixed(2)} ms | | |`);
  console.log(`| every tensor, one byte per page | ${touch.toFixed(0)} ms | ${mbps(touch)} | ${(touch / cat).toFixed(2)}x |`);

  using g = openGguf(path);
  g.advise('normal');
  const normal = coldRows(g, path);
  g.advise('random');
  const random = coldRows(g, path);
  const p = (t: number[], q: number) => t[Math.min(t.length - 1, Math.floor(q * t.length))]!.toFixed(2);
  console.log(`\n| cold random embedding row (${ROW_TRIALS} rows, each evicted first) | p50 | max |`);
  console.log('|---|---:|---:|');
  console.log(`| default read-ahead (\`advise('normal')\`) | ${p(normal, 0.5)} ms | ${p(normal, 1)} ms |`);
  console.log(`| after \`advise('random')\` | ${p(random, 0.5)} ms | ${p(random, 1)} ms |`);
  const speed = cat / prefetch;
  console.log(`targets: prefetch() at >= 90% of cat's speed: ${(speed * 100).toFixed(0)}% (${speed >= 0.9 ? 'met' : 'not met'}); cold random row after advise('random') <= 1 ms: ${p(random, 0.5)} ms p50 (${Number(p(random, 0.5)) <= 1 ? 'met' : 'not met'})`);
}

await main();
