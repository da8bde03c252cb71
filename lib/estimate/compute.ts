import type { LayerShape, ModelShape } from './model-shape.js';
import { transformerGraph, type ReserveShape } from './transformer-graph.js';
import type { ResolvedOptions } from './options.js';
import type { KvCacheEstimate } from './kv-cache.js';
import { mlaDecompressedModelled, mlaModelled } from './mla-graph.js';

const F32 = 4;

/**
 * The compute (scratch) buffer: for the families transformer-graph models, ggml's allocator
 * replayed over llama.cpp's graph (graph-allocator.ts); for the others, as follows.
 *
 * ggml's graph allocator reuses memory, so the buffer is the peak
 * of what is alive at once while llama.cpp's worst-case graph (one ubatch against the whole
 * cache) runs. Per token of the ubatch, the largest of these moments:
 * - a layer's attention: its scores, n_kv x n_head in f32 (none with flash attention), beside the
 *   layer's activations (residual stream, its norm, Q, K, V and the output: 4 n_embd + q + k + v)
 *   and the masks (n_kv cells, f32, or f16 with flash attention; one per cache, full and
 *   sliding-window, each freed after the last layer reading it);
 * - a mixture-of-experts layer: the activations plus gate and up rows for each used expert,
 *   beside the masks later layers still need;
 * - the sparse-attention indexer (DSA, MSA, QSA): its scores over the cache and queries;
 * - an SSM scan (Mamba): the input projection and the inner activations;
 * - the output, after every mask is freed: logits (the reserve asks one output per token) beside
 *   two hidden rows.
 * Constants marked "fitted" come from llama.cpp's own figures, not from reading its graph; see
 * docs/api.md for the error per family. Not exact.
 */
export function estimateCompute(shape: ModelShape, options: ResolvedOptions, kv: KvCacheEstimate): number {
  if (graphModelled(shape)) return transformerGraph(shape, reserveShape(shape, options, kv)).allocate();
  return estimateFromMoments(shape, options, kv);
}

/**
 * The families whose graph transformer-graph writes out: attention with a plain KV cache (full
 * and sliding-window layers), MLA (mla-graph.ts: the latent cache, with DeepSeek's DSA indexer or
 * not, or MLA weights over a plain cache), MiniMax-M3's MSA (msa-graph.ts), dense or
 * mixture-of-experts FFN, and the recurrent mixers and models without memory below. The others
 * (QSA, MLA in hybrids, unchecked MLA architectures) go by their largest moments below.
 */
export function graphModelled(shape: ModelShape): boolean {
  // MLA (the latent cache, with or without a DSA indexer, or its weights over a plain cache) and MiniMax-M3's MSA
  if (shape.rule.memory === 'kv' && (mlaModelled(shape) || mlaDecompressedModelled(shape))) return true;
  if (shape.rule.memory === 'kv' && shape.architecture === 'minimax-m3') return true;
  if (shape.rule.indexer !== undefined || shape.kvLoraRank > 0 || shape.latentWidth > 0) return false;
  return shape.rule.memory === 'kv' || shape.rule.mixer !== undefined || shape.rule.diffusion === true;
}

