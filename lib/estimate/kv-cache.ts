import { KV_TYPE_SIZE, kvRowBytes, type KvCacheType, type ResolvedOptions } from './options.js';
import type { ModelShape } from './model-shape.js';
import { alignUp, TENSOR_ALIGNMENT } from './weights.js';
import { dsv4KvCache } from './dsv4-cache.js';
import { CONTEXT_PADDING, contextGeometry, type KvCacheEstimate } from './context-geometry.js';
import { CUDA_ALIGNMENT, cudaTensorBytes } from './gpu-weights.js';

function tensorBytes(rowBytes: number, cells: number, streams: number): number {
  return alignUp(rowBytes * cells * streams, TENSOR_ALIGNMENT);
}

/** ggml's traits of a cache type, as cudaTensorBytes reads them. */
function traits(type: KvCacheType) {
  const [blockSize, typeSize] = KV_TYPE_SIZE[type];
  return { blockSize, typeSize, quantized: blockSize > 1 };
}

/** A cache tensor of `width` elements a row in a CUDA buffer (CUDA's alignment and row padding). */
function cudaBytes(type: KvCacheType, width: number, cells: number, streams: number): number {
  return cudaTensorBytes(kvRowBytes(type, width) * cells * streams, traits(type), width);
}

/**
 * The cache's bytes; with `onGpu` (which layers a CUDA device holds: llama.cpp keeps each
 * layer's cache, and recurrent state, where the layer is) split into `byBuffer`.
 */
export function estimateKvCache(shape: ModelShape, options: ResolvedOptions, onGpu?: (il: number) => boolean): KvCacheEstimate {
  if (shape.rule.indexer === 'dsv4') return dsv4KvCache(shape, options, onGpu);
  const geometry = contextGeometry(options);
  const cells = geometry.cellsPerStream;
  const streams = geometry.streams;
  const window = shape.slidingWindow;
  // the SWA cache holds the window for every sequence in the stream plus one ubatch, padded to 256
  const swaCells = options.swaFull || window === 0
    ? cells
    : alignUp(Math.min(cells, window * (options.unifiedKv ? options.sequences : 1) + options.ubatchSize), CONTEXT_PADDING);

  // [TAG_V_CACHE_VARIABLE]: without flash attention V is stored transposed, every layer as wide as the widest
  const attentionLayers = shape.layers.filter((l) => l.attention);
  const vWidths = new Set(attentionLayers.map((l) => l.vWidth));
  const vMax = Math.max(0, ...vWidths);
  const padV = !options.flashAttention && vWidths.size > 1;

  let attention = 0;
  let slidingWindow = 0;
  let indexer = 0;
  let gpu = 0;
  let host = 0;
  for (const layer of attentionLayers) {
    const size = layer.slidingWindow ? swaCells : cells;
    const vWidth = layer.vWidth === 0 ? 0 : padV ? vMax : layer.vWidth;
    // the layer's tensors: [type, row width]
    const tensors: [KvCacheType, number][] = [[options.typeK, layer.kWidth]];
    if (vWidth !== 0) tensors.push([options.typeV, vWidth]);
    const bytes = tensors.reduce((sum, [type, width]) => sum + tensorBytes(kvRowBytes(type, width), size, streams), 0);
    if (layer.slidingWindow) slidingWindow += bytes;
    else attention += bytes;
    const index: [KvCacheType, number][] = [];
    if (layer.indexerWidth > 0) {
      // MSA's indexer is a second KV cache of one head: K of the indexer's key length, V of the
      // model's value head size; DSA (and QSA) indexer keys take the K cache's type
      index.push([options.typeK, layer.indexerWidth]);
      if (shape.rule.indexer === 'msa') index.push([options.typeV, layer.headCountKv > 0 ? layer.vWidth / layer.headCountKv : 0]);
      indexer += index.reduce((sum, [type, width]) => sum + tensorBytes(kvRowBytes(type, width), size, streams), 0);
    }
    if (onGpu?.(layer.index) === true) gpu += [...tensors, ...index].reduce((sum, [type, width]) => sum + cudaBytes(type, width, size, streams), 0);
    else host += bytes + index.reduce((sum, [type, width]) => sum + tensorBytes(kvRowBytes(type, width), size, streams), 0);
  }

  let recurrent = 0;
  const rows = Math.max(1, options.sequences);
  for (const layer of shape.layers) {
    if (!layer.recurrent) continue;
    const bytes = alignUp(shape.recurrentR * 4 * rows, TENSOR_ALIGNMENT) + alignUp(shape.recurrentS * 4 * rows, TENSOR_ALIGNMENT);
    recurrent += bytes;
    if (onGpu?.(layer.index) === true) gpu += alignUp(shape.recurrentR * 4 * rows, CUDA_ALIGNMENT) + alignUp(shape.recurrentS * 4 * rows, CUDA_ALIGNMENT);
    else host += bytes;
  }

  return {
    ...(onGpu === undefined ? {} : { byBuffer: { CUDA0: gpu, CPU: host } }),
    total: attention + slidingWindow + indexer + recurrent,
    attention,
    slidingWindow,
    indexer,
    recurrent,
    cells: attentionLayers.length > 0 ? cells : 0,
    swaCells: attentionLayers.some((l) => l.slidingWindow) ? swaCells : 0,
  };
}
