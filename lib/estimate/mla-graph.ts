import type { ComputeGraph } from './compute-graph.js';
import { hadamardSide } from './hadamard.js';
import type { GraphTensor } from './graph-allocator.js';
import type { LayerShape, MlaShape, ModelShape } from './model-shape.js';
import type { ReserveShape } from './reserve-shape.js';
import { kvRowBytes, type KvCacheType } from './options.js';

const F32 = 4;
const I32 = 4;
const I64 = 8;

/** Bytes per element of a cache type as ggml_cont copies it (f32, or 16-bit otherwise). */
const elementBytes = (type: string) => (type === 'f32' ? 4 : 2);

/** The inputs of an MLA cache (K only: V is the latent part of K). */
export interface MlaCacheInputs {
  readonly cells: number;
  readonly kIdx: GraphTensor;
  readonly mask: GraphTensor;
  /** The sparse-attention indexer's own cache inputs (DSA layers only). */
  readonly indexer: IndexerInputs | undefined;
}

/** The lightning indexer's key cache: its row indexes, its mask (f16: the fused kernel's) and the keys' Hadamard rotation. */
export interface IndexerInputs {
  readonly kIdx: GraphTensor;
  readonly mask: GraphTensor;
  readonly rotation: GraphTensor;
}

/**
 * The architectures whose graphs these builders follow, checked against llama.cpp: deepseek2's
 * graph with the latent cache (Mistral 4 runs it), MiniCPM3's over a plain cache, and DeepSeek 3.2's
 * lightning indexer (GLM-DSA, dots3 alike). Others with MLA weights (Hunyuan v4, PLM, DeepSeek-OCR,
 * DeepSeek 2 without key_length_mla) are not checked and keep the estimate's moments.
 */
const LATENT_CACHE = new Set(['deepseek2', 'mistral4', 'deepseek32', 'glm-dsa', 'dots3note']);
const DECOMPRESSED = new Set(['minicpm3']);

/** Whether transformer-graph builds this model's attention with the latent cache here. */
export function mlaModelled(shape: ModelShape): boolean {
  return shape.mla?.absorbed === true && LATENT_CACHE.has(shape.architecture);
}

/** Whether its MLA weights over a plain KV cache are built here (mlaDecompressedQkv). */
export function mlaDecompressedModelled(shape: ModelShape): boolean {
  return shape.mla?.absorbed === false && DECOMPRESSED.has(shape.architecture);
}

/** An MLA cache's inputs, in the order llama.cpp creates them (build_attn_inp_k, build_attn_inp_k_dsa). */
export function mlaCacheInputs(g: ComputeGraph, shape: ModelShape, r: ReserveShape, cells: number, withIndexer: boolean): MlaCacheInputs {
  const T = r.tokens;
  const kIdx = g.input(T * I64, 'k_idxs');
  const mask = g.input(cells * T * (r.flash ? 2 : F32), 'kq_mask');
  let indexer: IndexerInputs | undefined;
  if (withIndexer) {
    const side = hadamardSide(shape.indexerKeyLength);
    indexer = {
      kIdx: g.input(T * I64, 'lid_k_idxs'),
      mask: g.input(cells * T * 2, 'lid_kq_mask'),
      rotation: g.input(side * side * F32, 'lid_k_rot'),
    };
  }
  return { cells, kIdx, mask, indexer };
}

/**
 * llama.cpp's absorbed MLA attention block (deepseek2's graph, shared by its kin): Q through its
 * low-rank projection, the no-rope part of Q absorbed into the latent space (wk_b), the latent K
 * (normed) with its roped part written to the cache, attention over the latent cache as one KV
 * head, decompressed to the heads by wv_b, then the output projection. With a DSA indexer its
 * top-k selection becomes the mask first. Returns the attention output (before the residual).
 */