function estimateFromMoments(shape: ModelShape, options: ResolvedOptions, kv: KvCacheEstimate): number {
  // llama.cpp reserves min(n_ctx, n_ubatch) tokens with n_ctx as asked (before its padding)
  const tokens = Math.min(options.ubatchSize, options.contextSize);
  const flash = options.flashAttention && !shape.attentionSoftcap;
  const maskElement = flash ? 2 : 4;
  const embd = shape.embeddingLength;
  const attention = shape.layers.filter((l) => l.attention);
  // models without memory (encoders, diffusion) attend within the ubatch
  const noMemory = shape.rule.memory === 'none';
  const fullCells = noMemory ? tokens : attention.some((l) => !l.slidingWindow) ? kv.cells : 0;
  const swaCells = attention.some((l) => l.slidingWindow) ? kv.swaCells : 0;

  // One mask per cache (full, sliding-window), freed after the last layer that reads it.
  const layers = noMemory ? shape.layers.filter((l) => l.headCount > 0) : attention;
  const lastFull = Math.max(-1, ...layers.filter((l) => !l.slidingWindow).map((l) => l.index));
  const lastSwa = Math.max(-1, ...layers.filter((l) => l.slidingWindow).map((l) => l.index));
  const streams = options.unifiedKv ? 1 : options.sequences;
  const masksFrom = (il: number) => ((il <= lastFull ? fullCells : 0) + (il <= lastSwa ? swaCells : 0)) * maskElement;

  let activations = F32 * 4 * embd;
  if (layers.length > 0) {
    const widest = layers.reduce((a, b) => (a.kWidth + a.vWidth >= b.kWidth + b.vWidth ? a : b));
    const headK = widest.headCountKv > 0 ? widest.kWidth / widest.headCountKv : 0;
    activations += F32 * (widest.headCount * headK + widest.kWidth + widest.vWidth);
    // MLA under flash attention: the latent K (and rope part) copied out for the kernel
    if (flash) activations += F32 * shape.latentWidth;
  }
  const indexerLayers = shape.layers.filter((l) => l.indexerWidth > 0).length;
  const expertMoment = activations + F32 * 2 * shape.expertUsedCount * shape.expertFeedForward;
  const indexerQueries = F32 * 2 * shape.indexerHeads * shape.indexerKeyLength;
  const ssmMoment = F32 * (2 * shape.ssmInputWidth + 3.5 * shape.ssmInner); // fitted

  let peak = F32 * (shape.vocabularySize + 2 * embd); // the output: after every mask is freed
  for (const layer of shape.layers) {
    const il = layer.index;
    if (layers.includes(layer)) {
      const cells = layer.slidingWindow ? swaCells : fullCells;
      let scores = flash ? 0 : cells * layer.headCount * F32;
      // absorbed MLA (no V cache) without flash attention: the latent K viewed as V, copied in f16
      if (!flash && layer.vWidth === 0) scores += cells * 2;
      // the indexers' scores over the cache (fitted)
      if (shape.rule.indexer === 'dsa' && layer.indexerWidth > 0) scores += cells * (flash ? 10 : 12);
      if (shape.rule.indexer === 'msa' && flash && layer.indexerWidth > 0) scores += cells * (6 + 10 / streams);
      if (shape.rule.indexer === 'qsa') scores += cells * (2 * shape.indexerHeads + 6);
      // flash attention reads an f32 K or V cache through an f16 copy of the whole view
      if (flash) {
        if (options.typeK === 'f32') scores += (cells * streams * layer.kWidth * 2) / tokens;
        if (options.typeV === 'f32' && layer.vWidth > 0) scores += (cells * streams * layer.vWidth * 2) / tokens;
      }
      // absorbed MLA without flash attention: the latent V taken out of the cache (f16, all
      // streams) and made contiguous for one stream, whatever the ubatch (fitted to llama.cpp's figures)
      if (!flash && layer.vWidth === 0 && shape.kvLoraRank > 0) {
        const latent = shape.kvLoraRank * 2 * (cells * streams + cells);
        peak = Math.max(peak, masksFrom(il) + latent / tokens + activations);
      }
      const queries = layer.indexerWidth > 0 && shape.rule.indexer === 'dsa' ? indexerQueries : 0;
      peak = Math.max(peak, masksFrom(il) + scores + activations + queries);
      // DSA at long contexts: the indexer's top-k selection over all cells outgrows its queries
      if (shape.rule.indexer === 'dsa' && layer.indexerWidth > 0) {
        const reused = indexerLayers > 1 ? 4 : 0; // the top-k indices kept for the next layer
        peak = Math.max(peak, masksFrom(il) + cells * ((flash ? 15 : 17 + 4 * layer.headCount) + reused) + activations);
      }
    }
    if (layer.experts && shape.expertCount > 0) peak = Math.max(peak, masksFrom(il + 1) + expertMoment);
    if (layer.recurrent && shape.ssmInputWidth > 0) peak = Math.max(peak, masksFrom(il + 1) + ssmMoment);
  }
  // a recurrent layer's state is copied out whole for every sequence
  const state = shape.layers.some((l) => l.recurrent) ? (shape.recurrentR + shape.recurrentS) * F32 * options.sequences : 0;
  return Math.round(tokens * peak + state);
}

const QUANTIZED_CACHE = new Set(['q8_0', 'q4_0', 'q4_1', 'iq4_nl', 'q5_0', 'q5_1']);

/** The worst-case ubatch llama.cpp reserves its graph for, in the terms transformer-graph needs. */
export function reserveShape(shape: ModelShape, options: ResolvedOptions, kv: KvCacheEstimate): ReserveShape {
  // with sliding-window layers their cache takes its rotation from the full-context cache's layers
  const withKv = shape.layers.filter((l) => l.attention && l.headCountKv > 0);
  const attention = withKv.some((l) => l.slidingWindow) ? withKv.filter((l) => !l.slidingWindow) : withKv;
  // one head size across the cache's layers, a multiple of 64: a quantized cache is rotated
  const sameHead = (width: (l: LayerShape) => number): number => {
    const sizes = new Set(attention.map((l) => width(l) / l.headCountKv));
    const [size] = sizes;
    return sizes.size === 1 && size !== undefined && size > 0 && size % 64 === 0 ? size : 0;
  };
  const headK = QUANTIZED_CACHE.has(options.typeK) ? sameHead((l) => l.kWidth) : 0;
  const headV = QUANTIZED_CACHE.has(options.typeV) ? sameHead((l) => l.vWidth) : 0;
  let kRotation = 0;
  if (headK > 0) {
    kRotation = 64;
    while (headK % (kRotation * 2) === 0) kRotation *= 2;
  }
  // min(n_ctx as asked, n_ubatch), rounded up to a multiple of the sequences; outputs: one per token asked
  const outputs = Math.min(options.ubatchSize, options.contextSize);
  return {
    tokens: Math.ceil(outputs / options.sequences) * options.sequences,
    outputs,
    streams: options.unifiedKv ? 1 : options.sequences,
    sequences: options.sequences,
    fullCells: kv.cells,
    swaCells: kv.swaCells,
    flash: options.flashAttention && !shape.attentionSoftcap,
    kF32: options.typeK === 'f32',
    vF32: options.typeV === 'f32',
    typeK: options.typeK,
    kRotation,
    vRotation: headV > 0 ? 64 : 0,
  };
}
