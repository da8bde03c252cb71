// npm run bench: the first read of a model's tensors in a process with a small and with a large
// live JS heap. V8 counts every new ArrayBuffer's bytes as external memory and collects garbage by
// it; a full mark-compact costs in proportion to the live heap. Each run is a fresh process that
// builds its heap, settles, opens the model and times the first view of each tensor; the baseline,
// in fresh processes of its own, creates one ArrayBuffer over the whole file instead (the window
// gguf-mmap used to create at a model's first read).
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openGguf } from '../lib/index.js';
import { mapFile } from '../lib/native.js';
import { ensureTinyllamaShaped } from '../scripts/tinyllama-shape.js';
import { findTinyllama } from '../scripts/tinyllama.js';
import { median } from './stats.js';

const HEAPS_MIB = [0, 256];
const RUNS = 3;

interface Measured {
  heapMiB: number;
  first: number;
  slowest: number;
  all: number;
  wholeFile: number;
}

async function measure(heapMiB: number, path: string, whole: boolean): Promise<void> {
  const keep: object[] = [];
  for (let i = 0; i < (heapMiB * 2 ** 20) / 64; i++) keep.push({ i, tags: [i % 7], name: `n${i % 1000}` });
  (globalThis as { keep?: unknown }).keep = keep;
  await new Promise((resolve) => setTimeout(resolve, 500));

  if (whole) {
    const mapping = mapFile(path, Number.MAX_SAFE_INTEGER, false);
    const start = performance.now();
    const buffer = mapping.window(0, Math.min(mapping.size, 2 ** 32));
    void new Uint8Array(buffer)[0];
    console.log(JSON.stringify({ heapMiB: process.memoryUsage().heapUsed / 2 ** 20, first: 0, slowest: 0, all: 0, wholeFile: performance.now() - start }));
    mapping.close();
    return;
  }
  const g = openGguf(path);
  const times = g.tensors.map((t) => {
    const start = performance.now();
    void t.view()[0];
    return performance.now() - start;
  });
  const result: Measured = {
    heapMiB: process.memoryUsage().heapUsed / 2 ** 20,
    first: times[0]!,
    slowest: Math.max(...times),
    all: times.reduce((a, b) => a + b, 0),
    wholeFile: 0,
  };
  console.log(JSON.stringify(result));
  g.close();
}

function inChild(heapMiB: number, path: string, whole: boolean): Measured {
  const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--measure', String(heapMiB), path, whole ? 'whole' : 'views'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Measured;
}

function medianOf(runs: Measured[], key: keyof Measured): number {
  return median(runs.map((r) => r[key]));
}

async function main(): Promise<void> {
  const [flag, heap, file, what] = process.argv.slice(2);
  if (flag === '--measure') return measure(Number(heap), file!, what === 'whole');
  const path = findTinyllama() ?? ensureTinyllamaShaped(join(tmpdir(), 'gguf-mmap-bench-tinyllama-shaped.gguf'));
  const probe = openGguf(path);
  const tensors = probe.tensorCount;
  probe.close();
  console.log(`\nfirst read of each tensor's view with a small and a large live heap (${tensors} tensors; median of ${RUNS} fresh processes each)`);
  console.log(`| live JS heap | first tensor | slowest first view | all ${tensors} first views | baseline: one ArrayBuffer over the whole file |`);
  console.log('|---:|---:|---:|---:|---:|');
  const rows: Measured[][] = [];
  for (const heapMiB of HEAPS_MIB) {
    const runs = Array.from({ length: RUNS }, () => inChild(heapMiB, path, false));
    const whole = Array.from({ length: RUNS }, () => inChild(heapMiB, path, true));
    rows.push(runs);
    const ms = (key: keyof Measured, from = runs) => `${medianOf(from, key).toFixed(2)} ms`;
    console.log(`| ${medianOf(runs, 'heapMiB').toFixed(0)} MiB | ${ms('first')} | ${ms('slowest')} | ${ms('all')} | ${ms('wholeFile', whole)} |`);
  }
  const first = medianOf(rows.at(-1)!, 'first');
  console.log(`target: first tensor access <= 1 ms with a large heap: ${first.toFixed(2)} ms (${first <= 1 ? 'met' : 'not met'})`);
}

await main();
