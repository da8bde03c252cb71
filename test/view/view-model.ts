// The model the viewer's tests look at: two llama blocks of four kinds (Q8_0, F16, F32, Q4_K),
// values with NaN, ±Inf and zeros in them, and names and strings with markup in them.
import { randomUUID } from 'node:crypto';
import { existsSync, renameSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeGgufFile } from '../../lib/index.js';
import type { GgufWriteSpec, GgufWriteTensor } from '../../lib/index.js';
import { randomBytes } from '../helpers/random.js';

export const MARKUP_TENSOR = '<img src=x onerror="window.__pwned=1">';
export const MARKUP_NAME = 'view <b>test</b><script>window.__pwned=1</script>';
export const CHAT_TEMPLATE = '{% for m in messages %}<|{{ m.role }}|>{{ m.content }}\n{% endfor %}';

/** Q8_0 blocks (an f16 scale of 1/64, then 32 int8) from random bytes. */
function q8_0(values: number, seed: number): Uint8Array {
  const bytes = randomBytes((values / 32) * 34, seed);
  for (let b = 0; b < values / 32; b++) bytes.set([0x00, 0x24], b * 34);
  return bytes;
}

/** Q4_K super-blocks (f16 d and dmin of about 0.01, 12 scale bytes, 128 nibble bytes) from random bytes. */
function q4_k(values: number, seed: number): Uint8Array {
  const bytes = randomBytes((values / 256) * 144, seed);
  for (let b = 0; b < values / 256; b++) bytes.set([0x1f, 0x21, 0x1f, 0x1d], b * 144);
  return bytes;
}

/** F16 halves in [-2, 2] (sign, exponent 14-15 and any mantissa). */
function f16(values: number, seed: number): Uint8Array {
  const raw = randomBytes(values * 2, seed);
  const halves = new Uint16Array(values);
  for (let i = 0; i < values; i++) halves[i] = ((raw[2 * i]! & 0x80) << 8) | (0x3800 + (((raw[2 * i]! & 0x07) << 8) | raw[2 * i + 1]!));
  return new Uint8Array(halves.buffer);
}

/** float32 values with some NaN, +Inf, -Inf, +0 and -0 among ordinary ones. */
export function specialFloats(values: number): Float32Array {
  const out = new Float32Array(values);
  for (let i = 0; i < values; i++) out[i] = Math.sin(i * 0.37) * (i % 5) * 3;
  out[3] = NaN;
  out[10] = Infinity;
  out[11] = -Infinity;
  out[12] = Infinity;
  out[20] = -0;
  return out;
}

export function viewModelSpec(): GgufWriteSpec {
  const tokens = Array.from({ length: 300 }, (_, i) => (i === 7 ? '<script>window.__pwned=1</script>' : `tok${i}`));
  const tensors: GgufWriteTensor[] = [
    { name: 'token_embd.weight', type: 'Q8_0', shape: [64, 300], data: q8_0(64 * 300, 1) },
    { name: MARKUP_TENSOR, type: 'F32', shape: [4], data: new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer) },
  ];
  for (let b = 0; b < 2; b++) {
    tensors.push(
      { name: `blk.${b}.attn_norm.weight`, type: 'F32', shape: [64], data: new Uint8Array(new Float32Array(64).fill(1 + b).buffer) },
      { name: `blk.${b}.attn_q.weight`, type: 'Q8_0', shape: [64, 64], data: q8_0(64 * 64, 10 + b) },
      { name: `blk.${b}.attn_k.weight`, type: 'F16', shape: [64, 32], data: f16(64 * 32, 20 + b) },
      { name: `blk.${b}.ffn_down.weight`, type: b === 0 ? 'F32' : 'Q4_K', shape: b === 0 ? [64, 16] : [256, 16], data: b === 0 ? new Uint8Array(specialFloats(64 * 16).buffer) : q4_k(256 * 16, 30) },
    );
  }
  tensors.push({ name: 'output.weight', type: 'Q4_K', shape: [256, 300], data: q4_k(256 * 300, 40) });
  return {
    metadata: [
      ['general.architecture', { type: 'STRING', value: 'llama' }],
      ['general.name', { type: 'STRING', value: MARKUP_NAME }],
      ['llama.context_length', { type: 'UINT32', value: 2048 }],
      ['llama.embedding_length', { type: 'UINT32', value: 64 }],
      ['llama.block_count', { type: 'UINT32', value: 2 }],
      ['llama.rope.freq_base', { type: 'FLOAT32', value: 10000 }],
      ['tokenizer.ggml.model', { type: 'STRING', value: 'llama' }],
      ['tokenizer.ggml.tokens', { type: 'ARRAY', arrayType: 'STRING', value: tokens }],
      ['tokenizer.ggml.scores', { type: 'ARRAY', arrayType: 'FLOAT32', value: tokens.map((_, i) => -i) }],
      ['tokenizer.chat_template', { type: 'STRING', value: CHAT_TEMPLATE }],
    ],
    tensors,
  };
}

