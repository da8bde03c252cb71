// npm run bench: rewriting the 669 MB TinyLlama-shaped model with a new chat template (the
// header grows, so the data section is copied), against `cp` of the same file in the same run,
// and the same edit in place (a same-size value) for scale.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { convertEndian, editMetadata, mergeModel, splitModel } from '../lib/index.js';
import { ensureTinyllamaShaped } from '../scripts/tinyllama-shape.js';
import { median } from './stats.js';

const RUNS = 3;

function timed(fn: () => void): number {
  const start = performance.now();
  fn();
  return performance.now() - start;
}

function main(): void {
  const shaped = ensureTinyllamaShaped(join(tmpdir(), 'gguf-mmap-bench-tinyllama-shaped.gguf'));
  // The shaped file's tensors are holes, which cp and the kernel copy skip; a model's are data.
  const input = join(tmpdir(), 'gguf-mmap-bench-tinyllama-dense.gguf');
  if (!existsSync(input)) spawnSync('cp', ['--sparse=never', shaped, input]);
  const out = join(tmpdir(), 'gguf-mmap-bench-edited.gguf');
  const size = statSync(input).size;
  spawnSync('cat', [input], { stdio: 'ignore' }); // in the page cache for every row alike
  const template = '{% for message in messages %}<|{{ message.role }}|>\n{{ message.content }}</s>\n{% endfor %}'.repeat(8);
  const cp = median(Array.from({ length: RUNS }, () => {
    rmSync(out, { force: true });
    return timed(() => spawnSync('cp', [input, out]));
  }));
  // The rewrite syncs its output before renaming it into place; cp does not.
  const cpSync = median(Array.from({ length: RUNS }, () => {
    rmSync(out, { force: true });
    return timed(() => spawnSync('sh', ['-c', `cp "${input}" "${out}" && sync "${out}"`]));
  }));
  const rewrite = median(Array.from({ length: RUNS }, () => {
    rmSync(out, { force: true });
    return timed(() => editMetadata(input, { set: [['tokenizer.chat_template', { type: 'STRING', value: template }]] }, { out }));
  }));
  copyFileSync(input, out);
  const inPlace = median(Array.from({ length: RUNS }, () => timed(() => editMetadata(out, { set: [['llama.block_count', { type: 'UINT32', value: 23 }]] }))));
  rmSync(out, { force: true });
  // The rewriting tools on the same data: split in two parts and merge back, and the other byte order.
  const prefix = join(tmpdir(), 'gguf-mmap-bench-split');
  let parts: string[] = [];
  const split = median(Array.from({ length: RUNS }, () => {
    for (const p of parts) rmSync(p, { force: true });
    return timed(() => (parts = splitModel(input, prefix, { maxBytes: Math.ceil(size / 2) })));
  }));
  const merge = median(Array.from({ length: RUNS }, () => {
    rmSync(out, { force: true });
    return timed(() => mergeModel(parts[0]!, out));
  }));
  for (const p of parts) rmSync(p, { force: true });
  const convert = median(Array.from({ length: RUNS }, () => {
    rmSync(out, { force: true });
    return timed(() => convertEndian(input, out, 'big'));
  }));
  rmSync(out, { force: true });
  console.log(`\nediting metadata of a ${(size / 1e6).toFixed(0)} MB model (in the page cache), median of ${RUNS}`);
  console.log('| what | time |');
  console.log('|---|---:|');
  console.log(`| baseline: \`cp\` of the file | ${cp.toFixed(0)} ms |`);
  console.log(`| baseline: \`cp\` and \`sync\` of the copy | ${cpSync.toFixed(0)} ms |`);
  console.log(`| gguf-mmap edit --chat-template-file --out (header grows: data copied in the kernel, synced) | ${rewrite.toFixed(0)} ms (${(rewrite / cp).toFixed(2)}x cp, ${(rewrite / cpSync).toFixed(2)}x cp + sync) |`);
  console.log(`| gguf-mmap edit --set llama.block_count (same size: in place) | ${inPlace.toFixed(1)} ms |`);
  console.log(`| gguf-mmap split --split-max-size (${parts.length} parts, synced) | ${split.toFixed(0)} ms (${(split / cpSync).toFixed(2)}x cp + sync) |`);
  console.log(`| gguf-mmap merge (synced) | ${merge.toFixed(0)} ms (${(merge / cpSync).toFixed(2)}x cp + sync) |`);
  console.log(`| gguf-mmap convert-endian --to big (every block swapped in JS, synced) | ${convert.toFixed(0)} ms (${(convert / cpSync).toFixed(2)}x cp + sync) |`);
  console.log('target: the rewrite within 1.2x of cp');
}

main();