export function mlaAttention(
  g: ComputeGraph,
  shape: ModelShape,
  layer: LayerShape,
  x: GraphTensor,
  pos: GraphTensor,
  inputs: MlaCacheInputs,
  r: ReserveShape,
): GraphTensor {
  const mla = shape.mla as MlaShape;
  const T = r.tokens;
  const H = layer.headCount;
  const rank = mla.kvLoraRank;
  const latent = rank + mla.rope;
  const E = shape.embeddingLength;

  // Q's low-rank projection, normed (shared with the indexer's queries)
  const qr = mla.qLoraRank > 0 ? g.norm(g.op(mla.qLoraRank * T * F32, [g.external, x], `f32:${mla.qLoraRank}x${T}`), `f32:${mla.qLoraRank}x${T}`) : x;
  const indexer = layer.indexerWidth > 0 && inputs.indexer !== undefined ? lightningIndexer(g, shape, x, qr, pos, inputs, r) : undefined;

  const q = g.op(H * mla.headK * T * F32, [g.external, qr], `f32:${H * mla.headK}x${T}`);
  const absorbed = g.op(rank * T * H * F32, [g.external, g.view(q, 'q_nope')], `f32:${rank}x${T}x${H}`);
  const qPe = g.op(mla.rope * H * T * F32, [g.view(q, 'q_pe'), pos], `f32:${mla.rope}x${H}x${T}`);
  const qCur = g.expand(g.op(latent * H * T * F32, [g.view(absorbed, 'q_nope_absorbed_perm'), qPe], `f32:${latent}x${H}x${T}`));

  const kvPe = g.op(latent * T * F32, [g.external, x], `f32:${latent}x${T}`);
  const kv = g.norm(g.view(kvPe, 'kv_cmpr', rank * T * F32), `f32:${rank}x${T}`, rank * T * F32);
  const vCur = g.expand(g.view(kv, 'Vcur'));
  const kPe = g.op(mla.rope * T * F32, [g.view(kvPe, 'k_pe'), pos], `f32:${mla.rope}x${T}`);
  const kCur = g.expand(g.op(latent * T * F32, [vCur, kPe], `f32:${latent}x${T}`));
  g.expand(g.view(g.external, 'cache-k', 0, [g.view(kCur, 'k-rows'), inputs.kIdx]));

  let mask = inputs.mask;
  if (indexer !== undefined) {
    // the top-k cells unmasked: a mask of -inf with zeros written at the chosen cells, plus the causal mask
    const zeros = g.input(indexer.topK * T * F32, 'zeros', true);
    const zeroed = g.op(zeros.bytes, [zeros], zeros.layout, { inplace: true });
    const all = g.op(mask.bytes, [mask], mask.layout, { inplace: true });
    const chosen = g.setRows(g.view(all, 'mask-rows'), zeroed, g.view(indexer.topKIndices, 'top_k-3d'), 'mask-top-k');
    mask = g.op(mask.bytes, [g.view(chosen, 'mask-top-k-view'), inputs.mask], inputs.mask.layout, { inplace: true });
  }

  const qHeads = g.view(qCur, 'q-permuted');
  const cells = inputs.cells * r.streams;
  let out: GraphTensor;
  // the latent cache as attention reads it (V is a view of its first `rank` columns)
  const cacheView = () => g.cacheView(kvRowBytes(r.typeK as KvCacheType, latent) * cells, r.typeK, latent);
  if (r.flash) {
    const kCache = r.kF32 ? g.op(cells * latent * 2, [cacheView()], 'k-f16') : cacheView();
    const vCache = r.kF32 ? g.op(cells * rank * 2, [cacheView()], 'v-f16') : cacheView();
    const fa = g.op(rank * H * T * F32, [qHeads, kCache, vCache, mask], `fa:${latent}:${rank}:${H}`);
    const decompressed = g.op(mla.headV * T * H * F32, [g.external, g.view(fa, 'fa-permuted')], `f32:${mla.headV}x${T}x${H}`);
    out = g.op(decompressed.bytes, [g.view(decompressed, 'fattn_mla-permuted')], `f32:${mla.headV * H}x${T}`);
  } else {
    // V is the latent part of the cache, not transposed: copied out transposed for the product
    const vCont = g.op(rank * cells * elementBytes(r.typeK), [cacheView()], 'v-cont');
    const kq = g.op(inputs.cells * T * H * F32, [cacheView(), qHeads], 'kq');
    const softmax = g.op(kq.bytes, [kq, mask], 'kq', { inplace: true });
    const kqv = g.op(rank * T * H * F32, [vCont, softmax], `f32:${rank}x${T}x${H}`);
    const decompressed = g.op(mla.headV * T * H * F32, [g.external, kqv], `f32:${mla.headV}x${T}x${H}`);
    out = g.op(decompressed.bytes, [g.view(decompressed, 'kqv-permuted')], `f32:${mla.headV * H}x${T}`);
  }
  g.expand(out);
  return g.op(E * T * F32, [g.external, out], x.layout);
}

/**
 * MLA weights over a plain KV cache (MiniCPM3; DeepSeek 2 without key_length_mla alike): Q through its
 * low-rank projection and roped over the heads; the latent K/V normed and decompressed by wkv_b
 * into the heads' no-rope K and V (V copied out contiguous); K is that beside the shared roped
 * part repeated over the heads. Returned unexpanded: build_attn expands Q, V, K in that order.
 */
