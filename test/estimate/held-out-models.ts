// The held-out models of held-out-architectures.test.ts: small models of architectures (and
// variants) the recorded set (../shared/memory) does not have, written here with the project's
// writer, f32 tensors; most with embedding 256, 4 heads and 2 KV heads of 64, FFN 512, 512 tokens,
// 4 layers (7 for Gemma 3); Hunyuan v4 and DeepSeek 4 shaped as their functions say.
import type { GgufWriteSpec } from '../../lib/index.js';

const E = 256, H = 4, KV = 2, D = 64, FF = 512, V = 512;

type Tensor = { name: string; type: 'F32'; shape: number[] };
type Meta = Record<string, { type: 'UINT32'; value: number } | { type: 'FLOAT32'; value: number } | { type: 'BOOL'; value: boolean } | { type: 'ARRAY'; arrayType: 'UINT32'; value: number[] }>;

const t = (name: string, ...shape: number[]): Tensor => ({ name, type: 'F32', shape });
const u32 = (value: number) => ({ type: 'UINT32', value }) as const;
const f32 = (value: number) => ({ type: 'FLOAT32', value }) as const;
const bool = (value: boolean) => ({ type: 'BOOL', value }) as const;
const u32s = (value: number[]) => ({ type: 'ARRAY', arrayType: 'UINT32', value }) as const;

function attention(o: { qkNorm?: boolean; bias?: boolean } = {}): Tensor[] {
  const list = [t('attn_norm.weight', E), t('attn_q.weight', E, H * D), t('attn_k.weight', E, KV * D), t('attn_v.weight', E, KV * D), t('attn_output.weight', H * D, E)];
  if (o.bias) list.push(t('attn_q.bias', H * D), t('attn_k.bias', KV * D), t('attn_v.bias', KV * D));
  if (o.qkNorm) list.push(t('attn_q_norm.weight', D), t('attn_k_norm.weight', D));
  return list;
}
function ffn(o: { gated?: boolean; norm?: boolean } = {}): Tensor[] {
  const list = o.norm === false ? [] : [t('ffn_norm.weight', E)];
  list.push(t('ffn_up.weight', E, FF), t('ffn_down.weight', FF, E));
  if (o.gated !== false) list.push(t('ffn_gate.weight', E, FF));
  return list;
}
function experts(ff: number, shared = 0): Tensor[] {
  const list = [t('ffn_norm.weight', E), t('ffn_gate_inp.weight', E, 8), t('ffn_gate_exps.weight', E, ff, 8), t('ffn_up_exps.weight', E, ff, 8), t('ffn_down_exps.weight', ff, E, 8)];
  if (shared > 0) list.push(t('ffn_gate_shexp.weight', E, shared), t('ffn_up_shexp.weight', E, shared), t('ffn_down_shexp.weight', shared, E), t('ffn_gate_inp_shexp.weight', E));
  return list;
}
const expertMeta = (ff: number, shared = 0): Meta => ({
  expert_count: u32(8), expert_used_count: u32(2), expert_feed_forward_length: u32(ff),
  ...(shared > 0 ? { expert_shared_feed_forward_length: u32(shared) } : {}),
});
const heads = { 'attention.key_length': u32(D), 'attention.value_length': u32(D) };
const postNorms = [t('post_attention_norm.weight', E), t('post_ffw_norm.weight', E)];
const plainBlock = [t('attn_norm.weight', E), t('attn_q.weight', E, H * D), t('attn_k.weight', E, KV * D), t('attn_v.weight', E, KV * D), t('attn_output.weight', H * D, E)];
const gpt = (arch: string) => ({
  meta: { 'attention.head_count_kv': u32(H) },
  layer: () => [t('attn_norm.weight', E), t('attn_norm.bias', E), t('attn_qkv.weight', E, 3 * E), t('attn_qkv.bias', 3 * E), t('attn_output.weight', E, E), t('attn_output.bias', E),
    ...(arch === 'gpt2' ? [t('ffn_norm.weight', E), t('ffn_norm.bias', E)] : []), t('ffn_up.weight', E, FF), t('ffn_up.bias', FF), t('ffn_down.weight', FF, E), t('ffn_down.bias', E)],
});

