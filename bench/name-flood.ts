// npm run bench: hash flooding. A file whose 30,000 tensor names were built to collide in an
// unkeyed FNV-1a table (what the name index was) opened 40-57x slower than one with ordinary
// names. Now both must open in about the same time: the ratio is the result (target: under 1.5).
import { openGguf, writeGgufFile } from '../lib/index.js';
import { fnvCollidingNames } from '../scripts/colliding-names.js';
import { median } from './stats.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const COUNT = 30_000;

function openTimes(path: string, rounds: number): number {
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    openGguf(path).close();
    times.push(performance.now() - start);
  }
  return median(times);
}

const dir = mkdtempSync(join(tmpdir(), 'gguf-mmap-flood-'));
try {
  const colliding = fnvCollidingNames(COUNT);
  // Ordinary names of the same length, so both headers are the same size.
  const ordinary = colliding.map((_, i) => `blk.${String(i).padStart(5, '0')}.weight`.slice(0, colliding[i]!.length).padEnd(colliding[i]!.length, 'x'));
  const write = (name: string, names: string[]) => {
    const path = join(dir, name);
    writeGgufFile(path, { tensors: names.map((n) => ({ name: n, type: 'I8', shape: [1] })) });
    return path;
  };
  const a = write('ordinary.gguf', ordinary);
  const b = write('colliding.gguf', colliding);
  openTimes(a, 5);
  openTimes(b, 5);
  const plain = openTimes(a, 21);
  const flood = openTimes(b, 21);
  console.log(`\nhash flooding: ${COUNT.toLocaleString('en-US')} tensor names, open ${plain.toFixed(2)} ms ordinary vs ${flood.toFixed(2)} ms built to collide (unkeyed FNV-1a): ${(flood / plain).toFixed(2)}x (target under 1.5x: ${flood / plain < 1.5 ? 'met' : 'not met'})`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
