// Headers of real model shapes (tensors listed, no data): what the memory estimate reads. Written
// with writeGgufFile they are sparse files of the model's full size. Used by bench/estimate.ts and
// test/estimate/held-out-architectures.test.ts.
import type { GgufWriteSpec, GgufWriteTensor, GgufWriteValue } from '../lib/index.js';

export interface ModelShapeSpec {
  name: string;
  arch: string;
  layers: number;
  embd: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  ff: number;
  vocab: number;
  experts?: { count: number; used: number; ff: number };
  slidingWindow?: number;
  /** Q and K norms per head; norms after attention and FFN (Gemma); the output tied to token_embd. */
  qkNorm?: boolean;
  postNorms?: boolean;
  tied?: boolean;
}

export const MODEL_SHAPES: readonly ModelShapeSpec[] = [
  { name: 'Llama 3.1 8B', arch: 'llama', layers: 32, embd: 4096, heads: 32, kvHeads: 8, headDim: 128, ff: 14336, vocab: 128256 },
  { name: 'Qwen3 30B-A3B', arch: 'qwen3moe', layers: 48, embd: 2048, heads: 32, kvHeads: 4, headDim: 128, ff: 6144, vocab: 151936, experts: { count: 128, used: 8, ff: 768 }, qkNorm: true },
  { name: 'Gemma 3 27B', arch: 'gemma3', layers: 62, embd: 5376, heads: 32, kvHeads: 16, headDim: 128, ff: 21504, vocab: 262208, slidingWindow: 1024, qkNorm: true, postNorms: true, tied: true },
];

export function modelShapeSpec(s: ModelShapeSpec): GgufWriteSpec {
  const u32 = (value: number): GgufWriteValue => ({ type: 'UINT32', value });
  const k = (key: string) => `${s.arch}.${key}`;
  const metadata: Record<string, GgufWriteValue> = {
    'general.architecture': { type: 'STRING', value: s.arch },
    'tokenizer.ggml.model': { type: 'STRING', value: 'none' },
    [k('block_count')]: u32(s.layers),
    [k('context_length')]: u32(131072),
    [k('embedding_length')]: u32(s.embd),
    [k('feed_forward_length')]: u32(s.ff),
    [k('attention.head_count')]: u32(s.heads),
    [k('attention.head_count_kv')]: u32(s.kvHeads),
    [k('attention.key_length')]: u32(s.headDim),
    [k('attention.value_length')]: u32(s.headDim),
    [k('vocab_size')]: u32(s.vocab),
    [k('attention.layer_norm_rms_epsilon')]: { type: 'FLOAT32', value: 1e-6 },
  };
  if (s.experts) {
    metadata[k('expert_count')] = u32(s.experts.count);
    metadata[k('expert_used_count')] = u32(s.experts.used);
    metadata[k('expert_feed_forward_length')] = u32(s.experts.ff);
  }
  if (s.slidingWindow) metadata[k('attention.sliding_window')] = u32(s.slidingWindow);
  const t = (name: string, type: GgufWriteTensor['type'], ...shape: number[]): GgufWriteTensor => ({ name, type, shape });
  const tensors = [t('token_embd.weight', 'Q6_K', s.embd, s.vocab), t('output_norm.weight', 'F32', s.embd)];
  if (!s.tied) tensors.push(t('output.weight', 'Q6_K', s.embd, s.vocab));
  const q = s.heads * s.headDim;
  const kv = s.kvHeads * s.headDim;
  for (let il = 0; il < s.layers; il++) {
    const b = `blk.${il}.`;
    tensors.push(t(`${b}attn_norm.weight`, 'F32', s.embd), t(`${b}ffn_norm.weight`, 'F32', s.embd),
      t(`${b}attn_q.weight`, 'Q4_K', s.embd, q), t(`${b}attn_k.weight`, 'Q4_K', s.embd, kv), t(`${b}attn_v.weight`, 'Q6_K', s.embd, kv),
      t(`${b}attn_output.weight`, 'Q4_K', q, s.embd));
    if (s.qkNorm) tensors.push(t(`${b}attn_q_norm.weight`, 'F32', s.headDim), t(`${b}attn_k_norm.weight`, 'F32', s.headDim));
    if (s.postNorms) tensors.push(t(`${b}post_attention_norm.weight`, 'F32', s.embd), t(`${b}post_ffw_norm.weight`, 'F32', s.embd));
    if (s.experts) {
      const e = s.experts;
      tensors.push(t(`${b}ffn_gate_inp.weight`, 'F32', s.embd, e.count), t(`${b}ffn_gate_exps.weight`, 'Q4_K', s.embd, e.ff, e.count),
        t(`${b}ffn_up_exps.weight`, 'Q4_K', s.embd, e.ff, e.count), t(`${b}ffn_down_exps.weight`, 'Q6_K', e.ff, s.embd, e.count));
    } else {
      tensors.push(t(`${b}ffn_gate.weight`, 'Q4_K', s.embd, s.ff), t(`${b}ffn_up.weight`, 'Q4_K', s.embd, s.ff), t(`${b}ffn_down.weight`, 'Q6_K', s.ff, s.embd));
    }
  }
  return { metadata, tensors };
}
