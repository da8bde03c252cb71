import type { LayerShape, ModelShape } from './model-shape.js';
import { transformerGraph, type ReserveShape } from './transformer-graph.js';
import type { ResolvedOptions } from './options.js';
import type { KvCacheEstimate } from './kv-cache.js';
import { mlaDecompressedModelled, mlaModelled } from './mla-graph.js';
import { estimateFromMoments } from './compute-moments.js';

/**
 * The compute (scratch) buffer llama.cpp reserves: ggml's graph allocator replayed
 * (graph-allocator.ts) over the worst-case graph as llama.cpp builds it (transformer-graph.ts and
 * the mixers it dispatches to); architectures whose graph is not written out yet go by their
 * largest moments (compute-moments.ts).
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
