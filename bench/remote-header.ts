// npm run bench: reading a header over HTTP, against the Hub imitation on 127.0.0.1 with 20 ms
// added to every request (a far-away server), beside @huggingface/gguf on the same server.
// Targets: a TinyLlama-shaped header in 1 range request; a 128k-vocabulary header (Llama 3
// shape, ~8 MB) in at most 2 sequential requests and at most 1.5x its size in bytes.
import { gguf } from '@huggingface/gguf';
import { encodeGguf, openGgufRemote, parseGguf, type GgufWriteSpec } from '../lib/index.js';
import { startHubServer } from '../scripts/hub-imitation.js';

function shape(vocab: number, merges: number): GgufWriteSpec {
  return {
    metadata: [
      ['general.architecture', { type: 'STRING', value: 'llama' }],
      ['llama.block_count', { type: 'UINT32', value: 22 }],
      ['tokenizer.ggml.model', { type: 'STRING', value: 'gpt2' }],
      ['tokenizer.ggml.tokens', { type: 'ARRAY', arrayType: 'STRING', value: Array.from({ length: vocab }, (_, i) => `Ġtok${i.toString(36)}`) }],
      ['tokenizer.ggml.token_type', { type: 'ARRAY', arrayType: 'INT32', value: new Array(vocab).fill(1) }],
      ['tokenizer.ggml.merges', { type: 'ARRAY', arrayType: 'STRING', value: Array.from({ length: merges }, (_, i) => `Ġa${(i % 977).toString(36)} b${i.toString(36)}`) }],
    ],
    // 201 tensors, 64 MiB of data after the header (as a model has gigabytes there).
    tensors: Array.from({ length: 201 }, (_, i) => ({ name: `blk.${i >> 3}.t${i}.weight`, type: 'F32' as const, shape: [i === 200 ? 16 << 20 : 8] })),
  };
}

const hub = await startHubServer();
hub.latencyMs = 20;
try {
  for (const [name, vocab, merges] of [['TinyLlama-shaped (32,000 tokens, 61,249 merges)', 32_000, 61_249], ['Llama 3-shaped (128,256 tokens, 280,147 merges)', 128_256, 280_147]] as const) {
    const bytes = encodeGguf(shape(vocab, merges));
    const header = parseGguf(bytes).dataOffset;
    const path = `org/${vocab}/model.gguf`;
    hub.files.set(path, { bytes });
    const url = `${hub.endpoint}/${path.replace('/model.gguf', '')}/resolve/main/model.gguf`;
    const measure = async (run: () => Promise<unknown>) => {
      hub.log.length = 0;
      const start = performance.now();
      await run();
      const ms = performance.now() - start;
      const cdn = hub.log.filter((r) => r.server === 'cdn');
      return { ms, hub: hub.log.length - cdn.length, cdn: cdn.length, bytes: cdn.reduce((n, r) => n + r.bytes, 0) };
    };
    const ours = await measure(() => openGgufRemote(url));
    const theirs = await measure(() => gguf(url));
    const row = (who: string, r: typeof ours) =>
      `  ${who.padEnd(18)} ${String(r.hub).padStart(2)} to the hub + ${String(r.cdn).padStart(2)} range requests, ${(r.bytes / 1e6).toFixed(2)} MB (${(r.bytes / header).toFixed(2)}x the header), ${r.ms.toFixed(0)} ms`;
    console.log(`\nheader over HTTP, ${name}: ${(header / 1e6).toFixed(2)} MB header, 20 ms per request`);
    console.log(row('gguf-mmap', ours));
    console.log(row('@huggingface/gguf', theirs));
    console.log(`  ratio: ${(theirs.ms / ours.ms).toFixed(1)}x faster, ${((theirs.hub + theirs.cdn) / (ours.hub + ours.cdn)).toFixed(1)}x fewer requests`);
  }
} finally {
  await hub.close();
}
