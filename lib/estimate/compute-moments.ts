import type { LayerShape, ModelShape } from './model-shape.js';
import { kvRowBytes, type ResolvedOptions } from './options.js';
import type { KvCacheEstimate } from './context-geometry.js';

const F32 = 4;

/**
 * The compute buffer of an architecture whose graph is not replayed (compute.ts says which), from
 * the graph's largest moments. ggml's graph allocator reuses memory, so the buffer is the peak
 * of what is alive at once while llama.cpp's worst-case graph (one ubatch against the whole
 * cache) runs. Per token of the ubatch, the largest of these moments:
 * - a layer's attention: its scores, n_kv x n_head in f32 (none with flash attention), beside the
 *   layer's activations (residual stream, its norm, Q, K, V and the output: 4 n_embd + q + k + v)
 *   and the masks (n_kv cells, f32, or f16 with flash attention; one per cache, full and
 *   sliding-window, each freed after the last layer reading it);
 * - a mixture-of-experts layer: the activations plus gate and up rows for each used expert,
 *   beside the masks later layers still need;
 * - the sparse-attention indexer (DSA, QSA): its scores over the cache and queries (dsaMoment);
 * - an SSM scan (Mamba): the input projection and the inner activations;
 * - the output, after every mask is freed: logits (the reserve asks one output per token) beside
 *   two hidden rows.
 * Constants marked "fitted" come from llama.cpp's own figures, not from reading its graph; the
 * four recorded models estimated this way are within 15% (docs/api.md). Not exact.
 */
export function estimateFromMoments(shape: ModelShape, options: ResolvedOptions, kv: KvCacheEstimate, onHost?: (il: number) => boolean): number {
  // llama.cpp reserves min(n_ctx, n_ubatch) tokens with n_ctx as asked (before its padding)
  const tokens = Math.min(options.ubatchSize, options.contextSize);
  if (shape.rule.indexer === 'dsv4') return Math.round(tokens * dsv4Moment(shape, options, kv));
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

  const activations = layerActivations(shape, layers, flash);
  const expertMoment = activations + F32 * 2 * shape.expertUsedCount * shape.expertFeedForward;
  const indexerQueries = F32 * 2 * shape.indexerHeads * shape.indexerKeyLength;
  const ssmMoment = F32 * (2 * shape.ssmInputWidth + 3.5 * shape.ssmInner); // fitted

  let peak = F32 * (shape.vocabularySize + 2 * embd); // the output: after every mask is freed
  for (const layer of shape.layers) {
    const il = layer.index;
    if (layers.includes(layer)) {
      const cells = layer.slidingWindow ? swaCells : fullCells;
      // with a GPU (onHost given), an attention layer left on the host whose attention the
      // scheduler offloads: its K and V cache views copied over whole, beside the masks, the
      // scores and three rows of the embedding; its other activations stay on the host (fitted
      // to llama.cpp's CUDA figures)
      const activations = onHost?.(il) === true ? F32 * 3 * embd + (cells * streams * hostCacheRow(shape, layer, options)) / tokens : layerActivations(shape, layers, flash);
      let scores = flash ? 0 : cells * layer.headCount * F32;
      // absorbed MLA (no V cache) without flash attention: the latent K viewed as V, copied in f16
      if (!flash && layer.vWidth === 0) scores += cells * 2;
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
      if (shape.rule.indexer === 'dsa' && layer.indexerWidth > 0) peak = Math.max(peak, dsaMoment(shape, options, layer.headCount, cells, tokens, flash) + activations + indexerQueries);
      else peak = Math.max(peak, masksFrom(il) + scores + activations);
    }
    if (layer.experts && shape.expertCount > 0) peak = Math.max(peak, masksFrom(il + 1) + expertMoment);
    if (layer.recurrent && shape.ssmInputWidth > 0) peak = Math.max(peak, masksFrom(il + 1) + ssmMoment);
  }
  // a recurrent layer's state is copied out whole for every sequence
  const state = shape.layers.some((l) => l.recurrent) ? (shape.recurrentR + shape.recurrentS) * F32 * options.sequences : 0;
  return Math.round(tokens * peak + state);
}

/** Bytes a cell of a layer's K and V cache views (absorbed MLA: the latent, viewed as K and as V). */
function hostCacheRow(shape: ModelShape, layer: LayerShape, options: ResolvedOptions): number {
  const v = layer.vWidth > 0 ? layer.vWidth : shape.kvLoraRank;
  return kvRowBytes(options.typeK, layer.kWidth) + kvRowBytes(options.typeV, v);
}

