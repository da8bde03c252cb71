// npm run bench: a header that claims a million tensors (a hostile file of ordinary size, ~45 MB)
// must open in bounded time and memory. Reports the open time and the JS heap kept per tensor
// info, measured in a fresh --expose-gc process. Targets: under 1 s, under 64 bytes each.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openGguf, writeGgufFile } from '../lib/index.js';

const COUNT = 1_000_000;

function measure(path: string): void {
  const gc = (globalThis as { gc?: () => void }).gc!;
  gc();
  const before = process.memoryUsage();
  const start = performance.now();
  const g = openGguf(path);
  const ms = performance.now() - start;
  gc();
  const after = process.memoryUsage();
  const found = g.tensor(`t${COUNT - 1}`) !== undefined;
  console.log(JSON.stringify({ ms, heapPerTensor: (after.heapUsed - before.heapUsed) / COUNT, typedPerTensor: (after.arrayBuffers - before.arrayBuffers) / COUNT, found }));
}

function main(): void {
  const [flag, file] = process.argv.slice(2);
  if (flag === '--measure') return measure(file!);
  const path = join(tmpdir(), `gguf-mmap-bench-${COUNT}-tensors.gguf`);
  if (!existsSync(path)) writeGgufFile(path, { tensors: Array.from({ length: COUNT }, (_, i) => ({ name: `t${i}`, type: 'I8', shape: [1] })) });
  const runs = [0, 1, 2].map(() => {
    const r = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), '--measure', path], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(r.stderr);
    return JSON.parse(r.stdout.trim().split('\n').pop()!) as { ms: number; heapPerTensor: number; typedPerTensor: number; found: boolean };
  });
  runs.sort((a, b) => a.ms - b.ms);
  const median = runs[1]!;
  console.log(`\n${COUNT.toLocaleString('en-US')} tensor infos: open ${median.ms.toFixed(0)} ms (median of 3 processes), JS heap ${median.heapPerTensor.toFixed(1)} bytes/tensor, typed arrays ${median.typedPerTensor.toFixed(1)} bytes/tensor, lookup by name ${median.found ? 'ok' : 'FAILED'}`);
  console.log(`targets: under 1000 ms: ${median.ms < 1000 ? 'met' : 'not met'}; under 64 bytes of heap each: ${median.heapPerTensor < 64 ? 'met' : 'not met'}`);
}

main();
