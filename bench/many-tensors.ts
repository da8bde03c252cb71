// npm run bench: a header of a million tensor infos named as a mixture-of-experts model's
// (blk.N.ffn_gate.E.weight, a 66 MB header) must open in bounded time and memory. Reports the
// open time and the JS heap kept per tensor info, each in a fresh --expose-gc process, with the
// addon's walk of tensor infos and (the baseline, same run) with the TypeScript reader alone; and
// the walk with the table on 4 KiB pages (no huge-page advice), as before it was advised.
// Targets: under 300 ms with the walk; under 64 bytes of heap each.
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openGguf, writeGgufFile } from '../lib/index.js';
import { useNativeTensorWalk } from '../lib/format/parse.js';
import { useHugePageAdvice } from '../lib/native.js';

const COUNT = 1_000_000;

function measure(path: string, reader: string): void {
  useNativeTensorWalk(reader !== 'ts');
  useHugePageAdvice(reader !== 'native-small-pages');
  const gc = (globalThis as { gc?: () => void }).gc!;
  gc();
  const before = process.memoryUsage();
  const start = performance.now();
  const g = openGguf(path);
  const ms = performance.now() - start;
  gc();
  const after = process.memoryUsage();
  const found = g.tensor(nameOf(COUNT - 1)) !== undefined && g.tensor(nameOf(0)) !== undefined;
  console.log(JSON.stringify({ ms, heapPerTensor: (after.heapUsed - before.heapUsed) / COUNT, typedPerTensor: (after.arrayBuffers - before.arrayBuffers) / COUNT, found }));
}

// 5462 experts x 3 projections per layer, as the largest mixture-of-experts models name them.
function nameOf(i: number): string {
  return `blk.${Math.floor(i / (3 * 5462))}.ffn_${['gate', 'up', 'down'][i % 3]}.${Math.floor(i / 3) % 5462}.weight`;
}

type Run = { ms: number; heapPerTensor: number; typedPerTensor: number; found: boolean };

function main(): void {
  const [flag, file, walk] = process.argv.slice(2);
  if (flag === '--measure') return measure(file!, walk!);
  const path = join(tmpdir(), `gguf-mmap-bench-${COUNT}-moe-tensors.gguf`);
  if (!existsSync(path)) writeGgufFile(path, { tensors: Array.from({ length: COUNT }, (_, i) => ({ name: nameOf(i), type: 'I8', shape: [2, 2] })) });
  const median = (walk: string): Run => {
    const runs = [0, 1, 2].map(() => {
      const r = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--measure', path, walk], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(r.stderr);
      return JSON.parse(r.stdout.trim().split('\n').pop()!) as Run;
    });
    return runs.sort((a, b) => a.ms - b.ms)[1]!;
  };
  const ts = median('ts');
  const native = median('native');
  const smallPages = median('native-small-pages');
  console.log(`\n${COUNT.toLocaleString('en-US')} tensor infos named as a mixture-of-experts model's (${(statSync(path).size / 1e6).toFixed(0)} MB file), median of 3 processes each`);
  console.log('| reader | open | JS heap per tensor | typed arrays per tensor | lookup by name |');
  console.log('|---|---:|---:|---:|---|');
  const row = (what: string, r: Run) => console.log(`| ${what} | ${r.ms.toFixed(0)} ms | ${r.heapPerTensor.toFixed(1)} B | ${r.typedPerTensor.toFixed(1)} B | ${r.found ? 'ok' : 'FAILED'} |`);
  row('baseline: the TypeScript reader alone (the addon\'s walk off)', ts);
  row(`the addon's walk of tensor infos (${(ts.ms / native.ms).toFixed(1)}x faster)`, native);
  row(`the same, the table on 4 KiB pages (no huge-page advice; ${(smallPages.ms / native.ms).toFixed(1)}x slower)`, smallPages);
  console.log(`targets: under 300 ms: ${native.ms <= 300 ? 'met' : 'not met'}; under 64 bytes of heap each: ${native.heapPerTensor < 64 ? 'met' : 'not met'}`);
}

main();