interface Arch {
  arch?: string;
  layers?: number;
  meta?: Meta;
  layer: (il: number) => Tensor[];
  globals?: Tensor[];
  tiedOutput?: boolean;
  /** No output_norm tensor (Talkie's final norm has no weight). */
  noOutputNorm?: boolean;
}

// Hunyuan v4: MLA (latent cache) with a DSA indexer that layers 1 and 3 share, 4 hyper-connections,
// an output gate and sinks, a leading dense block, then experts with a shared one
function hyV4(indexerHeads: number, topK: number): Arch {
  return {
    arch: 'hy_v4',
    meta: {
      'attention.head_count_kv': u32(1), 'attention.key_length': u32(320), 'attention.value_length': u32(256),
      'attention.key_length_mla': u32(192), 'attention.value_length_mla': u32(128), 'attention.q_lora_rank': u32(128), 'attention.kv_lora_rank': u32(256),
      leading_dense_block_count: u32(1), ...expertMeta(128), expert_shared_count: u32(1), expert_weights_scale: f32(1), expert_weights_norm: bool(true), expert_gating_func: u32(2),
      'hyper_connection.count': u32(4), 'hyper_connection.epsilon': f32(1e-6), 'hyper_connection.magnitude': f32(2),
      'attention.indexer.head_count': u32(indexerHeads), 'attention.indexer.key_length': u32(128), 'attention.indexer.top_k': u32(topK), 'attention.indexer.types': u32s([1, 0, 1, 0]),
    },
    globals: [t('output_hc_fn.weight', 4 * E, 4), t('output_hc_base.weight', 4), t('output_hc_scale.weight', 1)],
    layer: (il) => [
      t('attn_norm.weight', E), t('attn_sinks.weight', H), t('attn_q_a.weight', E, 128), t('attn_q_a_norm.weight', 128), t('attn_q_b.weight', 128, H * 192),
      t('attn_kv_a_mqa.weight', E, 320), t('attn_kv_a_norm.weight', 256), t('attn_k_b.weight', 128, 256, H), t('attn_v_b.weight', 256, 128, H),
      t('attn_output.weight', H * 128, E), t('attn_gate.weight', E, H * 128),
      ...(il % 2 === 0 ? [t('indexer.attn_q_b.weight', 128, indexerHeads * 128), t('indexer.attn_k.weight', E, 128), t('indexer.k_norm.weight', 128), t('indexer.k_norm.bias', 128), t('indexer.proj.weight', E, indexerHeads)] : []),
      t('hc_attn_fn.weight', 4 * E, 8), t('hc_attn_base.weight', 8), t('hc_attn_scale.weight', 2), t('hc_ffn_fn.weight', 4 * E, 8), t('hc_ffn_base.weight', 8), t('hc_ffn_scale.weight', 2),
      ...(il === 0 ? ffn() : [t('ffn_norm.weight', E), t('ffn_gate_inp.weight', E, 8), t('ffn_gate_exps.weight', E, 128, 8), t('ffn_up_exps.weight', E, 128, 8), t('ffn_down_exps.weight', 128, E, 8),
        t('ffn_gate_shexp.weight', E, 128), t('ffn_up_shexp.weight', E, 128), t('ffn_down_shexp.weight', 128, E)]),
    ],
  };
}

