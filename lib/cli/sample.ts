import { fileURLToPath } from 'node:url';
import { mulberry32 } from '../prng.js';
import type { GgufWriteSpec, GgufWriteValue } from '../format/writer.js';

/**
 * The embedded sample: a tiny llama-shaped model the build writes with the project's own writer
 * (to dist/sample.gguf), so `gguf-mmap inspect` has something to show with no model at hand.
 * Deterministic: the same bytes on every build.
 */
export function sampleSpec(): GgufWriteSpec {
  const next = mulberry32(0x9e3779b9);
  const random = () => next() / 2 ** 32;
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(random() * 256));
  // Quantized blocks with a sane f16 scale (0x2c00 = 1/16) where ggml puts it.
  const blocks = (count: number, size: number, scaleAt: number[]) => {
    const out = bytes(count * size);
    for (let b = 0; b < count; b++) for (const at of scaleAt) out.set([0x00, 0x2c], b * size + at);
    return out;
  };
  const f32 = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);
  const tokens = ['<unk>', '<s>', '</s>', ...'abcdefghijklmnopqrstuvwxyz'.split(''), ' the', ' a', '.'];
  const u32 = (value: number): GgufWriteValue => ({ type: 'UINT32', value });

  return {
    metadata: [
      ['general.architecture', { type: 'STRING', value: 'llama' }],
      ['general.name', { type: 'STRING', value: 'gguf-mmap sample' }],
      ['general.file_type', u32(15)],
      ['llama.context_length', u32(64)],
      ['llama.embedding_length', u32(256)],
      ['llama.block_count', u32(1)],
      ['llama.feed_forward_length', u32(256)],
      ['llama.attention.head_count', u32(4)],
      ['llama.attention.layer_norm_rms_epsilon', { type: 'FLOAT32', value: 1e-5 }],
      ['tokenizer.ggml.model', { type: 'STRING', value: 'llama' }],
      ['tokenizer.ggml.tokens', { type: 'ARRAY', arrayType: 'STRING', value: tokens }],
      ['tokenizer.ggml.scores', { type: 'ARRAY', arrayType: 'FLOAT32', value: tokens.map((_, i) => -i) }],
      ['tokenizer.ggml.token_type', { type: 'ARRAY', arrayType: 'INT32', value: tokens.map((_, i) => (i < 3 ? 3 : 1)) }],
      ['tokenizer.ggml.add_bos_token', { type: 'BOOL', value: true }],
    ],
    tensors: [
      { name: 'token_embd.weight', type: 'Q4_K', shape: [256, tokens.length], data: blocks(tokens.length, 144, [0, 2]) },
      { name: 'output_norm.weight', type: 'F32', shape: [256], data: f32(Array.from({ length: 256 }, (_, i) => 1 + i / 256)) },
      { name: 'blk.0.attn_norm.weight', type: 'F32', shape: [256], data: f32(Array.from({ length: 256 }, () => 1)) },
      { name: 'blk.0.attn_q.weight', type: 'F16', shape: [256, 4], data: halves(random, 256 * 4) },
      { name: 'blk.0.attn_v.weight', type: 'Q8_0', shape: [256, 4], data: blocks(32, 34, [0]) },
      { name: 'blk.0.ffn_down.weight', type: 'Q6_K', shape: [256, 8], data: blocks(8, 210, [208]) },
    ],
  };
}

/** Where the build puts the sample, next to the compiled library. */
export function samplePath(): string {
  return fileURLToPath(new URL('../../sample.gguf', import.meta.url));
}

function halves(random: () => number, n: number): Uint8Array {
  // f16 values in [-1, 1): sign, exponent 0..14, any mantissa.
  const out = new Uint16Array(n).map(() => (random() < 0.5 ? 0x8000 : 0) | (Math.floor(random() * 15) << 10) | Math.floor(random() * 1024));
  return new Uint8Array(out.buffer);
}
