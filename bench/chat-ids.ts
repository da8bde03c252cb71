// npm run bench: chat to ids in one call, applyChatTemplate(messages, { tools, addGenerationPrompt,
// tokenize: true }), for a 20-turn conversation with two tools, on each shared vocabulary that
// carries its own template (command-r, gemma-4, phi-3, qwen2, qwen35 from ../shared/tokenizer),
// else on the TinyLlama-shaped header the repo writes itself: the first call (the template parsed,
// the tokenizer built), then the median of RUNS, and its two parts (the render alone, encode of
// the rendered text alone).
//
// node dist/bench/chat-ids.js [RUNS]
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { encodeGguf, openGguf } from '../lib/index.js';
import { tinyllamaShapedSpec } from '../scripts/tinyllama-shape.js';
import { medianTime } from './stats.js';

const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The current weather in a city',
      parameters: { type: 'object', properties: { city: { type: 'string', description: 'City name' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } }, required: ['city'] },
    },
  },
  {
    type: 'function',
    function: {
      name: 'search',
      description: 'Searches the web',
      parameters: { type: 'object', properties: { query: { type: 'string' }, limit: { type: 'integer' } }, required: ['query'] },
    },
  },
];

/** A system message and 20 turns (user and assistant in turn), each a few sentences. */
function conversation(): Array<{ role: string; content: string }> {
  const messages = [{ role: 'system', content: 'You are a helpful assistant. Answer briefly, and use the tools when the question needs fresh facts.' }];
  for (let i = 0; i < 20; i++) {
    messages.push(
      i % 2 === 0
        ? { role: 'user', content: `Question ${i / 2 + 1}: what should I pack for a trip to Oslo in month ${(i % 12) + 1}? I'll walk a lot, maybe 15 km a day, and I'd like to keep the bag under 8 kg. 🙂` }
        : { role: 'assistant', content: `For month ${(i % 12) + 1}: layers (a warm fleece, a rain shell), two pairs of broken-in shoes, wool socks, and a small umbrella; that fits in about 6.5 kg. Check the forecast the day before.` },
    );
  }
  return messages;
}

const ms = (x: number) => (x < 10 ? x.toFixed(2) : x.toFixed(1));

async function main(): Promise<void> {
  const runs = Number(process.argv[2] ?? 20);
  const vocabDir = resolve(process.env.GGUF_MMAP_SHARED ?? join(import.meta.dirname, '../../../shared'), 'tokenizer/vocab');
  const dir = mkdtempSync(join(tmpdir(), 'gguf-mmap-bench-'));
  try {
    let files = existsSync(vocabDir) ? readdirSync(vocabDir).filter((f) => f.endsWith('.gguf')).map((f) => join(vocabDir, f)) : [];
    files = files.filter((path) => {
      using file = openGguf(path);
      return file.metadata.has('tokenizer.chat_template');
    });
    if (files.length === 0) {
      const path = join(dir, 'tinyllama-shaped-header.gguf');
      writeFileSync(path, encodeGguf({ ...tinyllamaShapedSpec(), tensors: [] }));
      files = [path];
    }
    const messages = conversation();
    console.log(`\nchat to ids (a system message, 20 turns, 2 tools; median of ${runs}; load average ${loadavg().map((x) => x.toFixed(1)).join(' ')}):`);
    for (const path of files) {
      using file = openGguf(path);
      const options = { tools, addGenerationPrompt: true };
      let start = performance.now();
      let ids = file.applyChatTemplate(messages, { ...options, tokenize: true });
      const first = performance.now() - start;
      // Warm first (the template engine's and the tokenizer's code compiled: it takes a few dozen
      // calls), then timed.
      medianTime(() => file.applyChatTemplate(messages, { ...options, tokenize: true }), 60);
      const all = medianTime(() => (ids = file.applyChatTemplate(messages, { ...options, tokenize: true })), runs);
      let text = '';
      const render = medianTime(() => (text = file.applyChatTemplate(messages, options)), runs);
      const tok = file.tokenizer();
      const encode = medianTime(() => tok.encode(text, { parseSpecial: true }), runs);
      const name = path.split('/').pop()!.replace(/^ggml-vocab-/, '').replace(/\.gguf$/, '');
      console.log(
        `  ${name.padEnd(28)} ${ms(all)} ms for ${ids.length} ids from ${text.length.toLocaleString('en-US')} characters (render ${ms(render)}, encode ${ms(encode)}); first call ${ms(first)} ms (template parsed, tokenizer built)`,
      );
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