export const ARCHES: Record<string, Arch> = {
  qwen2: { layer: () => [...attention({ bias: true }), ...ffn()] },
  qwen3: { meta: heads, layer: () => [...attention({ qkNorm: true }), ...ffn()] },
  qwen3moe: { meta: { ...heads, ...expertMeta(128) }, layer: () => [...attention({ qkNorm: true }), ...experts(128)] },
  qwen2moe: { meta: expertMeta(128, 256), layer: () => [...attention({ bias: true }), ...experts(128, 256)] },
  gemma2: {
    meta: { 'attention.sliding_window': u32(64), attn_logit_softcapping: f32(50), final_logit_softcapping: f32(30), ...heads },
    layer: () => [...attention(), ...ffn(), ...postNorms], tiedOutput: true,
  },
  gemma3: { layers: 7, meta: { 'attention.sliding_window': u32(64), ...heads }, layer: () => [...attention({ qkNorm: true }), ...ffn(), ...postNorms], tiedOutput: true },
  phi2: { ...gpt('phi2'), globals: [t('output_norm.bias', E), t('output.bias', V)] },
  gpt2: { ...gpt('gpt2'), globals: [t('position_embd.weight', E, 8192), t('output_norm.bias', E)] },
  olmo2: {
    layer: () => [t('attn_q.weight', E, H * D), t('attn_k.weight', E, KV * D), t('attn_v.weight', E, KV * D), t('attn_output.weight', H * D, E),
      t('attn_q_norm.weight', H * D), t('attn_k_norm.weight', KV * D), t('post_attention_norm.weight', E),
      t('ffn_up.weight', E, FF), t('ffn_down.weight', FF, E), t('ffn_gate.weight', E, FF), t('post_ffw_norm.weight', E)],
  },
  granitemoe: {
    meta: { ...expertMeta(FF), residual_scale: f32(0.2), embedding_scale: f32(12), 'attention.scale': f32(0.015625), logit_scale: f32(8) },
    layer: () => [...attention(), ...experts(FF)],
  },
  stablelm: { layer: () => [...attention(), t('attn_norm.bias', E), ...ffn(), t('ffn_norm.bias', E)], globals: [t('output_norm.bias', E)] },
  starcoder2: {
    layer: () => [...attention({ bias: true }), t('attn_norm.bias', E), t('attn_output.bias', E), t('ffn_norm.bias', E), t('ffn_up.bias', FF), t('ffn_down.bias', E), ...ffn({ gated: false })],
    globals: [t('output_norm.bias', E)],
  },
  'command-r': { meta: { logit_scale: f32(0.0625) }, layer: () => [...plainBlock, ...ffn({ norm: false })], tiedOutput: true },
  cohere2: { meta: { logit_scale: f32(0.0625), 'attention.sliding_window': u32(64) }, layer: () => [...plainBlock, ...ffn({ norm: false })], tiedOutput: true },
  falcon: {
    layer: () => [t('attn_norm.weight', E), t('attn_norm.bias', E), t('attn_qkv.weight', E, H * D + 2 * KV * D), t('attn_output.weight', H * D, E), t('ffn_up.weight', E, FF), t('ffn_down.weight', FF, E)],
    globals: [t('output_norm.bias', E)],
  },
  glm4: {
    layer: () => [...attention({ bias: true }), t('post_attention_norm.weight', E), t('ffn_norm.weight', E), t('ffn_up.weight', E, 2 * FF), t('ffn_down.weight', FF, E), t('post_ffw_norm.weight', E)],
  },
  mistral3: { layer: () => [...attention(), ...ffn()] },
  'llama-moe': { arch: 'llama', meta: expertMeta(FF), layer: () => [...attention(), ...experts(FF)] },
  // Refact's graph builds the dense FFN even for a model with experts (just the activation then)
  // Hunyuan v4 (hyV4 below): one choosing 2048 cells, one all (test-llama-archs' top_k)
  hy_v4: hyV4(16, 2048),
  'hy_v4-all-cells': hyV4(64, 131072),
  // Qwen3-Next: gated delta net layers (Q, K, V and z from one projection, beta and alpha from
  // another) and every 4th layer gated-query attention, experts with a gated shared one
  qwen3next: {
    meta: { ...heads, ...expertMeta(128, 256), full_attention_interval: u32(4), 'ssm.inner_size': u32(128), 'ssm.conv_kernel': u32(4), 'ssm.state_size': u32(64), 'ssm.time_step_rank': u32(2), 'ssm.group_count': u32(2) },
    layer: (il) => [
      t('attn_norm.weight', E), t('post_attention_norm.weight', E), ...experts(128, 256).filter((x) => x.name !== 'ffn_norm.weight'),
      ...(il % 4 === 3
        ? [t('attn_q.weight', E, 2 * H * D), t('attn_k.weight', E, KV * D), t('attn_v.weight', E, KV * D), t('attn_output.weight', H * D, E), t('attn_q_norm.weight', D), t('attn_k_norm.weight', D)]
        : [t('ssm_in.weight', E, 512), t('ssm_conv1d.weight', 4, 384), t('ssm_dt.bias', 2), t('ssm_a', 2), t('ssm_ba.weight', E, 4), t('ssm_norm.weight', 64), t('ssm_out.weight', 128, E)]),
    ],
  },
  // PLaMo: attention and FFN from one norm, their sum added to the residual
  plamo: { layer: () => [...plainBlock, ...ffn({ norm: false })] },
  // Falcon 40B's block: attention on a second norm of the input (attn_norm_2), the FFN on the first
  'falcon-40b': {
    arch: 'falcon',
    layer: () => [t('attn_norm.weight', E), t('attn_norm.bias', E), t('attn_norm_2.weight', E), t('attn_norm_2.bias', E), t('attn_qkv.weight', E, H * D + 2 * KV * D),
      t('attn_output.weight', H * D, E), t('ffn_up.weight', E, FF), t('ffn_down.weight', FF, E)],
    globals: [t('output_norm.bias', E)],
  },
  // Talkie: norms without weights, the normed embeddings added (scaled) to every layer's output
  talkie: {
    noOutputNorm: true,
    meta: { logit_scale: f32(0.5) },
    layer: () => [t('attn_q.weight', E, H * D), t('attn_k.weight', E, KV * D), t('attn_v.weight', E, KV * D), t('attn_output.weight', H * D, E), t('attn_q_norm.weight', 1, H),
      ...ffn({ norm: false }), t('layer_output_scale.weight', 1)],
  },
  'refact-moe': { arch: 'refact', meta: expertMeta(FF), layer: () => [...attention(), ...experts(FF)] },
};

