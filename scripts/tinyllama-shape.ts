// A file shaped like tinyllama-1.1b-chat-v1.0.Q4_K_M.gguf, for tests and the benchmark where the
// real model is absent: same metadata keys, vocabulary sizes, 201 tensors with the Q4_K_M type mix
// and the same byte sizes (about 669 MB). Norms hold ones; the quantized tensors are left as holes
// (zeros), so writing it costs only its header and norms.
import { randomFillSync } from 'node:crypto';
import { existsSync, statSync } from 'node:fs';
import { ggmlTypeById, ggmlTypeByName } from '../lib/format/ggml-types.js';
import { layoutGguf, writeGgufFile, type GgufWriteSpec, type GgufWriteTensor, type GgufWriteValue } from '../lib/format/writer.js';

export const N_VOCAB = 32000;
export const N_MERGES = 61249;
export const N_EMBD = 2048;
export const N_FF = 5632;
export const N_LAYER = 22;
export const N_KV_EMBD = 256; // 4 KV heads of 64

/** llama.cpp's Q4_K_M rule: attn_v and ffn_down get Q6_K in the first and last eighth of the layers and every third between. */
function moreBits(layer: number): boolean {
  const eighth = Math.floor(N_LAYER / 8);
  return layer < eighth || layer >= Math.floor((7 * N_LAYER) / 8) || (layer - eighth) % 3 === 2;
}

export function tinyllamaShapedSpec(): GgufWriteSpec {
  const ones = new Uint8Array(new Float32Array(N_EMBD).fill(1).buffer);
  const tensors: GgufWriteTensor[] = [
    { name: 'token_embd.weight', type: 'Q4_K', shape: [N_EMBD, N_VOCAB] },
    { name: 'output_norm.weight', type: 'F32', shape: [N_EMBD], data: ones },
    { name: 'output.weight', type: 'Q6_K', shape: [N_EMBD, N_VOCAB] },
  ];
  for (let i = 0; i < N_LAYER; i++) {
    const wide = moreBits(i) ? 'Q6_K' : 'Q4_K';
    tensors.push(
      { name: `blk.${i}.attn_norm.weight`, type: 'F32', shape: [N_EMBD], data: ones },
      { name: `blk.${i}.attn_q.weight`, type: 'Q4_K', shape: [N_EMBD, N_EMBD] },
      { name: `blk.${i}.attn_k.weight`, type: 'Q4_K', shape: [N_EMBD, N_KV_EMBD] },
      { name: `blk.${i}.attn_v.weight`, type: wide, shape: [N_EMBD, N_KV_EMBD] },
      { name: `blk.${i}.attn_output.weight`, type: 'Q4_K', shape: [N_EMBD, N_EMBD] },
      { name: `blk.${i}.ffn_norm.weight`, type: 'F32', shape: [N_EMBD], data: ones },
      { name: `blk.${i}.ffn_gate.weight`, type: 'Q4_K', shape: [N_EMBD, N_FF] },
      { name: `blk.${i}.ffn_up.weight`, type: 'Q4_K', shape: [N_EMBD, N_FF] },
      { name: `blk.${i}.ffn_down.weight`, type: wide, shape: [N_FF, N_EMBD] },
    );
  }
  const u32 = (value: number): GgufWriteValue => ({ type: 'UINT32', value });
  const tokens = vocabulary();
  return {
    metadata: [
      ['general.architecture', { type: 'STRING', value: 'llama' }],
      ['general.name', { type: 'STRING', value: 'tinyllama_tinyllama-1.1b-chat-v1.0 (shape only)' }],
      ['llama.context_length', u32(2048)],
      ['llama.embedding_length', u32(N_EMBD)],
      ['llama.block_count', u32(N_LAYER)],
      ['llama.feed_forward_length', u32(N_FF)],
      ['llama.rope.dimension_count', u32(64)],
      ['llama.attention.head_count', u32(32)],
      ['llama.attention.head_count_kv', u32(4)],
      ['llama.attention.layer_norm_rms_epsilon', { type: 'FLOAT32', value: 1e-5 }],
      ['llama.rope.freq_base', { type: 'FLOAT32', value: 10000 }],
      ['general.file_type', u32(15)],
      ['tokenizer.ggml.model', { type: 'STRING', value: 'llama' }],
      ['tokenizer.ggml.tokens', { type: 'ARRAY', arrayType: 'STRING', value: tokens }],
      ['tokenizer.ggml.scores', { type: 'ARRAY', arrayType: 'FLOAT32', value: tokens.map((_, i) => -i) }],
      ['tokenizer.ggml.token_type', { type: 'ARRAY', arrayType: 'INT32', value: tokens.map((_, i) => (i < 3 ? 3 : i < 259 ? 6 : 1)) }],
      ['tokenizer.ggml.merges', { type: 'ARRAY', arrayType: 'STRING', value: merges(tokens) }],
      ['tokenizer.ggml.bos_token_id', u32(1)],
      ['tokenizer.ggml.eos_token_id', u32(2)],
      ['tokenizer.ggml.unknown_token_id', u32(0)],
      ['tokenizer.ggml.padding_token_id', u32(2)],
      ['tokenizer.chat_template', { type: 'STRING', value: "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] }}</s>\n{% endfor %}" }],
      ['general.quantization_version', u32(2)],
    ],
    tensors,
  };
}

/** 32,000 distinct tokens shaped like SentencePiece's: specials, 256 byte tokens, then pieces. */
function vocabulary(): string[] {
  const tokens = ['<unk>', '<s>', '</s>'];
  for (let b = 0; b < 256; b++) tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  const letters = 'etaoinshrdlcumwfgypbvkjxqz';
  for (let i = 0; tokens.length < N_VOCAB; i++) {
    let piece = '';
    for (let n = i; piece.length === 0 || n > 0; n = Math.floor(n / letters.length)) piece += letters[n % letters.length];
    tokens.push(i % 3 === 0 ? `▁${piece}` : piece);
  }
  return tokens;
}

function merges(tokens: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; out.length < N_MERGES; i++) out.push(`${tokens[259 + (i % 5000)]} ${tokens[259 + ((i * 7) % 20000)]}`);
  return out;
}

/** Writes the shaped file at `path` unless a file of the right size is already there. */
export function ensureTinyllamaShaped(path: string): string {
  const spec = tinyllamaShapedSpec();
  const size = layoutGguf(spec).fileSize;
  if (!existsSync(path) || statSync(path).size !== size) writeGgufFile(path, spec);
  return path;
}

/**
 * The shaped file with every tensor's bytes filled (random bytes, so that each page is really on
 * disk): what cold-start and memory-sharing benchmarks read. Written unless already there.
 */
export function ensureTinyllamaDense(path: string): string {
  const spec = tinyllamaShapedSpec();
  const size = layoutGguf(spec).fileSize;
  if (existsSync(path) && statSync(path).size === size) return path;
  const tensors = spec.tensors!.map((t) => {
    if (t.data !== undefined) return t;
    const elements = t.shape.reduce((a, b) => a * b, 1);
    const type = (typeof t.type === 'number' ? ggmlTypeById(t.type) : ggmlTypeByName(t.type))!;
    return { ...t, data: randomFillSync(new Uint8Array((elements / type.blockSize) * type.typeSize)) };
  });
  writeGgufFile(path, { ...spec, tensors });
  return path;
}
