// npm run bench: opening a split model (the TinyLlama-shaped model written in 5 parts the way
// llama-gguf-split writes them) against opening the same model as one file, in the same run.
// Opening a set finds its parts by name, maps each and checks they belong together.
import { existsSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openGguf, writeGgufSplit } from '../lib/index.js';
import { splitPartName } from '../lib/format/write-split.js';
import { ensureTinyllamaShaped, tinyllamaShapedSpec } from '../scripts/tinyllama-shape.js';
import { median } from './stats.js';

const PARTS = 5;
const RUNS = 101;

function medianOpenMs(path: string): number {
  openGguf(path).close(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const start = performance.now();
    const g = openGguf(path);
    times.push(performance.now() - start);
    g.close();
  }
  return median(times);
}

function main(): void {
  const single = ensureTinyllamaShaped(join(tmpdir(), 'gguf-mmap-bench-tinyllama-shaped.gguf'));
  const dir = join(tmpdir(), 'gguf-mmap-bench-split');
  mkdirSync(dir, { recursive: true });
  const prefix = join(dir, 'tinyllama-shaped');
  const tensorCount = openGguf(single).tensorCount;
  if (!existsSync(splitPartName(prefix, PARTS, PARTS))) writeGgufSplit(prefix, tinyllamaShapedSpec(), { maxTensors: Math.ceil(tensorCount / PARTS) });
  const first = splitPartName(prefix, 1, PARTS);
  const set = openGguf(first);
  if (set.parts.length !== PARTS) throw new Error(`expected ${PARTS} parts, got ${set.parts.length}`);
  set.close();
  const one = medianOpenMs(single);
  const split = medianOpenMs(first);
  console.log(`\nopen + index, median of ${RUNS}`);
  console.log('| model | open | vs one file |');
  console.log('|---|---:|---:|');
  console.log(`| one file | ${one.toFixed(3)} ms | 1x |`);
  console.log(`| ${PARTS} parts (\`openGguf\` on part 1) | ${split.toFixed(3)} ms | ${(split / one).toFixed(2)}x |`);
}

main();