export function headerSpec(name: string): GgufWriteSpec {
  const a = ARCHES[name]!;
  const arch = a.arch ?? name;
  const layers = a.layers ?? 4;
  const meta: Record<string, unknown> = {
    'general.architecture': { type: 'STRING', value: arch },
    'tokenizer.ggml.tokens': { type: 'ARRAY', arrayType: 'STRING', value: Array.from({ length: V }, (_, i) => `t${i}`) },
  };
  const base: Meta = {
    block_count: u32(layers), context_length: u32(8192), embedding_length: u32(E), feed_forward_length: u32(FF),
    'attention.head_count': u32(H), 'attention.head_count_kv': u32(KV), 'attention.layer_norm_rms_epsilon': f32(1e-6),
    'attention.layer_norm_epsilon': f32(1e-5), 'rope.dimension_count': u32(D), ...a.meta,
  };
  for (const [k, v] of Object.entries(base)) meta[`${arch}.${k}`] = v;
  const tensors = [t('token_embd.weight', E, V), ...(a.noOutputNorm === true ? [] : [t('output_norm.weight', E)]), ...(a.globals ?? []), ...(a.tiedOutput === true ? [] : [t('output.weight', E, V)])];
  for (let il = 0; il < layers; il++) tensors.push(...a.layer(il).map((x) => ({ ...x, name: `blk.${il}.${x.name}` })));
  return { metadata: meta as never, tensors };
}

/**
 * DeepSeek 4 as llama.cpp's test-llama-archs shapes it: embedding 512, 8 heads of 64 over one KV
 * head, 4 layers compressed none, none, 4:1 (CSA, with its indexer) and 128:1 (HCA), a window of
 * 32, 4 hyper-connections, two experts and a shared one, 128 tokens (top_k and the window as given;
 * with nextn a fifth, NextN block).
 */
