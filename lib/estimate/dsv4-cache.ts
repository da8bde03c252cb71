import { KV_TYPE_SIZE, kvRowBytes, type ResolvedOptions } from './options.js';
import { CUDA_ALIGNMENT, cudaTensorBytes } from './gpu-weights.js';
import type { ModelShape } from './model-shape.js';
import { alignUp, TENSOR_ALIGNMENT } from './weights.js';
import { CONTEXT_PADDING, contextGeometry, type KvCacheEstimate } from './context-geometry.js';

const F32 = 4;
/** Keys compressed 4:1 with a lightning indexer (CSA) and 128:1 (HCA). */
const CSA = 4;
const HCA = 128;

/**
 * DeepSeek 4's memory (llama_kv_cache_dsv4), whatever the settings ask of a unified cache: one
 * stream per sequence, each of n_ctx_seq cells (all of n_ctx when unified):
 * - raw keys (K only, the layer's key width) of every block in a sliding-window cache: the
 *   window plus one ubatch, padded to 256, per stream (all cells with swaFull);
 * - CSA layers: keys compressed 4:1, and the indexer's keys (its key length), ceil(cells / 4)
 *   padded to 256 per stream; HCA layers: keys compressed 128:1 the same way;
 * - the compressors' state, f32, per layer and stream, a kv and a score tensor each: CSA
 *   2 x key width by 8, HCA key width by 128, the indexer's 2 x its key length by 8.
 * Both caches' K take type_k; V is never stored.
 */
export function dsv4KvCache(shape: ModelShape, options: ResolvedOptions, onGpu?: (il: number) => boolean): KvCacheEstimate {
  const cells = contextGeometry(options).cellsPerStream;
  const streams = options.sequences;
  const tensor = (rowBytes: number, rows: number) => alignUp(rowBytes * rows * streams, TENSOR_ALIGNMENT);
  const key = (width: number, rows: number) => tensor(kvRowBytes(options.typeK, width), rows);
  const compressed = (ratio: number) => alignUp(Math.max(1, Math.ceil(cells / ratio)), CONTEXT_PADDING);
  const swaCells = options.swaFull || shape.slidingWindow === 0 ? cells : Math.min(cells, alignUp(shape.slidingWindow + options.ubatchSize, CONTEXT_PADDING));
  const state = (width: number, rows: number) => 2 * tensor(width * F32, rows);
  // the same tensors in a CUDA buffer (with a GPU: each layer's where the layer is)
  const [blockSize, typeSize] = KV_TYPE_SIZE[options.typeK];
  const cudaKey = (width: number, rows: number) => cudaTensorBytes(kvRowBytes(options.typeK, width) * rows * streams, { blockSize, typeSize, quantized: blockSize > 1 }, width);
  const cudaState = (width: number, rows: number) => 2 * alignUp(width * F32 * rows * streams, CUDA_ALIGNMENT);
  let gpu = 0;
  let host = 0;

  let slidingWindow = 0;
  let attention = 0;
  let indexer = 0;
  let recurrent = 0;
  // every block, the NextN (MTP) ones included: the cache counts them whether or not they load
  for (const layer of shape.layers) {
    if (layer.kWidth === 0) continue;
    const before = slidingWindow + attention + indexer + recurrent;
    slidingWindow += key(layer.kWidth, swaCells);
    let cuda = cudaKey(layer.kWidth, swaCells);
    const ratio = shape.compressRatios[layer.index] ?? 0;
    if (ratio === CSA) {
      attention += key(layer.kWidth, compressed(CSA));
      indexer += key(shape.indexerKeyLength, compressed(CSA));
      recurrent += state(2 * layer.kWidth, 2 * CSA) + state(2 * shape.indexerKeyLength, 2 * CSA);
      cuda += cudaKey(layer.kWidth, compressed(CSA)) + cudaKey(shape.indexerKeyLength, compressed(CSA)) + cudaState(2 * layer.kWidth, 2 * CSA) + cudaState(2 * shape.indexerKeyLength, 2 * CSA);
    } else if (ratio === HCA) {
      attention += key(layer.kWidth, compressed(HCA));
      recurrent += state(layer.kWidth, HCA);
      cuda += cudaKey(layer.kWidth, compressed(HCA)) + cudaState(layer.kWidth, HCA);
    }
    if (onGpu?.(layer.index) === true) gpu += cuda;
    else host += slidingWindow + attention + indexer + recurrent - before;
  }
  return {
    ...(onGpu === undefined ? {} : { byBuffer: { CUDA0: gpu, CPU: host } }),
    total: attention + slidingWindow + indexer + recurrent,
    attention,
    slidingWindow,
    indexer,
    recurrent,
    cells,
    swaCells,
  };
}