export function mlaDecompressedQkv(
  g: ComputeGraph,
  shape: ModelShape,
  layer: LayerShape,
  x: GraphTensor,
  pos: GraphTensor,
  r: ReserveShape,
): { q: GraphTensor; k: GraphTensor; v: GraphTensor } {
  const mla = shape.mla as MlaShape;
  const T = r.tokens;
  const H = layer.headCount;
  const nope = mla.headK - mla.rope;
  const latent = mla.kvLoraRank + mla.rope;

  const qr = mla.qLoraRank > 0 ? g.norm(g.op(mla.qLoraRank * T * F32, [g.external, x], `f32:${mla.qLoraRank}x${T}`), `f32:${mla.qLoraRank}x${T}`) : x;
  const qProjected = g.op(H * mla.headK * T * F32, [g.external, qr], `f32:${H * mla.headK}x${T}`);
  const q = g.op(qProjected.bytes, [g.view(qProjected, 'q-heads'), pos, g.external], `f32:${mla.headK}x${H}x${T}`);

  const kvPe = g.op(latent * T * F32, [g.external, x], `f32:${latent}x${T}`);
  const kvNormed = g.norm(g.view(kvPe, 'kv_compressed', mla.kvLoraRank * T * F32), `f32:${mla.kvLoraRank}x${T}`, mla.kvLoraRank * T * F32);
  const kv = g.op(H * (nope + mla.headV) * T * F32, [g.external, kvNormed], `f32:${H * (nope + mla.headV)}x${T}`);
  const v = g.op(H * mla.headV * T * F32, [g.view(kv, 'v_states')], `f32:${mla.headV}x${H}x${T}`);
  const kPe = g.op(mla.rope * T * F32, [g.view(kvPe, 'k_pe'), pos, g.external], `f32:${mla.rope}x1x${T}`);
  const kPeHeads = g.op(mla.rope * H * T * F32, [kPe], `f32:${mla.rope}x${H}x${T}`);
  const k = g.op(H * mla.headK * T * F32, [g.view(kv, 'k_nope'), kPeHeads], `f32:${mla.headK}x${H}x${T}`);
  return { q, k, v };
}

/**
 * DeepSeek 3.2's lightning indexer: its own key (layer-normed, roped, rotated) written to its
 * cache, its queries from Q's low-rank projection, per-head weights, the fused indexer's scores
 * over the cache, and the top-k cells. Only the key is expanded here; the rest joins the graph
 * through the mask that reads the top-k.
 */
function lightningIndexer(
  g: ComputeGraph,
  shape: ModelShape,
  x: GraphTensor,
  qr: GraphTensor,
  pos: GraphTensor,
  inputs: MlaCacheInputs,
  r: ReserveShape,
): { topK: number; topKIndices: GraphTensor } {
  const idx = inputs.indexer as IndexerInputs;
  const T = r.tokens;
  const heads = shape.indexerHeads;
  const width = shape.indexerKeyLength;
  const topK = Math.min(inputs.cells, shape.indexerTopK);

  const q = g.op(heads * width * T * F32, [g.external, qr], `f32:${heads * width}x${T}`);
  const qRoped = g.op(q.bytes, [g.view(q, 'indexer_q-heads'), pos], `f32:${width}x${heads}x${T}`);
  const qRotated = g.op(q.bytes, [idx.rotation, qRoped], `f32:${width}x${heads}x${T}`);

  const k = g.op(width * T * F32, [g.external, x], `f32:${width}x${T}`);
  // layer norm (not in place in ggml), then its weight and bias in place
  const kNormed = g.op(k.bytes, [k], `f32:${width}x${T}`);
  const kBiased = g.op(k.bytes, [g.op(k.bytes, [kNormed, g.external], kNormed.layout, { inplace: true }), g.external], kNormed.layout, { inplace: true });
  const kRoped = g.op(k.bytes, [g.view(kBiased, 'indexer_k-heads'), pos], `f32:${width}x1x${T}`);
  const kRotated = g.op(k.bytes, [idx.rotation, kRoped], `f32:${width}x1x${T}`);
  g.expand(g.view(g.external, 'cache-indexer-k', 0, [g.view(kRotated, 'indexer_k-rows'), idx.kIdx]));

  const weights = g.op(heads * T * F32, [g.external, x], `f32:${heads}x${T}`);
  const scaled = g.op(weights.bytes, [g.view(weights, 'indexer_weights-streams')], `f32:${heads}x${T}`);
  const scores = g.op(inputs.cells * T * F32, [g.view(qRotated, 'indexer_q-streams'), g.external, scaled, idx.mask], 'indexer_score');
  const selected = g.op(topK * T * I32, [scores], `i32:${topK}x${T}`);
  const topKIndices = g.op(selected.bytes, [selected], `i32:${topK}x${T}-cont`);
  return { topK, topKIndices };
}