export function deepseek4Spec(topK = 131072, window = 32, nextn = false): GgufWriteSpec {
  const [e, heads, head, ff, vocab, qLora, ratios] = [512, 8, 64, 1024, 128, 64, nextn ? [0, 0, 4, 128, 0] : [0, 0, 4, 128]];
  const idxHeads = 64, idxKey = 128, groups = 8, oLora = 32, hc = 4, mix = (2 + hc) * hc;
  const meta: Meta = {
    block_count: u32(ratios.length), nextn_predict_layers: u32(nextn ? 1 : 0), context_length: u32(8192), embedding_length: u32(e), feed_forward_length: u32(ff),
    'attention.head_count': u32(heads), 'attention.head_count_kv': u32(1), 'attention.key_length': u32(head), 'attention.value_length': u32(head),
    'attention.layer_norm_rms_epsilon': f32(1e-5), 'rope.dimension_count': u32(head / 2), 'attention.q_lora_rank': u32(qLora), 'attention.sliding_window': u32(window),
    expert_count: u32(2), expert_used_count: u32(2), expert_feed_forward_length: u32(ff), expert_shared_count: u32(1), expert_weights_scale: f32(1),
    expert_weights_norm: bool(true), expert_gating_func: u32(4), swiglu_clamp_exp: f32(10),
    'attention.indexer.head_count': u32(idxHeads), 'attention.indexer.key_length': u32(idxKey), 'attention.indexer.top_k': u32(topK),
    'attention.output_group_count': u32(groups), 'attention.output_lora_rank': u32(oLora), 'attention.compress_rope_freq_base': f32(160000), 'attention.compress_ratios': u32s(ratios),
    'hyper_connection.count': u32(hc), 'hyper_connection.sinkhorn_iterations': u32(2), 'hyper_connection.epsilon': f32(1e-6), hash_layer_count: u32(0),
  };
  const metadata: Record<string, unknown> = {
    'general.architecture': { type: 'STRING', value: 'deepseek4' },
    'tokenizer.ggml.tokens': { type: 'ARRAY', arrayType: 'STRING', value: Array.from({ length: vocab }, (_, i) => `t${i}`) },
  };
  for (const [k, v] of Object.entries(meta)) metadata[`deepseek4.${k}`] = v;
  const tensors = [t('token_embd.weight', e, vocab), t('output_norm.weight', e), t('output.weight', e, vocab),
    t('output_hc_fn.weight', hc * e, hc), t('output_hc_base.weight', hc), t('output_hc_scale.weight', 1)];
  ratios.forEach((ratio, il) => {
    const layer = [t('attn_norm.weight', e), t('attn_sinks.weight', heads), t('attn_q_a.weight', e, qLora), t('attn_q_a_norm.weight', qLora), t('attn_q_b.weight', qLora, heads * head),
      t('attn_kv.weight', e, head), t('attn_kv_a_norm.weight', head), t('attn_output_a.weight', (heads * head) / groups, oLora, groups), t('attn_output_b.weight', groups * oLora, e),
      t('hc_attn_fn.weight', hc * e, mix), t('hc_attn_base.weight', mix), t('hc_attn_scale.weight', 3), t('hc_ffn_fn.weight', hc * e, mix), t('hc_ffn_base.weight', mix), t('hc_ffn_scale.weight', 3)];
    if (ratio !== 0) {
      const c = ratio === 4 ? 2 : 1;
      layer.push(t('attn_compressor_kv.weight', e, c * head), t('attn_compressor_gate.weight', e, c * head), t('attn_compressor_ape.weight', c * head, ratio), t('attn_compressor_norm.weight', head));
    }
    if (ratio === 4) {
      layer.push(t('indexer.proj.weight', e, idxHeads), t('indexer.attn_q_b.weight', qLora, idxHeads * idxKey), t('indexer_compressor_kv.weight', e, 2 * idxKey),
        t('indexer_compressor_gate.weight', e, 2 * idxKey), t('indexer_compressor_ape.weight', 2 * idxKey, ratio), t('indexer_compressor_norm.weight', idxKey));
    }
    layer.push(t('ffn_gate_inp.weight', e, 2), t('exp_probs_b.bias', 2), t('ffn_norm.weight', e), t('ffn_gate_exps.weight', e, ff, 2), t('ffn_down_exps.weight', ff, e, 2),
      t('ffn_up_exps.weight', e, ff, 2), t('ffn_gate_shexp.weight', e, ff), t('ffn_down_shexp.weight', ff, e), t('ffn_up_shexp.weight', e, ff));
    // a NextN (MTP) block: a full block and its own projection and norms
    if (il === 4) layer.push(t('nextn.eh_proj.weight', 2 * e, e), t('nextn.enorm.weight', e), t('nextn.hnorm.weight', e));
    tensors.push(...layer.map((x) => ({ ...x, name: `blk.${il}.${x.name}` })));
  });
  return { metadata: metadata as never, tensors };
}
