// npm run bench: time to open and index a TinyLlama-sized model (1.1B, Q4_K_M, ~669 MB) with
// gguf-mmap, @huggingface/gguf and a plain fs.readFileSync, all measured in this run, plus the
// memory each leaves behind (measured in a fresh process per library).
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gguf } from '@huggingface/gguf';
import { openGguf } from '../lib/index.js';
import { samplePath } from '../lib/cli/sample.js';
import { ensureTinyllamaShaped } from '../scripts/tinyllama-shape.js';
import { findTinyllama } from '../scripts/tinyllama.js';

type Contender = 'gguf-mmap' | '@huggingface/gguf' | 'fs.readFileSync';

/** Opens the file and builds a name -> tensor index; returns what must stay alive. */
async function openAndIndex(who: Contender, path: string): Promise<unknown> {
  switch (who) {
    case 'gguf-mmap': {
      const g = openGguf(path);
      return [g, g.tensor('output.weight')];
    }
    case '@huggingface/gguf': {
      const r = await gguf(path, { allowLocalFile: true });
      return [r, new Map(r.tensorInfos.map((t) => [t.name, t]))];
    }
    case 'fs.readFileSync':
      return readFileSync(path);
  }
}

function release(who: Contender, kept: unknown): void {
  if (who === 'gguf-mmap') (kept as [{ close(): void }])[0].close();
}

async function medianMs(who: Contender, path: string, runs: number): Promise<number> {
  release(who, await openAndIndex(who, path)); // warm-up: JIT, page cache, addon load
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    const kept = await openAndIndex(who, path);
    times.push(performance.now() - start);
    release(who, kept);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/**
 * In this (fresh, --expose-gc) process: memory growth from one open whose result is kept alive.
 * The warm-up opens the small embedded sample, so code is loaded but no large buffer is left
 * for the allocator to free (asynchronously) during the measurement.
 */
async function measureMemory(who: Contender, path: string): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc!;
  release(who, await openAndIndex(who, samplePath()));
  const settle = async () => {
    for (let i = 0; i < 3; i++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  await settle();
  const before = process.memoryUsage();
  (globalThis as { kept?: unknown }).kept = await openAndIndex(who, path);
  await settle();
  const after = process.memoryUsage();
  const mib = (k: 'rss' | 'heapUsed' | 'arrayBuffers') => (after[k] - before[k]) / 2 ** 20;
  console.log(JSON.stringify({ rss: mib('rss'), heap: mib('heapUsed') + mib('arrayBuffers') }));
}

function memoryInChild(who: Contender, path: string): { rss: number; heap: number } {
  const self = fileURLToPath(import.meta.url);
  const r = spawnSync(process.execPath, ['--expose-gc', self, '--memory', who, path], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`memory run for ${who} failed: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!);
}

async function main(): Promise<void> {
  const [flag, who, file] = process.argv.slice(2);
  if (flag === '--memory') return measureMemory(who as Contender, file!);

  const real = findTinyllama();
  const path = real ?? ensureTinyllamaShaped(join(tmpdir(), 'gguf-mmap-bench-tinyllama-shaped.gguf'));
  console.log(`model: ${path} (${real ? 'real TinyLlama' : 'generated, TinyLlama-shaped'})`);
  console.log(`node ${process.version}, ${process.platform}-${process.arch}\n`);

  const runs: Record<Contender, number> = { 'gguf-mmap': 101, '@huggingface/gguf': 15, 'fs.readFileSync': 5 };
  const rows = [];
  for (const who of Object.keys(runs) as Contender[]) {
    const ms = await medianMs(who, path, runs[who]);
    rows.push({ who, ms, memory: memoryInChild(who, path) });
  }
  const ours = rows[0]!.ms;
  console.log('| library | open + index, median | vs gguf-mmap | RSS growth | JS heap + ArrayBuffer growth |');
  console.log('|---|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${r.who} | ${r.ms.toFixed(3)} ms | ${r.who === 'gguf-mmap' ? '1x' : `${(r.ms / ours).toFixed(0)}x slower`} | ${r.memory.rss.toFixed(1)} MiB | ${r.memory.heap.toFixed(1)} MiB |`,
    );
  }
  const hf = rows.find((r) => r.who === '@huggingface/gguf')!;
  console.log(`\ntargets: open+index >= 100x faster than @huggingface/gguf: ${(hf.ms / ours).toFixed(0)}x; memory growth < 4 MiB: ${rows[0]!.memory.rss.toFixed(1)} MiB RSS`);
}

await main();
