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
const RUNS = 201;

/** Median open times of each path, the opens interleaved (the machine's drift falls on both alike). */
function medianOpenMs(paths: readonly string[]): number[] {
  for (const path of paths) openGguf(path).close(); // warm-up
  const times = paths.map((): number[] => []);
  for (let i = 0; i < RUNS; i++) {
    paths.forEach((path, k) => {
      const start = performance.now();
      const g = openGguf(path);
      times[k]!.push(performance.now() - start);
      g.close();
    });
  }
  return times.map(median);
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
  const [one, split] = medianOpenMs([single, first]) as [number, number];
  console.log(`\nopen + index, median of ${RUNS}`);
  console.log('| model | open | vs one file |');
  console.log('|---|---:|---:|');
  console.log(`| one file | ${one.toFixed(3)} ms | 1x |`);
  console.log(`| ${PARTS} parts (\`openGguf\` on part 1) | ${split.toFixed(3)} ms | ${(split / one).toFixed(2)}x |`);
  console.log(`target: the set within 1.5x of one file: ${split / one <= 1.5 ? 'met' : 'not met'}`);
}

main();
