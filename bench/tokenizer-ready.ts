// npm run bench: a tokenizer ready to use, from nothing: openGguf + tokenizer() + the first encode,
// each run in a fresh process (the library imported, a full GC, then timed), median of RUNS; the
// three parts; the Unigram vocabulary's first encode (its trie is ordered then); the heap and
// typed arrays the ready tokenizer holds. The vocabularies are Llama 3's (128,256 tokens, 280,147
// merges) and nomic-bert-moe's (Unigram, 250 K tokens) from ../shared/tokenizer when present,
// else the TinyLlama-shaped header the repo writes itself. The machine's load average is printed
// beside: on a shared machine the ratios between runs hold, single figures do not.
//
// node dist/bench/tokenizer-ready.js [RUNS]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { encodeGguf, openGguf } from '../lib/index.js';
import { tinyllamaShapedSpec } from '../scripts/tinyllama-shape.js';
import { median } from './stats.js';

interface Ready {
  open: number;
  tokenizer: number;
  encode: number;
  ready: number;
  heap: number;
  buffers: number;
}

/** In a fresh process: the three parts, in ms, and the memory the tokenizer holds. */
function child(path: string): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const before = process.memoryUsage();
  const t0 = performance.now();
  const file = openGguf(path);
  const t1 = performance.now();
  const tok = file.tokenizer();
  const t2 = performance.now();
  tok.encode('Hello world');
  const t3 = performance.now();
  gc?.();
  const after = process.memoryUsage();
  const result: Ready = { open: t1 - t0, tokenizer: t2 - t1, encode: t3 - t2, ready: t3 - t0, heap: after.heapUsed - before.heapUsed, buffers: after.arrayBuffers - before.arrayBuffers };
  process.stdout.write(JSON.stringify(result));
}

function runs(path: string, count: number): Ready[] {
  const out: Ready[] = [];
  for (let i = 0; i < count; i++) {
    const r = spawnSync(process.execPath, ['--expose-gc', process.argv[1]!, '--child', path], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(r.stderr);
    out.push(JSON.parse(r.stdout) as Ready);
  }
  return out;
}

const ms = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1));

function report(label: string, rs: Ready[]): void {
  const m = (f: keyof Ready) => median(rs.map((r) => r[f]));
  const sorted = rs.map((r) => r.ready).sort((a, b) => a - b);
  console.log(
    `  ${label}: ready ${ms(m('ready'))} ms (median of ${rs.length}; ${ms(sorted[0]!)}-${ms(sorted.at(-1)!)}): openGguf ${ms(m('open'))}, tokenizer() ${ms(m('tokenizer'))}, first encode ${ms(m('encode'))}; ` +
      `holds ${(m('heap') / 1e6).toFixed(2)} MB of JS heap and ${(m('buffers') / 1e6).toFixed(1)} MB of typed arrays`,
  );
}

async function main(): Promise<void> {
  if (process.argv[2] === '--child') return child(process.argv[3]!);
  const count = Number(process.argv[2] ?? 15);
  const vocab = resolve(process.env.GGUF_MMAP_SHARED ?? join(import.meta.dirname, '../../../shared'), 'tokenizer/vocab');
  const dir = mkdtempSync(join(tmpdir(), 'gguf-mmap-bench-'));
  try {
    console.log(`\ntokenizer ready (fresh processes; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}):`);
    const llama3 = join(vocab, 'ggml-vocab-llama-bpe.gguf');
    if (existsSync(llama3)) {
      report("Llama 3's vocabulary (128,256 tokens, BPE)", runs(llama3, count));
      report("nomic-bert-moe's (250,002 tokens, Unigram)", runs(join(vocab, 'ggml-vocab-nomic-bert-moe.gguf'), count));
    } else {
      const path = join(dir, 'tinyllama-shaped-header.gguf');
      writeFileSync(path, encodeGguf({ ...tinyllamaShapedSpec(), tensors: [] }));
      using file = openGguf(path);
      report(`the TinyLlama-shaped vocabulary (${file.tokenizer().vocabSize} tokens, SPM; ../shared absent)`, runs(path, count));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
