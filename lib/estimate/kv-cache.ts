import { kvRowBytes, type ResolvedOptions } from './options.js';
import type { ModelShape } from './model-shape.js';
import { alignUp, TENSOR_ALIGNMENT } from './weights.js';
import { dsv4KvCache } from './dsv4-cache.js';
import { CONTEXT_PADDING, contextGeometry, type KvCacheEstimate } from './context-geometry.js';

function tensorBytes(rowBytes: number, cells: number, streams: number): number {
  return alignUp(rowBytes * cells * streams, TENSOR_ALIGNMENT);
}

export function estimateKvCache(shape: ModelShape, options: ResolvedOptions): KvCacheEstimate {
  if (shape.rule.indexer === 'dsv4') return dsv4KvCache(shape, options);
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
  for (const layer of attentionLayers) {
    const size = layer.slidingWindow ? swaCells : cells;
    const vWidth = layer.vWidth === 0 ? 0 : padV ? vMax : layer.vWidth;
    const bytes = tensorBytes(kvRowBytes(options.typeK, layer.kWidth), size, streams)
      + (vWidth === 0 ? 0 : tensorBytes(kvRowBytes(options.typeV, vWidth), size, streams));
    if (layer.slidingWindow) slidingWindow += bytes;
    else attention += bytes;
    if (layer.indexerWidth > 0) {
      if (shape.rule.indexer === 'msa') {
        // MSA's indexer is a second KV cache of one head: K of the indexer's key length, V of
        // the model's value head size
        const valueHead = layer.headCountKv > 0 ? layer.vWidth / layer.headCountKv : 0;
        indexer += tensorBytes(kvRowBytes(options.typeK, layer.indexerWidth), size, streams);
        indexer += tensorBytes(kvRowBytes(options.typeV, valueHead), size, streams);
      } else {
        // DSA (and QSA) indexer keys take the K cache's type
        indexer += tensorBytes(kvRowBytes(options.typeK, layer.indexerWidth), size, streams);
      }
    }
  }

  let recurrent = 0;
  const recurrentLayers = shape.layers.filter((l) => l.recurrent).length;
  if (recurrentLayers > 0) {
    const rows = Math.max(1, options.sequences);
    recurrent = recurrentLayers * (alignUp(shape.recurrentR * 4 * rows, TENSOR_ALIGNMENT) + alignUp(shape.recurrentS * 4 * rows, TENSOR_ALIGNMENT));
  }

  return {
    total: attention + slidingWindow + indexer + recurrent,
    attention,
    slidingWindow,
    indexer,
    recurrent,
    cells: attentionLayers.length > 0 ? cells : 0,
    swaCells: attentionLayers.some((l) => l.slidingWindow) ? swaCells : 0,
  };
}
