// npm run bench: `gguf-mmap view`'s three figures. Targets: the page ready (first paint with the
// summary) within 1 s for a TinyLlama-sized model; the statistics of a 65M-value Q4_K tensor
// within 0.3 s; a filter over a million tensor names within 100 ms on the server.
import { randomFillSync } from 'node:crypto';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openGguf, writeGgufFile } from '../lib/index.js';
import { startViewServer } from '../lib/view/server.js';
import { TensorIndex } from '../lib/view/tensor-index.js';
import { DEFAULT_SAMPLE_LIMIT, sampleRowIds, sampleRows, statsOf, tensorStats } from '../lib/view/tensor-stats.js';
import { CHROMIUM_MISSING, launchChromium } from '../scripts/chromium.js';
import { findTinyllama } from '../scripts/tinyllama.js';
import { ensureTinyllamaShaped } from '../scripts/tinyllama-shape.js';
import { median } from './stats.js';

async function timed<T>(work: () => Promise<T> | T): Promise<number> {
  const start = performance.now();
  await work();
  return performance.now() - start;
}

async function pageReady(): Promise<void> {
  if (CHROMIUM_MISSING !== undefined) {
    console.log(`page ready: skipped (${CHROMIUM_MISSING})`);
    return;
  }
  const path = findTinyllama() ?? ensureTinyllamaShaped(join(tmpdir(), 'gguf-mmap-tinyllama-shaped.gguf'));
  using g = openGguf(path);
  const server = await startViewServer(g);
  const browser = await launchChromium();
  try {
    const summary: number[] = [];
    const all: number[] = [];
    for (let i = 0; i < 6; i++) {
      const page = await browser.context.newPage();
      const start = performance.now();
      await page.goto(server.url);
      await page.waitForSelector('body[data-ready=summary], body[data-ready=all]');
      summary.push(performance.now() - start);
      await page.waitForSelector('body[data-ready=all]');
      all.push(performance.now() - start);
      await page.close();
    }
    // The first load warms the server's caches (summary, layer map, metadata): reported apart.
    // A million tensors: from navigation to the table's first row drawn.
    const million = join(tmpdir(), 'gguf-mmap-view-million-v1.gguf');
    using big = openGguf(million);
    const bigServer = await startViewServer(big);
    const firstRows: number[] = [];
    try {
      for (let i = 0; i < 3; i++) {
        const page = await browser.context.newPage();
        const start = performance.now();
        await page.goto(bigServer.url);
        await page.waitForSelector('.trow');
        firstRows.push(performance.now() - start);
        await page.close();
      }
    } finally {
      await bigServer.close();
    }
    console.log(`a million-tensor file in the page: the table's first rows drawn ${median(firstRows).toFixed(0)} ms after navigation (median of 3)`);
    console.log(`page ready (${findTinyllama() ? 'TinyLlama' : 'a TinyLlama-shaped file'}, ${g.tensorCount} tensors, ${g.metadata.size} keys): summary drawn in ${summary[0]!.toFixed(0)} ms on the first load, ${median(summary.slice(1)).toFixed(0)} ms median of 5 after; everything drawn in ${all[0]!.toFixed(0)} / ${median(all.slice(1)).toFixed(0)} ms (target: summary within 1000 ms)`);
  } finally {
    await browser.close();
    await server.close();
  }
}

async function q4kStats(): Promise<void> {
  // TinyLlama's token_embd: 2048 x 32000 Q4_K, 65.5M values, random blocks with small scales.
  const path = join(tmpdir(), 'gguf-mmap-bench-view-q4k.gguf');
  const shape = [2048, 32000];
  if (!existsSync(path)) {
    const data = randomFillSync(new Uint8Array(((shape[0]! * shape[1]!) / 256) * 144));
    for (let b = 0; b < data.length; b += 144) data.set([0x1f, 0x21, 0x1f, 0x1d], b);
    writeGgufFile(path, { tensors: [{ name: 'token_embd.weight', type: 'Q4_K', shape, data }] });
  }
  using g = openGguf(path);
  const t = g.tensor('token_embd.weight')!;
  await tensorStats(t); // the pages in memory, the kernels warmed
  const sampled: number[] = [];
  const cpu = process.cpuUsage();
  for (let i = 0; i < 5; i++) sampled.push(await timed(() => tensorStats(t)));
  const { user, system } = process.cpuUsage(cpu);
  // Of the sampled figure, the kernels' part (gathering the 16M values) and the statistics' (JS).
  const ids = sampleRowIds(sampleRows(t.rows, t.rowLength, DEFAULT_SAMPLE_LIMIT)!);
  const gathered: number[] = [];
  let values: Float32Array = new Float32Array(0);
  for (let i = 0; i < 5; i++) gathered.push(await timed(async () => (values = await t.gatherRowsAsync(ids))));
  const counted: number[] = [];
  for (let i = 0; i < 5; i++) counted.push(await timed(() => statsOf(values)));
  const full: number[] = [];
  for (let i = 0; i < 3; i++) full.push(await timed(() => tensorStats(t, Infinity)));
  console.log(`stats of a ${(t.nelements / 1e6).toFixed(1)}M-value Q4_K tensor: ${median(sampled).toFixed(0)} ms with the 16M-value sample (median of 5; ${((user + system) / 5000).toFixed(0)} ms of CPU each: the rows gathered by the native kernels ${median(gathered).toFixed(0)} ms, the statistics in JS ${median(counted).toFixed(0)} ms), ${median(full).toFixed(0)} ms over every value (median of 3) (target: 300 ms)`);
}

async function millionFilter(): Promise<void> {
  const path = join(tmpdir(), 'gguf-mmap-view-million-v1.gguf');
  if (!existsSync(path)) {
    writeGgufFile(path, { tensors: Array.from({ length: 1_000_000 }, (_, i) => ({ name: `blk.${Math.floor(i / 1000)}.t${i % 1000}.weight`, type: 'I8', shape: [1 + (i % 3)] })) });
  }
  using g = openGguf(path);
  const index = new TensorIndex(g);
  const firstPage = await timed(() => index.query('', 'index', 0, 200));
  const build = await timed(() => index.query('t1', 'index', 0, 200));
  const filters: number[] = [];
  // A different needle each time: the last query's matches are kept, so a repeat would cost nothing.
  for (let i = 0; i < 9; i++) filters.push(await timed(() => index.query(`.t${100 + i}`, 'index', 0, 200)));
  const sorted = await timed(() => index.query('', 'name', 0, 200));
  const sortedFilters: number[] = [];
  for (let i = 0; i < 5; i++) sortedFilters.push(await timed(() => index.query(`.t${200 + i}`, 'name', 0, 200)));
  console.log(`a million tensors: first page ${firstPage.toFixed(1)} ms; names decoded for the first filter ${build.toFixed(0)} ms (once); a filter ${median(filters).toFixed(0)} ms (median of 9; target 100 ms); sorted by name ${sorted.toFixed(0)} ms (once), then a filter in that order ${median(sortedFilters).toFixed(0)} ms`);
}

await millionFilter();
await q4kStats();
await pageReady();