/**
 * Per token, an attention layer's activations (the widest layer's): the residual stream, its norm,
 * the output and the layer's input (4 rows of the embedding), Q, K and V, and under flash attention
 * MLA's latent K copied out for the kernel.
 */
export function layerActivations(shape: ModelShape, layers: readonly LayerShape[], flash: boolean): number {
  let activations = F32 * 4 * shape.embeddingLength;
  if (layers.length > 0) {
    const widest = layers.reduce((a, b) => (a.kWidth + a.vWidth >= b.kWidth + b.vWidth ? a : b));
    const headK = widest.headCountKv > 0 ? widest.kWidth / widest.headCountKv : 0;
    activations += F32 * (widest.headCount * headK + widest.kWidth + widest.vWidth);
    if (flash) activations += F32 * shape.latentWidth;
  }
  return activations;
}

/**
 * Per token, a DSA layer's attention (Hunyuan v4; DeepSeek 3.2's kin are replayed) without the
 * activations: per cell of a stream the masks (attention's, f16 under flash attention, and the
 * indexer's), the indexer's scores (f32) and, without flash attention, the attention scores (f32
 * per head); per chosen cell (top_k, or every cell below it) the selection (i32), its copy and the
 * zeros written into the mask at it (f32), up to two of them in the hole the indexer's queries
 * leave (their two copies, 2 x heads x key length in f32); and all cells of all streams for the
 * latent V copied out transposed without flash attention (or the f16 copies of an f32 cache
 * under it). Checked against llama.cpp's figures for two Hunyuan v4 shapes (docs/api.md).
 */
function dsaMoment(shape: ModelShape, options: ResolvedOptions, heads: number, cells: number, tokens: number, flash: boolean): number {
  const streams = options.unifiedKv ? 1 : options.sequences;
  const topK = Math.min(cells, shape.indexerTopK);
  const hole = F32 * 2 * shape.indexerHeads * shape.indexerKeyLength;
  const fitted = Math.min(2, Math.floor(hole / (F32 * topK)));
  const perCell = (flash ? 8 : 10 + 4 * heads);
  const latentBytes = (f32: boolean) => shape.kvLoraRank * (f32 ? 4 : 2) * cells * streams;
  let whole = 0;
  if (!flash) whole = latentBytes(options.typeK === 'f32');
  else if (options.typeK === 'f32') whole = latentBytes(false) + shape.latentWidth * 2 * cells * streams;
  // the heads' absorbed queries, their latent Q and attention's output before and after wv_b (fitted: alive beside the indexer's)
  const mla = shape.mla;
  const perHead = mla === undefined ? 0 : F32 * heads * (2 * mla.kvLoraRank + mla.kvLoraRank + mla.rope + mla.headV);
  return cells * perCell + topK * 4 * (3 - fitted) + whole / tokens + perHead;
}

/**
 * Per token, DeepSeek 4's largest moment (fitted to llama.cpp's figures for test-llama-archs'
 * DeepSeek 4 with top_k above the cache and at 256, not read from its graph): the indexer's
 * queries and their copies (3 x heads x key length in f32) with the layer's activations, then,
 * as the cache grows, what grows with the cells of a stream. Under flash attention the window's
 * mask (2.5 bytes a raw cell), then about 2 bytes a cell and 4.5 a chosen compressed key (top_k,
 * or a quarter of the cells) beside two of the indexer's query copies; without it the attention
 * scores over the window's raw keys (4 per head and cell, and the mask) and over the compressed
 * ones (about 11 bytes a cell). Within 15% of llama.cpp's figures where checked (docs/api.md).
 */
function dsv4Moment(shape: ModelShape, options: ResolvedOptions, kv: KvCacheEstimate): number {
  const flash = options.flashAttention;
  const heads = Math.max(0, ...shape.layers.map((l) => l.headCount));
  const queries = 3 * F32 * shape.indexerHeads * shape.indexerKeyLength;
  const activations = F32 * 3 * shape.embeddingLength;
  // the CSA layers' chosen compressed keys: top_k of them, or all (a quarter of the cells)
  const chosen = Math.min(shape.indexerTopK, Math.ceil(kv.cells / 4));
  if (flash) return Math.max(queries + activations + 2.5 * kv.swaCells + 1.5 * Math.max(0, kv.cells - 8192), 2 * kv.cells + 4.5 * chosen + (2 / 3) * queries);
  return queries + 11 * kv.cells + (F32 * heads + 2) * kv.swaCells;
}
