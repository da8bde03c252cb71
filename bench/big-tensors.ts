// npm run bench: the first value of each tensor of a 6 GiB file with two 3 GiB tensors, with a
// ~280 MiB live JS heap, and a 90 MB view posted to 8 workers; views over SharedArrayBuffers (where
// the runtime has node_api_create_external_sharedarraybuffer) against ArrayBuffer views
// ({ sharedArrayBuffers: false }, the baseline) in the same run, on every Node found: this one,
// and Node 22, 24 and 26 where scripts/runtimes.sh installed them (.cache/runtimes), or the
// binaries GGUF_MMAP_BENCH_NODES lists (comma-separated).
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { openGguf, writeGgufFile, type GgufFile } from '../lib/index.js';
import { median } from './stats.js';

const GiB = 2 ** 30;
const RUNS = 3;
const HEAP_MIB = 280;
const WORKERS = 8;

interface Measured {
  node: string;
  shared: boolean;
  heapMiB: number;
  /** First value of every tensor, in all (ms). */
  allFirst: number;
  /** First value of the small tensor read first (ms): in a fresh process, so its code compiles too. */
  smallFirst: number;
  /** The same on the file opened again (new windows, code already compiled) (ms). */
  smallAgain: number;
  /** RSS added per worker given the two 45 MB views (MiB). */
  perWorkerMiB: number;
}

function bigModel(path: string): void {
  if (existsSync(path)) return;
  // Holes: 6 GiB on disk costs its header.
  writeGgufFile(path, {
    tensors: [
      { name: 'small.weight', type: 'F32', shape: [4096], data: new Uint8Array(new Float32Array(4096).fill(1).buffer) },
      { name: 'token_embd.weight', type: 'I8', shape: [3 * GiB] },
      { name: 'output.weight', type: 'I8', shape: [3 * GiB] },
      { name: 'output_norm.weight', type: 'F32', shape: [2048], data: new Uint8Array(new Float32Array(2048).fill(2).buffer) },
    ],
  });
}

function workerModel(path: string): void {
  if (existsSync(path)) return;
  // TinyLlama's token_embd and output in size (2 x 45 MB), written, so that pages are real.
  const bytes = new Uint8Array(45 << 20).map((_, i) => i & 127);
  writeGgufFile(path, { tensors: ['token_embd.weight', 'output.weight'].map((name) => ({ name, type: 'I8', shape: [bytes.length], data: bytes })) });
}

async function measure(path: string, workersPath: string, shared: boolean): Promise<Measured> {
  const keep: object[] = [];
  for (let i = 0; i < (HEAP_MIB * 2 ** 20) / 64; i++) keep.push({ i, tags: [i % 7], name: `n${i % 1000}` });
  (globalThis as { keep?: unknown }).keep = keep;
  await new Promise((r) => setTimeout(r, 500));
  const smallFirstMs = (file: GgufFile) => {
    const begun = performance.now();
    void file.tensor('small.weight')!.view()[0];
    return performance.now() - begun;
  };
  const g = openGguf(path, { sharedArrayBuffers: shared });
  const smallFirst = smallFirstMs(g);
  const start = performance.now();
  for (const t of g.tensors) void t.view()[0];
  const allFirst = performance.now() - start + smallFirst;
  g.close();
  const again = openGguf(path, { sharedArrayBuffers: shared });
  const smallAgain = smallFirstMs(again);
  again.close();

  const w = openGguf(workersPath, { sharedArrayBuffers: shared });
  const views = w.tensors.map((t) => t.view());
  for (const v of views) for (let i = 0; i < v.length; i += 4096) void v[i];
  const source = `import { parentPort } from 'node:worker_threads';
    parentPort.once('message', (views) => { globalThis.kept = views; let s = 0; for (const v of views) for (let i = 0; i < v.length; i += 4096) s += v[i]; parentPort.postMessage(s); });`;
  const workers: Worker[] = [];
  let most = 0;
  for (let n = 0; n < WORKERS; n++) {
    const worker = new Worker(source, { eval: true });
    workers.push(worker);
    await new Promise((r) => worker.once('online', r));
    const before = process.memoryUsage().rss;
    await new Promise((r) => {
      worker.once('message', r);
      worker.postMessage(views);
    });
    most = Math.max(most, (process.memoryUsage().rss - before) / 2 ** 20);
  }
  await Promise.all(workers.map((x) => x.terminate()));
  const really = w.sharedArrayBuffers;
  w.close();
  return { node: process.version, shared: really, heapMiB: process.memoryUsage().heapUsed / 2 ** 20, allFirst, smallFirst, smallAgain, perWorkerMiB: most };
}

function nodes(): string[] {
  const listed = process.env.GGUF_MMAP_BENCH_NODES?.split(',').filter(Boolean);
  if (listed !== undefined) return listed;
  const root = resolve(fileURLToPath(import.meta.url), '../../..');
  const installed = [22, 24, 26].map((v) => join(root, `.cache/runtimes/node_modules/node${v}/bin/node`)).filter((p) => existsSync(p));
  return [process.execPath, ...installed];
}

function inChild(node: string, path: string, workersPath: string, shared: boolean): Measured {
  const r = spawnSync(node, [fileURLToPath(import.meta.url), '--measure', path, workersPath, shared ? 'shared' : 'plain'], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`${node}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop()!) as Measured;
}

async function main(): Promise<void> {
  const [flag, file, workersFile, kind] = process.argv.slice(2);
  if (flag === '--measure') {
    console.log(JSON.stringify(await measure(file!, workersFile!, kind === 'shared')));
    return;
  }
  const path = join(tmpdir(), 'gguf-mmap-bench-6gib.gguf');
  const workersPath = join(tmpdir(), 'gguf-mmap-bench-90mb.gguf');
  bigModel(path);
  workerModel(workersPath);
  console.log(`\nviews over SharedArrayBuffers against ArrayBuffer views (the baseline), ~${HEAP_MIB} MiB live heap, median of ${RUNS} fresh processes each`);
  console.log(`| Node | views | first value of each of 4 tensors (two 3 GiB), in all | first value of a small tensor (fresh process) | the same, file opened again | RSS added per worker given 2 x 45 MB views (${WORKERS} workers, the most any added) |`);
  console.log('|---|---|---:|---:|---:|---:|');
  for (const node of nodes()) {
    for (const shared of [true, false]) {
      const runs = Array.from({ length: RUNS }, () => inChild(node, path, workersPath, shared));
      const m = (key: 'allFirst' | 'smallFirst' | 'smallAgain' | 'perWorkerMiB') => median(runs.map((r) => r[key]));
      const kind = runs[0]!.shared ? 'SharedArrayBuffer' : shared ? 'ArrayBuffer (no SharedArrayBuffer here)' : 'ArrayBuffer (baseline)';
      console.log(`| ${runs[0]!.node} | ${kind} | ${m('allFirst').toFixed(2)} ms | ${m('smallFirst').toFixed(3)} ms | ${m('smallAgain').toFixed(3)} ms | ${m('perWorkerMiB').toFixed(2)} MiB |`);
    }
  }
  console.log('targets (Node 22/24/26, SharedArrayBuffer rows): all first values <= 4 ms, a small tensor <= 1 ms, < 1 MiB per worker');
  console.log('(in a fresh process most of the small tensor\'s time is compiling the code of its first lookup and view; the file opened again shows the window\'s own cost)');
}

await main();