/** A GET with any Host header and path (fetch sets its own Host and normalizes the path). */
export function rawGet(port: number, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, headers: { Host: `127.0.0.1:${port}`, ...headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end();
  });
}

export const MILLION = 1_000_000;
/** Tensor i of the million-tensor file: a thousand blocks of a thousand, I8 of 1 to 3 bytes. */
export const millionName = (i: number) => `blk.${Math.floor(i / 1000)}.t${i % 1000}.weight`;

/**
 * The million-tensor file (a 40 MB header, no data), written once into the temporary directory
 * and kept for later runs (writing it takes seconds): a new name when its contents change.
 */
export function millionTensorFile(): string {
  const path = join(tmpdir(), 'gguf-mmap-view-million-v1.gguf');
  if (existsSync(path)) return path;
  // A name of its own (test files run in parallel, maybe as threads of one process), renamed when whole.
  const partial = `${path}.${process.pid}.${randomUUID()}.partial`;
  writeGgufFile(partial, { tensors: Array.from({ length: MILLION }, (_, i) => ({ name: millionName(i), type: 'I8', shape: [1 + (i % 3)] })) });
  renameSync(partial, path);
  return path;
}

/** The statistics the API documents, computed here from the values in a plain loop. */
export function expectedStats(values: Float32Array) {
  const finite = Array.from(values).filter((v) => Number.isFinite(v));
  const min = Math.min(...finite);
  const max = Math.max(...finite);
  const mean = finite.reduce((a, v) => a + v, 0) / finite.length;
  const std = Math.sqrt(finite.reduce((a, v) => a + (v - mean) ** 2, 0) / finite.length);
  const bins = min === max ? 1 : 64;
  const counts = new Array<number>(bins).fill(0);
  if (min === max) counts[0] = finite.length;
  else for (const v of finite) counts[Math.min(bins - 1, Math.floor((v - min) / ((max - min) / bins)))]!++;
  return {
    count: values.length,
    finite: finite.length,
    min,
    max,
    mean,
    std,
    nan: Array.from(values).filter((v) => Number.isNaN(v)).length,
    inf: Array.from(values).filter((v) => v === Infinity || v === -Infinity).length,
    zeros: Array.from(values).filter((v) => v === 0).length,
    counts,
  };
}


const HEX_TOKEN = (b: number) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`;
/** The text model's words: an emoji is not among them, so it is spelled by four byte tokens. */
export const TEXT_WORDS = ['▁', 'h', 'i', '▁h', '▁hi'];

/**
 * A model with a SentencePiece vocabulary with byte fallback (<unk>, <s>, </s>, the 256 byte
 * tokens, TEXT_WORDS) and a chat template; one F32 tensor.
 */
export function textModelSpec(): GgufWriteSpec {
  const tokens = ['<unk>', '<s>', '</s>', ...Array.from({ length: 256 }, (_, b) => HEX_TOKEN(b)), ...TEXT_WORDS];
  return {
    metadata: [
      ['general.architecture', { type: 'STRING', value: 'llama' }],
      ['tokenizer.ggml.model', { type: 'STRING', value: 'llama' }],
      ['tokenizer.ggml.tokens', { type: 'ARRAY', arrayType: 'STRING', value: tokens }],
      ['tokenizer.ggml.scores', { type: 'ARRAY', arrayType: 'FLOAT32', value: tokens.map(() => 0) }],
      ['tokenizer.ggml.token_type', { type: 'ARRAY', arrayType: 'INT32', value: tokens.map((_, i) => (i === 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1)) }],
      ['tokenizer.chat_template', { type: 'STRING', value: CHAT_TEMPLATE }],
    ],
    tensors: [{ name: 'output.weight', type: 'F32', shape: [4], data: new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer) }],
  };
}

/** A file with tensors and no vocabulary at all, as an mmproj or a LoRA adapter is. */
export function noVocabularySpec(): GgufWriteSpec {
  return {
    metadata: [['general.architecture', { type: 'STRING', value: 'clip' }]],
    tensors: [{ name: 'v.patch_embd.weight', type: 'F32', shape: [4], data: new Uint8Array(new Float32Array([1, 2, 3, 4]).buffer) }],
  };
}

/** Tensors and arrays named `.` and `..` (a URL path drops such segments), among ordinary ones. */
export function dotNamesSpec(): GgufWriteSpec {
  const f32 = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);
  const strings = (prefix: string) => ({ type: 'ARRAY' as const, arrayType: 'STRING' as const, value: Array.from({ length: 20 }, (_, i) => `${prefix}${i}`) });
  return {
    metadata: [
      ['.', strings('dot')],
      ['..', strings('dotdot')],
      ['general.architecture', { type: 'STRING', value: 'llama' }],
    ],
    tensors: [
      { name: '.', type: 'F32', shape: [4], data: f32([1, 2, 3, 4]) },
      { name: '..', type: 'F32', shape: [4], data: f32([5, 6, 7, 9]) },
      { name: 'a', type: 'F32', shape: [4], data: f32([0, 0, 0, 1]) },
    ],
  };
}
