// Tokenizer.encodeAsync against encode: the time of one call for 100 B, 10 KB and 4 MB texts (the
// pool warm, and the first call, which starts a worker and copies the header), the event loop's
// longest stall while a 4 MB text is encoded and decoded (the largest gap between the ticks of a
// 1 ms setInterval, and monitorEventLoopDelay's maximum), and the throughput of 32 concurrent
// calls. The vocabulary is Llama 3's from ../shared/tokenizer when present, else the
// TinyLlama-shaped header the repo writes itself.
//
// node dist/bench/tokenize-async.js
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { existsSync } from 'node:fs';
import { encodeGguf, openGguf, type Tokenizer } from '../lib/index.js';
import { tinyllamaShapedSpec } from '../scripts/tinyllama-shape.js';
import { median, medianTime } from './stats.js';

/** Mixed text (scripts, code, numbers, emoji) of `bytes` UTF-8 bytes or a little more, the same on every run. */
function mixedText(bytes: number): string {
  const parts = [
    'The quick brown fox jumps over the lazy dog, and then it rests. ',
    'Съешь же ещё этих мягких французских булок, да выпей чаю. ',
    '日本語のテキストも含まれています。',
    'function add(a, b) {\n    return a + b * 42; // sum\n}\n',
    "It's 2026-09-28; we've counted 1,234,567 tokens (about 98.6%). ",
    '🙂 emoji 👍🏽 mixed in — “quotes”. ',
  ];
  const lengths = parts.map((p) => Buffer.byteLength(p));
  let seed = 11;
  let text = '';
  for (let length = 0; length < bytes; ) {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    text += parts[seed % parts.length];
    length += lengths[seed % parts.length]!;
  }
  return text;
}

/**
 * Resolves with the call's result, the event loop's longest stall while it ran and the loop's
 * busy time in all.
 */
async function stallOf<T>(call: () => Promise<T>): Promise<{ value: T; ms: number; gapMs: number; delayMs: number; busyMs: number }> {
  const elu = performance.eventLoopUtilization();
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  let last = performance.now();
  let gap = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    gap = Math.max(gap, now - last);
    last = now;
  }, 1);
  const start = performance.now();
  const value = await call();
  const ms = performance.now() - start;
  clearInterval(timer);
  gap = Math.max(gap, performance.now() - last);
  histogram.disable();
  // The loop's busy time (this thread's callbacks, the timer's included, and its garbage
  // collection): a bound on any one stall that is this thread's work and not the scheduler's.
  const busyMs = performance.eventLoopUtilization(elu).active;
  return { value, ms, gapMs: gap, delayMs: histogram.max / 1e6, busyMs };
}


async function timeAsync(fn: () => Promise<unknown>, rounds: number): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const start = performance.now();
    await fn();
    times.push(performance.now() - start);
  }
  return median(times);
}

const ms = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(0));

async function main(): Promise<void> {
  const shared = resolve(process.env.GGUF_MMAP_SHARED ?? join(import.meta.dirname, '../../../shared'), 'tokenizer/vocab/ggml-vocab-llama-bpe.gguf');
  const dir = mkdtempSync(join(tmpdir(), 'gguf-mmap-bench-'));
  try {
    let path = shared;
    if (!existsSync(shared)) {
      path = join(dir, 'tinyllama-shaped-header.gguf');
      writeFileSync(path, encodeGguf({ ...tinyllamaShapedSpec(), tensors: [] }));
    }
    using file = openGguf(path);
    const tok: Tokenizer = file.tokenizer();
    console.log(`tokenize-async: ${existsSync(shared) ? "Llama 3's vocabulary (../shared)" : 'the TinyLlama-shaped vocabulary'}, ${tok.vocabSize} tokens; ${availableParallelism()} cores (pool: ${Math.max(1, Math.min(4, availableParallelism() - 1))} workers)`);
    const big = mixedText(4 << 20);

    // The noise floor: the same timer's longest gap with nothing to do (a loaded machine's scheduler).
    const idle = await stallOf(() => new Promise((resolve) => setTimeout(resolve, 1000)));
    console.log(`  idle, 1 s: the timer's longest gap ${ms(idle.gapMs)} ms (the machine's noise floor), busy ${ms(idle.busyMs)} ms`);
    // The first call: a worker started, the header copied for it, its tokenizer built.
    const first = await stallOf(() => tok.encodeAsync(big.slice(0, 10_000)));
    console.log(`  first encodeAsync (10 KB): ${ms(first.ms)} ms, event loop's longest stall ${ms(first.gapMs)} ms (delay histogram max ${ms(first.delayMs)} ms), busy ${ms(first.busyMs)} ms in all`);

    // Stalls first, before encode's garbage (a megabyte's ids as numbers) is on the heap for the
    // collector to pause on.
    const stalls: number[] = [];
    const busy: number[] = [];
    let ids: Int32Array = new Int32Array(0);
    let encodeAsyncMs = 0;
    for (let round = 0; round < 3; round++) {
      const enc = await stallOf(() => tok.encodeAsync(big));
      stalls.push(enc.gapMs);
      busy.push(enc.busyMs);
      ids = enc.value;
      encodeAsyncMs = enc.ms;
    }
    const dec = await stallOf(() => tok.decodeAsync(ids));
    const syncEncode = medianTime(() => tok.encode(big), 1);
    const syncDecode = medianTime(() => tok.decode(ids), 1);
    console.log(`  4 MB encodeAsync: ${ms(encodeAsyncMs)} ms; the event loop's longest stall ${stalls.map(ms).join(', ')} ms (3 runs), the loop busy ${busy.map(ms).join(', ')} ms in all; encode stalls it ${ms(syncEncode)} ms`);
    console.log(`  4 MB decodeAsync (${ids.length} ids): ${ms(dec.ms)} ms; longest stall ${ms(dec.gapMs)} ms, busy ${ms(dec.busyMs)} ms in all; decode stalls it ${ms(syncDecode)} ms`);

    console.log('  size     encode      encodeAsync (warm)');
    for (const [label, bytes, rounds] of [['100 B', 100, 200], ['10 KB', 10_000, 50], ['4 MB', 4 << 20, 2]] as const) {
      const text = bytes === 4 << 20 ? big : mixedText(bytes);
      const sync = medianTime(() => tok.encode(text), rounds);
      const async = await timeAsync(() => tok.encodeAsync(text), rounds);
      console.log(`  ${label.padEnd(7)}  ${ms(sync).padStart(7)} ms  ${ms(async).padStart(7)} ms (${(async / sync).toFixed(2)}x)`);
    }

    // 32 calls at once, each a different 100 KB text.
    const texts = Array.from({ length: 32 }, (_, i) => `${i} ${mixedText(100_000 + i)}`);
    const total = texts.reduce((n, t) => n + Buffer.byteLength(t), 0) / 1e6;
    const sequential = medianTime(() => texts.forEach((t) => tok.encode(t)), 1);
    const concurrent = await stallOf(() => Promise.all(texts.map((t) => tok.encodeAsync(t))));
    console.log(
      `  32 concurrent encodeAsync of 100 KB: ${ms(concurrent.ms)} ms, ${(total / (concurrent.ms / 1000)).toFixed(2)} MB/s ` +
        `(encode one after another: ${ms(sequential)} ms, ${(total / (sequential / 1000)).toFixed(2)} MB/s); longest stall ${ms(concurrent.gapMs)} ms, busy ${ms(concurrent.busyMs)} ms in all`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
